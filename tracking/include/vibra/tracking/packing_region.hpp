// SPDX-License-Identifier: GPL-3.0-or-later
// The packing's region: where the disks of a packing are, found from one frame's detections, so
// that round machine parts around a container (a knob, a bolt, a hole in the frame of the
// apparatus: circles of a disk's size) are not tracked as disks when no ROI is given.
//
// A packing is recognised by contact: disks whose centres are within `contact` × (r_i + r_j)
// are joined, and the largest group so joined is the packing when it holds at least `min_disks`
// disks and `min_fraction` of the frame's. A side of the box of its centres is a *wall* when the
// disks whose centres are within `wall_band` large radii of it cover at least `wall_cover` of its
// length (a row of disks pressed against a straight wall; a round cluster or a crystallite's
// facet covers at most ≈ 0.55; the band of 1.1 radii takes in both rows of a crystal whose rows
// meet the wall). The region kept is the image cut beyond each wall at `margin` large radii from
// the outermost centres (the disks against a wall differ in size by less, and the wall may move
// by that much; what lies farther out is inside or behind the wall) — where the image extends at
// least a large radius farther, so that a packing whose walls are the image's keeps it all. A gas (no large contact group), a lone object (too few disks), a cluster
// without walls (coexisting with a gas, which must stay) or a packing that fills the image give
// no region: nothing is left out.
#pragma once

#include <array>
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
    void validate() const;      ///< throws ParameterError naming the field
};

struct PackingRegion {
    bool packing = false;         ///< the largest contact group is a packing (min_disks, min_fraction)
    bool found = false;           ///< a packing that leaves part of the image out: `kept` applies
    Geometry centres;             ///< bounding box of the packing's centres (px): the analysis window
    std::array<bool, 4> walls{};  ///< which sides of `centres` are walls: left, top, right, bottom
    Geometry kept;  ///< the image cut at the margin beyond each wall (px): detections outside are dropped
    int disks = 0;  ///< detections in the frame
    int in_packing = 0;  ///< of which in the largest contact group
    int outside = 0;     ///< of which outside `kept`
    /// One line for the user, e.g. "packing region: x 70-1156, y 0-901 px around 72 of 73 disks
    /// in contact, walls left, top, right, bottom; 1 detection outside left out"; says why when
    /// no region was found.
    std::string summary() const;
};

/// The packing's region from one frame's disks (px; a disk's radius 0 counts as `r_large`) in an
/// image of width × height px.
PackingRegion find_packing_region(const std::vector<Particle>& disks, double r_large, int width, int height,
                                  const PackingRegionParams& p = {});

}  // namespace vibra::tracking
