// SPDX-License-Identifier: GPL-3.0-or-later
// The packing's region: where the disks of a packing are, found from one frame's detections, so
// that round machine parts around a container (a knob, a bolt, a hole in the frame of the
// apparatus: circles of a disk's size) are not tracked as disks when no ROI is given.
//
// A packing is recognised by contact on the first of a few frames: disks whose centres are
// within `contact` × (r_i + r_j) are joined, and the largest group so joined is the packing when
// it holds at least `min_disks` disks and `min_fraction` of the frame's and spans two large radii
// each way. A side of the box of its centres is a *wall* when the disks whose centres are within
// `wall_band` large radii of it cover at least `wall_cover` of its length (a row of disks pressed
// against a straight wall; a round cluster covers less; the band of 1.1 radii takes in both rows
// of a crystal whose rows meet the wall). A wall is *cut* — detections beyond it dropped — at
// `margin` large radii from the outermost centres (the disks against a wall differ in size by
// less, and the wall moves by less) when (1) the image extends at least one more large radius
// there (room for something of a disk's size), (2) the frames show detections beyond it, and (3)
// no frame shows more than `max_beyond` (more: a free surface of a crystal with its gas, or a row
// of disks the detector missed on the first frame, which must stay — a flat crystal facet lines
// its side as a wall does). A gas, a lone object, a cluster without walls, a packing that fills
// the image or nothing beyond the walls leave the image whole.
#pragma once

#include <array>
#include <span>
#include <string>
#include <vector>

#include "vibra/core/trajectory.hpp"
#include "vibra/tracking/refine.hpp"

namespace vibra::tracking {

struct PackingRegionParams {
    double contact = 1.2;       ///< two disks touch when their centres are ≤ contact × (r_i + r_j) apart
    int min_disks = 20;         ///< fewer disks in the largest contact group: not a packing
    double min_fraction = 0.9;  ///< share of the frame's disks the largest contact group must hold
    double margin = 1;          ///< × the large radius beyond a wall's centres: the region kept
    double wall_band = 1.1;     ///< × the large radius: disks this close to a side of the box line it
    double wall_cover = 0.7;    ///< share of a side those disks cover for the side to be a wall
    int max_beyond = 3;         ///< more detections beyond a wall in one frame: not cut
    void validate() const;      ///< throws ParameterError naming the field
};

struct PackingRegion {
    bool packing = false;         ///< the first frame's largest contact group is a packing
    bool found = false;           ///< some wall is cut: `kept` applies
    Geometry centres;             ///< bounding box of the packing's centres on the first frame (px)
    std::array<bool, 4> walls{};  ///< which sides of `centres` are walls: left, top, right, bottom
    std::array<bool, 4> room{};   ///< which walls have room in the image for a disk beyond the margin
    std::array<bool, 4> cut{};    ///< which walls are cut (the same order)
    Geometry kept;                ///< the image cut beyond the cut walls (px): detections outside are dropped
    int frames = 0;               ///< frames looked at
    int disks = 0;                ///< detections in the first frame
    int in_packing = 0;           ///< of which in the largest contact group
    int outside = 0;              ///< detections outside `kept`, summed over the frames
    /// One line for the user, e.g. "packing region: x 132-1097, y 0-841 px around 72 of 73 disks
    /// in contact, walls left, top, right, bottom, cut beyond left, right, bottom; 6 detections
    /// outside in 5 frames left out"; says why when no region was found.
    std::string summary() const;
};

/// The packing's region from a few frames' disks (px; a disk's radius 0 counts as `r_large`) in
/// an image of width × height px: the packing and its walls from the first frame, what lies beyond
/// them from all.
PackingRegion find_packing_region(std::span<const std::vector<Particle>> frames, double r_large, int width,
                                  int height, const PackingRegionParams& p = {});
/// The same from one frame. When no wall has `room`, later frames cannot change the answer: the
/// pipeline locates them only when some wall has.
PackingRegion find_packing_region(const std::vector<Particle>& disks, double r_large, int width, int height,
                                  const PackingRegionParams& p = {});

}  // namespace vibra::tracking
