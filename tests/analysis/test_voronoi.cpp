// SPDX-License-Identifier: GPL-3.0-or-later
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "vibra/analysis/voronoi.hpp"
#include "vibra/core/error.hpp"
#include "structure_fixtures.hpp"
#include "vibra/core/trajectory_source.hpp"

using namespace vibra;
using namespace vibra::analysis;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

namespace {
StructureFrame triangular(int nx, int ny, double a, const Geometry& g, double ox, double oy, double radius) {
    StructureFrame f;
    f.window = g;
    const double h = std::sqrt(3.0) / 2 * a;
    for (int j = 0; j < ny; ++j)
        for (int i = 0; i < nx; ++i) {
            const double x = ox + (i + 0.5 * (j % 2)) * a, y = oy + j * h;
            if (!g.periodic() && !g.contains(x, y)) continue;
            f.x.push_back(x), f.y.push_back(y), f.species.push_back(0), f.radius.push_back(radius);
        }
    return f;
}
}  // namespace

TEST_CASE("Voronoi of a periodic triangular lattice: hexagons of area sqrt3/2 a^2", "[unit]") {
    const double a = 1.3;
    const int nx = 12, ny = 10;
    const auto g = Geometry::periodic(0, 0, nx * a, ny * std::sqrt(3.0) / 2 * a);
    const auto f = triangular(nx, ny, a, g, 0.05, 0.1, 0.5);
    const auto v = radical_voronoi(f);
    REQUIRE(v.area.size() == 120);
    double sum = 0;
    for (std::size_t i = 0; i < v.area.size(); ++i) {
        REQUIRE_THAT(v.area[i], WithinRel(std::sqrt(3.0) / 2 * a * a, 1e-10));
        REQUIRE(v.boundary[i] == 0);
        REQUIRE(v.offsets[i + 1] - v.offsets[i] == 6);
        for (auto k = v.offsets[i]; k < v.offsets[i + 1]; ++k)
            REQUIRE_THAT(v.edge_length[static_cast<std::size_t>(k)], WithinRel(a / std::sqrt(3.0), 1e-9));
        sum += v.area[i];
    }
    REQUIRE_THAT(sum, WithinRel(g.area(), 1e-12));
    const auto phi = local_packing_fraction(v);
    REQUIRE_THAT(phi[7], WithinRel(M_PI * 0.25 / (std::sqrt(3.0) / 2 * a * a), 1e-10));
}

TEST_CASE("radical Voronoi of random bidisperse disks tiles the periodic box", "[unit]") {
    std::mt19937_64 rng(21);
    std::uniform_real_distribution<double> u(0, 1);
    StructureFrame f;
    f.window = Geometry::periodic(-10, -7, 30, 23);
    for (int i = 0; i < 600; ++i) {
        f.x.push_back(-10 + 40 * u(rng)), f.y.push_back(-7 + 30 * u(rng));
        const bool large = u(rng) < 0.5;
        f.species.push_back(large ? 1 : 0), f.radius.push_back(large ? 0.7 : 0.5);
    }
    const auto v = radical_voronoi(f);
    const double sum = std::accumulate(v.area.begin(), v.area.end(), 0.0);
    REQUIRE_THAT(sum, WithinRel(f.window.area(), 1e-10));
    // neighbour relation is symmetric with equal edge lengths
    for (std::size_t i = 0; i < 600; ++i)
        for (auto k = v.offsets[i]; k < v.offsets[i + 1]; ++k) {
            const auto j = static_cast<std::size_t>(v.neighbour[static_cast<std::size_t>(k)]);
            bool found = false;
            for (auto m = v.offsets[j]; m < v.offsets[j + 1]; ++m)
                if (v.neighbour[static_cast<std::size_t>(m)] == static_cast<std::int64_t>(i)) {
                    found = true;
                    REQUIRE_THAT(v.edge_length[static_cast<std::size_t>(m)],
                                 WithinAbs(v.edge_length[static_cast<std::size_t>(k)], 1e-9));
                }
            REQUIRE(found);
        }
    // the plain tessellation gives different areas but also tiles the box
    VoronoiParams plain;
    plain.radical = false;
    const auto vp = radical_voronoi(f, plain);
    REQUIRE_THAT(std::accumulate(vp.area.begin(), vp.area.end(), 0.0), WithinRel(f.window.area(), 1e-10));
}

TEST_CASE("radical Voronoi of a two-species checkerboard has the analytic areas", "[unit]") {
    const double a = 1.0, rs = 0.35, rl = 0.5;
    const int n = 8;
    StructureFrame f;
    f.window = Geometry::periodic(0, 0, n * a, n * a);
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) {
            const bool large = (i + j) % 2;
            f.x.push_back(i * a + 0.2), f.y.push_back(j * a + 0.3);
            f.species.push_back(large ? 1 : 0), f.radius.push_back(large ? rl : rs);
        }
    const auto v = radical_voronoi(f);
    const double ps = (a * a + rs * rs - rl * rl) / (2 * a);
    const double area_small = 4 * ps * ps;
    for (std::size_t i = 0; i < v.area.size(); ++i) {
        if (f.species[i] == 0)
            REQUIRE_THAT(v.area[i], WithinRel(area_small, 1e-10));
        else
            REQUIRE_THAT(v.area[i], WithinRel(2 * a * a - area_small, 1e-10));
    }
    VoronoiParams plain;
    plain.radical = false;
    const auto vp = radical_voronoi(f, plain);
    for (double ar : vp.area) REQUIRE_THAT(ar, WithinRel(a * a, 1e-10));
}

TEST_CASE("Voronoi in windows: interior cells exact, boundary cells flagged", "[unit]") {
    SECTION("rectangle") {
        const double a = 1.0;
        const auto g = Geometry::rect(0.3, 0.2, 15.7, 12.1);
        const auto f = triangular(20, 20, a, g, 0.0, 0.0, 0.5);
        const auto v = radical_voronoi(f);
        std::size_t interior = 0, flagged = 0;
        double sum = 0;
        for (std::size_t i = 0; i < v.area.size(); ++i) {
            sum += v.area[i];
            const double dedge = std::min({f.x[i] - g.x0, g.x1 - f.x[i], f.y[i] - g.y0, g.y1 - f.y[i]});
            if (v.boundary[i]) {
                ++flagged;
                REQUIRE(dedge < a);  // only particles close to the edge touch it
            } else {
                ++interior;
                REQUIRE_THAT(v.area[i], WithinRel(std::sqrt(3.0) / 2, 1e-10));
            }
            if (dedge > a) REQUIRE(v.boundary[i] == 0);
        }
        REQUIRE(interior > 100);
        REQUIRE(flagged > 20);
        REQUIRE_THAT(sum, WithinRel(g.area(), 1e-10));  // clipped cells tile the window
    }
    SECTION("circle") {
        std::mt19937_64 rng(4);
        std::uniform_real_distribution<double> u(-1, 1);
        StructureFrame f;
        f.window = Geometry::circle(2, 3, 10);
        while (f.size() < 400) {
            const double x = 2 + 10 * u(rng), y = 3 + 10 * u(rng);
            if (!f.window.contains(x, y)) continue;
            f.x.push_back(x), f.y.push_back(y), f.species.push_back(0), f.radius.push_back(0.2);
        }
        const auto v = radical_voronoi(f);
        // cells are clipped to the circle's bounding square, which they tile
        REQUIRE_THAT(std::accumulate(v.area.begin(), v.area.end(), 0.0), WithinRel(400.0, 1e-10));
        std::size_t flagged = 0;
        for (std::size_t i = 0; i < 400; ++i) {
            flagged += v.boundary[i];
            if (std::hypot(f.x[i] - 2, f.y[i] - 3) < 6) REQUIRE(v.boundary[i] == 0);
        }
        REQUIRE(flagged > 10);
        REQUIRE(flagged < 200);
    }
}

TEST_CASE("radical Voronoi without sizes is refused with a message", "[unit]") {
    StructureFrame f;
    f.window = Geometry::periodic(0, 0, 10, 10);
    f.x = {1, 5}, f.y = {1, 5}, f.species = {-1, -1};
    REQUIRE_THROWS_WITH(radical_voronoi(f), Catch::Contains("species_diameters"));
    VoronoiParams plain;
    plain.radical = false;
    const auto v = radical_voronoi(f, plain);
    REQUIRE_THAT(v.area[0] + v.area[1], WithinRel(100.0, 1e-12));
    REQUIRE_THAT(v.area[0], WithinRel(50.0, 1e-12));
    // no sizes: no packing fraction
    REQUIRE(v.particle_radius.empty());
    for (double phi : local_packing_fraction(v)) REQUIRE(std::isnan(phi));
}

TEST_CASE("plain Voronoi cells keep the particles' sizes for their packing fraction", "[unit]") {
    // A triangular lattice: plain cells are the hexagons of area √3/2 a², and each disk's local
    // packing fraction is π R² over that, as in the radical tessellation of equal disks.
    const double a = 1.3;
    const auto g = Geometry::periodic(0, 0, 12 * a, 10 * std::sqrt(3.0) / 2 * a);
    auto f = triangular(12, 10, a, g, 0.05, 0.1, 0.5);
    f.radius[3] = std::numeric_limits<double>::quiet_NaN();  // an unknown size gets the mean of the known
    VoronoiParams plain;
    plain.radical = false;
    const auto v = radical_voronoi(f, plain);
    REQUIRE(v.particle_radius.size() == f.size());
    const auto phi = local_packing_fraction(v);
    for (std::size_t i = 0; i < phi.size(); ++i) {
        REQUIRE(v.radius[i] == 0.0);  // plain: no weights
        REQUIRE_THAT(phi[i], WithinRel(M_PI * 0.25 / (std::sqrt(3.0) / 2 * a * a), 1e-10));
    }
}

TEST_CASE("Poisson-Voronoi cells: mean area |W|/N, reduced variance 0.280", "[unit]") {
    // Known Poisson–Voronoi result in 2D: Var(A)/<A>^2 = 0.2802 (Hinde & Miles 1980).
    std::mt19937_64 rng(77);
    std::uniform_real_distribution<double> u(0, 1);
    double s1 = 0, s2 = 0, n = 0;
    for (int frame = 0; frame < 25; ++frame) {
        StructureFrame f;
        f.window = Geometry::periodic(0, 0, 45, 45);
        for (int i = 0; i < 2025; ++i)
            f.x.push_back(45 * u(rng)), f.y.push_back(45 * u(rng)), f.species.push_back(0);
        VoronoiParams p;
        p.radical = false;
        const auto v = radical_voronoi(f, p);
        for (double a : v.area) s1 += a, s2 += a * a, n += 1;
    }
    const double mean = s1 / n, var = s2 / n - mean * mean;
    REQUIRE_THAT(mean, WithinRel(1.0, 1e-12));  // the cells tile the box exactly
    REQUIRE_THAT(var / (mean * mean), WithinAbs(0.2802, 0.01));
}

TEST_CASE("voronoi over a source: identical for 1, 2 and 3 threads, frames in order", "[unit]") {
    // a window (boundary cells excluded); 23 frames: batches of 4, 8 and 12 end part-full
    const std::int64_t T = 23;
    const auto src = test::random_frames(
        Geometry::rect(0, 0, 24, 20), T, [](auto f) { return 300 - f; }, 8);
    std::vector<VoronoiAnalysisResult> runs;
    for (int threads : {1, 2, 3}) {
        VoronoiAnalysisParams q;
        q.threads = threads;
        runs.push_back(compute_voronoi_analysis(src, q));
    }
    for (const auto& r : {runs[1], runs[2]}) {
        REQUIRE(r.frame == runs[0].frame);
        REQUIRE(r.phi == runs[0].phi);
        REQUIRE(r.phi_voronoi == runs[0].phi_voronoi);
        REQUIRE(r.n_cells == runs[0].n_cells);
        for (int s = 0; s < 3; ++s) {
            REQUIRE(r.hist[s] == runs[0].hist[s]);
            REQUIRE(r.phi_sum[s] == runs[0].phi_sum[s]);
            REQUIRE(r.phi_sum2[s] == runs[0].phi_sum2[s]);
            REQUIRE(r.area_sum[s] == runs[0].area_sum[s]);
        }
    }
    // each frame's row is that frame's own tessellation
    const auto& r = runs[0];
    REQUIRE(r.frame.size() == static_cast<std::size_t>(T));
    for (std::int64_t f = 0; f < T; ++f) {
        const auto k = static_cast<std::size_t>(f);
        REQUIRE(r.frame[k] == f);
        const auto fr = structure_frame(src.read_frames(f, 1), f);
        const auto v = radical_voronoi(fr);
        double boundary = 0, used = 0;
        for (std::size_t i = 0; i < fr.size(); ++i)
            boundary += v.boundary[i], used += !v.boundary[i] && v.area[i] > 0;
        REQUIRE(r.n_boundary[k] == boundary);
        REQUIRE(r.n_cells[k] == used);
        REQUIRE(r.n_cells[k] > 0.7 * static_cast<double>(300 - f));
    }
}
