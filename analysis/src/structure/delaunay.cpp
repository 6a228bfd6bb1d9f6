// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/analysis/delaunay.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "vibra/core/error.hpp"

namespace vibra::analysis {

double orient2d(double ax, double ay, double bx, double by, double cx, double cy) {
    return (bx - ax) * (cy - ay) - (by - ay) * (cx - ax);
}

double incircle(double ax, double ay, double bx, double by, double cx, double cy, double dx, double dy) {
    const double adx = ax - dx, ady = ay - dy, bdx = bx - dx, bdy = by - dy, cdx = cx - dx, cdy = cy - dy;
    const double ad = adx * adx + ady * ady, bd = bdx * bdx + bdy * bdy, cd = cdx * cdx + cdy * cdy;
    return adx * (bdy * cd - bd * cdy) - ady * (bdx * cd - bd * cdx) + ad * (bdx * cdy - bdy * cdx);
}

namespace {

struct Tri {
    std::int32_t v[3];
    double ccx, ccy, r2;  // circumcircle (for retiring triangles behind the sweep)
};

struct Edge {
    std::int32_t a, b;  // oriented as in its (removed) triangle
    std::int64_t key() const {
        const auto lo = std::min(a, b), hi = std::max(a, b);
        return (static_cast<std::int64_t>(lo) << 32) | static_cast<std::int64_t>(hi);
    }
};

}  // namespace

Triangulation delaunay(std::span<const double> xs, std::span<const double> ys) {
    if (xs.size() != ys.size()) throw ParameterError("delaunay: x and y differ in length");
    if (xs.size() >= (std::size_t{1} << 31) - 4) throw ParameterError("delaunay: too many points");
    Triangulation out;
    // Usable points sorted by (x, y), exact duplicates dropped.
    std::vector<std::int32_t> order;
    order.reserve(xs.size());
    for (std::size_t i = 0; i < xs.size(); ++i)
        if (std::isfinite(xs[i]) && std::isfinite(ys[i])) order.push_back(static_cast<std::int32_t>(i));
    std::sort(order.begin(), order.end(), [&](auto a, auto b) {
        return xs[a] < xs[b] || (xs[a] == xs[b] && (ys[a] < ys[b] || (ys[a] == ys[b] && a < b)));
    });
    order.erase(std::unique(order.begin(), order.end(),
                            [&](auto a, auto b) { return xs[a] == xs[b] && ys[a] == ys[b]; }),
                order.end());
    const auto n = static_cast<std::int32_t>(order.size());
    if (n < 3) return out;

    // Local coordinates: sorted points 0..n-1, then the super-triangle n, n+1, n+2.
    std::vector<double> px(static_cast<std::size_t>(n) + 3), py(static_cast<std::size_t>(n) + 3);
    double xmin = xs[order.front()], xmax = xs[order.back()], ymin = ys[order[0]], ymax = ymin;
    for (std::int32_t k = 0; k < n; ++k) {
        px[k] = xs[order[k]], py[k] = ys[order[k]];
        ymin = std::min(ymin, py[k]), ymax = std::max(ymax, py[k]);
    }
    const double d = std::max({xmax - xmin, ymax - ymin, 1e-300}), mx = 0.5 * (xmin + xmax),
                 my = 0.5 * (ymin + ymax);
    px[n] = mx - 1e5 * d, py[n] = my - 1e5 * d;
    px[n + 1] = mx + 1e5 * d, py[n + 1] = my - 1e5 * d;
    px[n + 2] = mx, py[n + 2] = my + 1e5 * d;

    auto make = [&](std::int32_t a, std::int32_t b, std::int32_t c) {
        Tri t{{a, b, c}, 0, 0, 0};
        const double ax = px[a], ay = py[a], bx = px[b] - ax, by = py[b] - ay, cx = px[c] - ax,
                     cy = py[c] - ay;
        const double den = 2 * (bx * cy - by * cx);
        if (den == 0) {  // degenerate: never retire
            t.ccx = ax, t.ccy = ay, t.r2 = std::numeric_limits<double>::infinity();
            return t;
        }
        const double b2 = bx * bx + by * by, c2 = cx * cx + cy * cy;
        const double ux = (cy * b2 - by * c2) / den, uy = (bx * c2 - cx * b2) / den;
        t.ccx = ax + ux, t.ccy = ay + uy, t.r2 = ux * ux + uy * uy;
        return t;
    };
    std::vector<Tri> active{make(n, n + 1, n + 2)}, done;
    std::vector<Edge> edges;
    for (std::int32_t p = 0; p < n; ++p) {
        const double x = px[p], y = py[p];
        edges.clear();
        for (std::size_t t = 0; t < active.size();) {
            const Tri& tr = active[t];
            const double dx = x - tr.ccx;
            if (dx > 0 && dx * dx > tr.r2) {  // circumcircle entirely left of the sweep: final
                done.push_back(tr);
                active[t] = active.back();
                active.pop_back();
                continue;
            }
            const auto [a, b, c] = tr.v;
            if (incircle(px[a], py[a], px[b], py[b], px[c], py[c], x, y) > 0) {
                edges.push_back({a, b});
                edges.push_back({b, c});
                edges.push_back({c, a});
                active[t] = active.back();
                active.pop_back();
                continue;
            }
            ++t;
        }
        // The cavity boundary = edges seen once.
        std::sort(edges.begin(), edges.end(), [](const Edge& e, const Edge& f) { return e.key() < f.key(); });
        for (std::size_t i = 0; i < edges.size();) {
            std::size_t j = i + 1;
            while (j < edges.size() && edges[j].key() == edges[i].key()) ++j;
            if (j == i + 1) active.push_back(make(edges[i].a, edges[i].b, p));
            i = j;
        }
    }
    done.insert(done.end(), active.begin(), active.end());
    for (const auto& t : done) {
        if (t.v[0] >= n || t.v[1] >= n || t.v[2] >= n) continue;
        if (!(orient2d(px[t.v[0]], py[t.v[0]], px[t.v[1]], py[t.v[1]], px[t.v[2]], py[t.v[2]]) > 0)) continue;
        out.triangles.push_back({order[t.v[0]], order[t.v[1]], order[t.v[2]]});
    }
    // Adjacency through shared edges.
    const std::size_t T = out.triangles.size();
    out.neighbours.assign(T, {-1, -1, -1});
    std::vector<std::pair<std::int64_t, std::int64_t>> keyed;  // (edge key, t*3+e)
    keyed.reserve(3 * T);
    for (std::size_t t = 0; t < T; ++t)
        for (int e = 0; e < 3; ++e) {
            const Edge ed{out.triangles[t][e], out.triangles[t][(e + 1) % 3]};
            keyed.emplace_back(ed.key(), static_cast<std::int64_t>(3 * t + e));
        }
    std::sort(keyed.begin(), keyed.end());
    for (std::size_t i = 0; i + 1 < keyed.size(); ++i) {
        if (keyed[i].first != keyed[i + 1].first) continue;
        const auto a = keyed[i].second, b = keyed[i + 1].second;
        out.neighbours[static_cast<std::size_t>(a / 3)][a % 3] = static_cast<std::int32_t>(b / 3);
        out.neighbours[static_cast<std::size_t>(b / 3)][b % 3] = static_cast<std::int32_t>(a / 3);
        ++i;
    }
    return out;
}

}  // namespace vibra::analysis
