// SPDX-License-Identifier: GPL-3.0-or-later
// Optimal assignment (linear sum assignment) by shortest augmenting paths with dual variables
// (Jonker–Volgenant family; the rectangular variant of Crouse, IEEE TAES 52 (2016) 1679).
// Used by the particle linker (conflicting subnetworks) and by defect tracking.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace vibra {

inline constexpr double kForbidden = std::numeric_limits<double>::infinity();

struct Assignment {
    std::vector<std::int64_t> row_to_col;  ///< column of each row, −1 = unassigned
    double cost = 0;                       ///< total cost of the assigned pairs (+ unmatched costs)
};

/// Minimum-cost assignment for a row-major n_rows × n_cols cost matrix; +inf (kForbidden) marks
/// forbidden pairs. Assigns min(n_rows, n_cols) pairs. Throws vibra::Error when no complete
/// assignment avoids forbidden pairs. O(n² m).
Assignment solve_assignment(std::span<const double> cost, std::size_t n_rows, std::size_t n_cols);

/// As solve_assignment, but any row or column may stay unmatched at `unmatched_cost` each, so a
/// solution always exists: pairs with cost > 2·unmatched_cost are never chosen.
Assignment solve_assignment_with_unmatched(std::span<const double> cost, std::size_t n_rows,
                                           std::size_t n_cols, double unmatched_cost);

}  // namespace vibra
