// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/analysis/kgap.hpp"

#include "detail/parallel.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <limits>
#include <numbers>
#include <random>

#include "detail/fftw_plan.hpp"
#include "vibra/analysis/fit.hpp"
#include "vibra/core/error.hpp"

namespace vibra::analysis {

void KgapParams::validate() const {
    auto bad = [](const std::string& f, const std::string& v) {
        throw ParameterError("KgapParams." + f + " is out of range: " + v);
    };
    if (!(k_min >= 0)) bad("k_min", std::to_string(k_min));
    if (!(k_max >= 0)) bad("k_max", std::to_string(k_max));
    if (!(fit_time >= 0)) bad("fit_time", std::to_string(fit_time));
    if (lag_window != "none" && lag_window != "tukey" && lag_window != "hann")
        bad("lag_window (none|tukey|hann)", lag_window);
    if (!(tukey_fraction > 0 && tukey_fraction <= 1)) bad("tukey_fraction", std::to_string(tukey_fraction));
    if (pad < 1 || pad > 256) bad("pad", std::to_string(pad));
    if (bootstrap < 10) bad("bootstrap (>= 10)", std::to_string(bootstrap));
    if (cl_shells < 1) bad("cl_shells", std::to_string(cl_shells));
    if (!(significance >= 0)) bad("significance", std::to_string(significance));
}

KgapInput kgap_input(const CurrentsResult& r) {
    KgapInput in;
    in.k = r.k;
    in.t = r.t;
    in.c_t = r.c_t_kt;
    in.c_l = r.c_l_kt;
    in.c_t_blocks = r.c_t_kt_blocks;
    in.c_l_blocks = r.c_l_kt_blocks;
    in.n_blocks = static_cast<std::size_t>(r.n_blocks);
    return in;
}

KgapInput kgap_input(const ResultGroup& g) {
    auto get = [&](const char* name) -> std::vector<double> {
        const ResultArray* a = g.find(name);
        if (!a) throw FormatError(std::string("kgap: currents group has no array '") + name + "'");
        return std::get<std::vector<double>>(a->data);
    };
    KgapInput in;
    in.k = get("k");
    in.t = get("t");
    in.c_t = get("c_t_kt");
    in.c_l = get("c_l_kt");
    if (g.find("c_t_kt_blocks")) {
        in.c_t_blocks = get("c_t_kt_blocks");
        in.c_l_blocks = get("c_l_kt_blocks");
        in.n_blocks = g.find("c_t_kt_blocks")->shape.at(0);
    }
    return in;
}

namespace {

// e^{−Γt}[ch + Γ sh] with ch = cos(√s t), sh = sin(√s t)/√s (hyperbolic for s < 0).
double oscillator(double t, double g, double s) {
    double ch, sh;
    const double x = s * t * t;
    if (std::abs(x) < 1e-6) {
        ch = 1 - x / 2 + x * x / 24;
        sh = t * (1 - x / 6 + x * x / 120);
    } else if (s > 0) {
        const double w = std::sqrt(s);
        ch = std::cos(w * t);
        sh = std::sin(w * t) / w;
    } else {
        const double w = std::sqrt(-s);
        ch = std::cosh(w * t);
        sh = std::sinh(w * t) / w;
    }
    return std::exp(-g * t) * (ch + g * sh);
}

double nan() { return std::numeric_limits<double>::quiet_NaN(); }

double stddev(const std::vector<double>& v) {
    double s = 0, s2 = 0;
    std::size_t n = 0;
    for (double x : v)
        if (std::isfinite(x)) {
            s += x;
            s2 += x * x;
            ++n;
        }
    if (n < 2) return nan();
    const double m = s / static_cast<double>(n);
    return std::sqrt(std::max(
        0.0, (s2 / static_cast<double>(n) - m * m) * static_cast<double>(n) / static_cast<double>(n - 1)));
}

struct Spectrum {
    int P;
    detail::RealFft fft;
    detail::FftwBuffer<double> in;
    detail::FftwBuffer<fftw_complex> out;
    std::vector<double> win, y;
    double dt;
    Spectrum(std::size_t L, const KgapParams& p, double dt_)
        : P(static_cast<int>(std::max<std::size_t>(2 * L, 4) * static_cast<std::size_t>(p.pad))),
          fft(P),
          in(static_cast<std::size_t>(P)),
          out(static_cast<std::size_t>(P / 2 + 1)),
          win(L, 1.0),
          y(static_cast<std::size_t>(P / 2 + 1)),
          dt(dt_) {
        for (std::size_t m = 0; m < L; ++m) {
            const double u = static_cast<double>(m) / static_cast<double>(L);  // 0 … 1
            if (p.lag_window == "hann") win[m] = 0.5 * (1 + std::cos(std::numbers::pi * u));
            if (p.lag_window == "tukey" && u > 1 - p.tukey_fraction)
                win[m] =
                    0.5 * (1 + std::cos(std::numbers::pi * (u - (1 - p.tukey_fraction)) / p.tukey_fraction));
        }
    }
    /// ω of the maximum of C(0) + 2 Σ_{m≥1} w(m) C(m) cos(ω m dt).
    double peak(const double* c) {
        const std::size_t L = win.size();
        std::fill(in.p, in.p + P, 0.0);
        in.p[0] = c[0];
        for (std::size_t m = 1; m < L; ++m) in.p[m] = in.p[static_cast<std::size_t>(P) - m] = win[m] * c[m];
        fft.forward(in.p, out.p);
        for (std::size_t f = 0; f < y.size(); ++f) y[f] = out.p[f][0];
        return spectral_peak(y.data(), y.size(), 2 * std::numbers::pi / (P * dt));
    }
};

}  // namespace

std::vector<double> fit_damped_oscillator(const std::vector<double>& t, const double* c, std::size_t n,
                                          const std::vector<double>* start) {
    n = std::min(n, t.size());
    if (n < 4) throw ParameterError("kgap: need at least 4 lags for the oscillator fit");
    std::vector<double> p0;
    if (start && start->size() == 3 && std::isfinite((*start)[0]) && std::isfinite((*start)[1]) &&
        std::isfinite((*start)[2])) {
        p0 = *start;
    } else {
        // coarse grid over (Γ, s), C₀ by linear least squares
        const double dt = t[1] - t[0], tmax = t[n - 1];
        double best = std::numeric_limits<double>::infinity();
        p0 = {c[0], 1.0 / tmax, 0.0};
        std::vector<double> g(n);
        for (int a = 0; a < 40; ++a) {
            const double G = (0.3 / tmax) * std::pow((3.0 / dt) / (0.3 / tmax), a / 39.0);
            for (int b = 0; b < 80; ++b) {
                const double wmax = std::numbers::pi / dt;
                const double s = b < 10 ? -G * G * (1 - b / 10.0) : std::pow(wmax * (b - 9) / 70.0 / 2, 2);
                double sg = 0, gg = 0;
                for (std::size_t m = 0; m < n; ++m) {
                    g[m] = oscillator(t[m], G, s);
                    sg += c[m] * g[m];
                    gg += g[m] * g[m];
                }
                if (!(gg > 0)) continue;
                const double C0 = sg / gg;
                double r = 0;
                for (std::size_t m = 0; m < n; ++m) r += (c[m] - C0 * g[m]) * (c[m] - C0 * g[m]);
                if (r < best) {
                    best = r;
                    p0 = {C0, G, s};
                }
            }
        }
    }
    const double scale = std::max(std::abs(c[0]), 1e-300);
    auto res = levenberg_marquardt(
        [&](std::span<const double> p, std::span<double> r) {
            for (std::size_t m = 0; m < n; ++m) r[m] = (c[m] - p[0] * oscillator(t[m], p[1], p[2])) / scale;
        },
        p0, n);
    return res.p;
}

namespace {

/// Per shell: pole ω² (s), damping Γ, transverse and longitudinal spectral peaks.
struct PerShell {
    std::vector<double> s, g, peak, lpeak;
};
using ShellValue = double (*)(const PerShell&, std::size_t);

/// The fits of one KgapInput: shells (the damped-oscillator fit and the spectral peaks of every
/// k shell, for the whole run and for each bootstrap resample of the time blocks) → errors (the
/// bootstrap spread) → dispersion lines (pole, peak) → c_L.
class KgapFit {
public:
    KgapFit(const KgapInput& in, const KgapParams& p, std::size_t nfit, double dt)
        : in_(in), p_(p), NS_(in.k.size()), L_(in.t.size()), nfit_(nfit), spec_(L_, p, dt), start_(NS_) {}

    KgapResult run() {
        KgapResult r;
        r.params = p_;
        r.k = in_.k;
        full_ = per_shell(in_.c_t, in_.c_l, true);
        bootstrap();
        shell_errors(r);
        const std::vector<double> peak2_err =
            spread([](const PerShell& x, std::size_t s) { return x.peak[s] * x.peak[s]; });
        r.pole = dispersion(
            "pole", [](const PerShell& x, std::size_t s) { return x.s[s]; }, r.omega2_pole_err);
        r.peak = dispersion(
            "peak", [](const PerShell& x, std::size_t s) { return x.peak[s] * x.peak[s]; }, peak2_err);
        r.c_l = slope(full_);
        std::vector<double> v;
        for (const auto& rp : reps_) v.push_back(slope(rp));
        r.c_l_err = stddev(v);
        return r;
    }

private:
    /// Fits every shell of C_T (the first call, on the whole run, gives the later fits their start).
    PerShell per_shell(const std::vector<double>& ct, const std::vector<double>& cl, bool first) {
        return per_shell(ct, cl, first, spec_);
    }
    PerShell per_shell(const std::vector<double>& ct, const std::vector<double>& cl, bool first,
                       Spectrum& spec) {
        PerShell o;
        o.s.resize(NS_);
        o.g.resize(NS_);
        o.peak.resize(NS_);
        o.lpeak.resize(NS_);
        for (std::size_t sh = 0; sh < NS_; ++sh) {
            const double* c = &ct[sh * L_];
            std::vector<double> q = fit_damped_oscillator(in_.t, c, nfit_, first ? nullptr : &start_[sh]);
            if (first) start_[sh] = q;
            o.g[sh] = q[1];
            o.s[sh] = q[2];
            o.peak[sh] = spec.peak(c);
            o.lpeak[sh] = spec.peak(&cl[sh * L_]);
        }
        return o;
    }

    /// p.bootstrap resamples: B blocks drawn with replacement, averaged, fitted. The draws are made
    /// first, in order from one generator; the replicas are then fitted on p.threads threads (each
    /// with its own spectrum transform) into their own slots: the same for any thread count.
    void bootstrap() {
        const std::size_t B = in_.n_blocks, NS = NS_, L = L_;
        std::mt19937_64 rng(p_.seed);
        std::uniform_int_distribution<std::size_t> pick(0, B - 1);
        std::vector<std::size_t> draws(static_cast<std::size_t>(p_.bootstrap) * B);
        for (auto& d : draws) d = pick(rng);
        const int nt = std::max(1, std::min(p_.threads, p_.bootstrap));
        std::vector<std::unique_ptr<Spectrum>> specs(static_cast<std::size_t>(nt));
        reps_.assign(static_cast<std::size_t>(p_.bootstrap), PerShell{});
        detail::parallel_for_each(reps_.size(), nt, [&](std::size_t b, int w) {
            auto& spec = specs[static_cast<std::size_t>(w)];
            if (!spec) spec = std::make_unique<Spectrum>(L, p_, spec_.dt);
            std::vector<double> ct(NS * L, 0.0), cl(NS * L, 0.0);
            for (std::size_t j = 0; j < B; ++j) {
                const std::size_t bb = draws[b * B + j];
                for (std::size_t i = 0; i < NS * L; ++i) {
                    ct[i] += in_.c_t_blocks[bb * NS * L + i] / static_cast<double>(B);
                    cl[i] += in_.c_l_blocks[bb * NS * L + i] / static_cast<double>(B);
                }
            }
            reps_[b] = per_shell(ct, cl, false, *spec);
        });
    }

    /// Per shell: the standard deviation of member over the bootstrap replicas.
    std::vector<double> spread(ShellValue member) const {
        std::vector<double> e(NS_);
        for (std::size_t sh = 0; sh < NS_; ++sh) {
            std::vector<double> v;
            for (const auto& rp : reps_) v.push_back(member(rp, sh));
            e[sh] = stddev(v);
        }
        return e;
    }

    /// The per-shell values of the whole run with their bootstrap errors.
    void shell_errors(KgapResult& r) const {
        r.omega2_pole = full_.s;
        r.omega2_pole_err = spread([](const PerShell& x, std::size_t s) { return x.s[s]; });
        r.gamma = full_.g;
        r.gamma_err = spread([](const PerShell& x, std::size_t s) { return x.g[s]; });
        r.omega_peak = full_.peak;
        r.omega_peak_err = spread([](const PerShell& x, std::size_t s) { return x.peak[s]; });
        r.omega_l_peak = full_.lpeak;
        r.omega_l_peak_err = spread([](const PerShell& x, std::size_t s) { return x.lpeak[s]; });
        for (std::size_t sh = 0; sh < NS_; ++sh) {
            r.omega_pole.push_back(full_.s[sh] >= 0 ? std::sqrt(full_.s[sh]) : nan());
            r.omega_pole_err.push_back(full_.s[sh] > 0 ? r.omega2_pole_err[sh] / (2 * std::sqrt(full_.s[sh]))
                                                       : nan());
        }
    }

    /// c = sqrt(a), τ = 1/(2 sqrt(−b)) (∞ when b ≥ 0) and k_gap = Γ/c of a line y = a x + b.
    static std::array<double, 3> line_params(const LineFit& f) {
        const double c = f.a > 0 ? std::sqrt(f.a) : nan();
        const double G = f.b < 0 ? std::sqrt(-f.b) : 0.0;
        const double tau = G > 0 ? 1 / (2 * G) : std::numeric_limits<double>::infinity();
        return std::array<double, 3>{c, tau, G / c};
    }

    /// The shells used: in [k_min, k_max], propagating (y above `significance` σ), finite.
    std::vector<std::int64_t> used_shells(const std::string& method, ShellValue y_of,
                                          const std::vector<double>& sig) const {
        std::vector<std::int64_t> used(NS_, 0);
        for (std::size_t sh = 0; sh < NS_; ++sh) {
            const double y = y_of(full_, sh);
            const bool in_range = in_.k[sh] >= p_.k_min && (p_.k_max <= 0 || in_.k[sh] <= p_.k_max);
            const bool prop = method == "pole" ? (y > p_.significance * sig[sh])
                                               : (full_.peak[sh] > 0 && y > p_.significance * sig[sh]);
            if (in_range && prop && std::isfinite(y) && sig[sh] > 0) used[sh] = 1;
        }
        return used;
    }

    /// ω² = c²k² − 1/(4τ²) by a weighted line fit in k² over the used shells (sig: the errors of
    /// y), its errors from the same fit on every bootstrap replica.
    DispersionFit dispersion(const std::string& method, ShellValue y_of,
                             const std::vector<double>& sig) const {
        DispersionFit d;
        d.method = method;
        d.used = used_shells(method, y_of, sig);
        std::vector<double> x, yv, s;
        auto collect = [&](const PerShell& ps) {
            x.clear();
            yv.clear();
            s.clear();
            for (std::size_t sh = 0; sh < NS_; ++sh)
                if (d.used[sh]) {
                    x.push_back(in_.k[sh] * in_.k[sh]);
                    yv.push_back(y_of(ps, sh));
                    s.push_back(sig[sh]);
                }
        };
        collect(full_);
        d.n_points = static_cast<std::int64_t>(x.size());
        d.k_min = d.k_max = nan();
        for (std::size_t sh = 0; sh < NS_; ++sh)
            if (d.used[sh]) {
                if (!std::isfinite(d.k_min)) d.k_min = in_.k[sh];
                d.k_max = in_.k[sh];
            }
        if (x.size() < 2) {
            d.c = d.tau = d.k_gap = d.c_err = d.tau_err = d.k_gap_err = nan();
            return d;
        }
        const LineFit f = weighted_line_fit(x, yv, s);
        const auto c = line_params(f);
        d.c = c[0];
        d.tau = c[1];
        d.k_gap = c[2];
        d.chi2 = f.chi2;
        std::vector<double> vc, vt, vk;
        for (const auto& rp : reps_) {
            collect(rp);
            const auto q = line_params(weighted_line_fit(x, yv, s));
            if (!std::isfinite(q[0])) continue;
            vc.push_back(q[0]);
            vt.push_back(q[1]);
            vk.push_back(q[2]);
        }
        d.n_bootstrap_ok = static_cast<std::int64_t>(vc.size());
        d.c_err = stddev(vc);
        d.tau_err = stddev(vt);
        d.k_gap_err = stddev(vk);
        return d;
    }

    /// c_L: slope through the origin of the longitudinal peaks of the lowest shells.
    double slope(const PerShell& x) const {
        const std::size_t ncl = std::min<std::size_t>(NS_, static_cast<std::size_t>(p_.cl_shells));
        double a = 0, b = 0;
        for (std::size_t sh = 0; sh < ncl; ++sh) {
            a += in_.k[sh] * x.lpeak[sh];
            b += in_.k[sh] * in_.k[sh];
        }
        return a / b;
    }

    const KgapInput& in_;
    const KgapParams& p_;
    const std::size_t NS_, L_, nfit_;
    Spectrum spec_;
    std::vector<std::vector<double>> start_;  ///< per shell: the whole run's fit, start of the others
    PerShell full_;
    std::vector<PerShell> reps_;
};

}  // namespace

KgapResult fit_kgap(const KgapInput& in, KgapParams p) {
    p.validate();
    const std::size_t NS = in.k.size(), L = in.t.size();
    if (NS == 0 || L < 4)
        throw InsufficientData(
            "kgap: the currents have " + std::to_string(NS) + " k shell(s) and " + std::to_string(L) +
            " lag(s); the fits need >= 1 shell and >= 4 lags (a longer run or a larger box)");
    if (in.c_t.size() != NS * L) throw FormatError("kgap: c_t_kt has the wrong shape");
    const std::size_t B = in.n_blocks;
    if (B < 2)
        throw InsufficientData(
            "kgap: the block bootstrap needs the per-block C_T(k,t) of >= 2 time blocks; the currents have " +
            std::to_string(B) + " (the run is shorter than 2 Welch segments, or --currents-blocks is < 2)");
    const double dt = in.t[1] - in.t[0];
    std::size_t nfit = L;
    if (p.fit_time > 0)
        nfit = std::clamp<std::size_t>(static_cast<std::size_t>(std::floor(p.fit_time / dt)) + 1, 4, L);
    return KgapFit(in, p, nfit, dt).run();
}

ResultGroup to_group(const KgapResult& r, const Metadata& meta) {
    const std::string L = meta.length_unit, T = meta.time_unit;
    ResultGroup g;
    g.name = "kgap";
    g.add("k", r.k, "1/" + L);
    g.add("omega_pole", r.omega_pole, "rad/" + T);
    g.add("omega_pole_err", r.omega_pole_err, "rad/" + T);
    g.add("omega2_pole", r.omega2_pole, "rad^2/" + T + "^2");
    g.add("omega2_pole_err", r.omega2_pole_err, "rad^2/" + T + "^2");
    g.add("gamma", r.gamma, "1/" + T);
    g.add("gamma_err", r.gamma_err, "1/" + T);
    g.add("omega_peak", r.omega_peak, "rad/" + T);
    g.add("omega_peak_err", r.omega_peak_err, "rad/" + T);
    g.add("omega_l_peak", r.omega_l_peak, "rad/" + T);
    g.add("omega_l_peak_err", r.omega_l_peak_err, "rad/" + T);
    const auto& p = r.params;
    g.attrs["c_l"] = r.c_l;
    g.attrs["c_l_err"] = r.c_l_err;
    g.attrs["c_l_shells"] = std::int64_t{p.cl_shells};
    g.attrs["fit_time"] = p.fit_time;
    g.attrs["lag_window"] = p.lag_window;
    g.attrs["tukey_fraction"] = p.tukey_fraction;
    g.attrs["bootstrap"] = std::int64_t{p.bootstrap};
    g.attrs["seed"] = static_cast<std::int64_t>(p.seed);
    g.attrs["significance"] = p.significance;
    g.attrs["k_min_param"] = p.k_min;
    g.attrs["k_max_param"] = p.k_max;
    g.attrs["model"] = std::string(
        "C_T(k,t) = C0 exp(-G t)[cos(w t) + (G/w) sin(w t)], w^2 = s; dispersion w^2 = c^2 k^2 - 1/(4 "
        "tau^2), k_gap = 1/(2 c tau)");
    g.attrs["units"] = std::string("L=") + L + ", T=" + T;
    for (const DispersionFit* d : {&r.pole, &r.peak}) {
        ResultGroup s;
        s.name = d->method;
        s.attrs["method"] =
            d->method == "pole"
                ? std::string("pole: fit to pole frequencies of the damped-oscillator fits")
                : std::string(
                      "peak: fit to the positions of the C_T(k,w) maxima (expect tau/sqrt2, sqrt2*k_gap)");
        s.attrs["k_gap"] = d->k_gap;
        s.attrs["k_gap_err"] = d->k_gap_err;
        s.attrs["c"] = d->c;
        s.attrs["c_err"] = d->c_err;
        s.attrs["tau"] = d->tau;
        s.attrs["tau_err"] = d->tau_err;
        s.attrs["k_min"] = d->k_min;
        s.attrs["k_max"] = d->k_max;
        s.attrs["chi2"] = d->chi2;
        s.attrs["n_points"] = d->n_points;
        s.attrs["n_bootstrap_ok"] = d->n_bootstrap_ok;
        s.attrs["units"] = std::string("k: 1/") + L + ", c: " + L + "/" + T + ", tau: " + T;
        s.add_int("used", d->used, "1");
        g.groups.push_back(std::move(s));
    }
    return g;
}

}  // namespace vibra::analysis
