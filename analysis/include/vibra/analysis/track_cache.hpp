// SPDX-License-Identifier: GPL-3.0-or-later
// A particle-major copy of a trajectory, shared by every per-track analysis of one run (msd,
// vacf, vdos, fs, temperature, velocity_distribution).
//
// Why: a trajectory file is frame-major; the per-track analyses need each particle's whole time
// series. Reading the frames again for every block of particles costs (blocks × frames) ∝ frames²;
// this copy costs one sequential pass over the file (a scan of ids, lifetimes, species votes and
// drift) and an external transpose in chunks of frames, after which every particle block is one
// contiguous read. The transpose takes the rows from the scan: kept in memory when rows and copy fit
// the budget (80 bytes a row); else, when the copy fits it, spilled by the scan to a temporary file
// (32 bytes a row, 48 with velocities; read back at page-cache speed instead of decoding the
// trajectory file again); else (or when the spill cannot be written) read from the trajectory file
// again. The raw positions (as stored, before unwrapping) and the given velocities are kept,
// so what stream_tracks() derives from them is bit-identical to re-reading the frames.
//
// Where: in memory when it fits TrackCacheParams::memory_bytes, else in a temporary file in
// TrackCacheParams::temp_dir ($TMPDIR by default), unlinked as soon as it is opened (nothing is left
// behind, even after a crash). Built on first use, so a run without per-track analyses pays nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "vibra/core/trajectory_source.hpp"

namespace vibra::analysis {

struct TrackCacheParams {
    std::int64_t memory_bytes = std::int64_t{2} << 30;  ///< copy kept in memory up to this size, else a file
    std::string temp_dir;  ///< folder of the temporary file; "" = $TMPDIR (or /tmp)
    std::int64_t chunk_bytes =
        256 << 20;  ///< transpose buffer when the copy goes to a file (also ≤ memory_bytes/2)
    std::int64_t block_rows = 1 << 18;  ///< rows per frame block read from the source
    bool progress = false;              ///< progress lines on stderr while building
    void validate() const;              ///< throws ParameterError naming the field
};

class TrackCache {
public:
    /// Keeps a reference to `src`, which must outlive the cache. Nothing is read until first use.
    explicit TrackCache(const TrajectorySource& src, TrackCacheParams p = {});
    ~TrackCache();
    TrackCache(const TrackCache&) = delete;
    TrackCache& operator=(const TrackCache&) = delete;

    const TrajectorySource& source() const;
    bool built() const;
    /// Builds now (if not yet built); IoError naming the temporary file when it cannot be written.
    void build();
    bool on_disk() const;        ///< after build(): the copy is in a temporary file
    std::int64_t bytes() const;  ///< after build(): size of the copy
    /// After build(): size of the rows' temporary file of the second pass (0 when the scan kept the
    /// rows in memory, or the second pass read the input again).
    std::int64_t spill_bytes() const;

    struct Impl;  ///< internal (analysis/src/detail/track_scan.hpp), used by stream_tracks()
    Impl& impl();

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace vibra::analysis
