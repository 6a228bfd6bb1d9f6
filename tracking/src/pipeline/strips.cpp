// SPDX-License-Identifier: GPL-3.0-or-later
#include "detail/strips.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace vibra::tracking::detail {

int strip_margin(double r_large) { return static_cast<int>(std::ceil(4 * r_large)) + 2; }

int auto_strip_count(int height, double r_large) {
    return std::max(1, height / (12 * strip_margin(r_large)));
}

std::vector<FrameStrip> plan_strips(int height, int n, double r_large) {
    const int margin = strip_margin(r_large);
    const int min_own = std::max(static_cast<int>(std::ceil(8 * r_large)), 2 * margin);
    n = std::max(1, std::min(n, height / std::max(1, min_own)));
    std::vector<FrameStrip> s(static_cast<std::size_t>(n));
    for (int k = 0; k < n; ++k) {
        auto& t = s[static_cast<std::size_t>(k)];
        t.own_begin = static_cast<int>(static_cast<long long>(height) * k / n);
        t.own_end = static_cast<int>(static_cast<long long>(height) * (k + 1) / n);
        t.fit_begin = k == 0 ? 0 : std::max(0, t.own_begin - margin);
        t.fit_end = k == n - 1 ? height : std::min(height, t.own_end + margin);
    }
    return s;
}

std::vector<Particle> locate_in_strip(DiskLocator& locator, const cv::Mat& frame,
                                      std::span<const FrameStrip> strips, std::size_t k, double seam_zone) {
    const auto& s = strips[k];
    locator.set_owned_rows(s.own_begin - s.fit_begin, s.own_end - s.fit_begin);
    auto parts = locator.next(frame.rowRange(s.fit_begin, s.fit_end));
    constexpr double inf = std::numeric_limits<double>::infinity();
    const double lo = k == 0 ? -inf : s.own_begin - 0.5 - seam_zone;
    const double hi = k + 1 == strips.size() ? inf : s.own_end - 0.5 + seam_zone;
    std::size_t m = 0;
    for (auto& q : parts) {
        q.y += s.fit_begin;
        if (q.y >= lo && q.y < hi) parts[m++] = q;
    }
    parts.resize(m);
    return parts;
}

std::vector<Particle> merge_strips(std::span<const std::vector<Particle>> per_strip,
                                   std::span<const FrameStrip> strips, double seam_zone, double same_disk) {
    const std::size_t n = std::min(per_strip.size(), strips.size());
    std::vector<Particle> out;
    // Per seam s (between strips s and s+1, at y = own_end − 0.5 of strip s): the disks of strip s
    // that may be the same as one strip s+1 reports (y ≥ seam − zone − same_disk: a disk just
    // outside the zone on one side may lie just inside it on the other), and those of strip s+1
    // that may be the same as one of strip s.
    std::vector<std::vector<Particle>> above(n), below(n);
    auto seam = [&](std::size_t s) { return strips[s].own_end - 0.5; };
    const double reach = seam_zone + same_disk;
    for (std::size_t k = 0; k < n; ++k)
        for (const auto& q : per_strip[k]) {
            if (k > 0 && q.y < seam(k - 1) + reach)
                below[k - 1].push_back(q);
            else if (k + 1 < n && q.y >= seam(k) - reach)
                above[k].push_back(q);
            else
                out.push_back(q);
        }
    const std::size_t n_own = out.size();
    const double d2max = same_disk * same_disk;
    for (std::size_t s = 0; s + 1 < n; ++s) {
        std::vector<char> used(below[s].size(), 0);
        for (const auto& a : above[s]) {
            std::size_t best = below[s].size();
            double best_d2 = d2max;
            for (std::size_t j = 0; j < below[s].size(); ++j) {
                const double dx = a.x - below[s][j].x, dy = a.y - below[s][j].y, d2 = dx * dx + dy * dy;
                if (!used[j] && d2 < best_d2) best = j, best_d2 = d2;
            }
            if (best == below[s].size()) {
                out.push_back(a);  // strip s+1 did not report it (outside its rows, or missed)
                continue;
            }
            used[best] = 1;
            const auto& b = below[s][best];
            out.push_back(0.5 * (a.y + b.y) < seam(s) ? a : b);  // from the strip that owns it
        }
        for (std::size_t j = 0; j < below[s].size(); ++j)
            if (!used[j]) out.push_back(below[s][j]);  // strip s did not report it
    }
    // The strips' own disks came in (y, x) order, strip after strip; only the seams' disks,
    // appended after them, need sorting before the two runs are merged.
    auto by_position = [](const Particle& a, const Particle& b) {
        return a.y != b.y ? a.y < b.y : a.x < b.x;
    };
    const auto tail = out.begin() + static_cast<std::ptrdiff_t>(n_own);
    if (!std::is_sorted(out.begin(), tail, by_position))
        std::sort(out.begin(), tail, by_position);  // a caller's unsorted lists
    std::sort(tail, out.end(), by_position);
    std::inplace_merge(out.begin(), tail, out.end(), by_position);
    return out;
}

}  // namespace vibra::tracking::detail
