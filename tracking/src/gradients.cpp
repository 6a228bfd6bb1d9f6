// SPDX-License-Identifier: GPL-3.0-or-later
// Gradients and the local-contrast grid of a frame (the first stage of detection; declared in
// refine.hpp because refinement reads them too).
#include "vibra/tracking/refine.hpp"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "vibra/core/error.hpp"

namespace vibra::tracking {

namespace {

template <class T>
void block_contrast(const cv::Mat& img, int block, cv::Mat& out) {
    const int nbx = (img.cols + block - 1) / block, nby = (img.rows + block - 1) / block;
    out.create(nby, nbx, CV_32F);
    std::vector<float> v;
    v.reserve(static_cast<std::size_t>(block * block / 4 + 4));
    for (int by = 0; by < nby; ++by)
        for (int bx = 0; bx < nbx; ++bx) {
            v.clear();
            const int y1 = std::min(img.rows, (by + 1) * block), x1 = std::min(img.cols, (bx + 1) * block);
            for (int y = by * block; y < y1; y += 2) {
                const T* row = img.ptr<T>(y);
                for (int x = bx * block; x < x1; x += 2) v.push_back(static_cast<float>(row[x]));
            }
            const auto n = v.size();
            const auto lo = static_cast<std::ptrdiff_t>(n * 3 / 100), hi = static_cast<std::ptrdiff_t>((n * 97) / 100);
            std::nth_element(v.begin(), v.begin() + hi, v.end());
            const float vh = v[static_cast<std::size_t>(hi)];
            std::nth_element(v.begin(), v.begin() + lo, v.begin() + hi);
            out.at<float>(by, bx) = vh - v[static_cast<std::size_t>(lo)];
        }
}

}  // namespace

Gradients compute_gradients(const cv::Mat& image, bool invert, int block) {
    if (image.empty() || image.channels() != 1 || (image.depth() != CV_8U && image.depth() != CV_16U))
        throw ParameterError("compute_gradients: need a non-empty grey 8- or 16-bit image");
    if (block < 4) throw ParameterError("compute_gradients: contrast block must be >= 4 px, got " + std::to_string(block));
    Gradients g;
    g.block = block;
    g.image = image;
    const double s = (invert ? -1.0 : 1.0) / 32.0;
    cv::Scharr(image, g.gx, CV_32F, 1, 0, s, 0, cv::BORDER_REPLICATE);
    cv::Scharr(image, g.gy, CV_32F, 0, 1, s, 0, cv::BORDER_REPLICATE);
    if (image.depth() == CV_8U)
        block_contrast<std::uint8_t>(image, block, g.contrast);
    else
        block_contrast<std::uint16_t>(image, block, g.contrast);
    // Blocks without particles measure only noise: floor at a quarter of the median block.
    std::vector<float> all(g.contrast.begin<float>(), g.contrast.end<float>());
    std::nth_element(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(all.size() / 2), all.end());
    const float floor_c = std::max(0.25f * all[all.size() / 2], 1.0f);
    for (auto it = g.contrast.begin<float>(); it != g.contrast.end<float>(); ++it) *it = std::max(*it, floor_c);
    return g;
}

}  // namespace vibra::tracking
