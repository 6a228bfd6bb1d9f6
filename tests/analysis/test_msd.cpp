// SPDX-License-Identifier: GPL-3.0-or-later
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "dynamics_synth.hpp"
#include "vibra/analysis/msd.hpp"
#include "vibra/core/error.hpp"

using namespace vibra;
using namespace vibra::analysis;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

namespace {
std::vector<double> gappy_walk(std::size_t L, std::mt19937_64& rng, double offset,
                               std::vector<double>* y_out) {
    std::normal_distribution<double> g(0.0, 1.0);
    std::bernoulli_distribution gap(0.15);
    std::vector<double> x(L), y(L);
    double a = offset, b = -offset;
    for (std::size_t t = 0; t < L; ++t) {
        a += g(rng);
        b += g(rng);
        const bool missing = gap(rng);
        x[t] = missing ? test::kNaN : a;
        y[t] = missing ? test::kNaN : b;
    }
    *y_out = y;
    return x;
}
}  // namespace

TEST_CASE("gap-aware FFT MSD equals the brute-force gapped MSD", "[unit]") {
    std::mt19937_64 rng(11);
    FftCorrelator corr;
    for (std::size_t L : {1ul, 2ul, 7ul, 64ul, 301ul}) {
        for (std::size_t max_lag : {0ul, 5ul, 1000ul}) {
            std::vector<double> y;
            // large offset: pixel-like coordinates test the precision of the FFT route
            const auto x = gappy_walk(L, rng, 2000.0, &y);
            MsdSums a, b;
            const std::size_t n = std::min(max_lag, L - 1) + 1;
            a.resize(n);
            b.resize(n);
            accumulate_msd(x, y, max_lag, a, corr);
            accumulate_msd_direct(x, y, max_lag, b);
            const auto ma = msd_from_sums(a), mb = msd_from_sums(b);
            const auto aa = alpha2_from_sums(a), ab = alpha2_from_sums(b);
            for (std::size_t k = 0; k < n; ++k) {
                CHECK(a.pairs[k] == b.pairs[k]);
                if (std::isnan(mb[k])) {
                    CHECK(std::isnan(ma[k]));  // no pairs → NaN, never 0
                    continue;
                }
                CHECK_THAT(ma[k], WithinRel(mb[k], 1e-10) || WithinAbs(mb[k], 1e-10));
                if (std::isfinite(ab[k])) CHECK_THAT(aa[k], WithinAbs(ab[k], 1e-7));
            }
        }
    }
}

TEST_CASE("one correlator over many track lengths (plan cache eviction)", "[unit]") {
    std::mt19937_64 rng(23);
    FftCorrelator corr;
    for (std::size_t L = 2; L < 160; ++L) {  // > 64 distinct FFT lengths
        std::vector<double> y;
        const auto x = gappy_walk(L, rng, 10.0, &y);
        MsdSums a, b;
        a.resize(L);
        b.resize(L);
        accumulate_msd(x, y, L, a, corr);
        accumulate_msd_direct(x, y, L, b);
        for (std::size_t k = 0; k < L; ++k) {
            REQUIRE(a.pairs[k] == b.pairs[k]);
            REQUIRE_THAT(a.s2[k], WithinAbs(b.s2[k], 1e-9 * (1 + b.s2[k])));
        }
    }
}

TEST_CASE("FFT MSD equals the O(T^2) definition on small complete inputs", "[unit]") {
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<double> u(-3, 3);
    FftCorrelator corr;
    std::vector<double> x(50), y(50);
    for (std::size_t t = 0; t < 50; ++t) {
        x[t] = u(rng) + 0.1 * t;
        y[t] = std::sin(0.3 * t) + u(rng);
    }
    MsdSums a, b;
    a.resize(50);
    b.resize(50);
    accumulate_msd(x, y, 49, a, corr);
    // independent definition written out here
    for (std::size_t k = 0; k < 50; ++k) {
        double s2 = 0, s4 = 0;
        for (std::size_t t = 0; t + k < 50; ++t) {
            const double d2 = std::pow(x[t + k] - x[t], 2) + std::pow(y[t + k] - y[t], 2);
            s2 += d2;
            s4 += d2 * d2;
        }
        CHECK(a.pairs[k] == static_cast<double>(50 - k));
        CHECK_THAT(a.s2[k], WithinRel(s2, 1e-10) || WithinAbs(s2, 1e-10));
        CHECK_THAT(a.s4[k], WithinRel(s4, 1e-9) || WithinAbs(s4, 1e-9));
    }
}

TEST_CASE("ballistic motion in a periodic box: MSD = v^2 t^2, alpha2 = -1/2 for equal speeds", "[unit]") {
    // N particles with speed v in random directions, wrapped into a box of side 20.
    const std::size_t N = 30, T = 200;
    const double v = 0.7;
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<double> ang(0, 2 * M_PI), pos(0, 20);
    test::Series s;
    s.x.assign(N, std::vector<double>(T));
    s.y = s.x;
    s.species.assign(N, 0);
    for (std::size_t i = 0; i < N; ++i) {
        const double a = ang(rng), x0 = pos(rng), y0 = pos(rng);
        for (std::size_t t = 0; t < T; ++t) {
            s.x[i][t] = std::fmod(x0 + v * std::cos(a) * t + 2000.0, 20.0);
            s.y[i][t] = std::fmod(y0 + v * std::sin(a) * t + 2000.0, 20.0);
        }
        s.species[i] = static_cast<std::int8_t>(i % 2);
    }
    Metadata m;
    m.geometry = Geometry::periodic(0, 0, 20, 20);
    m.frame_interval = 0.5;
    m.time_unit = "ms";
    auto src = test::make_source(s, m);
    MsdParams p;
    p.max_lag = 150;
    p.vanhove_lags = {};
    p.max_cells = 500;  // several particle blocks
    const auto g = to_group(compute_msd(src, p), p, src.meta());
    REQUIRE(g.groups.empty());  // no van Hove lags
    const auto& lag = test::array(g, "lag");
    const auto& msd = test::array(g, "msd");
    const auto& a2 = test::array(g, "alpha2");
    REQUIRE(msd.size() == 151);
    CHECK(g.find("lag")->units == "ms");
    CHECK(g.find("msd")->units == "px^2");
    for (std::size_t k = 1; k <= 150; ++k) {
        const double frames = static_cast<double>(k);
        CHECK_THAT(lag[k], WithinRel(0.5 * frames, 1e-12));
        CHECK_THAT(msd[k], WithinRel(v * v * frames * frames, 1e-9));
        CHECK_THAT(a2[k], WithinAbs(-0.5, 1e-6));
        CHECK_THAT(test::array(g, "msd_small")[k], WithinRel(v * v * frames * frames, 1e-9));
    }
    CHECK(std::get<std::string>(g.attrs.at("drift")) == "none");
}

TEST_CASE("random walk: MSD = 4 D t, alpha2 = 0, sigma_loc recovered", "[unit]") {
    const double s = 0.5;  // per-step std per axis, D = s^2/2 per frame
    auto walks = test::random_walks(400, 400, s, 21);
    Metadata m;
    auto src = test::make_source(walks, m);
    MsdParams p;
    p.max_lag = 100;
    p.vanhove_lags = {4, 50};
    const auto g = to_group(compute_msd(src, p), p, src.meta());
    const auto& msd = test::array(g, "msd");
    const auto& a2 = test::array(g, "alpha2");
    for (std::size_t k : {1ul, 10ul, 50ul, 100ul}) {
        CHECK_THAT(msd[k], WithinRel(2 * s * s * k, 0.03));
        CHECK_THAT(a2[k], WithinAbs(0.0, 0.05));
    }
    CHECK_THAT(test::attr(g, "sigma_loc"), WithinAbs(0.0, 0.05));
    // D from the long-time slope: s²/2 per frame, within a few of its own standard errors
    const double D = test::attr(g, "diffusion_coefficient"),
                 D_err = test::attr(g, "diffusion_coefficient_err");
    CHECK_THAT(D, WithinRel(s * s / 2, 0.03));
    CHECK(D_err > 0);
    CHECK(D_err < 0.01 * D);
    CHECK(std::get<std::string>(g.attrs.at("diffusion_coefficient_units")) == "px^2/frame");

    // van Hove: Gaussian with variance s^2·lag per component, normalised
    REQUIRE(g.groups.size() == 1);  // /analysis/msd/van_hove
    const auto& v = g.groups[0];
    CHECK(v.name == "van_hove");
    const auto& dx = test::array(v, "dx");
    const auto& gs = test::array(v, "gs");
    const std::size_t nb = 101;
    REQUIRE(gs.size() == 2 * nb);
    for (std::size_t j = 0; j < 2; ++j) {
        const double var = s * s * (j == 0 ? 4 : 50);
        double integral = 0;
        for (std::size_t b = 0; b < nb; ++b) integral += gs[j * nb + b] * (dx[j * nb + 1] - dx[j * nb]);
        CHECK_THAT(integral, WithinAbs(1.0, 1e-3));
        const double peak = gs[j * nb + nb / 2];
        CHECK_THAT(peak, WithinRel(1.0 / std::sqrt(2 * M_PI * var), 0.05));
    }

    // localisation noise: add Gaussian noise of std 0.3 per coordinate → MSD + 4σ²
    std::mt19937_64 rng(99);
    std::normal_distribution<double> noise(0.0, 0.3);
    for (auto& r : walks.x)
        for (auto& x : r) x += noise(rng);
    for (auto& r : walks.y)
        for (auto& y : r) y += noise(rng);
    auto src2 = test::make_source(walks, m);
    p.vanhove_lags = {};
    const auto g2 = to_group(compute_msd(src2, p), p, src2.meta());
    CHECK_THAT(test::attr(g2, "sigma_loc"), WithinRel(0.3, 0.1));
}

TEST_CASE("drift subtraction removes an imposed drift", "[unit]") {
    const double s = 0.3, u = 0.2;
    // same seed: identical noise, with and without an imposed uniform drift
    auto walks = test::random_walks(300, 300, s, 8, u, -0.5 * u);
    auto plain = test::random_walks(300, 300, s, 8);
    auto src = test::make_source(walks, Metadata{});
    auto src_plain = test::make_source(plain, Metadata{});
    MsdParams p;
    p.max_lag = 100;
    p.vanhove_lags = {};
    const auto none = test::array(to_group(compute_msd(src, p), p, src.meta()), "msd");
    p.drift = DriftMode::com;
    const auto gcom = to_group(compute_msd(src, p), p, src.meta());
    const auto com = test::array(gcom, "msd");
    const auto com_plain = test::array(to_group(compute_msd(src_plain, p), p, src_plain.meta()), "msd");
    p.drift = DriftMode::lowpass;
    p.drift_window = 21;
    const auto low = test::array(to_group(compute_msd(src, p), p, src.meta()), "msd");
    const auto low_plain = test::array(to_group(compute_msd(src_plain, p), p, src_plain.meta()), "msd");
    const double u2 = u * u * 1.25;
    for (std::size_t k : {10ul, 50ul, 100ul}) {
        const double diffusive = 2 * s * s * k;
        CHECK_THAT(none[k],
                   WithinRel(diffusive + u2 * k * k, 0.1));  // the drift is there without subtraction
        // the uniform drift is removed exactly: same result as the drift-free walks
        CHECK_THAT(com[k], WithinRel(com_plain[k], 1e-9));
        CHECK_THAT(low[k], WithinRel(low_plain[k], 1e-9));
        CHECK_THAT(com[k], WithinRel(diffusive, 0.12));
        CHECK_THAT(low[k], WithinRel(diffusive, 0.12));
    }
    CHECK(std::get<std::string>(gcom.attrs.at("drift")) == "com");
}

TEST_CASE("experiment-like window: tracks that start, end and have gaps — streaming blocks", "[unit]") {
    // Independent brute-force reference from the series themselves.
    std::mt19937_64 rng(17);
    const std::size_t N = 40, T = 120;
    test::Series s;
    s.x.assign(N, std::vector<double>(T, test::kNaN));
    s.y = s.x;
    s.species.assign(N, 0);
    std::uniform_int_distribution<std::size_t> start(0, T - 2);
    for (std::size_t i = 0; i < N; ++i) {
        std::vector<double> y;
        const std::size_t a = start(rng), b = std::min(T, a + 5 + start(rng) / 2);
        const auto x = gappy_walk(b - a, rng, 500.0, &y);
        for (std::size_t t = a; t < b; ++t) {
            s.x[i][t] = x[t - a];
            s.y[i][t] = y[t - a];
        }
        s.species[i] = static_cast<std::int8_t>(i % 3 == 0 ? -1 : i % 3 == 1 ? 0 : 1);
    }
    Metadata m;
    m.geometry = Geometry::rect(0, 0, 1000, 1000);
    auto src = test::make_source(s, m);
    MsdParams p;
    p.max_lag = 60;
    p.vanhove_lags = {};
    p.max_cells = 100;
    const auto g = to_group(compute_msd(src, p), p, src.meta());
    CHECK(std::get<std::int64_t>(g.attrs.at("particle_blocks")) > 3);
    const auto& msd = test::array(g, "msd");
    const auto& msd_small = test::array(g, "msd_small");
    for (std::size_t k = 1; k <= 60; ++k) {
        double num = 0, den = 0, ns = 0, ds = 0;
        for (std::size_t i = 0; i < N; ++i)
            for (std::size_t t = 0; t + k < T; ++t) {
                const double d2 =
                    std::pow(s.x[i][t + k] - s.x[i][t], 2) + std::pow(s.y[i][t + k] - s.y[i][t], 2);
                if (std::isnan(d2)) continue;
                num += d2;
                den += 1;
                if (s.species[i] == 0) ns += d2, ds += 1;
            }
        if (den == 0) {
            CHECK(std::isnan(msd[k]));
            continue;
        }
        CHECK_THAT(msd[k], WithinRel(num / den, 1e-10));
        if (ds > 0) CHECK_THAT(msd_small[k], WithinRel(ns / ds, 1e-10));
    }
}

TEST_CASE("msd parameters are validated", "[unit]") {
    MsdParams p;
    p.vanhove_bins = 1;
    REQUIRE_THROWS_AS(p.validate(), ParameterError);
    p = MsdParams{};
    p.max_lag = -5;
    REQUIRE_THROWS_AS(p.validate(), ParameterError);
}

TEST_CASE("tracks without gaps (running sums) and with gaps (mask FFT) agree with the definition to 1e-12",
          "[unit]") {
    // a 2000-frame random walk at pixel-like coordinates: gap-free, then with its ends cut off
    // (trimmed: still gap-free) and with interior gaps (the mask route)
    std::mt19937_64 rng(31);
    std::normal_distribution<double> g(0.0, 0.5);
    const std::size_t L = 2000, ml = 1000;
    std::vector<double> x(L), y(L);
    double a = 1500.0, b = 800.0;
    for (std::size_t t = 0; t < L; ++t) x[t] = a += g(rng), y[t] = b += g(rng);
    auto check = [&](const std::vector<double>& xs, const std::vector<double>& ys) {
        FftCorrelator corr;
        MsdSums f, d;
        f.resize(ml + 1);
        d.resize(ml + 1);
        accumulate_msd(xs, ys, ml, f, corr);
        accumulate_msd_direct(xs, ys, ml, d);
        double worst2 = 0, worst4 = 0;
        for (std::size_t k = 1; k <= ml; ++k) {
            REQUIRE(f.pairs[k] == d.pairs[k]);
            worst2 = std::max(worst2, std::abs(f.s2[k] / d.s2[k] - 1));
            worst4 = std::max(worst4, std::abs(f.s4[k] / d.s4[k] - 1));
        }
        CHECK(worst2 < 1e-12);
        CHECK(worst4 < 1e-12);
    };
    check(x, y);
    auto xc = x, yc = y;
    for (std::size_t t = 0; t < 7; ++t) xc[t] = yc[L - 1 - t] = test::kNaN;
    check(xc, yc);
    std::bernoulli_distribution gap(0.05);
    for (std::size_t t = 0; t < L; ++t)
        if (gap(rng)) xc[t] = test::kNaN;
    check(xc, yc);
}
