// SPDX-License-Identifier: GPL-3.0-or-later
// C_vv(r): known exponential correlation recovered from particles in a window; exact limits.
#include <catch2/catch.hpp>

#include <cmath>
#include <numbers>
#include <random>

#include "vibra/analysis/velocity_correlation.hpp"

using namespace vibra;
using namespace vibra::analysis;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

namespace {
constexpr double kPi = std::numbers::pi;

/// Random-phase Gaussian field with covariance exp(−r/ξ) per component: wave vectors drawn from the
/// normalised 2-D Fourier transform of exp(−r/ξ), p(k) ∝ (1 + k²ξ²)^{−3/2}.
void exp_field(const std::vector<double>& x, const std::vector<double>& y, double xi, int M, unsigned seed,
               std::vector<double>& ux, std::vector<double>& uy) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(0, 1);
    ux.assign(x.size(), 0), uy.assign(x.size(), 0);
    const double amp = std::sqrt(2.0 / M);
    for (int comp = 0; comp < 2; ++comp)
        for (int m = 0; m < M; ++m) {
            const double U = u(rng), K = std::sqrt(1 / ((1 - U) * (1 - U)) - 1) / xi, th = 2 * kPi * u(rng),
                         ph = 2 * kPi * u(rng);
            const double kx = K * std::cos(th), ky = K * std::sin(th);
            auto& out = comp == 0 ? ux : uy;
            for (std::size_t i = 0; i < x.size(); ++i) out[i] += amp * std::cos(kx * x[i] + ky * y[i] + ph);
        }
}
}  // namespace

TEST_CASE("C_vv of a field with exponential correlation recovers xi within 5%", "[unit]") {
    const double xi = 5, L = 160;
    const Geometry win = Geometry::rect(0, 0, L, L);
    VelocityCorrelationParams p;
    p.r_max = 15, p.dr = 0.5;
    VelocityCorrelation acc(p);
    for (unsigned seed = 1; seed <= 4; ++seed) {
        std::mt19937_64 rng(seed * 77);
        std::uniform_real_distribution<double> u(0, L);
        std::vector<double> x, y, ux, uy;
        for (int n = 0; n < 12000; ++n) x.push_back(u(rng)), y.push_back(u(rng));
        exp_field(x, y, xi, 5000, seed, ux, uy);
        acc.add(x, y, ux, uy, win);
    }
    const auto r = acc.r(), c = acc.c();
    REQUIRE_THAT(correlation_length(r, c), WithinRel(xi, 0.05));
    // The pair-normalised estimator has no window edge bias: C(r) itself follows exp(−r/ξ).
    for (std::size_t b = 0; b < r.size(); ++b)
        if (r[b] < 10) REQUIRE_THAT(c[b], WithinAbs(std::exp(-r[b] / xi), 0.06));
    // Longitudinal + transverse = total.
    const auto cl = acc.c_long(), ct = acc.c_trans();
    for (std::size_t b = 0; b < r.size(); ++b) REQUIRE_THAT(cl[b] + ct[b], WithinAbs(c[b], 1e-12));
}

TEST_CASE("C_vv limits: independent vectors, uniform translation", "[unit]") {
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<double> u(0, 60);
    std::normal_distribution<double> g;
    std::vector<double> x, y, ux, uy;
    for (int n = 0; n < 4000; ++n)
        x.push_back(u(rng)), y.push_back(u(rng)), ux.push_back(g(rng)), uy.push_back(g(rng));
    VelocityCorrelationParams p;
    p.r_max = 6, p.dr = 1;
    VelocityCorrelation a(p);
    a.add(x, y, ux, uy, Geometry::rect(0, 0, 60, 60));
    for (double v : a.c()) REQUIRE_THAT(v, WithinAbs(0.0, 0.05));
    REQUIRE_THAT(polar_order(ux, uy), WithinAbs(0.0, 3.0 / std::sqrt(4000.0)));
    SECTION("uniform translation without mean subtraction: C = 1, polar order 1") {
        std::vector<double> vx(x.size(), 0.3), vy(x.size(), -0.4);
        p.subtract_mean = false;
        VelocityCorrelation b(p);
        b.add(x, y, vx, vy, Geometry::rect(0, 0, 60, 60));
        for (double v : b.c()) REQUIRE_THAT(v, WithinAbs(1.0, 1e-12));
        REQUIRE_THAT(polar_order(vx, vy), WithinAbs(1.0, 1e-12));
        REQUIRE_THAT(b.mean_square(), WithinRel(0.25, 1e-12));
    }
    SECTION("correlation_length is exact on an exponential") {
        std::vector<double> r, c;
        for (int b = 0; b < 30; ++b)
            r.push_back(0.25 + 0.5 * b), c.push_back(0.8 * std::exp(-r.back() / 3.2));
        REQUIRE_THAT(correlation_length(r, c), WithinRel(3.2, 1e-10));
        REQUIRE(std::isnan(correlation_length(r, std::vector<double>(30, -1.0))));
    }
}
