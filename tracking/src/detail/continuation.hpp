// SPDX-License-Identifier: GPL-3.0-or-later
// Hysteresis in time for frames located from scratch one after another (DiskLocator, when the
// joint fit refuses the images or its warm start ended; docs/tracking.md "Frame to frame").
//
// A frame from scratch has its own strict evidence: candidates from the votes, the refinement's
// edge strength ≥ min_edge × the frame's median. Where the images barely change between frames
// (real discs, a crystal) a disk near a wall or behind a bar sits near that threshold, or between
// two circles of similar evidence, and the frame-by-frame answer flickers. As in Canny's edge
// hysteresis, the previous frame's disks lower the bar for what continues them:
//  - a disk *continues* a previous one when its centre is within `distance` px of it and its radius
//    within `radius` (relative) of its radius;
//  - a continuing disk is kept below min_edge (detect.cpp);
//  - a one-frame jump is undone (undo_jumps): a disk *steady* over the two frames before (it
//    continued a disk of the frame before it, and was not itself restored) that nothing continues
//    now, whose place the nearest refined disk took from more than 2 × distance away while
//    continuing no previous disk itself, is refined again from where it was (radius within
//    `radius` of its own, the others masked but not that circle, 2 × distance more iterations so
//    that a disk that did move is followed away) and replaces that circle — and the circle's
//    duplicates — when the result continues it with at least half the edge it had (relative to
//    each frame's median). Nothing is undone when more than half of the steady disks moved (the
//    frame shook). A restored disk is not steady for the next frame, so a jump that persists is
//    taken after one frame and a restoration can never walk a disk away step by step.
// Deterministic: a function of the frame and the previous frame's disks (a locator's first frame
// and a frame after a reset have none).
#pragma once

#include <span>
#include <vector>

#include "vibra/tracking/refine.hpp"

namespace vibra::tracking::detail {

struct Continuation {
    std::span<const Particle> previous;     ///< the previous frame's disks (empty: no hysteresis)
    std::span<const char> steady;           ///< per previous disk (empty: none steady)
    double distance = 0;                    ///< px
    double radius = 0;                      ///< relative
    std::vector<char>* restored = nullptr;  ///< out (size of previous): 1 = restored by undo_jumps
};

/// q continues prev: centre within c.distance px of it, radius within c.radius of its radius.
bool continues(const Particle& q, const Particle& prev, const Continuation& c);

/// 1 for each disk of `parts` that continues a disk of c.previous.
std::vector<char> continuing_disks(const std::vector<Particle>& parts, const Continuation& c);

/// Undoes one-frame jumps in the refined disks `parts` (before duplicates are merged): see
/// above. `overlap` px: how near a refined disk must be to have taken a previous disk's place
/// (the duplicate separation); r_large sets the reach of the neighbours masked.
void undo_jumps(const Gradients& g, std::vector<Particle>& parts, const Continuation& c, double overlap,
                double r_large, const RefineParams& rp);

/// The steady flags of a frame's final disks `parts` for the next frame: 1 = continues a disk of
/// c.previous that undo_jumps did not restore (c.restored).
std::vector<char> steady_disks(const std::vector<Particle>& parts, const Continuation& c);

}  // namespace vibra::tracking::detail
