// SPDX-License-Identifier: GPL-3.0-or-later
// Delaunay triangulation of particle positions (Bowyer–Watson with points inserted in x order,
// so triangles whose circumcircle lies left of the sweep are retired: ~O(N^1.5) in practice).
// Used by the Delaunay route of defect detection (docs/collective-motion.md §2), which needs no smoothing length.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace vibra::analysis {

/// Triangles as triples of point indices, counter-clockwise (in the x-right, y-up sense).
struct Triangulation {
    std::vector<std::array<std::int32_t, 3>> triangles;
    /// neighbours[t][e] = triangle across the edge (v[e], v[(e+1)%3]) of triangle t, −1 on the hull.
    std::vector<std::array<std::int32_t, 3>> neighbours;
};

/// Delaunay triangulation of the finite points (x[i], y[i]). Exact duplicates are kept out (the
/// first occurrence is used); non-finite points are skipped. Fewer than 3 usable points, or all
/// collinear, give no triangles. Throws ParameterError when x and y differ in length or n ≥ 2^31.
Triangulation delaunay(std::span<const double> x, std::span<const double> y);

/// Twice the signed area of (a, b, c): > 0 when counter-clockwise.
double orient2d(double ax, double ay, double bx, double by, double cx, double cy);
/// > 0 when d lies strictly inside the circumcircle of the counter-clockwise triangle (a, b, c).
double incircle(double ax, double ay, double bx, double by, double cx, double cy, double dx, double dy);

}  // namespace vibra::analysis
