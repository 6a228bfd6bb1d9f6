// SPDX-License-Identifier: GPL-3.0-or-later
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "dynamics_synth.hpp"
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
