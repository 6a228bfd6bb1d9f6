// SPDX-License-Identifier: GPL-3.0-or-later
// All pairs closer than a cut-off, for the per-frame pair sums of g(r) and g6(r) (the costliest
// step of both at 10⁴ disks with r_max = 10 spacings: ≈ 1.6 million pairs a frame). What makes it
// faster than vibra::CellList::for_each_pair, which visits each pair from both sides and takes a
// minimum image per candidate: cells of side ≥ cut-off/2 (5 × 5 stencil: 3.1 r² ρ candidates per
// particle instead of 9 r² ρ), each unordered pair of cells visited once (half stencil, no j > i
// test), coordinates copied in cell order (contiguous inner loop), and a periodic image taken once
// per pair of cells. The pairs and their separations (dx, dy, r²) are bit for bit those of
// CellList (for the pairs within the cut-off the shift ±L equals L·nearbyint(d/L) of
// minimum_image), only their order differs: sums of integers (g(r) counts) are unchanged, sums
// of other terms change by rounding. Buffers are kept between frames (build() reuses them).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "vibra/core/error.hpp"
#include "vibra/core/periodic.hpp"
#include "vibra/core/trajectory.hpp"

namespace vibra::analysis::detail {

class PairGrid {
public:
    /// Bins the finite points (x[i], y[i]) for pairs closer than `cutoff` in geometry `g`
    /// (periodic: positions wrapped into the box as CellList does; the cut-off must not exceed
    /// half the box). Throws ParameterError for a cut-off ≤ 0 or above half a periodic box.
    void build(std::span<const double> x, std::span<const double> y, double cutoff, const Geometry& g) {
        if (!(cutoff > 0) || !std::isfinite(cutoff))
            throw ParameterError("pair grid: cutoff must be > 0, got " + std::to_string(cutoff));
        if (x.size() != y.size()) throw ParameterError("pair grid: x and y differ in length");
        cutoff_ = cutoff;
        periodic_ = g.periodic();
        const std::size_t n = x.size();
        wx_.assign(x.begin(), x.end());
        wy_.assign(y.begin(), y.end());
        if (periodic_) {
            x0_ = g.x0, y0_ = g.y0, lx_ = g.lx(), ly_ = g.ly();
            if (cutoff > 0.5 * std::min(lx_, ly_))
                throw ParameterError("pair grid: cutoff " + std::to_string(cutoff) +
                                     " exceeds half the periodic box (minimum image would be ambiguous)");
            for (std::size_t i = 0; i < n; ++i) {  // the same wrap as CellList: the same coordinates
                wx_[i] -= lx_ * std::floor((wx_[i] - x0_) / lx_);
                wy_[i] -= ly_ * std::floor((wy_[i] - y0_) / ly_);
            }
        } else {
            double xmin = std::numeric_limits<double>::infinity(), xmax = -xmin, ymin = xmin, ymax = -xmin;
            for (std::size_t i = 0; i < n; ++i) {
                if (!std::isfinite(wx_[i]) || !std::isfinite(wy_[i])) continue;
                xmin = std::min(xmin, wx_[i]), xmax = std::max(xmax, wx_[i]);
                ymin = std::min(ymin, wy_[i]), ymax = std::max(ymax, wy_[i]);
            }
            if (xmin > xmax) xmin = xmax = ymin = ymax = 0;
            x0_ = xmin, y0_ = ymin, lx_ = xmax - xmin, ly_ = ymax - ymin;
        }
        choose_cells(n);
        bin_points();
        make_stencil();
    }

    /// Calls f(i, j, dx, dy, r2) once for every unordered pair {i, j} with r2 = dx² + dy² <
    /// cutoff², (dx, dy) = r_j − r_i (minimum image when periodic); i and j are the indices
    /// given to build(), in either order.
    template <class F>
    void for_each_pair(F&& f) const {
        const double c2 = cutoff_ * cutoff_;
        if (reach_ == 0) {  // a box too small for a stencil of distinct cells: every pair
            brute_pairs(c2, f);
            return;
        }
        for (std::int64_t cy = 0; cy < ny_; ++cy)
            for (std::int64_t cx = 0; cx < nx_; ++cx) {
                const auto c = static_cast<std::size_t>(cy * nx_ + cx);
                const std::uint32_t a0 = start_[c], a1 = start_[c + 1];
                if (a0 == a1) continue;
                for (std::uint32_t a = a0; a < a1; ++a) {  // within the cell
                    const double xa = xs_[a], ya = ys_[a];
                    for (std::uint32_t b = a + 1; b < a1; ++b) {
                        const double dx = xs_[b] - xa, dy = ys_[b] - ya;
                        const double r2 = dx * dx + dy * dy;
                        if (r2 < c2) f(idx_[a], idx_[b], dx, dy, r2);
                    }
                }
                for (const auto& o : stencil_) {  // with the cells of the forward half stencil
                    std::int64_t ex = cx + o.ox, ey = cy + o.oy;
                    double sx = 0.0, sy = 0.0;  // the image shift L·nearbyint(d/L) of minimum_image
                    if (periodic_) {
                        if (ex < 0)
                            ex += nx_, sx = lx_ * 1.0;
                        else if (ex >= nx_)
                            ex -= nx_, sx = lx_ * -1.0;
                        if (ey >= ny_) ey -= ny_, sy = ly_ * -1.0;
                    } else if (ex < 0 || ex >= nx_ || ey >= ny_) {
                        continue;
                    }
                    const auto e = static_cast<std::size_t>(ey * nx_ + ex);
                    const std::uint32_t b0 = start_[e], b1 = start_[e + 1];
                    if (b0 == b1) continue;
                    for (std::uint32_t a = a0; a < a1; ++a) {
                        const double xa = xs_[a], ya = ys_[a];
                        for (std::uint32_t b = b0; b < b1; ++b) {
                            const double dx = (xs_[b] - xa) - sx, dy = (ys_[b] - ya) - sy;
                            const double r2 = dx * dx + dy * dy;
                            if (r2 < c2) f(idx_[a], idx_[b], dx, dy, r2);
                        }
                    }
                }
            }
    }

    /// Cells along x and y and the stencil reach (2 cells each way; 0 = every pair), for tests.
    std::int64_t nx() const { return nx_; }
    std::int64_t ny() const { return ny_; }
    int reach() const { return reach_; }

private:
    struct Offset {
        int ox, oy;
    };

    // Cells of side ≥ cutoff/2 (reach 2), at most ≈ 8 per point (sparse points: fewer, wider
    // cells, as CellList). A periodic grid needs ≥ 5 cells a side for distinct stencil cells;
    // with fewer (r_max near half the box, or a point or two) every pair is tried (reach 0).
    void choose_cells(std::size_t n) {
        const double max_cells = 8.0 * static_cast<double>(n) + 16.0, side = 0.5 * cutoff_;
        auto cells = [&](double l) {
            return std::max<std::int64_t>(1,
                                          static_cast<std::int64_t>(std::min(4096.0, std::floor(l / side))));
        };
        std::int64_t nx = cells(lx_), ny = cells(ly_);
        if (static_cast<double>(nx) * static_cast<double>(ny) > max_cells) {
            const double shrink = std::sqrt(static_cast<double>(nx) * static_cast<double>(ny) / max_cells);
            nx = std::max<std::int64_t>(1, static_cast<std::int64_t>(static_cast<double>(nx) / shrink));
            ny = std::max<std::int64_t>(1, static_cast<std::int64_t>(static_cast<double>(ny) / shrink));
        }
        if (periodic_ && (nx < 5 || ny < 5)) {
            nx_ = ny_ = 1, reach_ = 0, cell_w_ = cell_h_ = 1.0;
            return;
        }
        nx_ = nx, ny_ = ny, reach_ = 2;
        cell_w_ = lx_ > 0 ? lx_ / static_cast<double>(nx_) : 1.0;
        cell_h_ = ly_ > 0 ? ly_ / static_cast<double>(ny_) : 1.0;
    }

    std::size_t cell_of(double px, double py) const {
        auto ix = static_cast<std::int64_t>(std::floor((px - x0_) / cell_w_));
        auto iy = static_cast<std::int64_t>(std::floor((py - y0_) / cell_h_));
        ix = std::clamp<std::int64_t>(ix, 0, nx_ - 1);
        iy = std::clamp<std::int64_t>(iy, 0, ny_ - 1);
        return static_cast<std::size_t>(iy * nx_ + ix);
    }

    // Counting sort of the finite points into cells; coordinates copied in cell order.
    void bin_points() {
        const std::size_t n = wx_.size(), nc = static_cast<std::size_t>(nx_ * ny_);
        constexpr auto kNone = std::numeric_limits<std::uint32_t>::max();
        start_.assign(nc + 1, 0);
        cell_.assign(n, kNone);
        for (std::size_t i = 0; i < n; ++i) {
            if (!std::isfinite(wx_[i]) || !std::isfinite(wy_[i])) continue;
            cell_[i] = static_cast<std::uint32_t>(cell_of(wx_[i], wy_[i]));
            ++start_[cell_[i] + 1];
        }
        for (std::size_t c = 0; c < nc; ++c) start_[c + 1] += start_[c];
        const std::size_t m = start_.back();
        xs_.resize(m), ys_.resize(m), idx_.resize(m);
        fill_.assign(start_.begin(), start_.end() - 1);
        for (std::size_t i = 0; i < n; ++i) {
            if (cell_[i] == kNone) continue;
            const std::uint32_t k = fill_[cell_[i]]++;
            xs_[k] = wx_[i], ys_[k] = wy_[i], idx_[k] = static_cast<std::uint32_t>(i);
        }
    }

    // The forward half of the (2·reach+1)² stencil: (1..reach, 0) and (−reach..reach, 1..reach),
    // without cells that cannot hold a point within the cut-off (with a margin for rounding).
    void make_stencil() {
        stencil_.clear();
        const double c2 = cutoff_ * cutoff_ * (1 + 1e-9);
        for (int oy = 0; oy <= reach_; ++oy)
            for (int ox = oy == 0 ? 1 : -reach_; ox <= reach_; ++ox) {
                const double gx = std::max(0, std::abs(ox) - 1) * cell_w_, gy = std::max(0, oy - 1) * cell_h_;
                if (gx * gx + gy * gy > c2) continue;
                stencil_.push_back({ox, oy});
            }
    }

    template <class F>
    void brute_pairs(double c2, F& f) const {
        const std::size_t m = xs_.size();
        for (std::size_t a = 0; a < m; ++a)
            for (std::size_t b = a + 1; b < m; ++b) {
                double dx = xs_[b] - xs_[a], dy = ys_[b] - ys_[a];
                if (periodic_) dx = minimum_image(dx, lx_), dy = minimum_image(dy, ly_);
                const double r2 = dx * dx + dy * dy;
                if (r2 < c2) f(idx_[a], idx_[b], dx, dy, r2);
            }
    }

    double cutoff_ = 1;
    bool periodic_ = false;
    double x0_ = 0, y0_ = 0, lx_ = 0, ly_ = 0, cell_w_ = 1, cell_h_ = 1;
    std::int64_t nx_ = 1, ny_ = 1;
    int reach_ = 0;
    std::vector<double> wx_, wy_;       // wrapped input coordinates
    std::vector<std::uint32_t> cell_;   // cell of each input point (max = not finite)
    std::vector<std::uint32_t> start_;  // CSR over cells
    std::vector<std::uint32_t> fill_;
    std::vector<double> xs_, ys_;     // coordinates in cell order
    std::vector<std::uint32_t> idx_;  // input index in cell order
    std::vector<Offset> stencil_;
};

}  // namespace vibra::analysis::detail
