// SPDX-License-Identifier: GPL-3.0-or-later
// Neighbour search by cell lists: O(N) construction, O(1) expected neighbours per query for a
// fixed cut-off. Periodic boxes use minimum-image separations; windows and unbounded data use
// the data's bounding box. Shared by g(r), ψ6, clusters, defects (analysis) and linking
// (tracking), so all of them agree on what "within r" means.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "vibra/core/periodic.hpp"
#include "vibra/core/trajectory.hpp"

namespace vibra {

class CellList {
public:
    /// Bins points (x[i], y[i]) into cells of side ≥ cutoff. For a periodic box the
    /// points may lie outside [x0,x1) and are wrapped; the cut-off must be below half the box.
    /// Non-finite points (NaN = absent) are skipped. Throws ParameterError for cutoff ≤ 0.
    CellList(std::span<const double> x, std::span<const double> y, double cutoff, const Geometry& geometry);

    double cutoff() const { return cutoff_; }
    /// Number of cells: as many of side ≥ cutoff as fit, but at most ≈ 8 per point (sparse
    /// points with a short cut-off get fewer, wider cells: nothing to clear for empty ones).
    std::size_t cell_count() const { return n_cells(); }
    std::size_t size() const { return x_.size(); }

    /// Calls f(i, j, dx, dy, r2) once for every unordered pair i < j with r2 = dx²+dy² < cutoff²,
    /// where (dx, dy) = r_j − r_i (minimum image when periodic).
    template <class F>
    void for_each_pair(F&& f) const {
        const double c2 = cutoff_ * cutoff_;
        for (std::size_t ci = 0; ci < n_cells(); ++ci) {
            for (std::int64_t a = start_[ci]; a < start_[ci + 1]; ++a) {
                const auto i = items_[static_cast<std::size_t>(a)];
                std::size_t cells[9];
                const int nc = stencil(ci, cells);
                for (int k = 0; k < nc; ++k) {
                    const std::size_t cj = cells[k];
                    for (std::int64_t b = start_[cj]; b < start_[cj + 1]; ++b) {
                        const auto j = items_[static_cast<std::size_t>(b)];
                        if (j <= i) continue;
                        double dx = x_[j] - x_[i], dy = y_[j] - y_[i];
                        wrap(dx, dy);
                        const double r2 = dx * dx + dy * dy;
                        if (r2 < c2) f(i, j, dx, dy, r2);
                    }
                }
            }
        }
    }

    /// Calls f(j, dx, dy, r2) for every point j with r2 < cutoff², (dx, dy) = r_j − q.
    template <class F>
    void for_each_near(double qx, double qy, F&& f) const {
        if (!std::isfinite(qx) || !std::isfinite(qy)) return;
        const double c2 = cutoff_ * cutoff_;
        const std::size_t ci = cell_of(qx, qy);
        std::size_t cells[9];
        const int nc = stencil(ci, cells);
        for (int k = 0; k < nc; ++k) {
            const std::size_t cj = cells[k];
            for (std::int64_t b = start_[cj]; b < start_[cj + 1]; ++b) {
                const auto j = items_[static_cast<std::size_t>(b)];
                double dx = x_[j] - qx, dy = y_[j] - qy;
                wrap(dx, dy);
                const double r2 = dx * dx + dy * dy;
                if (r2 < c2) f(j, dx, dy, r2);
            }
        }
    }

    /// Minimum-image separation (no-op when not periodic).
    void wrap(double& dx, double& dy) const {
        if (!periodic_) return;
        dx = minimum_image(dx, lx_);
        dy = minimum_image(dy, ly_);
    }

private:
    std::size_t n_cells() const { return static_cast<std::size_t>(nx_ * ny_); }
    std::size_t cell_of(double px, double py) const;
    /// The (deduplicated) cells within ±1 of cell c; returns their count (≤ 9).
    int stencil(std::size_t c, std::size_t* out) const {
        const auto cx = static_cast<std::int64_t>(c) % nx_, cy = static_cast<std::int64_t>(c) / nx_;
        std::int64_t xs[3], ys[3];
        const int nxs = axis_neighbours(cx, nx_, xs), nys = axis_neighbours(cy, ny_, ys);
        int n = 0;
        for (int b = 0; b < nys; ++b)
            for (int a = 0; a < nxs; ++a) out[n++] = static_cast<std::size_t>(ys[b] * nx_ + xs[a]);
        return n;
    }
    // Indices c−1, c, c+1 along one axis: wrapped (periodic, deduplicated when n < 3) or clipped.
    int axis_neighbours(std::int64_t c, std::int64_t n, std::int64_t* out) const {
        int k = 0;
        for (std::int64_t o = -1; o <= 1; ++o) {
            std::int64_t v = c + o;
            if (periodic_) {
                v = (v + n) % n;
            } else if (v < 0 || v >= n) {
                continue;
            }
            bool seen = false;
            for (int j = 0; j < k; ++j) seen |= out[j] == v;
            if (!seen) out[k++] = v;
        }
        return k;
    }

    std::vector<double> x_, y_;
    double cutoff_;
    bool periodic_ = false;
    double x0_ = 0, y0_ = 0, lx_ = 0, ly_ = 0, cell_w_ = 1, cell_h_ = 1;
    std::int64_t nx_ = 1, ny_ = 1;
    std::vector<std::int64_t> start_;  // CSR over cells
    std::vector<std::size_t> items_;   // point indices, grouped by cell
};

}  // namespace vibra
