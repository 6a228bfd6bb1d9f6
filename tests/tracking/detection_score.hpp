// SPDX-License-Identifier: GPL-3.0-or-later
// Scoring detections against the exact truth of the synthetic renderer (shared by the detection
// tests): one-to-one matching within `tol` px by proximity, recall, precision, RMS error per
// axis, error quantiles, species, and the mean x error in 10 bins of the true fractional x
// (pixel locking).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "vibra/core/cell_list.hpp"
#include "vibra/core/trajectory.hpp"
#include "vibra/tracking/refine.hpp"

namespace vibra::test {

struct Stats {
    std::int64_t truth = 0, detected = 0, matched = 0, species_ok = 0, outliers = 0;
    double se = 0;            // Σ per-axis squared errors
    std::vector<double> err;  // |error|
    double bin_sum[10] = {0};
    std::int64_t bin_n[10] = {0};
    double recall() const { return double(matched) / double(truth); }
    double precision() const { return double(matched) / double(detected); }
    double rms() const { return std::sqrt(se / (2.0 * double(matched))); }
    double quantile(double q) {
        std::sort(err.begin(), err.end());
        return err[static_cast<std::size_t>(q * double(err.size() - 1))];
    }
    double max_bin_bias() const {
        double m = 0;
        for (int b = 0; b < 10; ++b)
            m = std::max(m, std::abs(bin_sum[b] / double(std::max<std::int64_t>(1, bin_n[b]))));
        return m;
    }
};

// Matches detections to truth (nearest within `tol` px, one-to-one by proximity).
inline void score(const std::vector<tracking::Particle>& parts, const TrajectoryTable& t, std::size_t row0,
                  Stats& s, double tol = 3.0) {
    std::vector<double> px, py;
    for (const auto& q : parts) px.push_back(q.x), py.push_back(q.y);
    CellList cl(px, py, tol, Geometry{});
    std::vector<char> used(parts.size(), 0);
    s.detected += static_cast<std::int64_t>(parts.size());
    for (std::size_t i = row0; i < t.size(); ++i) {
        ++s.truth;
        std::int64_t best = -1;
        double bd = tol * tol;
        cl.for_each_near(t.x[i], t.y[i], [&](std::size_t j, double, double, double r2) {
            if (r2 < bd && !used[j]) bd = r2, best = static_cast<std::int64_t>(j);
        });
        if (best < 0) continue;
        const auto& q = parts[static_cast<std::size_t>(best)];
        used[static_cast<std::size_t>(best)] = 1;
        ++s.matched;
        const double ex = q.x - t.x[i], ey = q.y - t.y[i];
        s.se += ex * ex + ey * ey;
        s.err.push_back(std::hypot(ex, ey));
        s.outliers += std::hypot(ex, ey) > 0.3;
        s.species_ok += q.species == t.species[i];
        const double fx = t.x[i] - std::floor(t.x[i]);
        const int b = std::min(9, static_cast<int>(fx * 10));
        s.bin_sum[b] += ex;
        ++s.bin_n[b];
    }
}

}  // namespace vibra::test
