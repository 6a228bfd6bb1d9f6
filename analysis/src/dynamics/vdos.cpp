// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/analysis/vdos.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numbers>

#include "detail/dynamics_common.hpp"
#include "detail/fftw_plan.hpp"
#include "detail/numeric.hpp"
#include "vibra/core/error.hpp"

namespace vibra::analysis {

namespace {
using detail::kNaN;
using detail::kPi;

/// One FFT plan and buffers of length 2M, reused for every segment of a run of the analysis.
struct WelchFft {
    explicit WelchFft(std::size_t L) : fft(static_cast<int>(L)), in(L), out(L / 2 + 1) {}
    detail::RealFft fft;
    detail::FftwBuffer<double> in;
    detail::FftwBuffer<fftw_complex> out;
};

WelchFft& welch_fft(std::size_t L) {
    thread_local std::unique_ptr<WelchFft> cache;
    if (!cache || static_cast<std::size_t>(cache->fft.size()) != L) cache = std::make_unique<WelchFft>(L);
    return *cache;
}

double window_value(VdosWindow w, std::size_t t, std::size_t n) {
    if (w == VdosWindow::none) return 1.0;
    const double s = std::sin(kPi * (static_cast<double>(t) + 0.5) / static_cast<double>(n));
    return s * s;  // Hann, sampled at the bin centres (never exactly 0)
}

/// Adds weight·|FFT(w·v)|² of one segment [a, a+n) of one component, zero-padded to 2M.
void add_segment(std::span<const double> v, std::size_t a, std::size_t n, VdosWindow win, double weight,
                 WelchFft& f, std::vector<double>& power) {
    const std::size_t L = static_cast<std::size_t>(f.fft.size());
    for (std::size_t t = 0; t < L; ++t) f.in.p[t] = t < n ? window_value(win, t, n) * v[a + t] : 0.0;
    f.fft.forward(f.in.p, f.out.p);
    for (std::size_t j = 0; j < power.size(); ++j)
        power[j] += weight * (f.out.p[j][0] * f.out.p[j][0] + f.out.p[j][1] * f.out.p[j][1]);
}

/// The parts (total, small, large) of the output, as raw (not yet normalised) D on one grid.
using VdosPart = VdosResult::Part;

/// Transfer correction, normalisation, reduced VDOS and the mass-weighted total: the same for
/// both routes.
void add_parts(ResultGroup& g, std::vector<VdosPart>& parts, const std::vector<double>& omega,
               const VdosParams& p, VelocityScheme scheme, double dt, const Metadata& meta) {
    const std::string Tu = meta.time_unit;
    const bool correct =
        p.transfer_correction && (scheme == VelocityScheme::central || scheme == VelocityScheme::forward);
    g.attrs["transfer_correction"] = std::string(correct ? to_string(scheme) : "none");
    g.attrs["transfer_cutoff"] = p.transfer_cutoff;
    g.add("omega", omega, "rad/" + Tu);
    const double wn = kPi / dt;
    for (auto& part : parts) {
        auto& d = part.d;
        if (correct)
            for (std::size_t j = 0; j < d.size(); ++j)
                if (omega[j] <= p.transfer_cutoff * wn) d[j] /= transfer_function_sq(scheme, omega[j], dt);
        double integral = 0;
        for (std::size_t j = 1; j < d.size(); ++j)
            integral += 0.5 * (d[j] + d[j - 1]) * (omega[j] - omega[j - 1]);
        g.attrs["integral_before_normalisation" + part.suffix] = integral;
        if (integral > 0)
            for (double& v : d) v /= integral;
        std::vector<double> red(d.size(), kNaN);
        for (std::size_t j = 1; j < d.size(); ++j) red[j] = d[j] / omega[j];
        g.add("vdos" + part.suffix, d, Tu + "/rad");
        g.add("vdos_reduced" + part.suffix, red, Tu + "^2/rad^2");
    }
    // mass-weighted (kinetic-energy-weighted) total from the species parts:
    // D_mass = Σ_a m_a Σv_a² D_a / Σ_a m_a Σv_a²  (docs/analysis-dynamics.md, "vdos"), m ∝ d²
    const VdosPart* s = nullptr;
    const VdosPart* l = nullptr;
    for (const auto& part : parts) {
        if (part.suffix == "_small") s = &part;
        if (part.suffix == "_large") l = &part;
    }
    if (!s || !l) return;
    const double ws = species_mass(meta, 0) * s->weight, wl = species_mass(meta, 1) * l->weight;
    std::vector<double> dm(s->d.size()), rm(s->d.size(), kNaN);
    for (std::size_t j = 0; j < dm.size(); ++j) dm[j] = (ws * s->d[j] + wl * l->d[j]) / (ws + wl);
    for (std::size_t j = 1; j < dm.size(); ++j) rm[j] = dm[j] / omega[j];
    g.add("vdos_mass", dm, Tu + "/rad");
    g.add("vdos_reduced_mass", rm, Tu + "^2/rad^2");
    g.attrs["mass_weight_small"] = ws / (ws + wl);
}

void add_common_attrs(ResultGroup& g, const VdosParams& p) {
    g.attrs["weighting"] = std::string(
        "vdos*: number-weighted (per particle); vdos_mass: species parts weighted by m_a sum v_a^2, m ~ d^2");
    g.attrs["normalisation"] = std::string("int_0^omega_Nyquist D domega = 1 (trapezoid), per part");
    (void)p;
}

VdosResult welch_vdos(const TrajectorySource& src, const VdosParams& p) {
    const std::int64_t T = src.n_frames();
    const std::int64_t half = T / 2;
    const std::int64_t M =
        p.vacf.max_lag < 0 ? std::min<std::int64_t>(half, 128) : std::min(p.vacf.max_lag, half);
    if (M < 1)
        throw InsufficientData("vdos: " + std::to_string(T) +
                               " frame(s): a spectrum needs at least 2 frames of velocities");
    const auto min_run = static_cast<std::size_t>(p.min_run);
    detail::SpeciesSet<WelchSums> sums;
    for (auto* s : sums.all()) s->power.assign(static_cast<std::size_t>(M) + 1, 0.0);
    VdosResult r;
    r.info = detail::stream_tracks_parallel<WelchSums>(
        src, detail::stream_params(p.vacf, true), p.vacf.threads,
        [&](const Track& tk, WelchSums& one, int) {
            one = WelchSums{};
            one.power.assign(static_cast<std::size_t>(M) + 1, 0.0);
            accumulate_welch(tk.vx, tk.vy, static_cast<std::size_t>(M), p.window, min_run, one);
        },
        [&](const Track& tk, const WelchSums& one) {
            sums.total.add(one);
            if (auto* s = sums.of(tk.species)) s->add(one);
        });
    if (!(sums.total.energy > 0))
        throw InsufficientData("vdos: no run of >= " + std::to_string(min_run) +
                               " consecutive frames with finite, non-zero velocities (" + std::to_string(T) +
                               " frames)");
    r.dt = detail::mean_frame_interval(r.info, src.meta());
    r.max_lag = r.max_lag_used = M;
    for (auto& [suffix, s] : sums.named()) {
        if (suffix != "" && detail::info_count(r.info, suffix) == 0) continue;
        r.counted.push_back({suffix, s->segments, s->samples});
        if (!(s->energy > 0)) continue;
        r.parts.push_back({suffix, vdos_from_welch(*s, r.dt), s->energy});
    }
    r.omega = vdos_omega(static_cast<std::size_t>(M), r.dt);
    return r;
}

VdosResult vacf_vdos(const TrajectorySource& src, const VdosParams& p) {
    const bool biased = p.estimator == VdosEstimator::biased;
    const VacfResult v = compute_vacf(src, p.vacf);
    VdosResult r;
    r.info = v.info;
    r.dt = v.dt;
    r.max_lag = static_cast<std::int64_t>(v.total.pairs.size()) - 1;
    // normalised VACFs of the present parts, truncated to a common length (the shortest run of
    // finite lags) so that every part shares one omega grid
    const std::pair<std::string, const VacfSums*> sums[3] = {
        {"", &v.total}, {"_small", &v.small}, {"_large", &v.large}};
    std::vector<std::pair<std::string, std::vector<double>>> zs;
    std::vector<double> weights;
    std::size_t n = std::numeric_limits<std::size_t>::max();
    for (const auto& [suffix, s] : sums) {
        if (suffix != "" && detail::info_count(v.info, suffix) == 0) continue;
        std::vector<double> z;
        if (biased) {
            if (s->s.empty() || !(s->s[0] > 0)) continue;
            z.resize(s->s.size());
            for (std::size_t k = 0; k < z.size(); ++k) z[k] = s->s[k] / s->s[0];  // lags without pairs add 0
        } else {
            z = vacf_from_sums(*s, p.vacf.min_pairs);
            if (z.empty() || !(z[0] > 0)) continue;
            for (double& x : z) x /= z.front();
        }
        std::size_t k = 0;
        while (k < z.size() && std::isfinite(z[k])) ++k;
        n = std::min(n, k);
        zs.emplace_back(suffix, std::move(z));
        weights.push_back(s->s.empty() ? 0.0 : s->s[0]);
    }
    if (zs.empty() || n < 2)
        throw InsufficientData("vdos: fewer than 2 finite VACF lags (" + std::to_string(src.n_frames()) +
                               " frames)");
    for (std::size_t i = 0; i < zs.size(); ++i) {
        zs[i].second.resize(n);
        r.parts.push_back({zs[i].first, vdos_from_vacf(zs[i].second, r.dt, p.window), weights[i]});
    }
    r.max_lag_used = static_cast<std::int64_t>(n - 1);
    r.omega = vdos_omega(n - 1, r.dt);
    return r;
}

}  // namespace

VdosWindow vdos_window_from_string(const std::string& s, const std::string& flag) {
    if (s == "hann" || s.empty()) return VdosWindow::hann;
    if (s == "none") return VdosWindow::none;
    throw ParameterError("--" + flag + ": '" + s + "' is not one of hann, none");
}

VdosEstimator vdos_estimator_from_string(const std::string& s, const std::string& flag) {
    if (s == "welch" || s.empty()) return VdosEstimator::welch;
    if (s == "unbiased") return VdosEstimator::unbiased;
    if (s == "biased") return VdosEstimator::biased;
    throw ParameterError("--" + flag + ": '" + s + "' is not one of welch, unbiased, biased");
}

std::vector<double> vdos_omega(std::size_t M, double dt) {
    std::vector<double> w(M + 1);
    for (std::size_t j = 0; j <= M; ++j)
        w[j] = M ? static_cast<double>(j) * kPi / (static_cast<double>(M) * dt) : 0.0;
    return w;
}

void WelchSums::add(const WelchSums& o) {
    if (power.size() < o.power.size()) power.resize(o.power.size(), 0.0);
    for (std::size_t j = 0; j < o.power.size(); ++j) power[j] += o.power[j];
    energy += o.energy;
    segments += o.segments;
    samples += o.samples;
}

void accumulate_welch(std::span<const double> vx, std::span<const double> vy, std::size_t M, VdosWindow win,
                      std::size_t min_run, WelchSums& sums) {
    if (M == 0 || vx.size() != vy.size()) return;
    const std::size_t L = 2 * M;
    if (sums.power.size() != M + 1) sums.power.assign(M + 1, 0.0);
    WelchFft& f = welch_fft(L);
    const std::size_t T = vx.size();
    std::size_t t = 0;
    while (t < T) {
        if (!(std::isfinite(vx[t]) && std::isfinite(vy[t]))) {
            ++t;
            continue;
        }
        const std::size_t a = t;
        while (t < T && std::isfinite(vx[t]) && std::isfinite(vy[t])) ++t;
        const std::size_t n = t - a;
        if (n < std::max<std::size_t>(min_run, 2)) continue;
        std::vector<std::pair<std::size_t, std::size_t>> segs;  // (start, length)
        if (n < L) {
            segs.emplace_back(a, n);
        } else {
            std::size_t s = a;
            for (; s + L <= a + n; s += M) segs.emplace_back(s, L);
            if (segs.back().first + L < a + n) segs.emplace_back(a + n - L, L);
        }
        double covered = 0;
        for (const auto& sg : segs) covered += static_cast<double>(sg.second);
        const double f_run = static_cast<double>(n) / covered;
        for (const auto& [s0, ns] : segs) {
            double w2 = 0;
            for (std::size_t k = 0; k < ns; ++k) w2 += std::pow(window_value(win, k, ns), 2);
            const double g = f_run * static_cast<double>(ns) / w2;
            add_segment(vx, s0, ns, win, g, f, sums.power);
            add_segment(vy, s0, ns, win, g, f, sums.power);
        }
        for (std::size_t k = a; k < a + n; ++k) sums.energy += vx[k] * vx[k] + vy[k] * vy[k];
        sums.segments += static_cast<std::int64_t>(segs.size());
        sums.samples += static_cast<std::int64_t>(n);
    }
}

std::vector<double> vdos_from_welch(const WelchSums& s, double dt) {
    std::vector<double> d(s.power.size(), kNaN);
    if (!(s.energy > 0)) return d;
    for (std::size_t j = 0; j < d.size(); ++j) d[j] = dt / kPi * s.power[j] / s.energy;
    return d;
}

std::vector<double> vdos_from_vacf(std::span<const double> z, double dt, VdosWindow win) {
    std::size_t n = 0;
    while (n < z.size() && std::isfinite(z[n])) ++n;
    if (n < 2) return std::vector<double>(n, kNaN);
    const std::size_t M = n - 1;
    // even extension of y_m = Ẑ_m w_m, length 2M; its real FFT gives
    // Y_j = y_0 + (−1)^j y_M + 2 Σ_{m=1}^{M−1} y_m cos(π j m / M), and D_j = (Δt/π)·Y_j.
    const std::size_t N = 2 * M;
    detail::RealFft fft(static_cast<int>(N));
    detail::FftwBuffer<double> in(N);
    detail::FftwBuffer<fftw_complex> out(N / 2 + 1);
    for (std::size_t m = 0; m <= M; ++m) {
        const double w =
            win == VdosWindow::hann ? std::pow(std::cos(kPi * static_cast<double>(m) / (2.0 * M)), 2) : 1.0;
        in.p[m] = z[m] * w;
        if (m > 0 && m < M) in.p[N - m] = in.p[m];
    }
    fft.forward(in.p, out.p);
    std::vector<double> d(M + 1);
    for (std::size_t j = 0; j <= M; ++j) d[j] = dt / kPi * out.p[j][0];
    return d;
}

double transfer_function_sq(VelocityScheme s, double omega, double dt) {
    double a = 0;
    if (s == VelocityScheme::central)
        a = omega * dt;
    else if (s == VelocityScheme::forward)
        a = omega * dt / 2;
    else
        return 1.0;
    if (a == 0) return 1.0;
    const double h = std::sin(a) / a;
    return h * h;
}

void VdosParams::validate() const {
    vacf.validate();
    if (!(transfer_cutoff > 0 && transfer_cutoff <= 1))
        throw ParameterError("vdos transfer_cutoff must be in (0, 1], got " +
                             std::to_string(transfer_cutoff));
    if (min_run < 2) throw ParameterError("vdos min_run must be >= 2, got " + std::to_string(min_run));
}

VdosResult compute_vdos(const TrajectorySource& src, const VdosParams& p) {
    p.validate();
    return p.estimator == VdosEstimator::welch ? welch_vdos(src, p) : vacf_vdos(src, p);
}

ResultGroup to_group(const VdosResult& r, const VdosParams& p, const Metadata& meta) {
    ResultGroup g;
    g.name = "vdos";
    detail::add_stream_attrs(g, r.info);
    add_common_attrs(g, p);
    if (p.estimator == VdosEstimator::welch) {
        g.attrs["estimator"] = std::string(
            "welch: D(omega) ~ sum_i |FT of w x v_i over a segment|^2, segments of 2 max_lag frames, 50% "
            "overlap; non-negative");
        g.attrs["window"] =
            std::string(p.window == VdosWindow::hann ? "hann: sin^2 on each velocity segment" : "none");
        g.attrs["definition"] = std::string(
            "D(omega) = (dt/pi) sum_segments g |v~(omega)|^2 / sum v^2, g = (run samples/segment samples) "
            "n_s "
            "/ sum w^2; "
            "Wiener-Khinchin transform of the VACF");
        g.attrs["segment_frames"] = 2 * r.max_lag;
        g.attrs["min_run"] = static_cast<std::int64_t>(static_cast<std::size_t>(p.min_run));
        for (const auto& c : r.counted) {
            g.attrs["segments" + c.suffix] = c.segments;
            g.attrs["samples" + c.suffix] = c.samples;
        }
    } else {
        const bool biased = p.estimator == VdosEstimator::biased;
        g.attrs["window"] =
            std::string(p.window == VdosWindow::hann ? "hann: cos^2(pi t/(2 t_max))" : "none");
        g.attrs["definition"] = std::string(
            "D(omega) = (2/pi) int_0^tmax Z(t)/Z(0) w(t) cos(omega t) dt, normalised to int D domega = 1");
        g.attrs["estimator"] =
            std::string(biased ? "biased: sum v.v(lag) / sum v.v(0)" : "unbiased: mean over pairs per lag");
    }
    g.attrs["max_lag"] = r.max_lag;
    g.attrs["max_lag_used"] = r.max_lag_used;
    auto parts = r.parts;
    add_parts(g, parts, r.omega, p, r.info.scheme, r.dt, meta);
    return g;
}

}  // namespace vibra::analysis
