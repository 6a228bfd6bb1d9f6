// SPDX-License-Identifier: GPL-3.0-or-later
// Hysteresis in time for frames from scratch (detail/continuation.hpp).
#include "detail/continuation.hpp"

#include <algorithm>
#include <cmath>

#include "detail/detect_util.hpp"
#include "vibra/core/cell_list.hpp"

namespace vibra::tracking::detail {

bool continues(const Particle& q, const Particle& prev, const Continuation& c) {
    return std::hypot(q.x - prev.x, q.y - prev.y) < c.distance &&
           std::abs(q.radius - prev.radius) <= c.radius * prev.radius;
}

namespace {

// 1 for each disk of `parts` that continues a disk of c.previous not marked in `ignore` (when given).
std::vector<char> continuing_except(const std::vector<Particle>& parts, const Continuation& c,
                                    const std::vector<char>* ignore) {
    std::vector<char> out(parts.size(), 0);
    if (c.previous.empty() || !(c.distance > 0)) return out;
    std::vector<double> xs, ys;
    for (const auto& q : c.previous) xs.push_back(q.x), ys.push_back(q.y);
    const CellList cl(xs, ys, c.distance, Geometry{});
    for (std::size_t i = 0; i < parts.size(); ++i)
        cl.for_each_near(parts[i].x, parts[i].y, [&](std::size_t j, double, double, double) {
            if (!(ignore && (*ignore)[j]) && continues(parts[i], c.previous[j], c)) out[i] = 1;
        });
    return out;
}

}  // namespace

std::vector<char> continuing_disks(const std::vector<Particle>& parts, const Continuation& c) {
    return continuing_except(parts, c, nullptr);
}

// A steady previous disk whose place a circle from > 2 × c.distance away took is refined again
// from where it was and replaces that circle when it is still there (header).
void undo_jumps(const Gradients& g, std::vector<Particle>& parts, const Continuation& c, double overlap,
                double r_large, const RefineParams& rp) {
    if (c.previous.empty() || c.steady.size() != c.previous.size() || !(c.distance > 0)) return;
    const auto continuing = continuing_disks(parts, c);
    std::vector<char> continued(c.previous.size(), 0);
    std::vector<double> xs, ys;
    std::vector<float> st;
    for (const auto& q : parts) {
        xs.push_back(q.x), ys.push_back(q.y);
        if (q.strength > 0) st.push_back(q.strength);
    }
    const CellList cl(xs, ys, std::max(overlap, 2.5 * r_large + 4), Geometry{});
    for (std::size_t j = 0; j < c.previous.size(); ++j)
        cl.for_each_near(c.previous[j].x, c.previous[j].y, [&](std::size_t i, double, double, double) {
            if (parts[i].strength > 0 && continues(parts[i], c.previous[j], c)) continued[j] = 1;
        });
    // Jumps are rare single events: when most steady disks moved, the frame did (a shake).
    std::size_t steady = 0, moved = 0;
    for (std::size_t j = 0; j < c.previous.size(); ++j)
        steady += c.steady[j] != 0, moved += c.steady[j] && !continued[j];
    if (st.empty() || 2 * moved > steady) return;
    const float median = quantile(st, 0.5);
    // Iterations enough to follow a disk that did move (≤ 1 px each) beyond c.distance, so that
    // only a disk still there ends where it was.
    RefineParams follow = rp;
    follow.iterations = rp.iterations + static_cast<int>(std::ceil(2 * c.distance));
    const double jump2 = 4 * c.distance * c.distance;
    std::vector<char> taken(parts.size(), 0);
    for (std::size_t j = 0; j < c.previous.size(); ++j) {
        if (!c.steady[j] || continued[j]) continue;
        const Particle& pj = c.previous[j];
        std::size_t nearest = parts.size();
        double best = overlap * overlap;
        cl.for_each_near(pj.x, pj.y, [&](std::size_t i, double, double, double r2) {
            if (parts[i].strength > 0 && !taken[i] && r2 < best) best = r2, nearest = i;
        });
        if (nearest == parts.size() || continuing[nearest] || best <= jump2)
            continue;  // gone, a disk of its own, or where it was
        const Particle n =
            detail::refine_alone(g, pj.x, pj.y, pj.x, pj.y, nearest, parts, cl, pj.radius * (1 - c.radius),
                                 pj.radius * (1 + c.radius), follow);
        // still there: where it was, with at least half the edge it had (each relative to its frame's median)
        if (!(n.strength > 0) || !continues(n, pj, c) || n.strength < 0.5f * pj.quality * median) continue;
        const Particle circle = parts[nearest];
        taken[nearest] = 1;
        parts[nearest] = n;
        if (c.restored) (*c.restored)[j] = 1;
        // the circle's duplicates (other candidates refined onto it) go with it
        cl.for_each_near(circle.x, circle.y, [&](std::size_t i, double, double, double r2) {
            if (!taken[i] && !continuing[i] && r2 < jump2) parts[i].strength = 0;
        });
    }
}

std::vector<char> steady_disks(const std::vector<Particle>& parts, const Continuation& c) {
    return continuing_except(parts, c, c.restored);
}

}  // namespace vibra::tracking::detail
