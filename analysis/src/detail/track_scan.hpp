// SPDX-License-Identifier: GPL-3.0-or-later
// Private: what one pass over the frames learns about the tracks (ids, lifetimes, species votes,
// per-frame drift increments, mean given velocity) and the particle-major store of TrackCache.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "detail/temp_file.hpp"
#include "vibra/analysis/track_cache.hpp"
#include "vibra/core/trajectory_source.hpp"

namespace vibra::analysis::detail {

struct TrackScan {
    std::vector<std::int64_t> ids;                     ///< linked ids (≥ 0), ascending
    std::vector<std::int64_t> first, last;             ///< lifetime [first, last] of ids[j]
    std::vector<std::int64_t> n_small, n_large;        ///< species votes of ids[j]
    std::vector<std::int64_t> offset;                  ///< prefix sum of lifetimes (ids.size() + 1)
    std::vector<double> dx, dy, ux, uy;                ///< per frame: mean displacement from f−1, mean given velocity
    std::vector<char> d_ok, u_ok;                      ///< … defined
    bool has_vel = false;                              ///< the rows carry vx, vy
};

/// One pass over the frames of `src` in blocks of ≈ block_rows rows.
TrackScan scan_tracks(const TrajectorySource& src, std::int64_t block_rows, bool progress);

}  // namespace vibra::analysis::detail

namespace vibra::analysis {

struct TrackCache::Impl {
    const TrajectorySource* src = nullptr;
    TrackCacheParams p;
    bool built = false;
    detail::TrackScan scan;
    int cols = 2;                 ///< doubles per cell: x, y [, vx, vy]
    std::vector<double> mem;      ///< the copy, when in memory
    std::unique_ptr<detail::TempFile> file;  ///< the copy, when in a (deleted) temporary file
    std::int64_t cells() const { return scan.offset.empty() ? 0 : scan.offset.back(); }
    /// Cells [c0, c1) (cols doubles each, NaN where the particle is absent) into out.
    void read(std::int64_t c0, std::int64_t c1, std::vector<double>& out) const;
};

}  // namespace vibra::analysis
