// SPDX-License-Identifier: GPL-3.0-or-later
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "dynamics_synth.hpp"
#pragma GCC diagnostic ignored "-Wpsabi"  // sincos.hpp: 32-byte vectors inside inline functions only
#include "detail/sincos.hpp"              // analysis/src (the test target adds it to its include path)
#include "vibra/analysis/self_intermediate.hpp"

using namespace vibra;
using namespace vibra::analysis;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

TEST_CASE("F_s(k,t) = exp(-D k^2 t) for Brownian motion, tau_alpha = 1/(D k^2)", "[unit]") {
    const double s = 0.2;  // per-step std per axis → D = s^2/2 per frame
    auto walks = test::random_walks(400, 500, s, 31);
    Metadata m;
    m.species_diameters = {4.0, 5.6};
    auto src = test::make_source(walks, m);
    FsParams p;
    p.max_lag = 200;
    const auto g = to_group(compute_fs(src, p), p, src.meta());
    const auto& k = test::array(g, "k");
    REQUIRE(k.size() == 1);
    CHECK_THAT(k[0], WithinRel(2 * M_PI / 4.0, 1e-12));  // default 2π/d_small
    CHECK(std::get<std::string>(g.attrs.at("k_source")) == "2 pi / d_small");
    const double D = s * s / 2;
    const auto& fs = test::array(g, "fs");
    const auto& fss = test::array(g, "fs_small");
    for (std::size_t l : {0ul, 5ul, 20ul, 40ul, 80ul}) {
        const double e = std::exp(-D * k[0] * k[0] * l);
        CHECK_THAT(fs[l], WithinAbs(e, 0.01));
        CHECK_THAT(fss[l], WithinAbs(e, 0.015));
    }
    CHECK_THAT(test::attr(g, "tau_alpha"), WithinRel(1 / (D * k[0] * k[0]), 0.03));
}

TEST_CASE("FFT F_s equals the direct definition with gaps — tau_alpha interpolation", "[unit]") {
    std::mt19937_64 rng(8);
    std::normal_distribution<double> g(0.0, 0.7);
    std::bernoulli_distribution gap(0.2);
    const std::size_t L = 90;
    std::vector<double> x(L), y(L);
    double a = 300, b = 40;
    for (std::size_t t = 0; t < L; ++t) {
        a += g(rng);
        b += g(rng);
        const bool miss = gap(rng);
        x[t] = miss ? test::kNaN : a;
        y[t] = miss ? test::kNaN : b;
    }
    const std::vector<double> ks{0.5, 2.0};
    FsSums f1, f2;
    f1.resize(2, 50);
    f2.resize(2, 50);
    FftCorrelator corr;
    accumulate_fs(x, y, ks, 6, 49, f1, corr);
    accumulate_fs_direct(x, y, ks, 6, 49, f2);
    CHECK(f1.pairs == f2.pairs);
    for (std::size_t i = 0; i < f1.s.size(); ++i) CHECK_THAT(f1.s[i], WithinAbs(f2.s[i], 1e-9));
    const std::vector<double> f{1.0, 0.6, 0.3, 0.1};
    const double e1 = std::exp(-1.0);
    CHECK_THAT(tau_alpha(f, 2.0), WithinRel(2.0 * (1 + (0.6 - e1) / 0.3), 1e-12));
    CHECK(std::isnan(tau_alpha(std::vector<double>{1.0, 0.9}, 1.0)));
}

TEST_CASE("F_s default k from an earlier S(k) result", "[unit]") {
    auto walks = test::random_walks(10, 20, 0.1, 1);
    auto src = test::make_source(walks, Metadata{});
    ResultGroup sk;
    sk.name = "sk";
    sk.add("k", {1.0, 2.0, 3.0, 4.0}, "rad/px");
    sk.add("s", {0.2, 0.8, 2.5, 1.1}, "1");
    const auto [k, why] = default_fs_k(src, &sk);
    CHECK(k == 3.0);
    sk.attrs["k_peak"] = 3.3;
    CHECK(default_fs_k(src, &sk).first == 3.3);
}

TEST_CASE("phase factors: the vectorised sincos is within 1e-16 of libm, libm itself beyond 2^18", "[unit]") {
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<double> u(-2e4, 2e4), s(-1, 1);
    std::vector<double> phi;
    for (int i = 0; i < 200000; ++i) phi.push_back(u(rng));
    for (int q = -40; q <= 40; ++q)  // near multiples of π/4 (quadrant edges and the kernel's range ends)
        for (double e : {0.0, 1e-15, -1e-15, 1e-9, -1e-9}) phi.push_back(q * M_PI / 4 + e);
    for (double a : {0.0, -0.0, 1e-300, -1e-20, 3e5, -1e7, 262143.9, 262144.0}) phi.push_back(a);
    phi.push_back(s(rng));  // an odd count: the last group of four is padded
    std::vector<double> c(phi.size()), sn(phi.size());
    detail::sincos_many(phi.data(), c.data(), sn.data(), phi.size());
    double worst = 0;
    for (std::size_t i = 0; i < phi.size(); ++i) {
        worst = std::max({worst, std::abs(c[i] - std::cos(phi[i])), std::abs(sn[i] - std::sin(phi[i]))});
        if (std::abs(phi[i]) >= 262144.0) {  // libm's own values
            CHECK(c[i] == std::cos(phi[i]));
            CHECK(sn[i] == std::sin(phi[i]));
        }
    }
    CHECK(worst <= 2.3e-16);  // ≤ 2 ulp of 1 (both within ≈ 1 ulp of the exact value)
    // an angle's result does not depend on its place in the array
    std::vector<double> c1(1), s1(1);
    for (std::size_t i : {0ul, 1ul, 2ul, 3ul, 4ul, 5ul, 6ul, 7ul}) {
        detail::sincos_many(phi.data() + i, c1.data(), s1.data(), 1);
        CHECK(c1[0] == c[i]);
        CHECK(s1[0] == sn[i]);
    }
}

TEST_CASE("F_s of gap-free tracks (no mask transform) equals the direct definition to 1e-12", "[unit]") {
    std::mt19937_64 rng(12);
    std::normal_distribution<double> g(0.0, 0.5);
    const std::size_t L = 301;
    std::vector<double> x(L), y(L);
    double a = 250, b = -120;  // positions far from 0: phases of several hundred radians
    for (std::size_t t = 0; t < L; ++t) {
        a += g(rng);
        b += g(rng);
        x[t] = a;
        y[t] = b;
    }
    const std::vector<double> ks{0.7, 3.1, 6.3};
    FsSums f1, f2;
    f1.resize(3, 151);
    f2.resize(3, 151);
    FftCorrelator corr;
    accumulate_fs(x, y, ks, 8, 150, f1, corr);
    accumulate_fs_direct(x, y, ks, 8, 150, f2);
    CHECK(f1.pairs == f2.pairs);
    for (std::size_t i = 0; i < f1.s.size(); ++i) {
        const double pairs = f2.pairs[i % 151];  // F_s = s / pairs: compare on that scale
        CHECK_THAT(f1.s[i] / pairs, WithinAbs(f2.s[i] / pairs, 1e-12));
    }
}

TEST_CASE("fs: identical results on 1 and 3 threads", "[unit]") {
    auto walks = test::random_walks(150, 200, 0.3, 4);
    Metadata m;
    m.species_diameters = {1.0, 1.4};
    auto src = test::make_source(walks, m);
    FsParams p;
    p.k = {2.0, 6.0};
    const auto g1 = to_group(compute_fs(src, p), p, m);
    p.threads = 3;
    const auto g3 = to_group(compute_fs(src, p), p, m);
    for (const char* n : {"fs", "fs_small", "fs_large", "tau_alpha"}) {
        INFO(n);
        CHECK(test::array(g1, n) == test::array(g3, n));
    }
}
