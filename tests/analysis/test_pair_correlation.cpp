// SPDX-License-Identifier: GPL-3.0-or-later
#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include <map>
#include <tuple>

#include "detail/pair_grid.hpp"
#include "vibra/analysis/pair_correlation.hpp"
#include "vibra/core/cell_list.hpp"
#include "vibra/core/error.hpp"
#include "vibra/core/trajectory_source.hpp"

using namespace vibra;
using namespace vibra::analysis;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

namespace {

/// T frames of n uniform points in geometry g, random species 0/1.
InMemorySource poisson_source(const Geometry& g, std::int64_t n, std::int64_t T, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(0, 1);
    Trajectory t;
    t.meta.geometry = g;
    t.meta.species_diameters = {1.0, 1.4};
    for (std::int64_t f = 0; f < T; ++f) {
        for (std::int64_t i = 0; i < n; ++i) {
            double x = 0, y = 0;
            if (g.kind == GeometryKind::window_circle) {
                do {
                    x = g.cx + g.r * (2 * u(rng) - 1);
                    y = g.cy + g.r * (2 * u(rng) - 1);
                } while (!g.contains(x, y));
            } else {
                x = g.x0 + g.lx() * u(rng);
                y = g.y0 + g.ly() * u(rng);
                if (x >= g.x1) x = g.x0;
                if (y >= g.y1) y = g.y0;
            }
            t.rows.push(f, i, x, y, static_cast<std::int8_t>(u(rng) < 0.5 ? 0 : 1));
        }
    }
    t.index = build_frame_index(t.rows, 0, T);
    return InMemorySource(std::move(t));
}

PairCorrelationResult run_gr(const TrajectorySource& s, double rmax, std::int64_t bins,
                             EdgeCorrection e = EdgeCorrection::automatic) {
    PairCorrelationParams p;
    p.r_max = rmax, p.bins = bins, p.edge = e;
    PairCorrelation acc(p);
    for_each_structure_frame(s, 1, [&](const StructureFrame& f) { acc.accumulate(f); });
    return acc.result();
}

/// Set covariance of a rectangle averaged over directions, divided by its area: the expected
/// uncorrected g(r) of a Poisson process (1 − P r/(π|W|) + r²/(π|W|)).
double rect_uncorrected(double lx, double ly, double r) {
    return 1.0 - (2 * (lx + ly) * r / M_PI - r * r / M_PI) / (lx * ly);
}
/// Same for a disk of radius R: γ(r)/|W|.
double disk_uncorrected(double R, double r) {
    const double gam = 2 * R * R * std::acos(r / (2 * R)) - 0.5 * r * std::sqrt(4 * R * R - r * r);
    return gam / (M_PI * R * R);
}

}  // namespace

TEST_CASE("g(r) of Poisson points in a rectangular window is 1 with translation weights", "[unit]") {
    const Geometry g = Geometry::rect(0, 0, 100, 60);
    const auto src = poisson_source(g, 1000, 400, 11);
    const double rmax = 15;  // a quarter of the short side
    const auto res = run_gr(src, rmax, 50);
    REQUIRE(res.frames == 400);
    for (std::size_t k = 0; k < res.g.size(); ++k) {
        INFO("bin " << k << " r=" << res.r[k] << " g=" << res.g[k] << " err=" << res.g_err[k]);
        REQUIRE(res.g_err[k] > 0);
        REQUIRE(res.g_err[k] < 0.05);
        REQUIRE(std::abs(res.g[k] - 1.0) < 4 * res.g_err[k]);
    }
    SECTION("without the correction the perimeter deficit appears") {
        const auto raw = run_gr(src, rmax, 50, EdgeCorrection::none);
        for (std::size_t k = 0; k < raw.g.size(); ++k) {
            INFO("bin " << k << " r=" << raw.r[k] << " g=" << raw.g[k] << " err=" << raw.g_err[k]);
            // the biased estimate follows the set covariance of the window …
            REQUIRE(std::abs(raw.g[k] - rect_uncorrected(100, 60, raw.r[k])) < 4 * raw.g_err[k] + 1e-3);
        }
        // … and is far below 1 at r_max: a missing correction cannot pass the test above
        REQUIRE(raw.g.back() < 1 - 0.2);
        REQUIRE(1 - raw.g.back() > 20 * raw.g_err.back());
    }
    SECTION("partials: sum rule and equal species statistics") {
        for (std::size_t k = 0; k < res.g.size(); ++k) {
            REQUIRE(std::abs(res.g_ss[k] - 1.0) < 4 * std::sqrt(4.0) * res.g_err[k] + 0.02);
            REQUIRE(std::abs(res.g_ll[k] - 1.0) < 4 * std::sqrt(4.0) * res.g_err[k] + 0.02);
            REQUIRE(std::abs(res.g_sl[k] - 1.0) < 4 * std::sqrt(2.0) * res.g_err[k] + 0.02);
        }
        REQUIRE(res.has_partials());
        REQUIRE_THAT(res.density, WithinRel(1000.0 / 6000.0, 1e-12));
    }
}

TEST_CASE("g(r) of Poisson points in a circular window is 1 with the isotropic correction", "[unit]") {
    const Geometry g = Geometry::circle(5, -3, 30);
    const auto src = poisson_source(g, 1000, 400, 12);
    const double rmax = 15;
    const auto res = run_gr(src, rmax, 50);
    for (std::size_t k = 0; k < res.g.size(); ++k) {
        INFO("bin " << k << " r=" << res.r[k] << " g=" << res.g[k] << " err=" << res.g_err[k]);
        REQUIRE(res.g_err[k] > 0);
        REQUIRE(std::abs(res.g[k] - 1.0) < 4 * res.g_err[k]);
    }
    const auto raw = run_gr(src, rmax, 50, EdgeCorrection::none);
    for (std::size_t k = 0; k < raw.g.size(); ++k) {
        INFO("bin " << k << " r=" << raw.r[k] << " g=" << raw.g[k] << " err=" << raw.g_err[k]);
        REQUIRE(std::abs(raw.g[k] - disk_uncorrected(30, raw.r[k])) < 4 * raw.g_err[k] + 1e-3);
    }
    REQUIRE(raw.g.back() < 1 - 0.2);
}

TEST_CASE("circle fraction inside a disk: exact values", "[unit]") {
    REQUIRE(circle_fraction_inside_disk(0, 1, 2) == 1.0);
    REQUIRE(circle_fraction_inside_disk(1, 0.5, 2) == 1.0);
    // centre on the boundary, small r: half the circle is inside (→ 1/2 as r → 0)
    REQUIRE_THAT(circle_fraction_inside_disk(2, 1e-6, 2), WithinAbs(0.5, 1e-6));
    // centre on the boundary of a disk of radius R, circle radius R: inside arc is 2π/3 of 2π
    REQUIRE_THAT(circle_fraction_inside_disk(1, 1, 1), WithinAbs(1.0 / 3.0, 1e-12));
    // Monte-Carlo check of a generic case
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<double> u(0, 2 * M_PI);
    const double d = 1.3, r = 1.1, R = 2.0;
    int in = 0;
    const int n = 200000;
    for (int i = 0; i < n; ++i) {
        const double a = u(rng);
        const double x = d + r * std::cos(a), y = r * std::sin(a);
        in += x * x + y * y <= R * R;
    }
    REQUIRE_THAT(circle_fraction_inside_disk(d, r, R), WithinAbs(static_cast<double>(in) / n, 4e-3));
}

TEST_CASE("g(r) of a periodic ideal gas is 1", "[unit]") {
    const auto src = poisson_source(Geometry::periodic(-25, 0, 25, 40), 800, 200, 13);
    const auto res = run_gr(src, 10, 50);
    for (std::size_t k = 0; k < res.g.size(); ++k) {
        INFO("bin " << k << " g=" << res.g[k] << " err=" << res.g_err[k]);
        REQUIRE(std::abs(res.g[k] - 1.0) < 4 * res.g_err[k]);
    }
    // r_max beyond half the box is refused with a message
    PairCorrelationParams p;
    p.r_max = 21;
    PairCorrelation acc(p);
    const auto t = src.read_frames(0, 1);
    REQUIRE_THROWS_WITH(acc.accumulate(structure_frame(t, 0)), Catch::Contains("half the periodic box"));
}

TEST_CASE("g(r) of a perfect triangular lattice: peaks at 1, sqrt3, 2 and Z = 6", "[unit]") {
    const int nx = 20, ny = 20;  // ny even: the lattice is periodic in the box
    const double a = 1.0, h = std::sqrt(3.0) / 2;
    Trajectory t;
    t.meta.geometry = Geometry::periodic(0, 0, nx * a, ny * h);
    std::int64_t id = 0;
    for (int j = 0; j < ny; ++j)
        for (int i = 0; i < nx; ++i)
            t.rows.push(0, id++, (i + 0.5 * (j % 2)) * a + 0.1, j * h + 0.2, (i + j) % 2 ? 1 : 0);
    t.index = build_frame_index(t.rows, 0, 1);
    const InMemorySource src(std::move(t));
    const double dr = 0.07;
    const auto res = run_gr(src, 35 * dr, 35);
    const double rho = 1.0 / (a * a * h);
    const double shells[] = {1.0, std::sqrt(3.0), 2.0};
    const double mult[] = {6, 6, 6};
    for (std::size_t k = 0; k < res.g.size(); ++k) {
        double expect = 0;
        for (int s = 0; s < 3; ++s)
            if (shells[s] >= res.r_edges[k] && shells[s] < res.r_edges[k + 1])
                expect =
                    mult[s] / (rho * M_PI *
                               (res.r_edges[k + 1] * res.r_edges[k + 1] - res.r_edges[k] * res.r_edges[k]));
        INFO("bin " << k << " r=" << res.r[k]);
        // N(N-1) normalisation: per-particle count × N/(N−1)
        REQUIRE_THAT(res.g[k], WithinAbs(expect * 400.0 / 399.0, 1e-9));
    }
    const auto pk = gr_peak(res.r_edges, res.g, res.density);
    REQUIRE_THAT(pk.r_peak, WithinAbs(1.0, dr / 2 + 1e-12));
    REQUIRE(pk.r_min > 1.0);
    REQUIRE(pk.r_min < std::sqrt(3.0));
    REQUIRE_THAT(pk.coordination, WithinAbs(6.0 * 400.0 / 399.0, 1e-9));
    // sum rule Σ_ab N_a N_b' g_ab = N(N−1) g (ordered pairs)
    const double ns = 200, nl = 200, n = 400;
    for (std::size_t k = 0; k < res.g.size(); ++k) {
        const double lhs =
            ns * (ns - 1) * res.g_ss[k] + nl * (nl - 1) * res.g_ll[k] + 2 * ns * nl * res.g_sl[k];
        REQUIRE_THAT(lhs, WithinAbs(n * (n - 1) * res.g[k], 1e-6));
    }
}

TEST_CASE("g(r) parameters are validated", "[unit]") {
    PairCorrelationParams p;
    p.r_max = -1;
    REQUIRE_THROWS_AS(p.validate(), ParameterError);
    p.r_max = 1, p.bins = 0;
    REQUIRE_THROWS_WITH(p.validate(), Catch::Contains("bins"));
}

#include "vibra/analysis/registry.hpp"

namespace {
std::map<std::string, ResultGroup> run_structure(const TrajectorySource& src) {
    std::map<std::string, ResultGroup> done;
    for (const auto& spec : structure_analyses()) {
        std::map<std::string, std::string> opts;
        for (const auto& o : spec.options) opts[o.flag] = o.default_value;
        AnalysisContext ctx{src, opts, false, 1, &done};
        auto groups = spec.run(ctx);
        REQUIRE(!groups.empty());
        REQUIRE(groups[0].name == spec.name);
        for (auto& g : groups) {
            for (const auto& a : g.arrays) {
                INFO(g.name << "/" << a.name);
                REQUIRE(!a.units.empty());
            }
            done[g.name] = g;
        }
    }
    return done;
}
}  // namespace

TEST_CASE("structure analyses run through the registry with the naming rule", "[unit]") {
    const std::vector<std::string> names{"gr", "sk", "psi6", "voronoi", "clusters", "number_fluctuations"};
    for (const auto& g :
         {Geometry::periodic(0, 0, 30, 30), Geometry::rect(0, 0, 30, 30), Geometry::circle(0, 0, 16)}) {
        const auto src = poisson_source(g, 300, 6, 41);
        const auto done = run_structure(src);
        for (const auto& n : names) REQUIRE(done.count(n));
        const auto& gr = done.at("gr");
        for (const char* a : {"r", "g", "g_err", "g_small_small", "g_small_large", "g_large_large"})
            REQUIRE(gr.find(a));
        REQUIRE(gr.find("r")->units == "px");
        REQUIRE(std::get<std::int64_t>(gr.attrs.at("frames")) == 6);
        REQUIRE(done.at("sk").find("sk_small_large"));
        REQUIRE(done.at("sk").find("k")->units == "1/px");
        REQUIRE(done.at("voronoi").find("phi_local_hist_small"));
        REQUIRE(done.at("psi6").find("t")->units == "frame");  // the input's time unit
        REQUIRE(done.at("psi6").find("t_frames"));
        // global packing fraction from the species diameters (species drawn 50/50)
        const auto& phi = std::get<std::vector<double>>(done.at("voronoi").find("phi")->data);
        REQUIRE(phi.size() == 6);
        const double expect = 300 * M_PI * (0.25 + 0.49) / 2 / g.area();
        REQUIRE_THAT(phi[0], WithinRel(expect, 0.15));
    }
    SECTION("single-size data: totals only") {
        Trajectory t = poisson_source(Geometry::periodic(0, 0, 30, 30), 300, 4, 42).trajectory();
        for (auto& s : t.rows.species) s = 0;
        t.meta.species_diameters = {1.0};
        const InMemorySource src(std::move(t));
        const auto done = run_structure(src);
        REQUIRE(done.at("gr").find("g"));
        REQUIRE(!done.at("gr").find("g_small_small"));
        REQUIRE(!done.at("sk").find("sk_small_small"));
        REQUIRE(!done.at("psi6").find("psi6_global_small"));
        REQUIRE(!done.at("voronoi").find("phi_local_hist_small"));
        REQUIRE(!done.at("number_fluctuations").find("mean_n_small"));
    }
    SECTION("no sizes: radical voronoi refuses with a message; plain cells give areas, no packing fraction") {
        Trajectory t = poisson_source(Geometry::periodic(0, 0, 30, 30), 100, 2, 43).trajectory();
        t.meta.species_diameters.clear();
        const InMemorySource src(std::move(t));
        for (const auto& spec : structure_analyses()) {
            if (spec.name != "voronoi") continue;
            std::map<std::string, std::string> opts;
            for (const auto& o : spec.options) opts[o.flag] = o.default_value;
            AnalysisContext ctx{src, opts, false, 1, nullptr};
            REQUIRE_THROWS_WITH(spec.run(ctx), Catch::Contains("species_diameters"));
            opts["voronoi-radical"] = "0";
            AnalysisContext plain{src, opts, false, 1, nullptr};
            const auto g = spec.run(plain).at(0);
            const auto& rho = std::get<std::vector<double>>(g.find("density_voronoi")->data);
            const auto& phi = std::get<std::vector<double>>(g.find("phi")->data);
            REQUIRE(rho.size() == 2);
            CHECK_THAT(rho[0], WithinRel(100.0 / 900.0, 1e-9));  // periodic: every cell, tiling the box
            CHECK(std::isnan(phi[0]));
            CHECK(std::isnan(std::get<double>(g.attrs.at("phi_mean"))));
            CHECK(std::get<std::string>(g.attrs.at("sizes")).find("none") != std::string::npos);
        }
    }
    SECTION("plain cells with sizes: the same packing fraction as the radical ones") {
        // φ = Σ π R_i² / |box| does not depend on the tessellation, nor (periodic box: every cell
        // used) does φ_voronoi; only the local distribution does.
        const auto src = poisson_source(Geometry::periodic(0, 0, 30, 30), 300, 3, 44);
        for (const auto& spec : structure_analyses()) {
            if (spec.name != "voronoi") continue;
            std::map<std::string, std::string> opts;
            for (const auto& o : spec.options) opts[o.flag] = o.default_value;
            AnalysisContext radical{src, opts, false, 1, nullptr};
            const auto gr = spec.run(radical).at(0);
            opts["voronoi-radical"] = "0";
            AnalysisContext plain{src, opts, false, 1, nullptr};
            const auto gp = spec.run(plain).at(0);
            const auto& phi_r = std::get<std::vector<double>>(gr.find("phi")->data);
            const auto& phi_p = std::get<std::vector<double>>(gp.find("phi")->data);
            const auto& pv_p = std::get<std::vector<double>>(gp.find("phi_voronoi")->data);
            REQUIRE(phi_p.size() == 3);
            for (std::size_t k = 0; k < 3; ++k) {
                CHECK(phi_p[k] > 0.2);
                CHECK_THAT(phi_p[k], WithinRel(phi_r[k], 1e-12));
                CHECK_THAT(pv_p[k], WithinRel(phi_r[k], 1e-9));
            }
            CHECK_THAT(std::get<double>(gp.attrs.at("phi_local_mean")), !WithinAbs(0.0, 0.05));
            CHECK(std::get<std::string>(gp.attrs.at("tessellation")) == "plain");
        }
    }
}

#include "vibra/core/soft_disk.hpp"

TEST_CASE("g(r) of a dense soft-disk liquid: a cropped window agrees with the periodic box", "[unit]") {
    SoftDiskParams sp;
    sp.n_small = 300, sp.n_large = 300, sp.packing_fraction = 0.6, sp.steps_per_frame = 500, sp.seed = 7;
    SoftDiskSimulator sim(sp);
    Trajectory full = sim.run(100, 10);
    const Geometry box = full.meta.geometry;
    REQUIRE(box.periodic());
    // the same frames seen through a rectangular window covering the central 70 % × 60 % of the box
    Trajectory win = full;
    win.meta.geometry = Geometry::rect(box.x0 + 0.15 * box.lx(), box.y0 + 0.2 * box.ly(),
                                       box.x0 + 0.85 * box.lx(), box.y0 + 0.8 * box.ly());
    const InMemorySource per(std::move(full)), cut(std::move(win));
    const double rmax = 0.25 * 0.6 * box.ly();
    const auto a = run_gr(per, rmax, 40);
    const auto b = run_gr(cut, rmax, 40);
    const auto c = run_gr(cut, rmax, 40, EdgeCorrection::none);
    for (std::size_t k = 0; k < a.g.size(); ++k) {
        const double err = std::sqrt(a.g_err[k] * a.g_err[k] + b.g_err[k] * b.g_err[k]);
        INFO("bin " << k << " r=" << a.r[k] << " periodic " << a.g[k] << " window " << b.g[k] << " err "
                    << err);
        if (a.g[k] < 0.05) {  // inside the core both are ~0
            REQUIRE(b.g[k] < 0.1);
            continue;
        }
        // frames 0.5 tau apart are not independent: allow 3x the naive standard error
        REQUIRE(std::abs(a.g[k] - b.g[k]) < 3 * 4 * err);
    }
    REQUIRE(a.g_err.back() < 0.01);
    // the structure is real (a liquid peak), and the uncorrected window estimate is biased low at r_max
    REQUIRE(gr_peak(a.r_edges, a.g, a.density).g_peak > 1.5);
    REQUIRE(c.g.back() < a.g.back() - 0.15);
}

TEST_CASE(
    "g(r) split over threads and merged equals the single-threaded result, bit for bit for any thread count",
    "[unit]") {
    const auto src = poisson_source(Geometry::circle(0, 0, 20), 400, 23, 44);
    PairCorrelationParams p;
    p.r_max = 8, p.bins = 40;
    PairCorrelation one(p);
    for_each_structure_frame(src, 2, [&](const StructureFrame& f) { one.accumulate(f); });
    // one accumulator per lane, merged in lane order: the same sums for any thread count
    const auto lanes = [&](int threads) {
        std::vector<PairCorrelation> accs(kStructureLanes, PairCorrelation(p));
        // small blocks so that several blocks are split over the workers
        for_each_structure_frame_parallel(
            src, 2, threads,
            [&](const StructureFrame& f, int lane) { accs[static_cast<std::size_t>(lane)].accumulate(f); },
            false, "gr", 1000);
        for (std::size_t l = 1; l < accs.size(); ++l) accs[0].merge(accs[l]);
        return accs[0];
    };
    auto accs = std::vector<PairCorrelation>{lanes(3)};
    for (int threads : {1, 2, 5, 8, 16}) {  // bit-identical for any thread count
        const auto c = lanes(threads).result(), d = accs[0].result();
        REQUIRE(c.g == d.g);
        REQUIRE(c.g_err == d.g_err);
        REQUIRE(c.g_sl == d.g_sl);
    }
    const auto a = one.result(), b = accs[0].result();
    REQUIRE(a.frames == 12);
    REQUIRE(b.frames == 12);
    for (std::size_t k = 0; k < a.g.size(); ++k) {
        REQUIRE_THAT(b.g[k], WithinRel(a.g[k], 1e-12));
        REQUIRE_THAT(b.g_ss[k], WithinRel(a.g_ss[k], 1e-12));
        REQUIRE_THAT(b.g_err[k], WithinRel(a.g_err[k], 1e-9));
    }
    PairCorrelationParams q = p;
    q.bins = 41;
    PairCorrelation other(q);
    REQUIRE_THROWS_AS(accs[0].merge(other), ParameterError);
}

TEST_CASE("unknown species count in the totals only", "[unit]") {
    Trajectory t = poisson_source(Geometry::periodic(0, 0, 40, 40), 600, 60, 46).trajectory();
    for (std::size_t r = 0; r < t.rows.size(); r += 3) t.rows.species[r] = kSpeciesUnknown;
    const InMemorySource src(std::move(t));
    const auto res = run_gr(src, 8, 20);
    REQUIRE(res.n_unknown == 60 * 200);
    REQUIRE(res.n_small + res.n_large == 60 * 400);
    REQUIRE_THAT(res.density, WithinRel(600.0 / 1600.0, 1e-12));
    REQUIRE_THAT(res.density_small + res.density_large, WithinRel(400.0 / 1600.0, 1e-12));
    for (std::size_t k = 0; k < res.g.size(); ++k) {
        INFO("bin " << k << " g=" << res.g[k] << " err=" << res.g_err[k]);
        REQUIRE(std::abs(res.g[k] - 1) < 4 * res.g_err[k]);
        // partials are normalised by their own counts (unknown excluded), so they are 1 as well
        REQUIRE(std::abs(res.g_ss[k] - 1) < 4 * 3 * res.g_err[k] + 0.02);
        REQUIRE(std::abs(res.g_sl[k] - 1) < 4 * 2 * res.g_err[k] + 0.02);
    }
}

TEST_CASE("structure analyses survive awkward frames: empty, single particle, NaN, outside the window",
          "[unit]") {
    for (auto kind : {GeometryKind::unbounded, GeometryKind::window_rect}) {
        Trajectory t = poisson_source(Geometry::rect(0, 0, 30, 30), 200, 6, 47).trajectory();
        t.meta.geometry = kind == GeometryKind::unbounded ? Geometry{} : Geometry::rect(0, 0, 30, 30);
        // frame 6: empty; frame 7: one particle; frame 8: NaN and outside-window rows among valid ones
        t.rows.push(7, 0, 5, 5, 0);
        t.rows.push(8, 0, 1, 1, 0);
        t.rows.push(8, 1, std::nan(""), 3, 1);
        t.rows.push(8, 2, 40, 3, 1);
        t.rows.push(8, 3, 29, 29, 1);
        t.rows.push(8, 4, 15, 15, -1);
        t.index = build_frame_index(t.rows, 0, 9);
        const InMemorySource src(std::move(t));
        const auto done = run_structure(src);
        REQUIRE(done.size() == 6);
        // gr counts the frames with at least two particles: 6 Poisson frames + frame 8
        REQUIRE(std::get<std::int64_t>(done.at("gr").attrs.at("frames")) == 7);
        const auto fr8 = structure_frame(src.read_frames(8, 1), 8);
        REQUIRE(
            fr8.size() ==
            (kind == GeometryKind::unbounded ? 4u : 3u));  // NaN always dropped, x=40 cropped in the window
    }
}

namespace {
/// Pairs within the cut-off keyed by (i < j), with r_j − r_i and r² as the enumerator gave them
/// (turned round when it gave the pair as (j, i): the negation is exact).
using PairMap = std::map<std::pair<std::size_t, std::size_t>, std::tuple<double, double, double>>;
template <class E>
PairMap pairs_of(const E& e) {
    PairMap m;
    e.for_each_pair([&](std::size_t i, std::size_t j, double dx, double dy, double r2) {
        if (i > j) std::swap(i, j), dx = -dx, dy = -dy;
        REQUIRE(m.emplace(std::make_pair(i, j), std::make_tuple(dx, dy, r2)).second);  // each pair once
    });
    return m;
}
}  // namespace

TEST_CASE("the pair grid gives CellList's pairs with bit-identical separations", "[unit]") {
    std::mt19937_64 rng(91);
    std::uniform_real_distribution<double> u(0, 1);
    struct Case {
        Geometry g;
        std::size_t n;
        double cutoff;
        int reach;  // the stencil the grid should choose (2 cells each way; 0: every pair)
    };
    const Case cases[] = {
        {Geometry::periodic(-3, 2, 37, 31), 3000, 4.0, 2},  // dense, 20 × 14 cells
        {Geometry::periodic(0, 0, 20, 20), 400, 9.99, 0},   // r_max ≈ half the box: every pair
        {Geometry::periodic(0, 0, 20, 20), 40, 1.0, 2},     // sparse: fewer, wider cells
        {Geometry::periodic(0, 0, 20, 20), 12, 9.99, 0},    // a few points, r_max near half the box
        {Geometry::rect(0, 0, 50, 20), 2000, 3.3, 2},       // window (bounding box of the data)
        {Geometry::rect(0, 0, 50, 20), 500, 60.0, 2},       // cut-off beyond the window: one cell
        {Geometry::circle(10, 10, 9), 800, 2.5, 2},         // circle
    };
    for (const auto& c : cases) {
        std::vector<double> x(c.n), y(c.n);
        for (std::size_t i = 0; i < c.n; ++i) {
            x[i] = c.g.kind == GeometryKind::window_circle ? c.g.cx + c.g.r * (2 * u(rng) - 1)
                                                           : c.g.x0 + c.g.lx() * u(rng);
            y[i] = c.g.kind == GeometryKind::window_circle ? c.g.cy + c.g.r * (2 * u(rng) - 1)
                                                           : c.g.y0 + c.g.ly() * u(rng);
        }
        if (c.n > 10) {  // awkward points: absent, on the upper edge, a duplicate, outside a periodic box
            x[1] = std::nan("");
            x[2] = c.g.kind == GeometryKind::window_circle ? c.g.cx : c.g.x1, y[2] = y[3];
            x[4] = x[5], y[4] = y[5];
            if (c.g.periodic()) x[6] = c.g.x1 + 0.25, y[7] = c.g.y0 - 1e-17;
        }
        detail::PairGrid grid;
        grid.build(x, y, c.cutoff, c.g);
        CHECK(grid.reach() == c.reach);
        const auto want = pairs_of(CellList(x, y, c.cutoff, c.g));
        const auto got = pairs_of(grid);
        REQUIRE(want.size() > 0);
        REQUIRE(got.size() == want.size());
        for (const auto& [key, sep] : want) {
            const auto it = got.find(key);
            REQUIRE(it != got.end());
            // bit-identical: g(r) counts land in the same bins as with CellList
            REQUIRE(std::get<0>(it->second) == std::get<0>(sep));
            REQUIRE(std::get<1>(it->second) == std::get<1>(sep));
            REQUIRE(std::get<2>(it->second) == std::get<2>(sep));
        }
        grid.build(x, y, c.cutoff, c.g);  // buffers reused: the same pairs again
        REQUIRE(pairs_of(grid) == got);
    }
    detail::PairGrid grid;
    const std::vector<double> p{1, 2};
    REQUIRE_THROWS_AS(grid.build(p, p, 0.0, Geometry::rect(0, 0, 3, 3)), ParameterError);
    REQUIRE_THROWS_AS(grid.build(p, p, 6.0, Geometry::periodic(0, 0, 10, 10)), ParameterError);
}
