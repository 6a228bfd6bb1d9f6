// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/core/cell_list.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "vibra/core/error.hpp"

namespace vibra {

CellList::CellList(std::span<const double> x, std::span<const double> y, double cutoff, const Geometry& g)
    : x_(x.begin(), x.end()), y_(y.begin(), y.end()), cutoff_(cutoff) {
    if (!(cutoff > 0) || !std::isfinite(cutoff))
        throw ParameterError("CellList: cutoff must be > 0, got " + std::to_string(cutoff));
    if (x.size() != y.size()) throw ParameterError("CellList: x and y differ in length");
    periodic_ = g.periodic();
    if (periodic_) {
        x0_ = g.x0, y0_ = g.y0, lx_ = g.lx(), ly_ = g.ly();
        if (cutoff > 0.5 * std::min(lx_, ly_))
            throw ParameterError("CellList: cutoff " + std::to_string(cutoff) +
                                 " exceeds half the periodic box (minimum image would be ambiguous)");
        for (std::size_t i = 0; i < x_.size(); ++i) {  // wrap into the box
            x_[i] -= lx_ * std::floor((x_[i] - x0_) / lx_);
            y_[i] -= ly_ * std::floor((y_[i] - y0_) / ly_);
        }
    } else {
        double xmin = std::numeric_limits<double>::infinity(), xmax = -xmin, ymin = xmin, ymax = -xmin;
        for (std::size_t i = 0; i < x_.size(); ++i) {
            if (!std::isfinite(x_[i]) || !std::isfinite(y_[i])) continue;
            xmin = std::min(xmin, x_[i]), xmax = std::max(xmax, x_[i]);
            ymin = std::min(ymin, y_[i]), ymax = std::max(ymax, y_[i]);
        }
        if (xmin > xmax) xmin = xmax = ymin = ymax = 0;  // no finite point
        x0_ = xmin, y0_ = ymin, lx_ = xmax - xmin, ly_ = ymax - ymin;
    }
    // Cells at least `cutoff` wide; cap the count so sparse data cannot blow up memory.
    const double max_cells_per_dim = 4096;
    nx_ = std::max<std::int64_t>(
        1, static_cast<std::int64_t>(std::min(max_cells_per_dim, std::floor(lx_ / cutoff))));
    ny_ = std::max<std::int64_t>(
        1, static_cast<std::int64_t>(std::min(max_cells_per_dim, std::floor(ly_ / cutoff))));
    // Sparse points with a short cut-off (the linker's max_step on a whole frame: ≈ 10⁵ cells of
    // 3 px for 4000 disks) would spend the construction on clearing and summing empty cells:
    // at most ≈ 8 cells per point, fewer and wider (still ≥ cutoff, so the ±1 stencil covers it).
    const double max_cells = 8.0 * static_cast<double>(x_.size()) + 16.0;
    if (static_cast<double>(nx_) * static_cast<double>(ny_) > max_cells) {
        const double shrink = std::sqrt(static_cast<double>(nx_) * static_cast<double>(ny_) / max_cells);
        nx_ = std::max<std::int64_t>(1, static_cast<std::int64_t>(static_cast<double>(nx_) / shrink));
        ny_ = std::max<std::int64_t>(1, static_cast<std::int64_t>(static_cast<double>(ny_) / shrink));
    }
    cell_w_ = lx_ > 0 ? lx_ / static_cast<double>(nx_) : 1.0;
    cell_h_ = ly_ > 0 ? ly_ / static_cast<double>(ny_) : 1.0;

    // Counting sort of points into cells.
    start_.assign(n_cells() + 1, 0);
    std::vector<std::size_t> cell(x_.size(), std::numeric_limits<std::size_t>::max());
    for (std::size_t i = 0; i < x_.size(); ++i) {
        if (!std::isfinite(x_[i]) || !std::isfinite(y_[i])) continue;
        cell[i] = cell_of(x_[i], y_[i]);
        ++start_[cell[i] + 1];
    }
    for (std::size_t c = 0; c < n_cells(); ++c) start_[c + 1] += start_[c];
    items_.resize(static_cast<std::size_t>(start_.back()));
    std::vector<std::int64_t> fill(start_.begin(), start_.end() - 1);
    for (std::size_t i = 0; i < x_.size(); ++i)
        if (cell[i] != std::numeric_limits<std::size_t>::max())
            items_[static_cast<std::size_t>(fill[cell[i]]++)] = i;
}

std::size_t CellList::cell_of(double px, double py) const {
    if (periodic_) {  // queries may come from outside the box
        px -= lx_ * std::floor((px - x0_) / lx_);
        py -= ly_ * std::floor((py - y0_) / ly_);
    }
    auto ix = static_cast<std::int64_t>(std::floor((px - x0_) / cell_w_));
    auto iy = static_cast<std::int64_t>(std::floor((py - y0_) / cell_h_));
    // Clamp: points on the upper edge and queries outside the bounding box map to border cells;
    // a neighbour within the cut-off is then still within the ±1 stencil.
    ix = std::clamp<std::int64_t>(ix, 0, nx_ - 1);
    iy = std::clamp<std::int64_t>(iy, 0, ny_ - 1);
    return static_cast<std::size_t>(iy * nx_ + ix);
}

}  // namespace vibra
