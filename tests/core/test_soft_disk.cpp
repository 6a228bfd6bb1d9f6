// SPDX-License-Identifier: GPL-3.0-or-later
#include <catch2/catch.hpp>
#include <cmath>

#include "vibra/core/soft_disk.hpp"

using namespace vibra;

TEST_CASE("soft-disk gas reaches the Langevin temperature per species (equipartition without contacts)",
          "[unit]") {
    SoftDiskParams p;
    p.n_small = 150;
    p.n_large = 150;
    p.packing_fraction = 0.05;  // dilute: contacts rare
    p.temperature = 2.0;
    p.friction = 5.0;
    p.seed = 11;
    SoftDiskSimulator sim(p);
    sim.advance_frames(100);
    double e_small = 0, e_large = 0;
    std::int64_t n_small = 0, n_large = 0;
    for (int f = 0; f < 200; ++f) {
        sim.advance_frames(1);
        for (std::size_t i = 0; i < sim.x().size(); ++i) {
            const double d = sim.diameter()[i];
            const double m = d * d;  // small diameter 1 → mass 1
            const double ke = 0.5 * m * (sim.vx()[i] * sim.vx()[i] + sim.vy()[i] * sim.vy()[i]);
            if (sim.species()[i] == kSpeciesSmall)
                e_small += ke, ++n_small;
            else
                e_large += ke, ++n_large;
        }
    }
    // ⟨½ m v²⟩ = T in 2-D; first-order integrator error O(γ dt) ≈ 0.5%.
    REQUIRE_THAT(e_small / double(n_small), Catch::Matchers::WithinRel(2.0, 0.05));
    REQUIRE_THAT(e_large / double(n_large), Catch::Matchers::WithinRel(2.0, 0.05));
}

TEST_CASE("soft-disk liquid keeps overlaps small and stays in its walled box", "[unit]") {
    SoftDiskParams p;
    p.n_small = 200;
    p.n_large = 200;
    p.packing_fraction = 0.6;
    p.periodic = false;
    p.stiffness = 5000;
    p.temperature = 0.5;
    SoftDiskSimulator sim(p);
    sim.advance_frames(200);
    REQUIRE(sim.max_overlap() < 0.05);  // 5% of the small diameter
    const auto& g = sim.geometry();
    for (std::size_t i = 0; i < sim.x().size(); ++i) {
        REQUIRE(sim.x()[i] > g.x0 - 0.05);
        REQUIRE(sim.x()[i] < g.x1 + 0.05);
    }
    const auto tr = sim.run(5);
    REQUIRE(tr.index.n_frames() == 5);
    REQUIRE(tr.rows.size() == 5 * 400);
    REQUIRE(tr.meta.species_diameters.size() == 2);
    REQUIRE_NOTHROW(tr.rows.validate("sim"));
}

TEST_CASE("soft-disk parameters are validated", "[unit]") {
    SoftDiskParams p;
    p.dt = -1;
    REQUIRE_THROWS_WITH(SoftDiskSimulator(p), Catch::Contains("dt"));
}
