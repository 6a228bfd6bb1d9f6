// SPDX-License-Identifier: GPL-3.0-or-later
#include <catch2/catch.hpp>
#include <algorithm>
#include <numeric>
#include <random>

#include "vibra/core/assignment.hpp"
#include "vibra/core/error.hpp"

using namespace vibra;

namespace {
// Minimum over all injections rows→cols by brute force (small sizes).
double brute_min(const std::vector<double>& c, std::size_t nr, std::size_t nc) {
    std::vector<std::size_t> cols(nc);
    std::iota(cols.begin(), cols.end(), 0);
    double best = kForbidden;
    if (nr <= nc) {
        do {
            double s = 0;
            for (std::size_t i = 0; i < nr; ++i) s += c[i * nc + cols[i]];
            best = std::min(best, s);
        } while (std::next_permutation(cols.begin(), cols.end()));
    }
    return best;
}
}  // namespace

TEST_CASE("assignment matches brute force on random matrices", "[unit]") {
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<double> u(0, 10);
    for (int trial = 0; trial < 50; ++trial) {
        const std::size_t nr = 1 + trial % 5, nc = nr + trial % 3;
        std::vector<double> c(nr * nc);
        for (auto& v : c) v = u(rng);
        const auto a = solve_assignment(c, nr, nc);
        REQUIRE_THAT(a.cost, Catch::Matchers::WithinAbs(brute_min(c, nr, nc), 1e-9));
        std::vector<std::int64_t> used = a.row_to_col;
        std::sort(used.begin(), used.end());
        REQUIRE(std::adjacent_find(used.begin(), used.end()) == used.end());
        // transposed problem (more rows than columns) has the same optimum
        std::vector<double> t(nr * nc);
        for (std::size_t i = 0; i < nr; ++i)
            for (std::size_t j = 0; j < nc; ++j) t[j * nr + i] = c[i * nc + j];
        REQUIRE_THAT(solve_assignment(t, nc, nr).cost, Catch::Matchers::WithinAbs(a.cost, 1e-9));
    }
}

TEST_CASE("assignment avoids forbidden pairs and reports infeasibility", "[unit]") {
    const double F = kForbidden;
    std::vector<double> c{1, F, F, 2};
    auto a = solve_assignment(c, 2, 2);
    REQUIRE(a.row_to_col == std::vector<std::int64_t>{0, 1});
    std::vector<double> bad{1, F, 1, F};
    REQUIRE_THROWS_AS(solve_assignment(bad, 2, 2), Error);
}

TEST_CASE("assignment with unmatched cost leaves far pairs unmatched", "[unit]") {
    // Two rows, two columns; row 1 is far from everything: cost 100 > 2×unmatched (2×5).
    std::vector<double> c{1, 50, 100, 100};
    const auto a = solve_assignment_with_unmatched(c, 2, 2, 5.0);
    REQUIRE(a.row_to_col[0] == 0);
    REQUIRE(a.row_to_col[1] == -1);
    REQUIRE_THAT(a.cost, Catch::Matchers::WithinAbs(1 + 5 + 5, 1e-12));  // one pair + row 1 + column 1
    // Crossing preference: greedy would take (0,0) cost 1 leaving (1,1) cost 9; optimum is 3+3.
    std::vector<double> d{1, 3, 3, 9};
    const auto b = solve_assignment_with_unmatched(d, 2, 2, 100.0);
    REQUIRE(b.row_to_col == std::vector<std::int64_t>{1, 0});
}
