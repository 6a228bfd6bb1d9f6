// SPDX-License-Identifier: GPL-3.0-or-later
// Frame-to-frame linking of detections into trajectories. Candidates come from the core cell
// list (every detection within max_step of a track's predicted position, same species); each
// connected component of the candidate graph (a "subnetwork") is solved for the minimum total
// squared displacement with the core assignment solver, where a track or a detection may also
// stay unmatched. Tracks survive `memory` frames without a detection (gap closing); with
// `predict` a track's position is extrapolated with its last velocity. Online: one frame at a
// time, so the pipeline can stream videos of any length.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace vibra::tracking {

struct LinkParams {
    double max_step = 5;      ///< search radius around the predicted position (px per frame); > 0
    std::int64_t memory = 0;  ///< frames a track may miss and still be continued; ≥ 0
    bool predict = false;     ///< constant-velocity prediction from the last two positions
    /// a track and a detection of different known species link only when neither has a candidate of its own
    /// species
    bool species_must_match = true;
    /// Subnetworks larger than this (tracks + detections) are split by shrinking their search
    /// radius (×0.9 per try) so the O(n³) solver stays cheap; ≥ 2.
    std::int64_t max_subnet = 400;
    void validate() const;  ///< throws ParameterError naming the field
};

/// Counters of one link() call.
struct LinkStats {
    std::int64_t links = 0;           ///< detections continuing an existing track
    std::int64_t new_tracks = 0;      ///< detections starting a new track
    std::int64_t lost_tracks = 0;     ///< tracks ended in this frame (missed more than `memory` frames)
    std::int64_t largest_subnet = 0;  ///< tracks + detections of the largest subnetwork solved
};

class Linker {
public:
    explicit Linker(const LinkParams& p);

    /// Links the detections of the next frame (positions in px, species −1/0/1; `species` may
    /// be empty = all unknown). Returns the trajectory id of each detection (0, 1, 2, … in
    /// order of creation). Frames are consecutive: a frame without detections is an empty call.
    std::vector<std::int64_t> link(std::span<const double> x, std::span<const double> y,
                                   std::span<const std::int8_t> species = {});
    const LinkStats& last_stats() const { return stats_; }
    std::int64_t n_tracks() const { return next_id_; }
    std::int64_t frames_linked() const { return frame_; }

    /// A track that may still be continued.
    struct Track {
        std::int64_t id;
        double x, y;            // last observed position
        double vx = 0, vy = 0;  // px/frame
        bool has_velocity = false;
        std::int64_t last_frame;
        std::int8_t species;
    };
    /// Everything the next link() depends on, so that a run can stop and resume (checkpoints).
    struct State {
        std::vector<Track> active;
        std::int64_t next_id = 0, frame = 0;
    };
    State state() const { return {active_, next_id_, frame_}; }
    void restore(const State& s) { active_ = s.active, next_id_ = s.next_id, frame_ = s.frame; }

private:
    LinkParams p_;
    std::vector<Track> active_;
    std::int64_t next_id_ = 0;
    std::int64_t frame_ = 0;
    LinkStats stats_;
};

}  // namespace vibra::tracking
