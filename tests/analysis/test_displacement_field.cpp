// SPDX-License-Identifier: GPL-3.0-or-later
// Displacements by id, the Gaussian coarse-graining and its mask, the grid.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "vibra/analysis/displacement_field.hpp"
#include "vibra/core/error.hpp"

using namespace vibra;
using namespace vibra::analysis;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

TEST_CASE("displacements are matched by particle id, with minimum image when periodic", "[unit]") {
    FrameSnapshot a{0, {1, 2, 5, 7}, {1.0, 2.0, 9.5, 4.0}, {1.0, 3.0, 5.0, 4.0}};
    FrameSnapshot b{3, {2, 5, 6, 7}, {2.5, 0.5, 1.0, 4.0}, {3.0, 5.5, 1.0, 3.0}};
    const auto d = displacements(a, b, Geometry::rect(0, 0, 10, 10));
    REQUIRE(d.lag == 3);
    REQUIRE(d.id == std::vector<std::int64_t>{2, 5, 7});
    REQUIRE(d.ux == std::vector<double>{0.5, -9.0, 0.0});
    REQUIRE(d.uy == std::vector<double>{0.0, 0.5, -1.0});
    REQUIRE(d.x == std::vector<double>{2.0, 9.5, 4.0});
    const auto p = displacements(a, b, Geometry::periodic(0, 0, 10, 10));
    REQUIRE_THAT(p.ux[1], WithinAbs(1.0, 1e-12));  // 9.5 → 0.5 across the boundary
    const auto m = displacements(a, b, Geometry::rect(0, 0, 10, 10), FieldDrift::mean);
    REQUIRE_THAT(m.drift_x, WithinAbs(-8.5 / 3, 1e-12));
    REQUIRE_THAT(m.ux[0] + m.ux[1] + m.ux[2], WithinAbs(0.0, 1e-12));
    REQUIRE_THROWS_AS(field_drift_from_string("median"), ParameterError);
}

TEST_CASE("grid covers the region exactly", "[unit]") {
    const auto g = make_grid(Geometry::rect(2, 3, 12, 8), 1.1);
    REQUIRE(g.nx == 9);
    REQUIRE(g.ny == 5);
    REQUIRE_THAT(g.x0 + g.lx(), WithinAbs(12.0, 1e-12));
    REQUIRE_THAT(g.y(0), WithinAbs(3 + 0.5, 1e-12));
    REQUIRE(make_grid(Geometry::periodic(0, 0, 10, 10), 1).periodic);
    REQUIRE_THROWS_AS(make_grid(Geometry::rect(0, 0, 1, 1), 0), ParameterError);
    std::vector<double> xs{1, 4}, ys{2, 7};
    const auto r = field_region(Geometry{}, xs, ys);
    REQUIRE(r.x0 == 1);
    REQUIRE(r.y1 == 7);
}

TEST_CASE("Gaussian coarse-graining: exact for uniform fields, masked where empty", "[unit]") {
    std::mt19937_64 rng(1);
    std::uniform_real_distribution<double> u(0, 1);
    std::vector<double> x, y, ux, uy, lx, ly;
    // Particles only in the left 2/3 of a 30×20 window, density 4.
    for (int n = 0; n < 1600; ++n) {
        x.push_back(20 * u(rng)), y.push_back(20 * u(rng));
        ux.push_back(1.0), uy.push_back(-2.0);
        lx.push_back(0.3 * x.back() - 0.1 * y.back() + 1), ly.push_back(0.2 * y.back());
    }
    const Geometry win = Geometry::rect(0, 0, 30, 20);
    const auto grid = make_grid(win, 1.0);
    CoarseGrainParams p;
    p.sigma = 1.0;
    const auto f = coarse_grain(grid, x, y, ux, uy, win, p);
    std::size_t masked_right = 0, right = 0, n_in = 0;
    double w_in = 0;
    for (std::size_t j = 0; j < grid.ny; ++j)
        for (std::size_t i = 0; i < grid.nx; ++i) {
            const std::size_t k = j * grid.nx + i;
            if (grid.x(i) > 24) ++right, masked_right += !f.valid[k];
            if (grid.x(i) < 18) {
                REQUIRE(f.valid[k]);
                REQUIRE_THAT(f.ux[k], WithinAbs(1.0, 1e-12));
                REQUIRE_THAT(f.uy[k], WithinAbs(-2.0, 1e-12));
            }
            if (grid.x(i) > 3 && grid.x(i) < 17 && grid.y(j) > 3 && grid.y(j) < 17)
                w_in += f.weight[k], ++n_in;
        }
    REQUIRE(masked_right == right);
    // Interior: ⟨Σw⟩ = ρ·2πσ²·(1 − e^{−9/2}) (kernel cut at 3σ), up to Poisson noise.
    REQUIRE_THAT(w_in / static_cast<double>(n_in),
                 WithinRel(4 * 2 * 3.141592653589793 * (1 - std::exp(-4.5)), 0.06));
    // A linear field is reproduced at interior nodes up to the sampling noise of the kernel average.
    const auto lf = coarse_grain(grid, x, y, lx, ly, win, p);
    for (std::size_t j = 0; j < grid.ny; ++j)
        for (std::size_t i = 0; i < grid.nx; ++i)
            if (grid.x(i) > 4 && grid.x(i) < 16 && grid.y(j) > 4 && grid.y(j) < 16) {
                const std::size_t k = j * grid.nx + i;
                REQUIRE_THAT(lf.ux[k], WithinAbs(0.3 * grid.x(i) - 0.1 * grid.y(j) + 1, 0.15));
                REQUIRE_THAT(lf.uy[k], WithinAbs(0.2 * grid.y(j), 0.1));
            }
    SECTION("circular window masks nodes outside the circle") {
        const Geometry c = Geometry::circle(10, 10, 8);
        const auto region = field_region(c, x, y);
        const auto cg = make_grid(region, 1.0);
        const auto cf = coarse_grain(cg, x, y, ux, uy, c, p);
        for (std::size_t j = 0; j < cg.ny; ++j)
            for (std::size_t i = 0; i < cg.nx; ++i)
                if (std::hypot(cg.x(i) - 10, cg.y(j) - 10) > 8) REQUIRE(!cf.valid[j * cg.nx + i]);
    }
    SECTION("bad parameters") {
        CoarseGrainParams b;
        b.sigma = -1;
        REQUIRE_THROWS_AS(coarse_grain(grid, x, y, ux, uy, win, b), ParameterError);
    }
    SECTION("smoothing at the points is exact for uniform fields") {
        std::vector<double> sx, sy;
        smooth_at_points(x, y, ux, uy, win, 1.0, 3.0, sx, sy);
        for (std::size_t i = 0; i < x.size(); ++i) REQUIRE_THAT(sx[i], WithinAbs(1.0, 1e-12));
    }
}
