// SPDX-License-Identifier: GPL-3.0-or-later
// The circle through a disk's outer edge points: a second opinion on a large disk's radius.
//
// The refinement (refine.hpp) measures the radius as the peak of the *azimuthally averaged*
// inward edge gradient about the centre. Where part of a disk's outline is hidden (behind a bar,
// against a wall) or runs beside the rims of touching neighbours, a larger circle shifted sideways
// can fit that average as well as the disk's own: one side on the disk's visible edge, the other
// on the wall's or the neighbours' (the particletracker discs, docs/tracking.md). The outline's
// curvature tells the two apart: along each of `rays` rays from the centre the edge point is the
// strongest local maximum of the inward gradient −∇I·ρ̂ (bilinear samples every 0.5 px,
// parabolic peak) within [rho_min, rho_max]; rays whose point lies inside a neighbour's disk
// (its radius − 3 px) or whose peak is weaker than `keep` × the median of the rays' peaks are left
// out; the circle is the geometric least-squares fit (Gauss–Newton on |p − c| − r) of the rest,
// Tukey-weighted (scale `tukey` px) after the first 5 iterations so that a few rays on another
// edge do not pull it. Deterministic (no randomness, fixed ray order).
#pragma once

#include <span>
#include <vector>

#include "vibra/tracking/refine.hpp"

namespace vibra::tracking::detail {

struct EdgeCircleParams {
    int rays = 32;       ///< rays from the centre (one edge point each at most)
    double keep = 0.3;   ///< a ray's peak must reach this × the median of the rays' peaks
    double tukey = 4.0;  ///< px: Tukey biweight scale of the residuals |p − c| − r
    int min_points = 8;  ///< fewer rays with an edge point (before the `keep` cut): no fit
    int max_iterations = 30;
};

/// A neighbouring disk (centre and radius, px): edge points inside it are not the disk's own.
struct EdgeNeighbour {
    double x, y, r;
};

struct EdgeCircle {
    double x = 0, y = 0, r = 0;  ///< px
    double rms = 0;              ///< px: weighted RMS residual of the edge points kept
    int points = 0;              ///< edge points with weight in the last iteration
    bool ok = false;  ///< false: too few edge points (< min_points rays, < 6 kept) or a singular fit
};

/// The circle through the edge points seen from (cx, cy) within [rho_min, rho_max] px; the fit
/// starts from the circle (cx, cy, r).
EdgeCircle fit_edge_circle(const Gradients& g, double cx, double cy, double r, double rho_min, double rho_max,
                           std::span<const EdgeNeighbour> neighbours, const EdgeCircleParams& p = {});

/// Disks whose refinement settled on a circle of the wrong size class: a larger one shifted
/// sideways, one side on the disk's own edge and the other on a wall's, a bar's or the
/// neighbours' rims, fits the azimuthally averaged edge gradient as well as the disk's own (the
/// particletracker discs behind the left bar and against the right wall, docs/tracking.md). For
/// each disk of `parts` (refined, radii measured), the circle through its edge points within
/// [0.75, 1.12] × its radius, the other disks within 2.5 r_large + 4 px as neighbours. Where that
/// circle lies in the radius range [r_small (1 − tol), r_large (1 + tol)], within 0.4 r_small of
/// the disk, differs from its radius by more than 8% and falls on the other side of the frame's
/// species threshold `split` (px), the disk is refined again (`rp`) from that circle (radius
/// within ±7% of it, the neighbours masked) and takes the new centre, radius and edge strength
/// when that refinement agrees with the circle (radius within 5%, centre within 0.2 r_small).
/// Where the two agree on the class the refinement's own measurement stays (on the discs the
/// edge circle's radius scatters by a few px more). Every disk is judged against the disks as
/// they came in, not as repaired before it, so the result does not depend on their order.
/// Returns the number of disks repaired.
int repair_by_edge_circles(const Gradients& g, std::vector<Particle>& parts, double r_small, double r_large,
                           double tol, double split, const RefineParams& rp);

}  // namespace vibra::tracking::detail
