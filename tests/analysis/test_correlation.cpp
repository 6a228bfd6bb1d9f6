// SPDX-License-Identifier: GPL-3.0-or-later
#include <catch2/catch.hpp>
#include <random>

#include "vibra/analysis/correlation.hpp"

TEST_CASE("FFT correlation equals the O(T^2) definition", "[unit]") {
    std::mt19937_64 rng(5);
    std::normal_distribution<double> g;
    for (std::size_t T : {1u, 2u, 7u, 64u, 333u}) {
        std::vector<double> a(T), b(T);
        for (std::size_t i = 0; i < T; ++i) a[i] = g(rng), b[i] = g(rng);
        const auto c = vibra::analysis::crosscorrelation_sum(a, b);
        for (std::size_t m = 0; m < T; ++m) {
            double s = 0;
            for (std::size_t t = 0; t + m < T; ++t) s += a[t] * b[t + m];
            REQUIRE_THAT(c[m], Catch::Matchers::WithinAbs(s, 1e-9 * (1 + std::abs(s))));
        }
    }
}
