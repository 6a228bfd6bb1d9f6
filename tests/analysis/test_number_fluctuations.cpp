// SPDX-License-Identifier: GPL-3.0-or-later
#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include "vibra/analysis/number_fluctuations.hpp"
#include "vibra/core/error.hpp"
#include "structure_fixtures.hpp"

using namespace vibra;
using namespace vibra::analysis;
using Catch::Matchers::WithinAbs;

namespace {
/// Poisson process of intensity rho in g (N per frame Poisson), each point repeated `copies` times.
StructureFrame poisson(const Geometry& g, double rho, int copies, std::mt19937_64& rng) {
    std::uniform_real_distribution<double> u(0, 1);
    const double box = g.kind == GeometryKind::window_circle ? 4 * g.r * g.r : g.lx() * g.ly();
    std::poisson_distribution<int> pn(rho * box);
    const int n = pn(rng);
    StructureFrame f;
    f.window = g;
    for (int i = 0; i < n; ++i) {
        double x, y;
        if (g.kind == GeometryKind::window_circle) {
            x = g.cx + g.r * (2 * u(rng) - 1), y = g.cy + g.r * (2 * u(rng) - 1);
            if (!g.contains(x, y)) continue;
        } else {
            x = g.x0 + g.lx() * u(rng), y = g.y0 + g.ly() * u(rng);
        }
        const std::int8_t s = u(rng) < 0.3 ? 0 : 1;
        for (int c = 0; c < copies; ++c) f.x.push_back(x), f.y.push_back(y), f.species.push_back(s);
    }
    return f;
}
}  // namespace

TEST_CASE("number fluctuations of Poisson points: dN^2 = <N>, exponent 1", "[unit]") {
    for (const auto& g : {Geometry::rect(0, 0, 60, 40), Geometry::circle(0, 0, 35)}) {
        std::mt19937_64 rng(31);
        NumberFluctuationAccumulator acc(NumberFluctuationParams{});
        for (int f = 0; f < 150; ++f) acc.accumulate(poisson(g, 1.0, 1, rng));
        const auto r = acc.result();
        REQUIRE(r.ell.size() == 12);
        for (std::size_t k = 0; k < r.ell.size(); ++k) {
            INFO("ell=" << r.ell[k] << " mean=" << r.mean[k] << " var=" << r.var[k]
                        << " boxes=" << r.boxes[k]);
            REQUIRE_THAT(r.mean[k],
                         WithinAbs(r.ell[k] * r.ell[k], 4 * std::sqrt(r.ell[k] * r.ell[k] / r.boxes[k])));
            REQUIRE(std::abs(r.var[k] / r.mean[k] - 1) < 4 * std::sqrt(2.0 / r.boxes[k]) + 0.01);
            REQUIRE(std::abs(r.var_small[k] / r.mean_small[k] - 1) < 4 * std::sqrt(2.0 / r.boxes[k]) + 0.05);
        }
        REQUIRE_THAT(r.exponent, WithinAbs(1.0, 0.04));
        REQUIRE_THAT(r.exponent_large, WithinAbs(1.0, 0.05));
    }
}

TEST_CASE("number fluctuations: clustered points fluctuate more, a lattice less", "[unit]") {
    std::mt19937_64 rng(32);
    const auto g = Geometry::periodic(0, 0, 50, 50);
    NumberFluctuationAccumulator acc(NumberFluctuationParams{});
    for (int f = 0; f < 60; ++f) acc.accumulate(poisson(g, 0.4, 4, rng));
    const auto r = acc.result();
    // compound Poisson with clusters of 4: ΔN² = 4 ⟨N⟩
    for (std::size_t k = 0; k < r.ell.size(); ++k)
        REQUIRE(std::abs(r.var[k] / r.mean[k] - 4) < 4 * 4 * std::sqrt(2.0 / r.boxes[k]) + 0.05);

    // a rotated triangular lattice with a random shift each frame: boundary-dominated
    // (hyperuniform), ΔN² ∝ ℓ ∝ ⟨N⟩^{1/2}
    NumberFluctuationParams p;
    p.sizes = {2.3, 3.7, 5.9, 9.1, 14.3, 21.7};
    NumberFluctuationAccumulator lat(p);
    std::uniform_real_distribution<double> u(0, 1);
    const double c = std::cos(0.37), s = std::sin(0.37), h = std::sqrt(3.0) / 2;
    for (int f = 0; f < 40; ++f) {
        StructureFrame fr;
        fr.window = Geometry::rect(0, 0, 50, 50);
        const double sx = u(rng), sy = u(rng);
        for (int j = -60; j < 60; ++j)
            for (int i = -60; i < 60; ++i) {
                const double lx = i + 0.5 * (j % 2) + sx, ly = j * h + sy;
                const double x = 25 + c * lx - s * ly, y = 25 + s * lx + c * ly;
                if (fr.window.contains(x, y)) fr.x.push_back(x), fr.y.push_back(y), fr.species.push_back(0);
            }
        lat.accumulate(fr);
    }
    const auto q = lat.result();
    REQUIRE(q.exponent < 0.75);
    REQUIRE(q.exponent > 0.1);  // ≈ 0.5 with oscillations in ℓ
    NumberFluctuationParams bad;
    bad.sizes = {1, -2};
    REQUIRE_THROWS_AS(bad.validate(), ParameterError);
}

TEST_CASE("number fluctuations over a source: identical for 1, 2 and 3 threads, and to adding frame by frame",
          "[unit]") {
    // frame 0 has one particle and frame 1 none: the sizes come from frame 2
    const std::int64_t T = 23;
    const auto src = test::random_frames(
        Geometry::rect(0, 0, 30, 20), T, [](auto f) { return f == 0   ? 1
                                                             : f == 1 ? 0
                                                                      : 400 - 5 * f; }, 6);
    NumberFluctuationsParams q;
    NumberFluctuationAccumulator serial(q.boxes);
    for (std::int64_t f = 0; f < T; ++f) serial.accumulate(structure_frame(src.read_frames(f, 1), f));
    const auto ref = serial.result();
    REQUIRE(ref.frames == T - 2);
    REQUIRE(ref.ell.size() == 12);
    for (int threads : {1, 2, 3}) {
        INFO(threads << " threads");
        q.threads = threads;
        const auto r = compute_number_fluctuations(src, q).r;
        REQUIRE(r.ell == ref.ell);
        REQUIRE(r.boxes == ref.boxes);
        REQUIRE(r.frames == ref.frames);
        REQUIRE(r.mean == ref.mean);
        REQUIRE(r.var == ref.var);
        REQUIRE(r.mean_small == ref.mean_small);
        REQUIRE(r.var_large == ref.var_large);
        REQUIRE(r.exponent == ref.exponent);
    }
}
