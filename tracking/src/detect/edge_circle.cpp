// SPDX-License-Identifier: GPL-3.0-or-later
#include "detail/edge_circle.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "detail/detect_util.hpp"
#include "vibra/core/cell_list.hpp"

namespace vibra::tracking::detail {

namespace {

// Bilinear sample of a CV_32F image; false outside the pixel centres' hull.
bool sample(const cv::Mat& m, double x, double y, float& v) {
    const int x0 = static_cast<int>(std::floor(x)), y0 = static_cast<int>(std::floor(y));
    if (x0 < 0 || y0 < 0 || x0 + 1 >= m.cols || y0 + 1 >= m.rows) return false;
    const double fx = x - x0, fy = y - y0;
    const float* r0 = m.ptr<float>(y0);
    const float* r1 = m.ptr<float>(y0 + 1);
    v = static_cast<float>((1 - fy) * ((1 - fx) * r0[x0] + fx * r0[x0 + 1]) +
                           fy * ((1 - fx) * r1[x0] + fx * r1[x0 + 1]));
    return true;
}

struct EdgePoint {
    double x, y, peak;
};

// Along the ray at angle (c, s) from (cx, cy): the strongest local maximum of the inward
// gradient within [lo, hi] (parabolic sub-sample peak). `prof` is scratch.
bool ray_edge(const Gradients& g, double cx, double cy, double c, double s, double lo, double hi,
              std::vector<double>& prof, EdgePoint& e) {
    constexpr double step = 0.5;
    prof.clear();
    for (double rho = lo; rho <= hi; rho += step) {
        float gx = 0, gy = 0;
        const double x = cx + rho * c, y = cy + rho * s;
        prof.push_back(sample(g.gx, x, y, gx) && sample(g.gy, x, y, gy) ? -(gx * c + gy * s) : 0.0);
    }
    double best = 0, brho = -1;
    for (std::size_t i = 1; i + 1 < prof.size(); ++i) {
        if (!(prof[i] > best && prof[i] >= prof[i - 1] && prof[i] >= prof[i + 1])) continue;
        best = prof[i];
        const double den = prof[i - 1] - 2 * prof[i] + prof[i + 1];
        const double off = den < 0 ? 0.5 * (prof[i - 1] - prof[i + 1]) / den : 0.0;
        brho = lo + step * (static_cast<double>(i) + off);
    }
    if (brho < 0) return false;
    e = {cx + brho * c, cy + brho * s, best};
    return true;
}

// Solves the 3×3 symmetric system A x = b (Cramer's rule); false when singular.
bool solve3(const double A[3][3], const double b[3], double x[3]) {
    auto det3 = [](double a, double b_, double c, double d, double e, double f, double g, double h,
                   double i) { return a * (e * i - f * h) - b_ * (d * i - f * g) + c * (d * h - e * g); };
    const double d = det3(A[0][0], A[0][1], A[0][2], A[1][0], A[1][1], A[1][2], A[2][0], A[2][1], A[2][2]);
    const double scale = std::abs(A[0][0]) + std::abs(A[1][1]) + std::abs(A[2][2]);
    if (!(std::abs(d) > 1e-12 * scale * scale * scale)) return false;
    x[0] = det3(b[0], A[0][1], A[0][2], b[1], A[1][1], A[1][2], b[2], A[2][1], A[2][2]) / d;
    x[1] = det3(A[0][0], b[0], A[0][2], A[1][0], b[1], A[1][2], A[2][0], b[2], A[2][2]) / d;
    x[2] = det3(A[0][0], A[0][1], b[0], A[1][0], A[1][1], b[1], A[2][0], A[2][1], b[2]) / d;
    return true;
}

// Geometric least-squares circle through the points (Gauss–Newton from (x, y, r)), Tukey
// weights after 5 iterations; stops at the last iterate fitted to at least 6 points.
EdgeCircle fit_circle(const std::vector<EdgePoint>& pts, double x, double y, double r,
                      const EdgeCircleParams& p) {
    EdgeCircle f;
    for (int it = 0; it < p.max_iterations; ++it) {
        double A[3][3] = {}, b[3] = {};
        double ss = 0, sw = 0;
        int n = 0;
        for (const auto& q : pts) {
            const double dx = q.x - x, dy = q.y - y, d = std::hypot(dx, dy);
            if (d < 1e-9) continue;
            const double res = d - r;
            double w = 1;
            if (it >= 5) {
                const double u = res / p.tukey;
                w = std::abs(u) < 1 ? (1 - u * u) * (1 - u * u) : 0.0;
            }
            if (w <= 0) continue;
            const double J[3] = {-dx / d, -dy / d, -1.0};
            for (int a = 0; a < 3; ++a) {
                for (int c = 0; c < 3; ++c) A[a][c] += w * J[a] * J[c];
                b[a] -= w * J[a] * res;
            }
            ss += w * res * res, sw += w;
            ++n;
        }
        double step[3];
        // too few points left inside the Tukey scale (or a singular system): the last iterate
        // that had enough (none in the first iteration)
        if (n < 6 || !solve3(A, b, step)) return f;
        x += step[0], y += step[1], r += step[2];
        f = EdgeCircle{x, y, r, std::sqrt(ss / sw), n, r > 0};
        if (it >= 6 && std::hypot(std::hypot(step[0], step[1]), step[2]) < 1e-3) break;
    }
    return f;
}

}  // namespace

EdgeCircle fit_edge_circle(const Gradients& g, double cx, double cy, double r, double rho_min, double rho_max,
                           std::span<const EdgeNeighbour> neighbours, const EdgeCircleParams& p) {
    std::vector<EdgePoint> pts;
    std::vector<double> prof;
    pts.reserve(static_cast<std::size_t>(p.rays));
    for (int k = 0; k < p.rays; ++k) {
        const double th = 2 * std::numbers::pi * (k + 0.5) / p.rays;
        EdgePoint e{};
        if (!ray_edge(g, cx, cy, std::cos(th), std::sin(th), rho_min, rho_max, prof, e)) continue;
        const bool inside_neighbour =
            std::any_of(neighbours.begin(), neighbours.end(),
                        [&](const EdgeNeighbour& n) { return std::hypot(e.x - n.x, e.y - n.y) < n.r - 3; });
        if (!inside_neighbour) pts.push_back(e);
    }
    if (static_cast<int>(pts.size()) < p.min_points) return {};
    std::vector<double> peaks;
    for (const auto& e : pts) peaks.push_back(e.peak);
    std::nth_element(peaks.begin(), peaks.begin() + static_cast<std::ptrdiff_t>(peaks.size() / 2),
                     peaks.end());
    const double floor = p.keep * peaks[peaks.size() / 2];
    std::erase_if(pts, [&](const EdgePoint& e) { return e.peak < floor; });
    return fit_circle(pts, cx, cy, r, p);
}

int repair_by_edge_circles(const Gradients& g, std::vector<Particle>& parts, double r_small, double r_large,
                           double tol, double split, const RefineParams& rp) {
    if (parts.empty()) return 0;
    const double r_lo = r_small * (1 - tol), r_hi = r_large * (1 + tol);
    std::vector<double> xs(parts.size()), ys(parts.size());
    for (std::size_t i = 0; i < parts.size(); ++i) xs[i] = parts[i].x, ys[i] = parts[i].y;
    CellList cl(xs, ys, 2.5 * r_large + 4, Geometry{});
    std::vector<Particle> out = parts;
    std::vector<EdgeNeighbour> nbs;
    int repaired = 0;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        const Particle& q = parts[i];
        nbs.clear();
        cl.for_each_near(q.x, q.y, [&](std::size_t j, double, double, double) {
            if (j != i) nbs.push_back({parts[j].x, parts[j].y, parts[j].radius});
        });
        const auto c = fit_edge_circle(g, q.x, q.y, q.radius, 0.75 * q.radius, 1.12 * q.radius, nbs);
        if (!c.ok || c.r < r_lo || c.r > r_hi || std::hypot(c.x - q.x, c.y - q.y) >= 0.4 * r_small ||
            std::abs(c.r - q.radius) <= 0.08 * q.radius || (c.r < split) == (q.radius < split))
            continue;
        const Particle n = refine_alone(g, c.x, c.y, q.x, q.y, i, parts, cl, 0.93 * c.r, 1.07 * c.r, rp);
        if (n.strength > 0 && std::abs(n.radius - c.r) < 0.05 * c.r &&
            std::hypot(n.x - c.x, n.y - c.y) < 0.2 * r_small) {
            out[i].x = n.x, out[i].y = n.y, out[i].radius = n.radius, out[i].strength = n.strength;
            ++repaired;
        }
    }
    parts = std::move(out);
    return repaired;
}

}  // namespace vibra::tracking::detail
