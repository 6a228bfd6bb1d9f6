// SPDX-License-Identifier: GPL-3.0-or-later
// Small helpers shared by the detection stages (candidates.cpp, detect.cpp). Internal.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "vibra/core/cell_list.hpp"
#include "vibra/tracking/detect.hpp"

namespace vibra::tracking::detail {

inline int vote_factor(const DetectParams& p) {
    return p.downsample > 0 ? p.downsample : std::max(1, static_cast<int>(std::floor(p.r_small() / 3.0)));
}
inline int contrast_block(const DetectParams& p) {
    return p.contrast_block > 0 ? p.contrast_block : std::max(32, static_cast<int>(std::ceil(6 * p.r_large())));
}

inline float quantile(std::vector<float> v, double q) {
    if (v.empty()) return 0;
    const auto k = static_cast<std::ptrdiff_t>(q * static_cast<double>(v.size() - 1));
    std::nth_element(v.begin(), v.begin() + k, v.end());
    return v[static_cast<std::size_t>(k)];
}

// Greedy by descending score: drop any point within `sep` of a kept one.
template <class T, class Score>
std::vector<T> suppress(std::vector<T> pts, double sep, Score score) {
    if (pts.size() < 2) return pts;
    std::sort(pts.begin(), pts.end(), [&](const T& a, const T& b) { return score(a) > score(b); });
    std::vector<double> xs(pts.size()), ys(pts.size());
    for (std::size_t i = 0; i < pts.size(); ++i) xs[i] = pts[i].x, ys[i] = pts[i].y;
    CellList cl(xs, ys, sep, Geometry{});
    std::vector<char> dead(pts.size(), 0);
    std::vector<T> out;
    out.reserve(pts.size());
    for (std::size_t i = 0; i < pts.size(); ++i) {
        if (dead[i]) continue;
        out.push_back(pts[i]);
        cl.for_each_near(xs[i], ys[i], [&](std::size_t j, double, double, double) {
            if (j > i) dead[j] = 1;
        });
    }
    return out;
}

}  // namespace vibra::tracking::detail
