// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/analysis/vdos.hpp"

#include <cmath>
#include <limits>
#include <numbers>

#include "detail/dynamics_common.hpp"
#include "detail/fftw_plan.hpp"
#include "vibra/core/error.hpp"

namespace vibra::analysis {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kPi = std::numbers::pi;
}  // namespace

VdosWindow vdos_window_from_string(const std::string& s, const std::string& flag) {
    if (s == "hann" || s.empty()) return VdosWindow::hann;
    if (s == "none") return VdosWindow::none;
    throw ParameterError("--" + flag + ": '" + s + "' is not one of hann, none");
}

std::vector<double> vdos_omega(std::size_t M, double dt) {
    std::vector<double> w(M + 1);
    for (std::size_t j = 0; j <= M; ++j) w[j] = M ? static_cast<double>(j) * kPi / (static_cast<double>(M) * dt) : 0.0;
    return w;
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
        const double w = win == VdosWindow::hann ? std::pow(std::cos(kPi * static_cast<double>(m) / (2.0 * M)), 2) : 1.0;
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
    if (s == VelocityScheme::central) a = omega * dt;
    else if (s == VelocityScheme::forward) a = omega * dt / 2;
    else return 1.0;
    if (a == 0) return 1.0;
    const double h = std::sin(a) / a;
    return h * h;
}

void VdosParams::validate() const {
    vacf.validate();
    if (!(transfer_cutoff > 0 && transfer_cutoff <= 1))
        throw ParameterError("vdos transfer_cutoff must be in (0, 1], got " + std::to_string(transfer_cutoff));
}

ResultGroup vdos_analysis(const TrajectorySource& src, const VdosParams& p) {
    p.validate();
    const SpeciesVacf r = compute_vacf(src, p.vacf);
    const Metadata& meta = src.meta();
    ResultGroup g;
    g.name = "vdos";
    detail::add_stream_attrs(g, r.info);
    const std::string Tu = meta.time_unit;
    const bool correct = p.transfer_correction && (r.info.scheme == VelocityScheme::central ||
                                                   r.info.scheme == VelocityScheme::forward);
    g.attrs["window"] = std::string(p.window == VdosWindow::hann ? "hann: cos^2(pi t/(2 t_max))" : "none");
    g.attrs["definition"] =
        std::string("D(omega) = (2/pi) int_0^tmax Z(t)/Z(0) w(t) cos(omega t) dt, normalised to int D domega = 1");
    g.attrs["transfer_correction"] = std::string(correct ? to_string(r.info.scheme) : "none");
    g.attrs["transfer_cutoff"] = p.transfer_cutoff;
    g.attrs["estimator"] = std::string(p.biased ? "biased: sum v.v(lag) / sum v.v(0)" : "unbiased: mean over pairs per lag");
    g.attrs["max_lag"] = static_cast<std::int64_t>(r.total.pairs.size()) - 1;
    g.attrs["weighting"] = std::string("vdos*: number-weighted (per particle); vdos_mass: species parts weighted by m_a sum v_a^2, m ~ d^2");
    // normalised VACFs of the present parts, truncated to a common length (the shortest run of
    // finite lags) so that every part shares one omega grid
    const std::pair<std::string, const VacfSums*> parts[3] = {{"", &r.total}, {"_small", &r.small}, {"_large", &r.large}};
    std::vector<std::pair<std::string, std::vector<double>>> zs;
    std::size_t n = std::numeric_limits<std::size_t>::max();
    for (const auto& [suffix, s] : parts) {
        if (suffix != "" && detail::info_count(r.info, suffix) == 0) continue;
        std::vector<double> z;
        if (p.biased) {
            if (s->s.empty() || !(s->s[0] > 0)) continue;
            z.resize(s->s.size());
            for (std::size_t k = 0; k < z.size(); ++k) z[k] = s->s[k] / s->s[0];  // lags without pairs add 0
        } else {
            z = vacf_from_sums(*s, p.vacf.min_pairs);
            if (z.empty() || !(z[0] > 0)) continue;
            for (double& v : z) v /= z.front();
        }
        std::size_t k = 0;
        while (k < z.size() && std::isfinite(z[k])) ++k;
        n = std::min(n, k);
        zs.emplace_back(suffix, std::move(z));
    }
    bool first = zs.empty() || n < 2;
    if (!first) {
        const auto omega = vdos_omega(n - 1, r.dt);
        g.add("omega", omega, "rad/" + Tu);
        const double wn = kPi / r.dt;
        for (auto& [suffix, z] : zs) {
            z.resize(n);
            auto d = vdos_from_vacf(z, r.dt, p.window);
            if (correct)
                for (std::size_t j = 0; j < d.size(); ++j)
                    if (omega[j] <= p.transfer_cutoff * wn) d[j] /= transfer_function_sq(r.info.scheme, omega[j], r.dt);
            double integral = 0;
            for (std::size_t j = 1; j < d.size(); ++j) integral += 0.5 * (d[j] + d[j - 1]) * (omega[j] - omega[j - 1]);
            g.attrs["integral_before_normalisation" + suffix] = integral;
            if (integral > 0)
                for (double& v : d) v /= integral;
            std::vector<double> red(d.size(), kNaN);
            for (std::size_t j = 1; j < d.size(); ++j) red[j] = d[j] / omega[j];
            g.add("vdos" + suffix, d, Tu + "/rad");
            g.add("vdos_reduced" + suffix, red, Tu + "^2/rad^2");
        }
        g.attrs["max_lag_used"] = static_cast<std::int64_t>(n - 1);
        // mass-weighted (kinetic-energy-weighted) total from the species parts:
        // D_mass = Σ_a m_a Σv_a² D_a / Σ_a m_a Σv_a²  (methods.md §4.1), m ∝ d²
        const ResultArray* ds = g.find("vdos_small");
        const ResultArray* dl = g.find("vdos_large");
        if (ds && dl) {
            const double ws = species_mass(meta, 0) * r.small.s[0], wl = species_mass(meta, 1) * r.large.s[0];
            const auto& a = std::get<std::vector<double>>(ds->data);
            const auto& b = std::get<std::vector<double>>(dl->data);
            std::vector<double> dm(a.size()), rm(a.size(), kNaN);
            for (std::size_t j = 0; j < a.size(); ++j) dm[j] = (ws * a[j] + wl * b[j]) / (ws + wl);
            for (std::size_t j = 1; j < a.size(); ++j) rm[j] = dm[j] / omega[j];
            g.add("vdos_mass", dm, Tu + "/rad");
            g.add("vdos_reduced_mass", rm, Tu + "^2/rad^2");
            g.attrs["mass_weight_small"] = ws / (ws + wl);
        }
    }
    if (first) g.add("omega", {}, "rad/" + Tu);
    return g;
}

}  // namespace vibra::analysis
