// SPDX-License-Identifier: GPL-3.0-or-later
#include <catch2/catch.hpp>
#include <cmath>
#include <numbers>
#include <random>

#include "modes_synthetic.hpp"
#include "vibra/analysis/transverse_vdos.hpp"
#include "vibra/core/error.hpp"

using namespace vibra;
using namespace vibra::analysis;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

namespace {

// Particles diffusing with OU velocities (so spectra have structure), some frames missing.
InMemorySource ou_source(const Geometry& g, int n, int T, double dt, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> ux(g.x0, g.x1), uy(g.y0, g.y1), u01(0, 1);
    std::normal_distribution<double> gn;
    std::vector<double> x(n), y(n), vx(n), vy(n);
    for (int i = 0; i < n; ++i) x[i] = ux(rng), y[i] = uy(rng), vx[i] = gn(rng), vy[i] = gn(rng);
    test::TrajBuilder b(g);
    const double a = std::exp(-0.5 * dt), s = std::sqrt(1 - a * a);
    for (int f = 0; f < T; ++f)
        for (int i = 0; i < n; ++i) {
            vx[i] = a * vx[i] + s * gn(rng) + 0.3 * std::sin(1.7 * f * dt + i);
            vy[i] = a * vy[i] + s * gn(rng);
            x[i] += vx[i] * dt;
            y[i] += vy[i] * dt;
            if (g.periodic()) {
                x[i] -= g.lx() * std::floor((x[i] - g.x0) / g.lx());
                y[i] -= g.ly() * std::floor((y[i] - g.y0) / g.ly());
            }
            if (u01(rng) < 0.05) continue;
            b.add(f, i, x[i], y[i], vx[i], vy[i]);
        }
    return b.source(dt);
}

void check_additive(const Geometry& g) {
    const double dt = 0.1;
    const auto src = ou_source(g, 60, 256, dt, 9);
    for (auto band : {std::pair{1.0, 6.0}, std::pair{2.0, 2.0}}) {
        TransverseVdosParams p;
        p.segment = 64;
        p.band_min = band.first;
        p.band_max = band.second;
        const double dw = 2 * std::numbers::pi / (64 * dt);
        if (band.first == band.second) p.band_min = p.band_max = 5 * dw;  // a single bin
        const auto r = compute_transverse_vdos(src, p);
        REQUIRE(r.n_segments == 4);
        REQUIRE(r.segment_offsets.size() == 5);
        for (std::size_t s = 0; s < 4; ++s) {
            double sum = 0;
            for (auto i = r.segment_offsets[s]; i < r.segment_offsets[s + 1]; ++i)
                sum += r.p_band[static_cast<std::size_t>(i)];
            // per-particle contributions add up to the band integral of the segment's D_T
            REQUIRE_THAT(sum, WithinRel(r.band_sum_segments[s], 1e-10));
            double direct = 0;
            for (std::size_t f = 0; f < r.omega.size(); ++f)
                if (r.omega[f] >= p.band_min - 1e-12 && r.omega[f] <= p.band_max + 1e-12)
                    direct += r.d_t_segments[s * r.omega.size() + f] * r.domega;
            REQUIRE(direct > 0);
            REQUIRE_THAT(sum, WithinRel(direct, 1e-10));
        }
        // normalisation ∫ D dω = 1 (half weight at 0 and Nyquist)
        double it = 0, il = 0;
        for (std::size_t f = 0; f < r.omega.size(); ++f) {
            const double c = (f == 0 || f + 1 == r.omega.size()) ? 0.5 : 1.0;
            it += c * r.d_t[f] * r.domega;
            il += c * r.d_l[f] * r.domega;
        }
        REQUIRE_THAT(it, WithinRel(1.0, 1e-12));
        REQUIRE_THAT(il, WithinRel(1.0, 1e-12));
    }
}

}  // namespace

TEST_CASE("Per-particle contributions add up exactly to D_T(omega)", "[unit]") {
    SECTION("periodic box") { check_additive(Geometry::periodic(0, 0, 8, 8)); }
    SECTION("window with taper") { check_additive(Geometry::rect(0, 0, 8, 8)); }
}

TEST_CASE(
    "Transverse plane wave: D_T peaks at its frequency, contributions are uniform, Debye level from c_T",
    "[unit]") {
    const int n = 12, T = 512;
    const double dt = 0.1, w0 = 3.0, A = 0.01;
    const double k0 = 2 * std::numbers::pi * 2 / n;
    test::TrajBuilder tb(Geometry::periodic(0, 0, n, n));
    for (int f = 0; f < T; ++f)
        for (int j = 0; j < n; ++j)
            for (int i = 0; i < n; ++i) {
                const double ph = k0 * i - w0 * f * dt;
                tb.add(f, j * n + i, i, j + A * std::cos(ph), 0, A * w0 * std::sin(ph));
            }
    const auto src = tb.source(dt);
    TransverseVdosParams p;
    p.segment = 128;
    p.band_min = 2.5;
    p.band_max = 3.5;
    p.c_t = 0.8;
    const auto r = compute_transverse_vdos(src, p);
    std::size_t fm = 0;
    for (std::size_t f = 0; f < r.omega.size(); ++f)
        if (r.d_t[f] > r.d_t[fm]) fm = f;
    REQUIRE_THAT(r.omega[fm], WithinAbs(w0, r.domega));
    REQUIRE_THAT(r.debye_t, WithinRel(2 / std::pow(0.8 * std::sqrt(4 * std::numbers::pi), 2), 1e-12));
    // the band holds (nearly) all of D_T, shared equally by all particles
    for (std::size_t s = 0; s < 4; ++s) {
        REQUIRE(r.segment_offsets[s + 1] - r.segment_offsets[s] == n * n);
        for (auto i = r.segment_offsets[s]; i < r.segment_offsets[s + 1]; ++i)
            REQUIRE_THAT(r.p_band[static_cast<std::size_t>(i)],
                         WithinRel(r.band_sum_segments[s] / (n * n), 0.05));
    }
}

TEST_CASE("tvdos parameters are validated", "[unit]") {
    TransverseVdosParams p;
    p.band_min = 3;
    p.band_max = 2;
    REQUIRE_THROWS_AS(p.validate(), ParameterError);
}

TEST_CASE(
    "tvdos streams one segment at a time: bit-identical for any thread count, the last segment ends at the "
    "last frame",
    "[unit]") {
    const double dt = 0.1;
    const auto src = ou_source(Geometry::periodic(0, 0, 8, 8), 60, 3 * 64 + 17, dt, 5);
    TransverseVdosParams p;
    p.segment = 64;
    p.band_min = 1.0;
    p.band_max = 6.0;
    p.threads = 1;
    const auto a = compute_transverse_vdos(src, p);
    REQUIRE(a.n_segments == 4);
    REQUIRE(a.segment_first_frame == std::vector<std::int64_t>{0, 64, 128, 145});
    for (std::size_t s = 0; s < 4; ++s) {
        double sum = 0;
        for (auto i = a.segment_offsets[s]; i < a.segment_offsets[s + 1]; ++i) {
            sum += a.p_band[static_cast<std::size_t>(i)];
            REQUIRE(a.frames_present[static_cast<std::size_t>(i)] <= 64);
        }
        REQUIRE_THAT(sum, WithinRel(a.band_sum_segments[s], 1e-10));
    }
    p.threads = 3;
    const auto b = compute_transverse_vdos(src, p);
    CHECK(b.d_t == a.d_t);
    CHECK(b.d_l == a.d_l);
    CHECK(b.d_t_segments == a.d_t_segments);
    CHECK(b.p_band == a.p_band);
    CHECK(b.x_mean == a.x_mean);
    CHECK(b.particle == a.particle);
    CHECK(b.k_debye == a.k_debye);
}

TEST_CASE("tvdos: the NUFFT and the matrix product give the same spectra and per-particle map", "[unit]") {
    for (const Geometry& g : {Geometry::periodic(0, 0, 20, 20), Geometry::rect(0, 0, 20, 20)}) {
        INFO((g.periodic() ? "periodic box" : "window"));
        const auto src = ou_source(g, 300, 128, 0.1, 4);
        TransverseVdosParams p;
        p.segment = 64;
        p.band_min = 1;
        p.band_max = 6;
        p.k_max = 3.0;
        p.fourier = FourierSums::matrix;
        const auto a = to_group(compute_transverse_vdos(src, p), src.meta());
        p.fourier = FourierSums::nufft;
        p.threads = 2;
        const auto b = to_group(compute_transverse_vdos(src, p), src.meta());
        test::require_close_groups(a, b, 1e-12);
    }
}

TEST_CASE("tvdos: frames left over after the whole segments form one more segment ending at the last frame",
          "[unit]") {
    const Geometry g = Geometry::periodic(0, 0, 8, 8);
    const auto src = ou_source(g, 60, 232, 0.1, 12);  // 3 whole segments of 64 frames, 40 left over
    TransverseVdosParams p;
    p.segment = 64;
    p.band_min = 1;
    p.band_max = 6;
    p.k_max = 2.9;  // the same k-vectors for the sub-run below (the default follows the mean density)
    const auto r = compute_transverse_vdos(src, p);
    REQUIRE(r.n_segments == 4);
    CHECK(r.segment_first_frame == std::vector<std::int64_t>{0, 64, 128, 168});
    // the last segment is the spectrum of frames 168..231 alone: the same as a run of those frames
    test::TrajBuilder b(g);
    const auto all = src.read_frames(168, 64);
    for (std::size_t k = 0; k < all.rows.size(); ++k)
        b.add(all.rows.frame[k] - 168, all.rows.particle[k], all.rows.x[k], all.rows.y[k], all.rows.vx[k],
              all.rows.vy[k]);
    const auto last = compute_transverse_vdos(b.source(0.1), p);
    REQUIRE(last.n_segments == 1);
    const std::size_t nw = r.omega.size();
    for (std::size_t f = 0; f < nw; ++f) {
        INFO("omega bin " << f);
        // per-segment spectra before normalisation differ by the run's mean density and ⟨Σw²⟩, so compare shapes
        CHECK_THAT(r.d_t_segments[3 * nw + f] / r.d_t_segments[3 * nw + 5],
                   WithinRel(last.d_t_segments[f] / last.d_t_segments[5], 1e-9));
    }
    // Σ_i p_i = ∫_band D_T of the segment, for the overlapping segment too
    double sum = 0;
    for (auto i = r.segment_offsets[3]; i < r.segment_offsets[4]; ++i)
        sum += r.p_band[static_cast<std::size_t>(i)];
    CHECK_THAT(sum, WithinRel(r.band_sum_segments[3], 1e-10));
}
