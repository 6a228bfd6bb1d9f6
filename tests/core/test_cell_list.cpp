// SPDX-License-Identifier: GPL-3.0-or-later
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <set>

#include "vibra/core/cell_list.hpp"

using namespace vibra;

namespace {
// Brute-force pair set for comparison.
std::set<std::pair<std::size_t, std::size_t>> brute(const std::vector<double>& x,
                                                    const std::vector<double>& y, double rc,
                                                    const Geometry& g) {
    std::set<std::pair<std::size_t, std::size_t>> s;
    for (std::size_t i = 0; i < x.size(); ++i)
        for (std::size_t j = i + 1; j < x.size(); ++j) {
            double dx = x[j] - x[i], dy = y[j] - y[i];
            if (g.periodic()) {
                dx -= g.lx() * std::nearbyint(dx / g.lx());
                dy -= g.ly() * std::nearbyint(dy / g.ly());
            }
            if (dx * dx + dy * dy < rc * rc) s.insert({i, j});
        }
    return s;
}
}  // namespace

TEST_CASE("cell list finds exactly the brute-force pairs", "[unit]") {
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> u(0, 10);
    std::vector<double> x(400), y(400);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = u(rng), y[i] = u(rng) * 0.8;
    for (const auto& g : {Geometry::periodic(0, 0, 10, 8), Geometry::rect(0, 0, 10, 8), Geometry{}}) {
        for (double rc : {0.3, 1.0, 3.9}) {
            CellList cl(x, y, rc, g);
            std::set<std::pair<std::size_t, std::size_t>> got;
            cl.for_each_pair([&](std::size_t i, std::size_t j, double dx, double dy, double r2) {
                REQUIRE(i < j);
                REQUIRE_THAT(dx * dx + dy * dy, Catch::Matchers::WithinRel(r2, 1e-12));
                REQUIRE(got.insert({i, j}).second);  // each pair once
            });
            REQUIRE(got == brute(x, y, rc, g));
        }
    }
}

TEST_CASE("sparse points with a short cut-off get at most about eight cells per point, same neighbours",
          "[unit]") {
    // The linker's case: a few thousand disks on a 1024² frame and a 3 px cut-off would make
    // ≈ 10⁵ cells; here 300 points on 1000 × 700 with cut-offs of 2–30 (up to 175,000 cells).
    std::mt19937_64 rng(11);
    std::uniform_real_distribution<double> u(0, 1000);
    std::vector<double> x(300), y(300);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = u(rng), y[i] = 0.7 * u(rng);
    for (int k = 0; k < 40; ++k)
        x[static_cast<std::size_t>(k)] = x[0] + 0.3 * k,
        y[static_cast<std::size_t>(k)] = y[0];  // a close cluster
    for (const auto& g : {Geometry::periodic(0, 0, 1000, 700), Geometry{}}) {
        for (double rc : {2.0, 7.5, 30.0}) {
            CellList cl(x, y, rc, g);
            REQUIRE(cl.cell_count() <= 8 * x.size() + 16);
            REQUIRE(cl.cell_count() >= 2 * x.size());  // still fine-grained
            std::set<std::pair<std::size_t, std::size_t>> got;
            cl.for_each_pair([&](std::size_t i, std::size_t j, double, double, double) {
                REQUIRE(got.insert({i, j}).second);
            });
            const auto want = brute(x, y, rc, g);
            REQUIRE(got == want);
            REQUIRE(want.size() >= 39);                      // the cluster's pairs at least
            for (std::size_t q = 0; q < x.size(); q += 7) {  // queries: point q's neighbours
                std::set<std::size_t> near, bf;
                cl.for_each_near(x[q], y[q], [&](std::size_t j, double, double, double) { near.insert(j); });
                for (const auto& pr : want) {
                    if (pr.first == q) bf.insert(pr.second);
                    if (pr.second == q) bf.insert(pr.first);
                }
                bf.insert(q);
                REQUIRE(near == bf);
            }
        }
    }
    // dense points keep cells of about the cut-off
    std::vector<double> dx(4000), dy(4000);
    for (std::size_t i = 0; i < dx.size(); ++i) dx[i] = 0.1 * u(rng), dy[i] = 0.1 * u(rng);
    REQUIRE(CellList(dx, dy, 2.0, Geometry{}).cell_count() >= 49 * 49);
}

TEST_CASE("cell list queries, including points outside the data and across the periodic edge", "[unit]") {
    std::vector<double> x{0.1, 9.9, 5.0}, y{5.0, 5.0, 5.0};
    CellList per(x, y, 0.5, Geometry::periodic(0, 0, 10, 10));
    std::vector<std::size_t> found;
    per.for_each_near(0.0, 5.0, [&](std::size_t j, double dx, double, double) {
        found.push_back(j);
        REQUIRE(std::abs(dx) < 0.5);
    });
    std::sort(found.begin(), found.end());
    REQUIRE(found == std::vector<std::size_t>{0, 1});
    CellList open(x, y, 0.5, Geometry{});
    found.clear();
    open.for_each_near(-0.3, 5.0, [&](std::size_t j, double, double, double) { found.push_back(j); });
    REQUIRE(found == std::vector<std::size_t>{0});
    REQUIRE_THROWS(CellList(x, y, 6.0, Geometry::periodic(0, 0, 10, 10)));
    REQUIRE_THROWS(CellList(x, y, 0.0, Geometry{}));
}

TEST_CASE("cell list skips NaN (absent) points", "[unit]") {
    std::vector<double> x{0, NAN, 0.5}, y{0, 0, 0};
    CellList cl(x, y, 1.0, Geometry{});
    int n = 0;
    cl.for_each_pair([&](std::size_t i, std::size_t j, double, double, double) {
        REQUIRE(i == 0);
        REQUIRE(j == 2);
        ++n;
    });
    REQUIRE(n == 1);
}
