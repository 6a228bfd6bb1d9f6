// SPDX-License-Identifier: GPL-3.0-or-later
// Defects of synthetic fields with known charges (docs/collective-motion.md, "Validation"), tracking with known
// paths, and the pair correlations of uncorrelated defects.
#include <catch2/catch.hpp>

#include <cmath>
#include <complex>
#include <functional>
#include <numbers>
#include <random>

#include "vibra/analysis/defects.hpp"
#include "vibra/analysis/delaunay.hpp"
#include "vibra/analysis/displacement_field.hpp"
#include "vibra/core/error.hpp"

using namespace vibra;
using namespace vibra::analysis;
using Catch::Matchers::WithinAbs;
using cplx = std::complex<double>;

namespace {

constexpr double kPi = std::numbers::pi;

struct Charge {
    cplx z;
    int q;
};

/// Field whose direction winds q_k times around each z_k: w = Π f_k, f = (z−z_k)/sqrt(|z−z_k|²+a²)
/// for +1 and its conjugate for −1 (|u| → 0 at the cores, → 1 far away).
cplx defect_field(cplx z, const std::vector<Charge>& cs, double a = 1.0, cplx phase = 1.0) {
    cplx w = phase;
    for (const auto& c : cs) {
        cplx f = (z - c.z) / std::sqrt(std::norm(z - c.z) + a * a);
        if (c.q < 0) f = std::conj(f);
        for (int m = 0; m < std::abs(c.q); ++m) w *= f;
    }
    return w;
}

GridField grid_field(std::size_t nx, std::size_t ny, double h,
                     const std::function<cplx(double, double)>& fn) {
    GridField f;
    f.grid.x0 = 0, f.grid.y0 = 0, f.grid.hx = h, f.grid.hy = h, f.grid.nx = nx, f.grid.ny = ny;
    f.ux.resize(nx * ny), f.uy.resize(nx * ny), f.weight.assign(nx * ny, 1.0), f.valid.assign(nx * ny, 1);
    for (std::size_t j = 0; j < ny; ++j)
        for (std::size_t i = 0; i < nx; ++i) {
            const cplx w = fn(f.grid.x(i), f.grid.y(j));
            f.ux[j * nx + i] = w.real(), f.uy[j * nx + i] = w.imag();
        }
    return f;
}

int total_charge(const std::vector<Defect>& d) {
    int s = 0;
    for (const auto& x : d) s += x.charge;
    return s;
}

/// Each expected charge has exactly one found defect of that charge within tol, and vice versa.
void require_same(const std::vector<Defect>& found, const std::vector<Charge>& expect, double tol) {
    REQUIRE(found.size() == expect.size());
    for (const auto& e : expect) {
        int hits = 0;
        for (const auto& d : found)
            if (d.charge == e.q && std::hypot(d.x - e.z.real(), d.y - e.z.imag()) < tol) ++hits;
        INFO("expected charge " << e.q << " at (" << e.z.real() << ", " << e.z.imag() << ")");
        REQUIRE(hits == 1);
    }
}

}  // namespace

TEST_CASE("wrap_angle maps into the half-open interval from -pi to pi, and winding numbers are integers",
          "[unit]") {
    REQUIRE_THAT(wrap_angle(kPi), WithinAbs(kPi, 1e-15));
    REQUIRE_THAT(wrap_angle(-kPi), WithinAbs(kPi, 1e-15));
    REQUIRE_THAT(wrap_angle(3 * kPi / 2), WithinAbs(-kPi / 2, 1e-12));
    REQUIRE_THAT(wrap_angle(0.3 - 4 * kPi), WithinAbs(0.3, 1e-12));
    const double ccw[4] = {0, kPi / 2, kPi, 3 * kPi / 2};
    const double cw[4] = {0, -kPi / 2, -kPi, -3 * kPi / 2};
    const double none[4] = {0.1, 0.2, 0.1, 0.0};
    REQUIRE(winding_number(ccw) == 1);
    REQUIRE(winding_number(cw) == -1);
    REQUIRE(winding_number(none) == 0);
}

TEST_CASE("single point defects of charge m at the centre, any phase", "[unit]") {
    const cplx c(15.3, 16.7);
    for (int m : {1, -1}) {
        for (double phi0 : {0.0, kPi / 2, kPi, 1.0, -2.5}) {  // vortex, source, sink, spirals
            auto f = grid_field(32, 32, 1.0, [&](double x, double y) {
                const double phi = std::arg(cplx(x, y) - c);
                return std::polar(1.0, m * phi + phi0);
            });
            const auto d = defects_on_grid(f, DefectParams{});
            INFO("m=" << m << " phi0=" << phi0);
            require_same(d, {{c, m}}, 1.0);
            REQUIRE(boundary_winding(f, DefectParams{}) == m);
        }
    }
    SECTION("charge ±2 sums to ±2 (merged)") {
        for (int m : {2, -2}) {
            auto f = grid_field(32, 32, 1.0, [&](double x, double y) {
                return std::polar(1.0, m * std::arg(cplx(x, y) - c));
            });
            const auto d = defects_on_grid(f, DefectParams{});
            REQUIRE(total_charge(d) == m);
            REQUIRE(d.size() == 1);  // merged into one cluster
        }
    }
    SECTION("uniform field: no defects") {
        auto f = grid_field(16, 16, 1.0, [](double, double) { return cplx(0.3, -0.2); });
        REQUIRE(defects_on_grid(f, DefectParams{}).empty());
    }
}

TEST_CASE("vortex–antivortex pair gives +1 and −1, total 0", "[unit]") {
    const std::vector<Charge> cs{{{10.4, 16.2}, +1}, {{22.7, 15.1}, -1}};
    auto f = grid_field(32, 32, 1.0, [&](double x, double y) { return defect_field({x, y}, cs); });
    const auto d = defects_on_grid(f, DefectParams{});
    require_same(d, cs, 1.0);
    REQUIRE(boundary_winding(f, DefectParams{}) == 0);
}

TEST_CASE("defects whose sub-threshold core hides their nodes are recovered from the enclosing ring",
          "[unit]") {
    // Rigid rotation (+1) and a linear saddle (−1): |U| grows linearly from the centre.
    for (int m : {1, -1}) {
        const cplx c(14.6, 17.2);
        auto f = grid_field(32, 32, 1.0, [&](double x, double y) {
            const cplx z = cplx(x, y) - c;
            return m > 0 ? cplx(0, 1) * z : std::conj(z);
        });
        DefectParams p;
        p.min_magnitude = 1.6;  // masks the nodes within 1.6 of the centre
        REQUIRE(evaluated_plaquettes(f, p) < 31u * 31u);
        p.max_core = 0;
        REQUIRE(defects_on_grid(f, p).empty());  // without recovery the defect is lost
        p.max_core = 5;
        const auto d = defects_on_grid(f, p);
        INFO("m=" << m);
        require_same(d, {{c, m}}, 1.0);
        REQUIRE(d[0].cells > 1);
        REQUIRE(boundary_winding(f, p) == m);
    }
}

TEST_CASE("random smooth field: total charge equals the boundary winding", "[unit]") {
    int with_defects = 0;
    for (unsigned seed = 1; seed <= 8; ++seed) {
        std::mt19937_64 rng(seed);
        std::normal_distribution<double> g;
        std::uniform_real_distribution<double> ph(0, 2 * kPi);
        struct Mode {
            double kx, ky, ax, ay, px, py;
        };
        std::vector<Mode> modes;
        for (int m = 0; m < 12; ++m)
            modes.push_back({0.35 * g(rng), 0.35 * g(rng), g(rng), g(rng), ph(rng), ph(rng)});
        auto f = grid_field(48, 40, 1.0, [&](double x, double y) {
            cplx w = 0;
            for (const auto& m : modes)
                w += cplx(m.ax * std::cos(m.kx * x + m.ky * y + m.px),
                          m.ay * std::cos(m.kx * x + m.ky * y + m.py));
            return w;
        });
        const auto bw = boundary_winding(f, DefectParams{});
        REQUIRE(bw.has_value());
        const auto q = plaquette_charges(f, DefectParams{});
        int sum = 0, nonzero = 0;
        for (auto c : q) sum += c, nonzero += c != 0;
        REQUIRE(evaluated_plaquettes(f, DefectParams{}) == 47u * 39u);
        REQUIRE(sum == *bw);
        REQUIRE(total_charge(defects_on_grid(f, DefectParams{})) == *bw);
        with_defects += nonzero > 0;
        // With a threshold, plaquettes are skipped but small cores are recovered: the total
        // still matches whenever every sub-threshold cluster is small and away from the edge.
        DefectParams th;
        th.min_magnitude = 0.15;
        if (const auto bt = boundary_winding(f, th)) {
            const auto d = defects_on_grid(f, th);
            INFO("seed " << seed);
            CHECK(total_charge(d) == *bt);
        }
    }
    REQUIRE(with_defects >= 4);  // the check is not vacuous
}

TEST_CASE("rotated and translated copies give the same charges at moved positions", "[unit]") {
    const cplx centre(20, 20);
    const std::vector<Charge> cs{
        {{14.2, 17.6}, +1}, {{24.9, 13.3}, -1}, {{21.1, 25.4}, +1}, {{12.3, 26.2}, -1}};
    auto base = grid_field(40, 40, 1.0, [&](double x, double y) { return defect_field({x, y}, cs); });
    require_same(defects_on_grid(base, DefectParams{}), cs, 1.0);
    for (double alpha : {0.4, 1.3, kPi, -2.2}) {
        for (cplx shift : {cplx(0, 0), cplx(1.37, -0.81)}) {
            std::vector<Charge> moved;
            const cplx rot = std::polar(1.0, alpha);
            for (const auto& c : cs) moved.push_back({centre + rot * (c.z - centre) + shift, c.q});
            // The rotated field U'(r) = R U(R^{-1}(r - shift)) equals the defect field of the moved
            // charges up to a global phase, which does not change any winding.
            auto f = grid_field(40, 40, 1.0, [&](double x, double y) {
                const cplx z0 = centre + std::conj(rot) * (cplx(x, y) - shift - centre);
                return rot * defect_field(z0, cs);
            });
            INFO("alpha=" << alpha << " shift=" << shift);
            require_same(defects_on_grid(f, DefectParams{}), moved, 1.0);
        }
    }
}

TEST_CASE("noise below the threshold creates no defects", "[unit]") {
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<double> ph(0, 2 * kPi), amp(0, 0.05);
    const cplx c(8.4, 16.3);
    // Left half: a unit vortex; right half: random directions with |u| < 0.05.
    std::vector<double> noise_a(64 * 32), noise_p(64 * 32);
    for (std::size_t k = 0; k < noise_a.size(); ++k) noise_a[k] = amp(rng), noise_p[k] = ph(rng);
    auto f = grid_field(32, 32, 1.0, [&](double x, double y) {
        if (x < 16) return std::polar(1.0, std::arg(cplx(x, y) - c));
        const auto k = static_cast<std::size_t>(y) * 32 + static_cast<std::size_t>(x);
        return std::polar(noise_a[k], noise_p[k]);
    });
    DefectParams none;
    REQUIRE(defects_on_grid(f, none).size() > 5);  // without a threshold the noise is full of defects
    DefectParams p;
    p.min_magnitude = 0.1;
    const auto d = defects_on_grid(f, p);
    require_same(d, {{c, 1}}, 1.0);
    SECTION("pure sub-threshold noise") {
        auto g = grid_field(32, 32, 1.0, [&](double x, double y) {
            const auto k = static_cast<std::size_t>(y) * 32 + static_cast<std::size_t>(x);
            return std::polar(noise_a[k], noise_p[k]);
        });
        REQUIRE(defects_on_grid(g, p).empty());
        REQUIRE(evaluated_plaquettes(g, p) == 0u);
    }
}

TEST_CASE("the same fields sampled at scattered particles give the same defects", "[unit]") {
    const std::vector<Charge> cs{{{9.6, 10.9}, +1}, {{22.4, 11.7}, -1}, {{15.8, 23.1}, +1}};
    const double L = 32;
    for (int kind = 0; kind < 2; ++kind) {  // 0 jittered lattice, 1 uniform random
        std::mt19937_64 rng(11 + kind);
        std::uniform_real_distribution<double> u01(0, 1);
        std::vector<double> x, y, ux, uy;
        const double a = 0.5;  // 4 particles per unit area
        if (kind == 0) {
            for (double py = 0.25; py < L; py += a)
                for (double px = 0.25; px < L; px += a)
                    x.push_back(px + 0.3 * a * (u01(rng) - 0.5)),
                        y.push_back(py + 0.3 * a * (u01(rng) - 0.5));
        } else {
            for (int n = 0; n < 4096; ++n) x.push_back(L * u01(rng)), y.push_back(L * u01(rng));
        }
        for (std::size_t i = 0; i < x.size(); ++i) {
            const cplx w = defect_field({x[i], y[i]}, cs);
            ux.push_back(w.real()), uy.push_back(w.imag());
        }
        INFO("kind=" << kind);
        const Geometry win = Geometry::rect(0, 0, L, L);
        const Grid grid = make_grid(win, 1.0);
        CoarseGrainParams cg;
        cg.sigma = 0.8;
        const auto F = coarse_grain(grid, x, y, ux, uy, win, cg);
        REQUIRE(F.n_valid() == grid.size());
        require_same(defects_on_grid(F, DefectParams{}), cs, 1.2);
        // Delaunay route on the raw particle vectors.
        const auto tri = delaunay(x, y);
        DefectParams dp;
        dp.max_edge = 3 * a;
        require_same(defects_on_triangulation(x, y, ux, uy, tri, dp), cs, 1.0);
        // And with smoothing at the particles.
        std::vector<double> sx, sy;
        smooth_at_points(x, y, ux, uy, win, 0.8, 3.0, sx, sy);
        require_same(defects_on_triangulation(x, y, sx, sy, tri, dp), cs, 1.2);
    }
}

TEST_CASE("defect tracking links known paths and reports annihilation and creation frames", "[unit]") {
    SECTION("two defects on straight paths: two tracks, no events") {
        std::vector<DefectFrame> fr;
        for (int k = 0; k < 10; ++k)
            fr.push_back({k, {{5.0 + 0.4 * k, 5.0, +1, 1}, {12.0 - 0.3 * k, 9.0 + 0.2 * k, -1, 1}}});
        // Swap the order in odd frames so linking cannot rely on the index.
        for (int k = 1; k < 10; k += 2) std::swap(fr[k].defects[0], fr[k].defects[1]);
        DefectTrackParams p;
        p.max_step = 1.0, p.pair_distance = 2.0;
        const auto t = track_defects(fr, p);
        REQUIRE(t.n_tracks() == 2);
        REQUIRE(t.events.empty());
        for (std::size_t k = 0; k < fr.size(); ++k)
            for (std::size_t d = 0; d < 2; ++d)
                REQUIRE(t.charge[static_cast<std::size_t>(t.track_of[k][d])] == fr[k].defects[d].charge);
        for (std::size_t tr = 0; tr < 2; ++tr) {
            REQUIRE(t.length[tr] == 10);
            REQUIRE(t.first_frame[tr] == 0);
            REQUIRE(t.last_frame[tr] == 9);
        }
        std::vector<double> msd;
        std::vector<std::int64_t> n;
        defect_msd(fr, t, 4, msd, n);
        // (0.4 m)^2 for the +1 and (0.3^2 + 0.2^2) m^2 for the −1, averaged.
        for (std::size_t m = 0; m <= 4; ++m) {
            REQUIRE(n[m] == 2 * static_cast<std::int64_t>(10 - m));
            REQUIRE_THAT(msd[m], WithinAbs(0.5 * (0.16 + 0.13) * static_cast<double>(m * m), 1e-12));
        }
    }
    SECTION("in a periodic box a defect crossing the boundary stays one track") {
        std::vector<DefectFrame> fr;
        for (int k = 0; k < 8; ++k) fr.push_back({k, {{std::fmod(18.0 + 0.7 * k, 20.0), 5.0, +1, 1}}});
        DefectTrackParams p;
        p.max_step = 1.0, p.pair_distance = 2.0;
        REQUIRE(track_defects(fr, p).n_tracks() == 2);  // without the box: broken at the edge
        p.geometry = Geometry::periodic(0, 0, 20, 20);
        const auto t = track_defects(fr, p);
        REQUIRE(t.n_tracks() == 1);
        std::vector<double> msd;
        std::vector<std::int64_t> n;
        defect_msd(fr, t, 5, msd, n, p.geometry);
        REQUIRE_THAT(msd[5], WithinAbs(std::pow(0.7 * 5, 2), 1e-9));
        p.max_step = 11;
        REQUIRE_THROWS_AS(track_defects(fr, p), ParameterError);
    }
    SECTION("a pair annihilating in the field is reported at the right frame") {
        // +1 and −1 approach each other along y = 16 and vanish at frame 6 (field uniform from then on);
        // a new pair is created at frame 9.
        std::vector<DefectFrame> fr;
        for (int k = 0; k < 12; ++k) {
            std::vector<Charge> cs;
            if (k < 6) cs = {{{8.3 + 1.0 * k, 16.4}, +1}, {{23.6 - 1.0 * k, 16.4}, -1}};
            if (k >= 9) cs = {{{15.3 - 0.5 * (k - 9), 8.4}, +1}, {{17.8 + 0.5 * (k - 9), 8.4}, -1}};
            auto f = grid_field(32, 32, 1.0, [&](double x, double y) { return defect_field({x, y}, cs); });
            fr.push_back({k, defects_on_grid(f, DefectParams{})});
            REQUIRE(fr.back().defects.size() == cs.size());
        }
        DefectTrackParams p;
        p.max_step = 2.0, p.pair_distance = 8.0;
        const auto t = track_defects(fr, p);
        REQUIRE(t.n_tracks() == 4);
        REQUIRE(t.events.size() == 2);
        const auto& ann = t.events[0].type < 0 ? t.events[0] : t.events[1];
        const auto& cre = t.events[0].type < 0 ? t.events[1] : t.events[0];
        REQUIRE(ann.type == -1);
        REQUIRE(ann.frame == 6);
        REQUIRE_THAT(ann.x, WithinAbs(0.5 * (13.3 + 18.6), 1.0));
        REQUIRE_THAT(ann.y, WithinAbs(16.4, 1.0));
        REQUIRE(cre.type == +1);
        REQUIRE(cre.frame == 9);
        REQUIRE_THAT(cre.y, WithinAbs(8.4, 1.0));
        for (std::size_t tr = 0; tr < 4; ++tr) REQUIRE(t.length[tr] == (t.first_frame[tr] == 0 ? 6 : 3));
    }
}

TEST_CASE("pair correlations of uncorrelated defects: g_dd ~ 1, c_qq ~ 0", "[unit]") {
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> ux(0, 40), uy(0, 20);
    std::bernoulli_distribution coin(0.5);
    std::vector<double> rx, ry;  // reference: the region's grid nodes
    for (int j = 0; j < 40; ++j)
        for (int i = 0; i < 80; ++i) rx.push_back(0.25 + 0.5 * i), ry.push_back(0.25 + 0.5 * j);
    DefectPairCorrelation pc(15.0, 1.5, rx, ry);
    for (int f = 0; f < 400; ++f) {
        std::vector<Defect> d;
        for (int n = 0; n < 30; ++n) d.push_back({ux(rng), uy(rng), coin(rng) ? 1 : -1, 1});
        pc.add(d);
    }
    const auto g = pc.g_dd(), c = pc.c_qq();
    for (std::size_t b = 1; b < g.size(); ++b) {
        INFO("bin " << b);
        REQUIRE_THAT(g[b], WithinAbs(1.0, 0.08));
        REQUIRE_THAT(c[b], WithinAbs(0.0, 0.08));
    }
    SECTION("bound +/- pairs give c_qq = -1 at the pair distance") {
        DefectPairCorrelation pb(15.0, 1.5, rx, ry);
        pb.add(std::vector<Defect>{{10, 10, 1, 1}, {10.7, 10, -1, 1}});
        REQUIRE_THAT(pb.c_qq()[0], WithinAbs(-1.0, 1e-12));
    }
}
