// SPDX-License-Identifier: GPL-3.0-or-later
// The packing's region (packing_region.hpp) on disk lists built in code: a packing pressed into
// a rectangular container with a knob outside, things beyond its walls in later frames, the same
// packing filling the image, a round cluster coexisting with a gas (which must stay), a gas, a
// lone ball, a chain, a packing against one wall.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <span>
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
    REQUIRE(reg.cut ==
            std::array<bool, 4>{false, false, true, false});  // only the right one has something beyond
    const double x_max =
        std::max_element(d.begin(), d.end() - 1, [](auto& a, auto& b) { return a.x < b.x; })->x;
    REQUIRE(reg.centres.x0 == 100);
    REQUIRE(reg.centres.y0 == 100);
    REQUIRE(reg.centres.x1 == x_max);
    // kept: one large radius beyond the right wall's centres; the image elsewhere
    REQUIRE(reg.kept == Geometry::rect(-0.5, -0.5, x_max + 10, 799.5));
    REQUIRE(
        reg.summary().find("around " + std::to_string(n_packing) + " of " + std::to_string(n_packing + 1) +
                           " disks in contact, walls left, top, right, bottom, cut beyond right; 1 detection "
                           "outside in 1 frame") != std::string::npos);
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

TEST_CASE("packing region: walls are cut where later frames show something beyond, and only a few things",
          "[unit]") {
    const double r = 10;
    const auto packing = box_packing(100, 100, 300, 250, r);
    std::vector<std::vector<Particle>> frames(3, packing);
    frames[1].push_back(disk(40, 180, r));   // a bolt left of the left wall, in the middle frame only
    frames[2].push_back(disk(200, 320, r));  // a hole below the bottom wall, in the last frame only
    // Above the top wall: a row of 4 disks in the last frame (a gas, or disks the first frame missed).
    for (int i = 0; i < 4; ++i) frames[2].push_back(disk(120 + 40 * i, 50, r));
    const auto reg = find_packing_region(frames, r, 1000, 800);
    INFO(reg.summary());
    REQUIRE(reg.frames == 3);
    REQUIRE(reg.walls == std::array<bool, 4>{true, true, true, true});
    REQUIRE(reg.cut == std::array<bool, 4>{true, false, false, true});
    REQUIRE(reg.kept.x0 == 90);
    REQUIRE(reg.kept.y0 == -0.5);  // 4 beyond the top in one frame: more than max_beyond (3)
    REQUIRE(reg.kept.y1 == reg.centres.y1 + 10);
    REQUIRE(reg.outside == 2);
    PackingRegionParams p;
    p.max_beyond = 4;
    REQUIRE(find_packing_region(frames, r, 1000, 800, p).cut == std::array<bool, 4>{true, true, false, true});
    // From the first frame alone nothing lies beyond: the image stays whole.
    const auto alone = find_packing_region(std::span(frames).first(1), r, 1000, 800);
    REQUIRE(alone.packing);
    REQUIRE_FALSE(alone.found);
    REQUIRE(alone.summary().find("nothing beyond them to cut in 1 frame") != std::string::npos);
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
        REQUIRE(reg.walls == std::array<bool, 4>{true, true, true, true});
        REQUIRE(reg.room == std::array<bool, 4>{});  // the first frame decides: no later frame is located
        REQUIRE(reg.summary().find("the whole image") != std::string::npos);
        REQUIRE(reg.summary().find("no room for a disk beyond them") != std::string::npos);
        // 40 px more on the right: room for a disk beyond that wall (margin + radius = 20 px).
        const auto wider = find_packing_region(d, r, 540, static_cast<int>(std::ceil(y_max + r + 4)));
        REQUIRE(wider.room == std::array<bool, 4>{false, false, true, false});
        REQUIRE(wider.summary().find("nothing beyond them to cut in 1 frame") != std::string::npos);
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
        REQUIRE_FALSE(find_packing_region(std::vector<Particle>{}, 60, 640, 480).found);
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
    // Pressed against a wall on the left; the right side ragged (rows of two lengths); the top and
    // bottom flat rows of the lattice, which line their sides as walls do.
    std::vector<Particle> d;
    int row = 0;
    for (double y = 100; y <= 400; y += std::sqrt(3.0) * r, ++row)
        for (double x = 200 + (row % 2) * r; x <= (row % 4 < 2 ? 420 : 360); x += 2 * r)
            d.push_back(disk(x, y, r));
    d.push_back(disk(120, 250, r));  // behind the wall
    d.push_back(disk(700, 250, r));  // beyond the free side: stays
    const auto reg = find_packing_region(d, r, 1000, 800);
    INFO(reg.summary());
    REQUIRE(reg.found);
    REQUIRE(reg.walls == std::array<bool, 4>{true, true, false, true});
    REQUIRE(reg.cut ==
            std::array<bool, 4>{true, false, false, false});  // nothing beyond the flat top and bottom
    REQUIRE(reg.kept == Geometry::rect(190, -0.5, 999.5, 799.5));
    REQUIRE(reg.outside == 1);
}

TEST_CASE("packing region: a chain of disks is not a packing", "[unit]") {
    std::vector<Particle> chain;
    for (int i = 0; i < 30; ++i) chain.push_back(disk(100 + 20 * i, 300, 10));  // touching, all at y = 300
    chain.push_back(disk(100, 500, 10));
    const auto reg = find_packing_region(chain, 10, 1000, 800);
    REQUIRE(reg.in_packing == 30);
    REQUIRE_FALSE(reg.packing);
    REQUIRE_FALSE(reg.found);
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
    REQUIRE_THROWS_WITH(find_packing_region(std::vector<Particle>{}, 5, 10, 10, p),
                        Catch::Contains("margin"));
}
