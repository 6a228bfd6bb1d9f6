// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/analysis/self_intermediate.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "detail/dynamics_common.hpp"
#include "detail/sincos.hpp"
#include "detail/numeric.hpp"
#include "vibra/core/error.hpp"

namespace vibra::analysis {

using detail::resolve_max_lag;
using detail::stream_params;

namespace {
using detail::kNaN;
}

void FsSums::resize(std::size_t nk, std::size_t nl) {
    n_k = nk;
    n_lags = nl;
    pairs.assign(nl, 0.0);
    s.assign(nk * nl, 0.0);
}

void FsSums::add(const FsSums& o) {
    for (std::size_t i = 0; i < pairs.size() && i < o.pairs.size(); ++i) pairs[i] += o.pairs[i];
    for (std::size_t i = 0; i < s.size() && i < o.s.size(); ++i) s[i] += o.s[i];
}

namespace {
/// Per-thread scratch of accumulate_fs (no allocation per track once warm).
struct FsScratch {
    std::vector<double> m, ph, c, sn, out;
    void size(std::size_t L, std::size_t nl) {
        for (auto* v : {&m, &ph, &c, &sn})
            if (v->size() < L) v->resize(L);
        if (out.size() < nl) out.resize(nl);
    }
};
FsScratch& fs_scratch() {
    thread_local FsScratch s;
    return s;
}
}  // namespace

void accumulate_fs(std::span<const double> x, std::span<const double> y, std::span<const double> k,
                   std::int64_t n_dir, std::size_t max_lag, FsSums& sums, FftCorrelator& corr) {
    const std::size_t L = x.size();
    if (L == 0 || sums.n_lags == 0) return;
    FsScratch& sc = fs_scratch();
    const std::size_t ml = std::min({max_lag, L - 1, sums.n_lags - 1});
    sc.size(L, ml + 1);
    double* m = sc.m.data();
    std::size_t nv = 0;
    for (std::size_t t = 0; t < L; ++t) {
        m[t] = std::isfinite(x[t]) && std::isfinite(y[t]) ? 1.0 : 0.0;
        nv += m[t] > 0;
    }
    if (nv == 0) return;
    const bool gaps = nv < L;
    corr.prepare(L, ml, 3);
    std::span<double> out(sc.out.data(), ml + 1);
    if (gaps) {
        corr.forward(std::span<const double>(m, L), 0);
        corr.add_cross(0, 0, 1.0);
        corr.inverse(out);
        for (std::size_t l = 0; l <= ml; ++l) sums.pairs[l] += std::round(out[l]);
    } else {
        // no gap: L − τ pairs at lag τ (what the rounded mask correlation gives)
        for (std::size_t l = 0; l <= ml; ++l) sums.pairs[l] += static_cast<double>(L - l);
    }
    double *ph = sc.ph.data(), *c = sc.c.data(), *sn = sc.sn.data();
    const double w = 1.0 / static_cast<double>(n_dir);
    for (std::size_t ik = 0; ik < k.size(); ++ik) {
        for (std::int64_t j = 0; j < n_dir; ++j) {
            const double th = std::numbers::pi * static_cast<double>(j) / static_cast<double>(n_dir);
            const double kx = k[ik] * std::cos(th), ky = k[ik] * std::sin(th);
            for (std::size_t t = 0; t < L; ++t) ph[t] = m[t] > 0 ? kx * x[t] + ky * y[t] : 0.0;
            detail::sincos_many(ph, c, sn, L);
            if (gaps)
                for (std::size_t t = 0; t < L; ++t) {
                    c[t] *= m[t];
                    sn[t] *= m[t];
                }
            corr.forward(std::span<const double>(c, L), 1);
            corr.forward(std::span<const double>(sn, L), 2);
            corr.add_power(1, 2, w);
        }
        corr.inverse(out);
        for (std::size_t l = 0; l <= ml; ++l) sums.s[ik * sums.n_lags + l] += out[l];
    }
}

void accumulate_fs_direct(std::span<const double> x, std::span<const double> y, std::span<const double> k,
                          std::int64_t n_dir, std::size_t max_lag, FsSums& sums) {
    const std::size_t L = x.size();
    if (L == 0 || sums.n_lags == 0) return;
    const std::size_t ml = std::min({max_lag, L - 1, sums.n_lags - 1});
    for (std::size_t l = 0; l <= ml; ++l)
        for (std::size_t t = 0; t + l < L; ++t) {
            const double dx = x[t + l] - x[t], dy = y[t + l] - y[t];
            if (std::isnan(dx) || std::isnan(dy)) continue;
            sums.pairs[l] += 1;
            for (std::size_t ik = 0; ik < k.size(); ++ik) {
                double a = 0;
                for (std::int64_t j = 0; j < n_dir; ++j) {
                    const double th = std::numbers::pi * static_cast<double>(j) / static_cast<double>(n_dir);
                    a += std::cos(k[ik] * (std::cos(th) * dx + std::sin(th) * dy));
                }
                sums.s[ik * sums.n_lags + l] += a / static_cast<double>(n_dir);
            }
        }
}

double tau_alpha(std::span<const double> f, double dt) {
    const double e1 = std::exp(-1.0);
    for (std::size_t l = 1; l < f.size(); ++l) {
        if (!std::isfinite(f[l]) || !std::isfinite(f[l - 1])) continue;
        if (f[l] < e1 && f[l - 1] >= e1) {
            const double frac = (f[l - 1] - e1) / (f[l - 1] - f[l]);
            return (static_cast<double>(l - 1) + frac) * dt;
        }
    }
    return kNaN;
}

void FsParams::validate() const {
    for (double v : k)
        if (!(v > 0)) throw ParameterError("fs k must be > 0, got " + std::to_string(v));
    if (directions < 1) throw ParameterError("fs directions must be >= 1, got " + std::to_string(directions));
    if (max_lag < -1)
        throw ParameterError("fs max_lag must be >= 0 (or -1 = auto), got " + std::to_string(max_lag));
    if (drift_window < 1)
        throw ParameterError("fs drift_window must be >= 1, got " + std::to_string(drift_window));
    if (max_cells < 1) throw ParameterError("fs max_cells must be >= 1, got " + std::to_string(max_cells));
}

std::pair<double, std::string> default_fs_k(const TrajectorySource& src, const ResultGroup* sk) {
    if (sk) {
        for (const char* n : {"k_peak", "first_peak_k", "peak_k", "k_first_peak"}) {
            const auto it = sk->attrs.find(n);
            if (it != sk->attrs.end())
                if (const auto* v = std::get_if<double>(&it->second); v && *v > 0)
                    return {*v, std::string("sk attribute ") + n};
        }
        const ResultArray* ka = sk->find("k");
        const ResultArray* sa = sk->find("s");
        if (!sa) sa = sk->find("sk");
        if (ka && sa) {
            const auto* kv = std::get_if<std::vector<double>>(&ka->data);
            const auto* sv = std::get_if<std::vector<double>>(&sa->data);
            if (kv && sv && kv->size() == sv->size() && !kv->empty()) {
                std::size_t best = kv->size();
                for (std::size_t i = 0; i < kv->size(); ++i)
                    if ((*kv)[i] > 0 && std::isfinite((*sv)[i]) &&
                        (best == kv->size() || (*sv)[i] > (*sv)[best]))
                        best = i;
                if (best < kv->size()) return {(*kv)[best], "maximum of sk/s"};
            }
        }
    }
    const Metadata& m = src.meta();
    if (!m.species_diameters.empty() && m.species_diameters[0] > 0)
        return {2 * std::numbers::pi / m.species_diameters[0], "2 pi / d_small"};
    const double area = m.geometry.area();
    const double per_frame = src.n_frames() > 0 ? static_cast<double>(src.n_rows()) / src.n_frames() : 0;
    if (area > 0 && per_frame > 0)
        return {2 * std::numbers::pi / std::sqrt(area / per_frame), "2 pi / sqrt(area per particle)"};
    return {2 * std::numbers::pi, "2 pi / (1 length unit): no diameters or geometry"};
}

FsResult compute_fs(const TrajectorySource& src, const FsParams& p, const ResultGroup* sk) {
    p.validate();
    const Metadata& meta = src.meta();
    std::vector<double> ks = p.k;
    std::string k_source = "option";
    if (ks.empty()) {
        auto [k0, why] = default_fs_k(src, sk);
        ks = {k0};
        k_source = why;
    }
    const std::int64_t T = src.n_frames();
    const std::size_t ml = resolve_max_lag(p.max_lag, T);
    TrackStreamParams tp = stream_params(p, false);
    detail::SpeciesSet<FsSums> sums;
    for (auto* s : sums.all()) s->resize(ks.size(), ml + 1);
    std::vector<FftCorrelator> corr(static_cast<std::size_t>(std::max(1, p.threads)));
    FsResult r;
    r.info = detail::stream_tracks_parallel<FsSums>(
        src, tp, p.threads,
        [&](const Track& tk, FsSums& one, int t) {
            one.resize(ks.size(), ml + 1);
            accumulate_fs(tk.x, tk.y, ks, p.directions, ml, one, corr[static_cast<std::size_t>(t)]);
        },
        [&](const Track& tk, const FsSums& one) {
            sums.total.add(one);
            if (auto* s = sums.of(tk.species)) s->add(one);
        });
    r.dt = detail::mean_frame_interval(r.info, meta);
    r.max_lag = ml;
    r.k = std::move(ks);
    r.k_source = std::move(k_source);
    r.total = std::move(sums.total), r.small = std::move(sums.small), r.large = std::move(sums.large);
    return r;
}

ResultGroup to_group(const FsResult& r, const FsParams& p, const Metadata& meta) {
    const auto& info = r.info;
    const auto& ks = r.k;
    const std::size_t ml = r.max_lag;
    const double dt = r.dt;
    const std::pair<std::string, const FsSums*> parts[3] = {
        {"", &r.total}, {"_small", &r.small}, {"_large", &r.large}};
    ResultGroup g;
    g.name = "fs";
    detail::add_lag_axes(g, ml + 1, dt, meta.time_unit);
    detail::add_stream_attrs(g, info);
    g.add("k", ks, "rad/" + meta.length_unit);
    g.attrs["k_source"] = r.k_source;
    g.attrs["directions"] = p.directions;
    g.attrs["max_lag"] = static_cast<std::int64_t>(ml);
    g.attrs["definition"] =
        std::string("<cos(k.dr)> averaged over pairs and over directions j*pi/directions");
    for (const auto& [suffix, s] : parts) {
        if (suffix != "" && detail::info_count(info, suffix) == 0) continue;
        std::vector<double> f(ks.size() * (ml + 1), kNaN), tau(ks.size());
        for (std::size_t ik = 0; ik < ks.size(); ++ik) {
            for (std::size_t l = 0; l <= ml; ++l)
                if (s->pairs[l] >= std::max(1.0, p.min_pairs))
                    f[ik * (ml + 1) + l] = s->s[ik * (ml + 1) + l] / s->pairs[l];
            tau[ik] = tau_alpha(std::span<const double>(f.data() + ik * (ml + 1), ml + 1), dt);
        }
        g.add2d("fs" + suffix, f, ks.size(), ml + 1, "1");
        g.add("tau_alpha" + suffix, tau, meta.time_unit);
        g.attrs["tau_alpha" + suffix] = tau.front();
    }
    return g;
}

}  // namespace vibra::analysis
