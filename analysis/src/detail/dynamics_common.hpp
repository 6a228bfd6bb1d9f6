// SPDX-License-Identifier: GPL-3.0-or-later
// Private helpers shared by the single-particle dynamics analyses (msd, vacf, vdos, fs,
// temperature, velocity_distribution): species-resolved accumulators, lag axes, attributes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "detail/parallel.hpp"
#include "vibra/analysis/track_cache.hpp"
#include "vibra/analysis/velocities.hpp"
#include "vibra/core/result.hpp"

namespace vibra::analysis::detail {

/// One accumulator for the total and one per species (unknown species count in the total only).
template <class T>
struct SpeciesSet {
    T total{}, small{}, large{};
    T* of(int species) {
        if (species == kSpeciesSmall) return &small;
        if (species == kSpeciesLarge) return &large;
        return nullptr;
    }
    std::vector<T*> all() { return {&total, &small, &large}; }
    std::vector<std::pair<std::string, T*>> named() {
        return {{"", &total}, {"_small", &small}, {"_large", &large}};
    }
    std::map<std::string, T*> named_map() { return {{"", &total}, {"_small", &small}, {"_large", &large}}; }
};

/// Largest lag in frames: n_frames/2 when max_lag < 0, else max_lag capped at n_frames − 1.
inline std::size_t resolve_max_lag(std::int64_t max_lag, std::int64_t n_frames) {
    return static_cast<std::size_t>(std::max<std::int64_t>(
        0, max_lag < 0 ? n_frames / 2 : std::min<std::int64_t>(max_lag, n_frames - 1)));
}

/// Stream parameters from an analysis' Params (drift, drift_window, max_cells, progress, and
/// the velocity scheme when it has one); `velocities` false for positions-only analyses.
template <class P>
TrackStreamParams stream_params(const P& p, bool velocities) {
    TrackStreamParams tp;
    if constexpr (requires { p.scheme; }) tp.scheme = p.scheme;
    tp.drift = p.drift;
    tp.drift_window = p.drift_window;
    tp.velocities = velocities;
    tp.max_cells = p.max_cells;
    tp.progress = p.progress;
    tp.cache = p.cache;
    tp.threads = p.threads;
    if constexpr (requires { p.rescan; }) tp.rescan = p.rescan;
    return tp;
}

/// For an analysis that streams the tracks more than once: a copy of its own when none is shared
/// (tp.cache then points at it; keep the returned pointer alive while streaming).
inline std::unique_ptr<TrackCache> ensure_cache(const TrajectorySource& src, TrackStreamParams& tp) {
    if (tp.rescan || (tp.cache && &tp.cache->source() == &src)) return nullptr;
    TrackCacheParams cp;
    cp.block_rows = tp.block_rows;
    cp.progress = tp.progress;
    auto own = std::make_unique<TrackCache>(src, cp);
    tp.cache = own.get();
    return own;
}

/// Tracks seen for a suffix ("" total, "_small", "_large").
inline std::int64_t info_count(const TrackStreamInfo& info, const std::string& suffix) {
    if (suffix == "_small") return info.n_small;
    if (suffix == "_large") return info.n_large;
    return info.n_tracks;
}

/// Mean time between frames (time unit): from the frame times, else Metadata::frame_interval.
inline double mean_frame_interval(const TrackStreamInfo& info, const Metadata& meta) {
    const auto T = info.frame_times.size();
    if (T >= 2) return (info.frame_times[T - 1] - info.frame_times[0]) / static_cast<double>(T - 1);
    return meta.frame_interval;
}

/// `lag` (k·dt, time unit) and `lag_frames` (k) for k = 0 … n−1.
inline void add_lag_axes(ResultGroup& g, std::size_t n, double dt, const std::string& time_unit) {
    std::vector<double> lag(n);
    std::vector<std::int64_t> lf(n);
    for (std::size_t k = 0; k < n; ++k) {
        lag[k] = static_cast<double>(k) * dt;
        lf[k] = static_cast<std::int64_t>(k);
    }
    g.add("lag", std::move(lag), time_unit);
    g.add_int("lag_frames", std::move(lf), "frame");
}

/// The stream parameters every dynamics group records.
inline void add_stream_attrs(ResultGroup& g, const TrackStreamInfo& info) {
    g.attrs["drift"] = std::string(to_string(info.drift));
    g.attrs["drift_window"] = info.drift_window;
    g.attrs["velocity_scheme"] = std::string(info.velocities ? to_string(info.scheme) : "unused");
    g.attrs["n_tracks"] = info.n_tracks;
    g.attrs["n_tracks_small"] = info.n_small;
    g.attrs["n_tracks_large"] = info.n_large;
    g.attrs["n_frames"] = info.n_frames;
    g.attrs["periodic_unwrapped"] = static_cast<std::int64_t>(info.periodic ? 1 : 0);
    g.attrs["particle_blocks"] = info.particle_blocks;
    g.attrs["max_block_cells"] = info.max_block_cells;
    g.attrs["lag_time_basis"] = std::string("lag_frames x mean frame interval");
    if (info.frame_times.size() >= 2)
        g.attrs["frame_interval"] = (info.frame_times.back() - info.frame_times.front()) /
                                    static_cast<double>(info.frame_times.size() - 1);
}

/// Streams the tracks; each track's contribution is computed into a partial of its own by
/// work(track, partial, thread) on `threads` threads (a block's tracks in groups of 64), then
/// merge(track, partial) is called in track order: the same additions as a serial loop over the
/// tracks, so the result is identical for any thread count.
template <class Part, class Work, class Merge>
TrackStreamInfo stream_tracks_parallel(const TrajectorySource& src, const TrackStreamParams& tp, int threads,
                                       Work&& work, Merge&& merge) {
    const int nt = std::max(1, threads);
    constexpr std::size_t kGroup = 64;
    std::vector<Part> parts(kGroup);
    return stream_track_blocks(src, tp, [&](std::vector<Track>& block) {
        for (std::size_t g0 = 0; g0 < block.size(); g0 += kGroup) {
            const std::size_t gn = std::min(kGroup, block.size() - g0);
            parallel_for_each(gn, nt, [&](std::size_t j, int t) { work(block[g0 + j], parts[j], t); });
            for (std::size_t j = 0; j < gn; ++j) merge(block[g0 + j], parts[j]);
        }
    });
}

}  // namespace vibra::analysis::detail
