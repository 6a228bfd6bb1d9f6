// SPDX-License-Identifier: GPL-3.0-or-later
// Candidate centres: gradient-direction voting on a downsampled grid and non-maximum suppression
// (detect.hpp, steps 2–3).
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "detail/detect_util.hpp"
#include "vibra/tracking/detect.hpp"

namespace vibra::tracking {

using detail::quantile;
using detail::suppress;
using detail::vote_factor;

std::vector<Candidate> find_candidates(const Gradients& g, const DetectParams& p) {
    p.validate();
    const int f = vote_factor(p);
    const int w = g.gx.cols, h = g.gx.rows;
    const int aw = (w + f - 1) / f, ah = (h + f - 1) / f;
    cv::Mat acc(ah, aw, CV_32F, cv::Scalar(0));
    const double r_lo = p.r_small() * (1 - p.radius_tolerance), r_hi = p.r_large() * (1 + p.radius_tolerance);
    const double step = 0.7 * f;
    std::vector<double> rs;
    for (double r = r_lo; r <= r_hi + 1e-9; r += step) rs.push_back(r);
    if (rs.back() < r_hi - 0.3 * step) rs.push_back(r_hi);
    const double t2 = p.edge_threshold * p.edge_threshold;
    const double inv_f = 1.0 / f;
    // Voting pixels are sampled every `st` px (≤ 2), not every `f`: for large radii (f ≫ 2) a
    // sparse sample would leave only a handful of edge pixels per disk and miss disks at random.
    // Each vote is weighted by st²/f² so scores keep the same scale whatever the stride.
    const int st = std::min(f, 2);
    const float vote_w = static_cast<float>(st * st) / static_cast<float>(f * f);
    for (int y = st / 2; y < h; y += st) {
        const float* gxr = g.gx.ptr<float>(y);
        const float* gyr = g.gy.ptr<float>(y);
        for (int x = st / 2; x < w; x += st) {
            const float gx = gxr[x], gy = gyr[x];
            const float g2 = gx * gx + gy * gy;
            const float c = g.contrast_at(x, y);
            if (g2 < t2 * c * c) continue;
            const float gm = std::sqrt(g2);
            const float wgt = vote_w * std::min(1.0f, gm / c);
            const double ux = gx / gm, uy = gy / gm;
            for (double r : rs) {
                const int ax = static_cast<int>(std::floor((x + r * ux + 0.5) * inv_f));
                const int ay = static_cast<int>(std::floor((y + r * uy + 0.5) * inv_f));
                if (ax < 0 || ay < 0 || ax >= aw || ay >= ah) continue;
                acc.at<float>(ay, ax) += wgt;
            }
        }
    }
    cv::GaussianBlur(acc, acc, cv::Size(5, 5), 1.0, 1.0, cv::BORDER_CONSTANT);
    const double norm = 2 * M_PI * p.r_small() / (static_cast<double>(f) * f);
    const int m = std::max(1, static_cast<int>(std::lround(p.min_separation * p.r_small() / f)));
    cv::Mat dil;
    cv::dilate(acc, dil, cv::getStructuringElement(cv::MORPH_RECT, cv::Size(2 * m + 1, 2 * m + 1)));
    std::vector<Candidate> c;
    const float floor_acc = static_cast<float>(0.05 * norm);
    for (int y = 0; y < ah; ++y) {
        const float* a = acc.ptr<float>(y);
        const float* d = dil.ptr<float>(y);
        for (int x = 0; x < aw; ++x)
            if (a[x] >= d[x] && a[x] > floor_acc)
                c.push_back({(x + 0.5) * f - 0.5, (y + 0.5) * f - 0.5, static_cast<float>(a[x] / norm)});
    }
    std::vector<float> sc;
    sc.reserve(c.size());
    for (const auto& k : c) sc.push_back(k.score);
    const float typical = quantile(sc, 0.75);
    std::erase_if(c, [&](const Candidate& k) { return k.score < p.min_score * typical; });
    return suppress(std::move(c), p.min_separation * p.r_small(), [](const Candidate& k) { return k.score; });
}

}  // namespace vibra::tracking
