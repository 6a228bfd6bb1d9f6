// SPDX-License-Identifier: GPL-3.0-or-later
// Checkpoints of a tracking run (TrackParams::checkpoint_dir), so that a run killed even by
// kill -9 resumes where its last segment ended and gives the file an uninterrupted run gives.
//
// The run is cut into segments of TrackParams::restart_every frames. At each segment's first frame
// every strip's locator starts from scratch (in every run, checkpointed or not), so the frames of a
// segment depend only on the video and on the linker's state at the segment's start. A segment is
// saved as two files in the checkpoint folder: `segment_N.rows` (its rows, written as they come)
// and, once its last frame is linked, `segment_N.state` (its per-frame counters and time stamps,
// and the linker's state at its end); the state file is renamed into place last, so a segment
// counts only when complete. Files are in the host's byte order (a checkpoint is resumed on the
// machine, or the kind of machine, that wrote it). `run.id` holds the fingerprint of the input and settings;
// segments of
// another fingerprint are discarded.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "vibra/core/trajectory.hpp"
#include "vibra/tracking/link.hpp"

namespace vibra::tracking::detail {

/// One row as the file gets it (species and confidence: the detection's own, before the vote).
struct CheckpointRow {
    std::int64_t frame, particle;
    double x, y;
    float radius, quality, conf;
    std::int8_t species;
};

/// Per-frame columns of a segment, and the linker at its end.
struct SegmentState {
    std::int64_t first_frame = 0, n_frames = 0, n_rows = 0;
    std::vector<std::int64_t> detections, links, new_tracks, lost_tracks, decode_errors, outside_roi,
        image_numbers;
    std::vector<double> time_s;
    Linker::State linker;
};

class CheckpointFolder {
public:
    /// Opens (creates) `dir`; discards its segments when their fingerprint differs from `fingerprint`.
    CheckpointFolder(std::string dir, const std::string& fingerprint, std::int64_t frames_per_segment);
    /// Complete segments found, 0, 1, … without a gap.
    std::int64_t complete_segments() const { return complete_; }
    SegmentState read_state(std::int64_t segment) const;
    /// Calls `row` for every row of a complete segment, in file order (read in blocks).
    void read_rows(std::int64_t segment, std::int64_t n_rows,
                   const std::function<void(const CheckpointRow&)>& row) const;

    /// Appends one frame's rows to the segment being written (opened on its first frame).
    void write_rows(std::int64_t segment, const std::vector<CheckpointRow>& rows);
    /// The segment's last frame is linked: its rows are flushed and its state published.
    void finish_segment(std::int64_t segment, const SegmentState& s);
    /// The run is done: the folder goes.
    void remove_all();
    const std::string& dir() const { return dir_; }

private:
    std::string path(std::int64_t segment, const char* ext) const;
    std::string dir_;
    std::int64_t complete_ = 0;
    std::FILE* rows_ = nullptr;
    std::int64_t rows_segment_ = -1, rows_written_ = 0;

public:
    ~CheckpointFolder();
    CheckpointFolder(const CheckpointFolder&) = delete;
    CheckpointFolder& operator=(const CheckpointFolder&) = delete;
};

}  // namespace vibra::tracking::detail
