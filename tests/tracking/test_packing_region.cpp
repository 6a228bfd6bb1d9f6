// SPDX-License-Identifier: GPL-3.0-or-later
// The packing's region (packing_region.hpp) on disk lists built in code: a packing pressed into
// a rectangular container with a knob outside, the same packing filling the image, a round
// cluster coexisting with a gas (which must stay), a gas, a lone ball, a packing against one wall.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "vibra/core/error.hpp"
#include "vibra/tracking/packing_region.hpp"

using namespace vibra;
using namespace vibra::tracking;

namespace {

Particle disk(double x, double y, double r) {
    Particle q;
    q.x = x, q.y = y, q.radius = static_cast<float>(r);
    return q;
}

// Touching disks of radius r on a triangular lattice (rows along x) whose centres fill
// [x0, x1] × [y0, y1]: a packing pressed against the four walls of a box.
std::vector<Particle> box_packing(double x0, double y0, double x1, double y1, double r) {
    std::vector<Particle> d;
    int row = 0;
    for (double y = y0; y <= y1 + 1e-9; y += std::sqrt(3.0) * r, ++row)
        for (double x = x0 + (row % 2) * r; x <= x1 + 1e-9; x += 2 * r) d.push_back(disk(x, y, r));
    return d;
}

// The same lattice cut to a circle of radius R around (cx, cy).
std::vector<Particle> round_cluster(double cx, double cy, double R, double r) {
    std::vector<Particle> d;
    for (const auto& q : box_packing(cx - R - 2 * r, cy - R - 2 * r, cx + R + 2 * r, cy + R + 2 * r, r))
        if (std::hypot(q.x - cx, q.y - cy) <= R) d.push_back(q);
    return d;
}

}  // namespace

TEST_CASE("packing region: a packing in a container leaves out a knob beyond its wall", "[unit]") {
    const double r = 10;
    auto d = box_packing(100, 100, 300, 250, r);  // 11 × 9 rows of disks, 1000 × 800 image
    const int n_packing = static_cast<int>(d.size());
    d.push_back(disk(400, 180, r));  // a knob 100 px right of the right wall's centres
    const auto reg = find_packing_region(d, r, 1000, 800);
    INFO(reg.summary());
    REQUIRE(reg.packing);
    REQUIRE(reg.found);
    REQUIRE(reg.in_packing == n_packing);
    REQUIRE(reg.disks == n_packing + 1);
    REQUIRE(reg.outside == 1);
    REQUIRE(reg.walls == std::array<bool, 4>{true, true, true, true});
    const double x_max =
        std::max_element(d.begin(), d.end() - 1, [](auto& a, auto& b) { return a.x < b.x; })->x;
    REQUIRE(reg.centres.x0 == 100);
    REQUIRE(reg.centres.y0 == 100);
    REQUIRE(reg.centres.x1 == x_max);
    // kept: the centres' box grown by one large radius beyond each wall
    REQUIRE(reg.kept.x0 == 90);
    REQUIRE(reg.kept.y0 == 90);
    REQUIRE(reg.kept.x1 == x_max + 10);
    REQUIRE(reg.kept.y1 == reg.centres.y1 + 10);
    REQUIRE(reg.summary().find("around " + std::to_string(n_packing) + " of " +
                               std::to_string(n_packing + 1) +
                               " disks in contact, walls left, top, right, bottom; 1 detection outside") !=
            std::string::npos);
    // The disks' order does not matter.
    std::mt19937 rng(7);
    std::shuffle(d.begin(), d.end(), rng);
    const auto again = find_packing_region(d, r, 1000, 800);
    REQUIRE(again.kept == reg.kept);
    REQUIRE(again.centres == reg.centres);
    REQUIRE(again.outside == 1);
    // A disk with no measured radius counts as a large one.
    d.push_back(disk(321, 100 + 4 * std::sqrt(3.0) * r, 0));  // 21 px right of a row's last disk: in contact
    REQUIRE(find_packing_region(d, r, 1000, 800).in_packing == n_packing + 1);
}

TEST_CASE("packing region: nothing is left out without a packing with walls", "[unit]") {
    const double r = 10;
    SECTION("a packing that fills the image") {
        const auto d =
            box_packing(14, 14, 486, 386, r);  // walls 4 px inside the image, as vibra synth draws them
        const double y_max =
            std::max_element(d.begin(), d.end(), [](auto& a, auto& b) { return a.y < b.y; })->y;
        const auto reg = find_packing_region(d, r, 500, static_cast<int>(std::ceil(y_max + r + 4)));
        INFO(reg.summary());
        REQUIRE(reg.packing);
        REQUIRE_FALSE(reg.found);
        REQUIRE(reg.summary().find("the whole image") != std::string::npos);
    }
    SECTION("a round cluster coexisting with a gas: no side is a wall") {
        auto d = round_cluster(500, 400, 120, r);
        const int n_cluster = static_cast<int>(d.size());
        REQUIRE(n_cluster > 100);
        for (int i = 0; i < 8; ++i)
            d.push_back(disk(60 + 110 * i, 60 + 13 * i, r));  // gas, far from the cluster
        const auto reg = find_packing_region(d, r, 1000, 800);
        INFO(reg.summary());
        REQUIRE(reg.packing);                         // 90% of the disks in one contact group ...
        REQUIRE(reg.walls == std::array<bool, 4>{});  // ... but round: no wall
        REQUIRE_FALSE(reg.found);
        REQUIRE(reg.summary().find("walls: none") != std::string::npos);
    }
    SECTION("a gas") {
        std::mt19937 rng(3);
        std::uniform_real_distribution<double> ux(20, 980), uy(20, 780);
        std::vector<Particle> d;
        for (int i = 0; i < 200; ++i) d.push_back(disk(ux(rng), uy(rng), r));  // area fraction 0.08
        const auto reg = find_packing_region(d, r, 1000, 800);
        INFO(reg.summary());
        REQUIRE_FALSE(reg.packing);
        REQUIRE_FALSE(reg.found);
        REQUIRE(reg.summary().find("no packing") != std::string::npos);
    }
    SECTION("a lone ball, and an empty frame") {
        REQUIRE_FALSE(find_packing_region({disk(300, 200, 60)}, 60, 640, 480).packing);
        REQUIRE_FALSE(find_packing_region({}, 60, 640, 480).found);
    }
    SECTION("fewer disks in contact than min_disks or than min_fraction of the frame's") {
        auto d = box_packing(100, 100, 300, 250, r);
        PackingRegionParams p;
        p.min_disks = static_cast<int>(d.size()) + 1;
        REQUIRE_FALSE(find_packing_region(d, r, 1000, 800, p).packing);
        const auto n = d.size();
        for (std::size_t i = 0; i < n / 5; ++i)
            d.push_back(disk(500 + 25 * double(i % 10), 500 + 25 * double(i / 10), r));
        REQUIRE_FALSE(find_packing_region(d, r, 1000, 800).packing);  // 83% in the packing
    }
}

TEST_CASE("packing region: a packing against one wall is cut on that side only", "[unit]") {
    const double r = 10;
    // Pressed against a wall on the left; the other sides ragged (every other row shorter).
    std::vector<Particle> d;
    int row = 0;
    for (double y = 100; y <= 400; y += std::sqrt(3.0) * r, ++row)
        for (double x = 200 + (row % 2) * r; x <= (row % 4 < 2 ? 420 : 360); x += 2 * r)
            d.push_back(disk(x, y, r));
    d.push_back(disk(120, 250, r));  // behind the wall
    d.push_back(disk(700, 250, r));  // free side: stays
    const auto reg = find_packing_region(d, r, 1000, 800);
    INFO(reg.summary());
    REQUIRE(reg.found);
    REQUIRE(reg.walls[0]);
    REQUIRE_FALSE(reg.walls[2]);
    REQUIRE(reg.kept.x0 == 190);
    REQUIRE(reg.kept.x1 == 999.5);  // the image's right edge
    REQUIRE(reg.outside == 1);
}

TEST_CASE("packing region: bad parameters name the field", "[unit]") {
    PackingRegionParams p;
    p.contact = 0.9;
    REQUIRE_THROWS_WITH(p.validate(), Catch::Contains("contact"));
    p = {};
    p.wall_cover = 0;
    REQUIRE_THROWS_WITH(p.validate(), Catch::Contains("wall_cover"));
    p = {};
    p.margin = 0.5;
    REQUIRE_THROWS_WITH(find_packing_region({}, 5, 10, 10, p), Catch::Contains("margin"));
}
