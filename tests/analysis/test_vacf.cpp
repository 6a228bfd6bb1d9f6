// SPDX-License-Identifier: GPL-3.0-or-later
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "dynamics_synth.hpp"
#include "vibra/analysis/temperature.hpp"
#include "vibra/analysis/vacf.hpp"
#include "vibra/core/error.hpp"

using namespace vibra;
using namespace vibra::analysis;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

namespace {
// Exact Ornstein–Uhlenbeck velocities (per component std sigma, correlation time tau, frame dt)
// and the positions they integrate to; species alternate small/large with the given sigmas.
test::Series ou_series(std::size_t N, std::size_t T, double tau, double dt, double sig_small,
                       double sig_large, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> g(0.0, 1.0);
    const double a = std::exp(-dt / tau), b = std::sqrt(1 - a * a);
    test::Series s;
    s.x.assign(N, std::vector<double>(T));
    s.y = s.vx = s.vy = s.x;
    s.species.resize(N);
    for (std::size_t i = 0; i < N; ++i) {
        s.species[i] = static_cast<std::int8_t>(i % 2);
        const double sig = i % 2 ? sig_large : sig_small;
        double vx = sig * g(rng), vy = sig * g(rng), x = 0, y = 0;
        for (std::size_t t = 0; t < T; ++t) {
            s.x[i][t] = x;
            s.y[i][t] = y;
            s.vx[i][t] = vx;
            s.vy[i][t] = vy;
            x += vx * dt;
            y += vy * dt;
            vx = a * vx + b * sig * g(rng);
            vy = a * vy + b * sig * g(rng);
        }
    }
    return s;
}
}  // namespace

TEST_CASE("FFT VACF equals the O(T^2) definition, with and without gaps", "[unit]") {
    std::mt19937_64 rng(4);
    std::normal_distribution<double> g(0.0, 2.0);
    std::bernoulli_distribution gap(0.2);
    FftCorrelator corr;
    for (bool gaps : {false, true})
        for (std::size_t L : {1ul, 3ul, 40ul, 257ul}) {
            std::vector<double> vx(L), vy(L);
            for (std::size_t t = 0; t < L; ++t) {
                const bool miss = gaps && gap(rng);
                vx[t] = miss ? test::kNaN : g(rng) + 5.0;
                vy[t] = miss ? test::kNaN : g(rng);
            }
            VacfSums a, b;
            a.resize(L);
            b.resize(L);
            accumulate_vacf(vx, vy, L, a, corr);
            for (std::size_t k = 0; k < L; ++k) {  // definition written out here
                double s = 0, n = 0;
                for (std::size_t t = 0; t + k < L; ++t) {
                    const double p = vx[t] * vx[t + k] + vy[t] * vy[t + k];
                    if (std::isnan(p)) continue;
                    s += p;
                    n += 1;
                }
                CHECK(a.pairs[k] == n);
                CHECK_THAT(a.s[k], WithinAbs(s, 1e-10 * (1 + std::abs(s))));
            }
            accumulate_vacf_direct(vx, vy, L, b);
            CHECK(a.pairs == b.pairs);
        }
}

TEST_CASE("Ornstein-Uhlenbeck velocities: VACF = 2 sigma^2 exp(-t/tau) per species", "[unit]") {
    const double tau = 5.0, dt = 0.5, ss = 1.0, sl = 0.6;
    auto s = ou_series(400, 600, tau, dt, ss, sl, 12);
    Metadata m;
    m.time_unit = std::string("s");  // (not = "s": GCC 12 -Wrestrict false positive)
    m.frame_interval = dt;
    auto src = test::make_source(s, m);
    VacfParams p;
    p.max_lag = 60;
    const auto g = to_group(compute_vacf(src, p), p, src.meta());
    CHECK(std::get<std::string>(g.attrs.at("velocity_scheme")) == "given");
    const auto& lag = test::array(g, "lag");
    const auto& z = test::array(g, "vacf");
    const auto& zs = test::array(g, "vacf_small");
    const auto& zl = test::array(g, "vacf_large");
    const auto& zn = test::array(g, "vacf_norm");
    CHECK(g.find("vacf")->units == "(px/s)^2");
    for (std::size_t k : {0ul, 4ul, 10ul, 20ul}) {
        const double e = std::exp(-lag[k] / tau);
        CHECK_THAT(zs[k], WithinAbs(2 * ss * ss * e, 0.03 * 2 * ss * ss));
        CHECK_THAT(zl[k], WithinAbs(2 * sl * sl * e, 0.03 * 2 * sl * sl));
        CHECK_THAT(z[k], WithinAbs((ss * ss + sl * sl) * e, 0.03 * 2 * ss * ss));
        CHECK_THAT(zn[k], WithinAbs(e, 0.03));
    }

    SECTION("velocities by central differences of the integrated positions") {
        test::Series q = s;
        q.vx.clear();
        q.vy.clear();
        auto src2 = test::make_source(q, m);
        const auto g2 = to_group(compute_vacf(src2, p), p, src2.meta());
        CHECK(std::get<std::string>(g2.attrs.at("velocity_scheme")) == "central");
        // central difference of x(t) = Σ v dt averages two velocities: Z(0) ≈ Z_true(0)(1+a)/2 for OU
        const double a = std::exp(-dt / tau);
        CHECK_THAT(test::array(g2, "vacf_small")[0], WithinRel(2 * ss * ss * (1 + a) / 2, 0.05));
    }
}

TEST_CASE("granular temperature per species and the non-equipartition ratio", "[unit]") {
    const double ss = 1.0, sl = 0.6;
    auto s = ou_series(200, 100, 3.0, 1.0, ss, sl, 3);
    Metadata m;
    m.species_diameters = {1.0, 1.4};
    auto src = test::make_source(s, m);
    const auto g = to_group(compute_temperature(src, TemperatureParams{}), src.meta());
    const double ml = 1.4 * 1.4;
    CHECK_THAT(test::attr(g, "mass_large"), WithinRel(ml, 1e-12));
    // T = m <|v|^2>/2 = m sigma^2 (2-D)
    CHECK_THAT(test::attr(g, "temperature_small_mean"), WithinRel(ss * ss, 0.05));
    CHECK_THAT(test::attr(g, "temperature_large_mean"), WithinRel(ml * sl * sl, 0.05));
    CHECK_THAT(test::attr(g, "ratio_mean"), WithinRel(ml * sl * sl / (ss * ss), 0.07));
    const auto& ts = test::array(g, "temperature_small");
    REQUIRE(ts.size() == 100);
    const auto& r = test::array(g, "ratio");
    CHECK_THAT(r[50], WithinRel(ml * sl * sl / (ss * ss), 0.35));
}

TEST_CASE("vacf parameters are validated", "[unit]") {
    VacfParams p;
    p.max_cells = 0;
    REQUIRE_THROWS_AS(p.validate(), ParameterError);
}
