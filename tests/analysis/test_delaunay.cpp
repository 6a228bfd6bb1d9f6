// SPDX-License-Identifier: GPL-3.0-or-later
// Delaunay triangulation: empty circumcircles, orientation, Euler count, adjacency.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>

#include "vibra/analysis/delaunay.hpp"

using namespace vibra::analysis;

namespace {

// Number of strict hull vertices (monotone chain, collinear points dropped).
std::size_t hull_size(std::vector<std::pair<double, double>> p) {
    std::sort(p.begin(), p.end());
    p.erase(std::unique(p.begin(), p.end()), p.end());
    std::vector<std::pair<double, double>> h(2 * p.size());
    std::size_t k = 0;
    auto cross = [](auto o, auto a, auto b) {
        return (a.first - o.first) * (b.second - o.second) - (a.second - o.second) * (b.first - o.first);
    };
    for (std::size_t i = 0; i < p.size(); ++i) {
        while (k >= 2 && cross(h[k - 2], h[k - 1], p[i]) <= 0) --k;
        h[k++] = p[i];
    }
    for (std::size_t i = p.size() - 1, t = k + 1; i-- > 0;) {
        while (k >= t && cross(h[k - 2], h[k - 1], p[i]) <= 0) --k;
        h[k++] = p[i];
    }
    return k - 1;
}

void check_triangulation(const std::vector<double>& x, const std::vector<double>& y) {
    const auto tri = delaunay(x, y);
    const std::size_t n = x.size();
    std::vector<std::pair<double, double>> pts;
    for (std::size_t i = 0; i < n; ++i) pts.emplace_back(x[i], y[i]);
    // Euler: a triangulation of n points in general position with h hull vertices has 2n − 2 − h triangles.
    REQUIRE(tri.triangles.size() == 2 * n - 2 - hull_size(pts));
    double scale = 0;
    for (std::size_t i = 0; i < n; ++i) scale = std::max({scale, std::abs(x[i]), std::abs(y[i])});
    for (std::size_t t = 0; t < tri.triangles.size(); ++t) {
        const auto [a, b, c] = tri.triangles[t];
        REQUIRE(orient2d(x[a], y[a], x[b], y[b], x[c], y[c]) > 0);
        for (std::size_t p = 0; p < n; ++p) {
            if (static_cast<std::int32_t>(p) == a || static_cast<std::int32_t>(p) == b ||
                static_cast<std::int32_t>(p) == c)
                continue;
            // Empty circumcircle (up to rounding).
            REQUIRE(incircle(x[a], y[a], x[b], y[b], x[c], y[c], x[p], y[p]) <=
                    1e-9 * scale * scale * scale * scale);
        }
        for (int e = 0; e < 3; ++e) {
            const auto nb = tri.neighbours[t][e];
            if (nb < 0) continue;
            const auto& o = tri.triangles[static_cast<std::size_t>(nb)];
            const auto u = tri.triangles[t][e], v = tri.triangles[t][(e + 1) % 3];
            const bool shares =
                std::count(o.begin(), o.end(), u) == 1 && std::count(o.begin(), o.end(), v) == 1;
            REQUIRE(shares);
        }
    }
}

}  // namespace

TEST_CASE("Delaunay triangles have empty circumcircles on random points", "[unit]") {
    for (unsigned seed : {1u, 2u, 3u}) {
        std::mt19937_64 rng(seed);
        std::uniform_real_distribution<double> u(0, 10);
        std::vector<double> x, y;
        for (int i = 0; i < 400; ++i) x.push_back(u(rng)), y.push_back(0.5 * u(rng));
        check_triangulation(x, y);
    }
}

TEST_CASE("Delaunay on a jittered lattice and small inputs", "[unit]") {
    std::mt19937_64 rng(4);
    std::uniform_real_distribution<double> j(-0.15, 0.15);
    std::vector<double> x, y;
    for (int a = 0; a < 20; ++a)
        for (int b = 0; b < 20; ++b) x.push_back(a + j(rng)), y.push_back(b + j(rng));
    check_triangulation(x, y);
    SECTION("duplicates are ignored") {
        auto x2 = x, y2 = y;
        x2.insert(x2.end(), x.begin(), x.begin() + 50);
        y2.insert(y2.end(), y.begin(), y.begin() + 50);
        REQUIRE(delaunay(x2, y2).triangles.size() == delaunay(x, y).triangles.size());
    }
    SECTION("fewer than three points or collinear points: no triangles") {
        REQUIRE(delaunay(std::vector<double>{0, 1}, std::vector<double>{0, 1}).triangles.empty());
        REQUIRE(delaunay(std::vector<double>{0, 1, 2, 3}, std::vector<double>{0, 1, 2, 3}).triangles.empty());
    }
    SECTION("one triangle") {
        const auto t = delaunay(std::vector<double>{0, 1, 0}, std::vector<double>{0, 0, 1});
        REQUIRE(t.triangles.size() == 1);
    }
}
