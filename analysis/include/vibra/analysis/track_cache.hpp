// SPDX-License-Identifier: GPL-3.0-or-later
// A particle-major copy of a trajectory, shared by every per-track analysis of one run (msd,
// vacf, vdos, fs, temperature, velocity_distribution).
//
// Why: a trajectory file is frame-major; the per-track analyses need each particle's whole time
// series. Reading the frames again for every block of particles costs (blocks × frames) ∝ frames²;
// this copy costs one sequential pass over the file (a scan of ids, lifetimes, species votes and
// drift) and a transpose in chunks of frames, after which every particle block is one contiguous
// read (in memory) or one read per chunk (in a file). The trajectory file is decoded once whatever
// fits: when rows and copy fit the budget (80 bytes a row) the scan keeps the rows and the copy is
// made from them; when only the copy fits (16–32 bytes a row), the scan spills the rows to a
// temporary file (32 bytes a row, 48 with velocities) and the copy is made from it; when not even
// the copy fits, the scan itself writes it to a temporary file, chunk by chunk of frames (each
// chunk: every track alive in it, its cells from its first to its last frame there). Only when the
// spill cannot be written is the trajectory file read a second time. The raw positions (as stored,
// before unwrapping) and the given velocities are kept, so what stream_tracks() derives from them is
// bit-identical to re-reading the frames.
//
// Where: in memory when it fits TrackCacheParams::memory_bytes; else its chunks fill the budget
// (less two chunk buffers) and the rest go to a temporary file in TrackCacheParams::temp_dir
// ($TMPDIR by default), unlinked as soon as it is opened (nothing is left behind, even after a
// crash): only the excess over the budget costs disk writes. Built on first use, so a run without per-track analyses pays nothing.
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
        8 << 20;  ///< rows and cells of a chunk when the copy goes to a file (also ≤ memory_bytes/2)
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
    bool on_disk() const;        ///< after build(): the copy is (partly) in a temporary file
    std::int64_t bytes() const;  ///< after build(): size of the copy
    /// After build(): size of the rows' temporary file of the second pass (0 when the scan kept the
    /// rows in memory or wrote the copy itself, or the second pass read the input again).
    std::int64_t spill_bytes() const;
    /// After build(): bytes of the copy in its temporary file (0 when it is all in memory).
    std::int64_t file_bytes() const;

    struct Impl;  ///< internal (analysis/src/detail/track_scan.hpp), used by stream_tracks()
    Impl& impl();

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace vibra::analysis
