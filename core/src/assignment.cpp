// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/core/assignment.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "vibra/core/error.hpp"

namespace vibra {

namespace {

// Rectangular LAP with nr ≤ nc, every row assigned. Returns col4row.
std::vector<std::int64_t> lap_rows_le_cols(const std::vector<double>& c, std::size_t nr, std::size_t nc) {
    constexpr double inf = std::numeric_limits<double>::infinity();
    std::vector<double> u(nr, 0.0), v(nc, 0.0), spc(nc);
    std::vector<std::int64_t> path(nc, -1), col4row(nr, -1), row4col(nc, -1);
    std::vector<char> SR(nr), SC(nc);
    std::vector<std::size_t> remaining(nc);
    for (std::size_t cur = 0; cur < nr; ++cur) {
        double min_val = 0;
        std::size_t i = cur;
        std::size_t n_rem = nc;
        for (std::size_t it = 0; it < nc; ++it) remaining[it] = nc - it - 1;
        std::fill(SR.begin(), SR.end(), 0);
        std::fill(SC.begin(), SC.end(), 0);
        std::fill(spc.begin(), spc.end(), inf);
        std::int64_t sink = -1;
        while (sink == -1) {
            SR[i] = 1;
            std::int64_t index = -1;
            double lowest = inf;
            for (std::size_t it = 0; it < n_rem; ++it) {
                const std::size_t j = remaining[it];
                const double r = min_val + c[i * nc + j] - u[i] - v[j];
                if (r < spc[j]) {
                    path[j] = static_cast<std::int64_t>(i);
                    spc[j] = r;
                }
                if (spc[j] < lowest || (spc[j] == lowest && row4col[j] == -1)) {
                    lowest = spc[j];
                    index = static_cast<std::int64_t>(it);
                }
            }
            min_val = lowest;
            if (min_val == inf || index < 0)
                throw Error("assignment: no feasible assignment avoids forbidden pairs");
            const std::size_t j = remaining[static_cast<std::size_t>(index)];
            if (row4col[j] == -1)
                sink = static_cast<std::int64_t>(j);
            else
                i = static_cast<std::size_t>(row4col[j]);
            SC[j] = 1;
            remaining[static_cast<std::size_t>(index)] = remaining[--n_rem];
        }
        u[cur] += min_val;
        for (std::size_t r = 0; r < nr; ++r)
            if (SR[r] && r != cur) u[r] += min_val - spc[static_cast<std::size_t>(col4row[r])];
        for (std::size_t j = 0; j < nc; ++j)
            if (SC[j]) v[j] -= min_val - spc[j];
        auto j = static_cast<std::size_t>(sink);
        while (true) {
            const auto r = static_cast<std::size_t>(path[j]);
            row4col[j] = static_cast<std::int64_t>(r);
            const auto prev = col4row[r];
            col4row[r] = static_cast<std::int64_t>(j);
            if (r == cur) break;
            j = static_cast<std::size_t>(prev);
        }
    }
    return col4row;
}

void check_shape(std::span<const double> cost, std::size_t nr, std::size_t nc) {
    if (cost.size() != nr * nc)
        throw ParameterError("assignment: cost has " + std::to_string(cost.size()) + " entries, expected " +
                             std::to_string(nr) + " x " + std::to_string(nc));
    for (double v : cost)
        if (std::isnan(v) || v == -std::numeric_limits<double>::infinity())
            throw ParameterError("assignment: cost entries must be finite or +inf");
}

}  // namespace

Assignment solve_assignment(std::span<const double> cost, std::size_t nr, std::size_t nc) {
    check_shape(cost, nr, nc);
    Assignment a;
    a.row_to_col.assign(nr, -1);
    if (nr == 0 || nc == 0) return a;
    if (nr <= nc) {
        std::vector<double> c(cost.begin(), cost.end());
        auto col4row = lap_rows_le_cols(c, nr, nc);
        a.row_to_col = col4row;
    } else {  // transpose so rows ≤ cols
        std::vector<double> t(nr * nc);
        for (std::size_t i = 0; i < nr; ++i)
            for (std::size_t j = 0; j < nc; ++j) t[j * nr + i] = cost[i * nc + j];
        auto row4col = lap_rows_le_cols(t, nc, nr);
        for (std::size_t j = 0; j < nc; ++j)
            a.row_to_col[static_cast<std::size_t>(row4col[j])] = static_cast<std::int64_t>(j);
    }
    for (std::size_t i = 0; i < nr; ++i)
        if (a.row_to_col[i] >= 0) a.cost += cost[i * nc + static_cast<std::size_t>(a.row_to_col[i])];
    return a;
}

Assignment solve_assignment_with_unmatched(std::span<const double> cost, std::size_t nr, std::size_t nc,
                                           double unmatched_cost) {
    check_shape(cost, nr, nc);
    if (!(unmatched_cost >= 0) || !std::isfinite(unmatched_cost))
        throw ParameterError("assignment: unmatched_cost must be finite and >= 0, got " +
                             std::to_string(unmatched_cost));
    Assignment a;
    a.row_to_col.assign(nr, -1);
    if (nr == 0 || nc == 0) {
        a.cost = unmatched_cost * static_cast<double>(nr + nc);
        return a;
    }
    // Square (nr+nc) matrix: [C | diag(u)] over [diag(u) | 0]. A row matched to its dummy column
    // stays unmatched; a real column matched to a dummy row likewise.
    const std::size_t n = nr + nc;
    std::vector<double> c(n * n, kForbidden);
    for (std::size_t i = 0; i < nr; ++i) {
        for (std::size_t j = 0; j < nc; ++j) c[i * n + j] = cost[i * nc + j];
        c[i * n + nc + i] = unmatched_cost;
    }
    for (std::size_t j = 0; j < nc; ++j) {
        c[(nr + j) * n + j] = unmatched_cost;
        for (std::size_t k = 0; k < nr; ++k) c[(nr + j) * n + nc + k] = 0.0;
    }
    const auto col4row = lap_rows_le_cols(c, n, n);
    for (std::size_t i = 0; i < nr; ++i) {
        const auto j = col4row[i];
        if (j >= 0 && static_cast<std::size_t>(j) < nc) {
            a.row_to_col[i] = j;
            a.cost += cost[i * nc + static_cast<std::size_t>(j)];
        } else {
            a.cost += unmatched_cost;
        }
    }
    for (std::size_t j = 0; j < nc; ++j) {
        const auto r = col4row[nr + j];
        if (r >= 0 && static_cast<std::size_t>(r) < nc) a.cost += unmatched_cost;  // column j unmatched
        (void)r;
    }
    return a;
}

}  // namespace vibra
