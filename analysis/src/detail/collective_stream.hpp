// SPDX-License-Identifier: GPL-3.0-or-later
// Shared plumbing of the collective-motion analyses (field, defects, correlations, spectra,
// evolution): the common flags (<name>-lags, -stride, -sigma, -spacing, -min-weight, -drift,
// -quantity), their resolution to numbers (defaults from the data: σ = one mean interparticle
// spacing, grid spacing = σ), and the streaming driver that reads frames block by block and
// keeps only the last max(lag)+1 frames.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "detail/parallel.hpp"
#include "vibra/analysis/displacement_field.hpp"
#include "vibra/analysis/registry.hpp"
#include "vibra/core/error.hpp"

namespace vibra::analysis::detail {

/// The flags every collective analysis has, prefixed with its name.
inline std::vector<AnalysisOption> field_options(const std::string& n, const std::string& stride_default) {
    return {
        {n + "-lags", "lags Δt of the displacement field u = r(t+Δt) − r(t), frames, comma-separated", "1,10",
         OptionType::list, 1, kInf},
        {n + "-stride", "use start frames t = 0, s, 2s, … (frames; empty = about 100 start frames)",
         stride_default, OptionType::integer, 1, kInf},
        {n + "-sigma", "Gaussian coarse-graining width σ, length unit (empty = 1 mean interparticle spacing)",
         "", OptionType::number, 0, kInf},
        {n + "-spacing", "grid spacing, length unit (empty = σ)", "", OptionType::number, 0, kInf},
        {n + "-min-weight", "mask grid nodes whose kernel weight sum Σw is below this (particles)", "0.5",
         OptionType::number, 0, kInf},
        {n + "-drift",
         "drift removed from the displacements: none | mean",
         "none",
         OptionType::text,
         -kInf,
         kInf,
         {"none", "mean"}},
        {n + "-quantity",
         "field: displacement (u, length unit) | velocity (u/Δt)",
         "displacement",
         OptionType::text,
         -kInf,
         kInf,
         {"displacement", "velocity"}},
    };
}

using vibra::analysis::FieldSettings;  // displacement_field.hpp

inline FieldSettings resolve_field_settings(const AnalysisContext& ctx, const std::string& n) {
    FieldSettings s;
    s.name = n;
    const auto& src = ctx.source;
    const auto& meta = src.meta();
    s.L = meta.length_unit, s.T = meta.time_unit;
    s.n_frames = src.n_frames();
    for (double v : ctx.numbers(n + "-lags")) {
        if (!(v >= 1) || v != std::floor(v) || v > 1e12)
            throw ParameterError("--" + n + "-lags: lags must be positive integers (frames), got " +
                                 std::to_string(v));
        s.lags.push_back(static_cast<std::int64_t>(v));
    }
    std::sort(s.lags.begin(), s.lags.end());
    s.lags.erase(std::unique(s.lags.begin(), s.lags.end()), s.lags.end());
    if (s.lags.empty()) throw ParameterError("--" + n + "-lags: give at least one lag");
    if (s.lags.front() >= s.n_frames)
        throw ParameterError("--" + n + "-lags: the smallest lag " + std::to_string(s.lags.front()) +
                             " needs more than the " + std::to_string(s.n_frames) + " frames of the input");
    const std::int64_t span = s.n_frames - s.lags.front();
    if (ctx.is_set(n + "-stride")) {
        s.stride = ctx.integer(n + "-stride");
        if (s.stride < 1)
            throw ParameterError("--" + n + "-stride must be ≥ 1, got " + std::to_string(s.stride));
    } else {
        s.stride = std::max<std::int64_t>(1, (span + 99) / 100);
    }
    s.n_times = (span + s.stride - 1) / s.stride;
    s.drift = field_drift_from_string(ctx.text(n + "-drift"));
    const auto& q = ctx.text(n + "-quantity");
    if (q != "displacement" && q != "velocity")
        throw ParameterError("--" + n + "-quantity: '" + q + "' is not one of displacement, velocity");
    s.velocity = q == "velocity";
    s.geometry = meta.geometry;
    // First non-empty frame: particle count and, for unbounded data, the region.
    Trajectory first;
    for (std::int64_t f = 0; f < s.n_frames; ++f) {
        first = src.read_frames(f, 1);
        if (!first.rows.empty()) break;
    }
    if (first.rows.empty()) throw Error(meta.source.file + ": no particles in any frame");
    s.region = field_region(s.geometry, first.rows.x, first.rows.y);
    const double area =
        s.geometry.kind == GeometryKind::unbounded || s.geometry.kind == GeometryKind::window_circle
            ? (s.geometry.kind == GeometryKind::window_circle
                   ? s.geometry.area()
                   : (s.region.x1 - s.region.x0) * (s.region.y1 - s.region.y0))
            : s.geometry.area();
    s.mean_spacing = mean_spacing(area, first.rows.size());
    s.cg.sigma = ctx.is_set(n + "-sigma") ? ctx.number(n + "-sigma") : s.mean_spacing;
    s.cg.min_weight = ctx.number(n + "-min-weight");
    s.cg.validate();
    s.spacing = ctx.is_set(n + "-spacing") ? ctx.number(n + "-spacing") : s.cg.sigma;
    s.grid = make_grid(s.region, s.spacing);
    return s;
}

/// Parameters as group attributes.
inline void record_field_settings(const FieldSettings& s, Attributes& a) {
    a["lags_frames"] = s.lags;
    a["stride_frames"] = s.stride;
    a["sigma"] = s.cg.sigma;
    a["kernel_cutoff_sigmas"] = s.cg.cutoff;
    a["min_weight"] = s.cg.min_weight;
    a["grid_spacing_x"] = s.grid.hx;
    a["grid_spacing_y"] = s.grid.hy;
    a["grid_nx"] = static_cast<std::int64_t>(s.grid.nx);
    a["grid_ny"] = static_cast<std::int64_t>(s.grid.ny);
    a["mean_spacing"] = s.mean_spacing;
    a["drift"] = std::string(s.drift == FieldDrift::none ? "none" : "mean");
    a["quantity"] = std::string(s.velocity ? "velocity" : "displacement");
    a["field_position"] = std::string("start position r(t)");
    a["length_unit"] = s.L;
    a["time_unit"] = s.T;
}

/// Calls fn(lag_index, time_index, displacements) for every start frame t_k = k·stride and every
/// lag with t_k + lag < T, in increasing end frame. Velocity mode divides u by the lag time.
///
/// With threads > 1 the (lag, start) pairs are taken in batches of 4·threads: map(lag, time,
/// displacements, slot) for each pair of a batch in parallel (slot < 4·threads: the pair's place
/// in its batch, so map writes only to storage of its own slot or of its own pair), then
/// reduce(lag, time, displacements, slot) for each, in stream order on the calling thread.
/// Whatever reduce sums is summed in the same order for any thread count (identical results).
using DisplacementFn = std::function<void(std::size_t, std::int64_t, Displacements&, std::size_t)>;
inline void stream_displacements(const TrajectorySource& src, const FieldSettings& s,
                                 const DisplacementFn& map, const DisplacementFn& reduce, int threads) {
    const std::int64_t T = src.n_frames(), Lmax = s.lags.back();
    const std::int64_t block = frames_per_block(src, 1 << 20);
    std::deque<FrameSnapshot> ring;  // frames [f − Lmax, f]
    const auto& fc = src.frame_columns();
    struct Pair {
        std::size_t lag;
        std::int64_t start;
        Displacements d;
    };
    std::vector<Pair> batch;
    const std::size_t batch_size = 4 * static_cast<std::size_t>(std::max(1, threads));
    const auto run_batch = [&] {
        parallel_for_each(batch.size(), threads,
                          [&](std::size_t j, int) { map(batch[j].lag, batch[j].start, batch[j].d, j); });
        if (reduce)
            for (std::size_t j = 0; j < batch.size(); ++j)
                reduce(batch[j].lag, batch[j].start, batch[j].d, j);
        batch.clear();
    };
    for (std::int64_t b0 = 0; b0 < T; b0 += block) {
        const Trajectory tr = src.read_frames(b0, block);
        for (std::int64_t f = b0; f < b0 + tr.index.n_frames(); ++f) {
            ring.push_back(snapshot_of(tr, f));
            while (ring.size() > static_cast<std::size_t>(Lmax + 1)) ring.pop_front();
            for (std::size_t li = 0; li < s.lags.size(); ++li) {
                const std::int64_t t = f - s.lags[li];
                if (t < 0 || t % s.stride != 0) continue;
                const auto& a = ring[ring.size() - 1 - static_cast<std::size_t>(s.lags[li])];
                Displacements d = displacements(a, ring.back(), s.geometry, s.drift);
                if (s.velocity) {
                    const double dt = frame_time(src.meta(), fc, 0, f) - frame_time(src.meta(), fc, 0, t);
                    if (!(dt > 0))
                        throw Error(src.meta().source.file + ": frame " + std::to_string(f) +
                                    ": non-increasing frame times");
                    for (std::size_t i = 0; i < d.size(); ++i) d.ux[i] /= dt, d.uy[i] /= dt;
                }
                batch.push_back({li, t / s.stride, std::move(d)});
                if (batch.size() == batch_size) run_batch();
            }
        }
    }
    run_batch();
}

/// One thread, fn(lag_index, time_index, displacements) per pair in stream order.
inline void stream_displacements(const TrajectorySource& src, const FieldSettings& s,
                                 const std::function<void(std::size_t, std::int64_t, Displacements&)>& fn) {
    stream_displacements(
        src, s, [&](std::size_t li, std::int64_t k, Displacements& d, std::size_t) { fn(li, k, d); }, {}, 1);
}

inline GridField field_of(const FieldSettings& s, const Displacements& d) {
    return coarse_grain(s.grid, d.x, d.y, d.ux, d.uy, s.region, s.cg);
}

inline std::vector<double> lag_times(const TrajectorySource& src, const FieldSettings& s) {
    std::vector<double> v;
    for (auto L : s.lags)
        v.push_back(frame_time(src.meta(), src.frame_columns(), 0, L) -
                    frame_time(src.meta(), src.frame_columns(), 0, 0));
    return v;
}

inline std::vector<double> start_times(const TrajectorySource& src, const FieldSettings& s) {
    std::vector<double> v;
    for (std::int64_t k = 0; k < s.n_times; ++k)
        v.push_back(frame_time(src.meta(), src.frame_columns(), 0, k * s.stride));
    return v;
}

inline std::vector<std::int64_t> start_frames(const FieldSettings& s) {
    std::vector<std::int64_t> v;
    for (std::int64_t k = 0; k < s.n_times; ++k) v.push_back(k * s.stride);
    return v;
}

/// The axes every collective group has: lags, lag times, start frames (named `frame_axis`), their times.
inline void common_arrays(ResultGroup& g, const TrajectorySource& src, const FieldSettings& s,
                          const std::string& frame_axis = "frame") {
    g.add_int("lags", s.lags, "frame");
    g.add("lag_times", detail::lag_times(src, s), s.T);
    g.add_int(frame_axis, detail::start_frames(s), "frame");
    g.add("time", detail::start_times(src, s), s.T);
}

/// RMS |U| over the valid nodes (NaN when none).
inline double rms_valid(const GridField& f) {
    double s = 0;
    std::size_t n = 0;
    for (std::size_t k = 0; k < f.ux.size(); ++k)
        if (f.valid[k]) s += f.ux[k] * f.ux[k] + f.uy[k] * f.uy[k], ++n;
    return n ? std::sqrt(s / static_cast<double>(n)) : std::numeric_limits<double>::quiet_NaN();
}

/// A [a][b][c] array.
inline ResultArray& add3d(ResultGroup& g, std::string name, std::vector<double> v, std::size_t a,
                          std::size_t b, std::size_t c, std::string units) {
    ResultArray& r = g.add(std::move(name), std::move(v), std::move(units));
    r.shape = {a, b, c};
    return r;
}

}  // namespace vibra::analysis::detail
