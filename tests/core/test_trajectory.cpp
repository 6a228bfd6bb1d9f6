// SPDX-License-Identifier: GPL-3.0-or-later
#include <catch2/catch.hpp>
#include <cmath>

#include "vibra/core/dense.hpp"
#include "vibra/core/error.hpp"
#include "vibra/core/trajectory.hpp"
#include "vibra/core/trajectory_source.hpp"

using namespace vibra;

TEST_CASE("sort_rows orders by frame then particle, carrying every column", "[unit]") {
    TrajectoryTable t;
    t.push(1, 5, 1.5, 2.5, 1);
    t.push(0, 7, 0.7, 0.8, 0);
    t.push(1, 2, 1.2, 2.2, 0);
    t.push(0, 3, 0.3, 0.4, 1);
    t.vx = {15, 7, 12, 3};
    t.vy = {-15, -7, -12, -3};
    t.sort_rows();
    REQUIRE(t.frame == std::vector<std::int64_t>{0, 0, 1, 1});
    REQUIRE(t.particle == std::vector<std::int64_t>{3, 7, 2, 5});
    REQUIRE(t.x == std::vector<double>{0.3, 0.7, 1.2, 1.5});
    REQUIRE(t.vx == std::vector<double>{3, 7, 12, 15});
    REQUIRE(t.species == std::vector<std::int8_t>{1, 0, 0, 1});
    REQUIRE_NOTHROW(t.validate("t"));
}

TEST_CASE("sort_rows on a sub-range leaves the rest untouched", "[unit]") {
    TrajectoryTable t;
    t.push(0, 9, 9, 9, 0);
    t.push(1, 4, 4, 4, 0);
    t.push(1, 1, 1, 1, 0);
    t.sort_rows(1, 3);
    REQUIRE(t.particle == std::vector<std::int64_t>{9, 1, 4});
}

TEST_CASE("validate names the problem", "[unit]") {
    TrajectoryTable t;
    t.push(0, 1, 0, 0, 0);
    t.push(0, 1, 1, 1, 0);
    REQUIRE_THROWS_WITH(t.validate("f.h5"),
                        Catch::Contains("f.h5") && Catch::Contains("duplicate particle 1"));
    TrajectoryTable u;
    u.push(1, 1, 0, 0, 0);
    u.push(0, 2, 1, 1, 0);
    REQUIRE_THROWS_WITH(u.validate("g.h5"), Catch::Contains("not sorted by frame"));
    TrajectoryTable v;
    v.push(0, 1, 0, 0, 3);
    REQUIRE_THROWS_WITH(v.validate("h.h5"), Catch::Contains("species code 3"));
    TrajectoryTable w;
    w.push(0, 1, 0, 0, 0);
    w.vx = {1.0};
    REQUIRE_THROWS_WITH(w.validate("w.h5"), Catch::Contains("vy"));
    // unlinked rows may repeat particle −1
    TrajectoryTable ok;
    ok.push(0, -1, 0, 0, 0);
    ok.push(0, -1, 1, 1, 0);
    REQUIRE_NOTHROW(ok.validate("ok"));
}

TEST_CASE("frame index gives each frame's rows, empty frames included", "[unit]") {
    TrajectoryTable t;
    t.push(0, 1, 0, 0, 0);
    t.push(0, 2, 0, 0, 0);
    t.push(2, 1, 0, 0, 0);
    const auto idx = build_frame_index(t, 0, 4);
    REQUIRE(idx.n_frames() == 4);
    REQUIRE(idx.count(0) == 2);
    REQUIRE(idx.count(1) == 0);
    REQUIRE(idx.begin(2) == 2);
    REQUIRE(idx.count(2) == 1);
    REQUIRE(idx.count(3) == 0);
    REQUIRE_THROWS_AS(build_frame_index(t, 0, 2), FormatError);
}

TEST_CASE("dense block puts NaN where a particle is absent", "[unit]") {
    TrajectoryTable t;
    t.push(0, 10, 1, 2, 0);
    t.push(0, 20, 3, 4, 1);
    t.push(1, 20, 5, 6, 1);
    t.push(2, 10, 7, 8, 0);
    const auto idx = build_frame_index(t, 0, 3);
    const std::vector<std::int64_t> ids{10, 20};
    const auto b = dense_block(t, idx, ids, 0, 3);
    REQUIRE(b.x[b.at(0, 0)] == 1);
    REQUIRE(b.y[b.at(0, 1)] == 4);
    REQUIRE(std::isnan(b.x[b.at(1, 0)]));
    REQUIRE(b.x[b.at(1, 1)] == 5);
    REQUIRE(b.x[b.at(2, 0)] == 7);
    REQUIRE(std::isnan(b.x[b.at(2, 1)]));
    REQUIRE(b.species == std::vector<std::int8_t>{0, 1});
    REQUIRE(particle_ids(t) == ids);
}

TEST_CASE("geometry areas and containment", "[unit]") {
    const auto c = Geometry::circle(1, 1, 2);
    REQUIRE_THAT(c.area(), Catch::Matchers::WithinRel(4 * M_PI, 1e-12));
    REQUIRE(c.contains(2.9, 1));
    REQUIRE_FALSE(c.contains(3.1, 1));
    const auto r = Geometry::rect(0, 0, 2, 3);
    REQUIRE(r.area() == 6);
    REQUIRE_THROWS_AS(Geometry::rect(0, 0, 0, 3), ParameterError);
    REQUIRE(geometry_kind_from_string("periodic_box") == GeometryKind::periodic_box);
}

TEST_CASE("frames_per_block honours a source's row budget, never below one frame", "[unit]") {
    Trajectory t;
    for (std::int64_t f = 0; f < 100; ++f)
        for (std::int64_t i = 0; i < 10; ++i) t.rows.push(f, i, double(i), 0, 0);
    t.index = build_frame_index(t.rows, 0, 100);
    const InMemorySource src(t);
    REQUIRE(frames_per_block(src, 1 << 20) == 100);  // no budget: all frames
    REQUIRE(frames_per_block(src, 200) == 20);
    const RowBudgetSource budgeted(src, 55);
    REQUIRE(budgeted.max_block_rows() == 55);
    REQUIRE(frames_per_block(budgeted, 1 << 20) == 5);
    REQUIRE(frames_per_block(budgeted, 20) == 2);  // a smaller target still wins
    REQUIRE(frames_per_block(RowBudgetSource(src, 3), 1 << 20) == 1);
    REQUIRE(frames_per_block(RowBudgetSource(budgeted, 1000), 1 << 20) == 5);  // nested: the smaller
    REQUIRE(budgeted.read_frames(10, 2).rows.size() == 20);
}
