// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/analysis/vacf.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "detail/dynamics_common.hpp"
#include "detail/parallel.hpp"
#include "detail/numeric.hpp"
#include "vibra/core/error.hpp"

namespace vibra::analysis {

using detail::resolve_max_lag;
using detail::stream_params;

namespace {
using detail::kNaN;
}

void VacfSums::resize(std::size_t n) {
    pairs.assign(n, 0.0);
    s.assign(n, 0.0);
}

void VacfSums::add(const VacfSums& o) {
    for (std::size_t k = 0; k < pairs.size() && k < o.pairs.size(); ++k) {
        pairs[k] += o.pairs[k];
        s[k] += o.s[k];
    }
}

void accumulate_vacf(std::span<const double> vx, std::span<const double> vy, std::size_t max_lag,
                     VacfSums& sums, FftCorrelator& corr) {
    if (vx.empty() || vy.size() != vx.size() || sums.pairs.empty()) return;
    // leading and trailing unknown velocities (track ends under finite differences) carry no
    // pair: the series is trimmed to [t0, t1)
    auto ok = [&](std::size_t t) { return std::isfinite(vx[t]) && std::isfinite(vy[t]); };
    std::size_t t0 = 0, t1 = vx.size();
    while (t0 < t1 && !ok(t0)) ++t0;
    while (t1 > t0 && !ok(t1 - 1)) --t1;
    if (t0 == t1) return;
    const std::size_t L = t1 - t0;
    thread_local std::vector<double> m, a, b, out;
    m.resize(L), a.resize(L), b.resize(L);
    std::size_t nv = 0;
    for (std::size_t t = 0; t < L; ++t) {
        const bool v = ok(t0 + t);
        m[t] = v ? 1.0 : 0.0;
        a[t] = v ? vx[t0 + t] : 0.0;
        b[t] = v ? vy[t0 + t] : 0.0;
        nv += v;
    }
    const std::size_t ml = std::min({max_lag, L - 1, sums.pairs.size() - 1});
    const bool gaps = nv < L;  // without gaps pairs(τ) = L − τ: no transform of the mask
    corr.prepare(L, ml, 3);
    corr.forward(a, 1);
    corr.forward(b, 2);
    out.resize(ml + 1);
    if (gaps) {
        corr.forward(m, 0);
        corr.add_cross(0, 0, 1.0);
        corr.inverse(out);
        for (std::size_t k = 0; k <= ml; ++k) sums.pairs[k] += std::round(out[k]);
    } else {
        for (std::size_t k = 0; k <= ml; ++k) sums.pairs[k] += static_cast<double>(L - k);
    }
    corr.add_cross(1, 1, 1.0);
    corr.add_cross(2, 2, 1.0);
    corr.inverse(out);
    for (std::size_t k = 0; k <= ml; ++k) sums.s[k] += out[k];
}

void accumulate_vacf_direct(std::span<const double> vx, std::span<const double> vy, std::size_t max_lag,
                            VacfSums& sums) {
    const std::size_t L = vx.size();
    if (L == 0 || sums.pairs.empty()) return;
    const std::size_t ml = std::min({max_lag, L - 1, sums.pairs.size() - 1});
    for (std::size_t k = 0; k <= ml; ++k)
        for (std::size_t t = 0; t + k < L; ++t) {
            const double p = vx[t] * vx[t + k] + vy[t] * vy[t + k];
            if (std::isnan(p)) continue;
            sums.pairs[k] += 1;
            sums.s[k] += p;
        }
}

std::vector<double> vacf_from_sums(const VacfSums& s, double min_pairs) {
    std::vector<double> out(s.pairs.size(), kNaN);
    for (std::size_t k = 0; k < out.size(); ++k)
        if (s.pairs[k] >= std::max(1.0, min_pairs)) out[k] = s.s[k] / s.pairs[k];
    return out;
}

void VacfParams::validate() const {
    if (max_lag < -1)
        throw ParameterError("vacf max_lag must be >= 0 (or -1 = auto), got " + std::to_string(max_lag));
    if (drift_window < 1)
        throw ParameterError("vacf drift_window must be >= 1, got " + std::to_string(drift_window));
    if (max_cells < 1) throw ParameterError("vacf max_cells must be >= 1, got " + std::to_string(max_cells));
}

VacfResult compute_vacf(const TrajectorySource& src, const VacfParams& p) {
    p.validate();
    const std::int64_t T = src.n_frames();
    const std::size_t ml = resolve_max_lag(p.max_lag, T);
    TrackStreamParams tp = stream_params(p, true);
    VacfResult r;
    r.total.resize(ml + 1);
    r.small.resize(ml + 1);
    r.large.resize(ml + 1);
    // Each track's sums are computed in parallel (one correlator per thread), then added in track
    // order: the same additions as a serial loop, so the result is identical for any --threads.
    const int nt = std::max(1, p.threads);
    std::vector<FftCorrelator> corr(static_cast<std::size_t>(nt));
    constexpr std::size_t kGroup = 64;
    std::vector<VacfSums> ones;
    r.info = stream_track_blocks(src, tp, [&](std::vector<Track>& block) {
        // groups of tracks: memory of a group's sums, not of the block's
        for (std::size_t g0 = 0; g0 < block.size(); g0 += kGroup) {
            const std::size_t gn = std::min(kGroup, block.size() - g0);
            ones.resize(gn);
            detail::parallel_for_each(gn, nt, [&](std::size_t j, int t) {
                const Track& tk = block[g0 + j];
                ones[j].resize(
                    std::min(ml + 1, std::max<std::size_t>(tk.size(), 1)));  // lags the track can fill
                accumulate_vacf(tk.vx, tk.vy, ml, ones[j], corr[static_cast<std::size_t>(t)]);
            });
            for (std::size_t j = 0; j < gn; ++j) {
                r.total.add(ones[j]);
                if (block[g0 + j].species == kSpeciesSmall) r.small.add(ones[j]);
                if (block[g0 + j].species == kSpeciesLarge) r.large.add(ones[j]);
            }
        }
    });
    r.dt = detail::mean_frame_interval(r.info, src.meta());
    return r;
}

ResultGroup to_group(const VacfResult& r, const VacfParams& p, const Metadata& meta) {
    const std::string vunit = "(" + meta.length_unit + "/" + meta.time_unit + ")^2";
    ResultGroup g;
    g.name = "vacf";
    detail::add_lag_axes(g, r.total.pairs.size(), r.dt, meta.time_unit);
    detail::add_stream_attrs(g, r.info);
    g.attrs["max_lag"] = static_cast<std::int64_t>(r.total.pairs.size()) - 1;
    g.attrs["min_pairs"] = p.min_pairs;
    g.attrs["definition"] =
        std::string("<v(t).v(t+lag)> summed over x and y, unbiased (divided by pair count)");
    g.attrs["algorithm"] = std::string("mask-aware FFT autocorrelation per track");
    const std::pair<std::string, const VacfSums*> parts[3] = {
        {"", &r.total}, {"_small", &r.small}, {"_large", &r.large}};
    for (const auto& [suffix, s] : parts) {
        if (suffix != "" && detail::info_count(r.info, suffix) == 0) continue;
        std::vector<std::int64_t> np(s->pairs.size());
        for (std::size_t k = 0; k < np.size(); ++k) np[k] = static_cast<std::int64_t>(s->pairs[k]);
        auto z = vacf_from_sums(*s, p.min_pairs);
        std::vector<double> zn(z.size(), kNaN);
        if (!z.empty() && z[0] > 0)
            for (std::size_t k = 0; k < z.size(); ++k) zn[k] = z[k] / z[0];
        g.add_int("n_pairs" + suffix, std::move(np), "1");
        g.add("vacf" + suffix, std::move(z), vunit);
        g.add("vacf_norm" + suffix, std::move(zn), "1");
    }
    return g;
}

}  // namespace vibra::analysis
