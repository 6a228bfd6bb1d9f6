// SPDX-License-Identifier: GPL-3.0-or-later
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <set>

#include "vibra/core/cell_list.hpp"

using namespace vibra;

namespace {
// Brute-force pair set for comparison.
std::set<std::pair<std::size_t, std::size_t>> brute(const std::vector<double>& x, const std::vector<double>& y,
                                                    double rc, const Geometry& g) {
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
