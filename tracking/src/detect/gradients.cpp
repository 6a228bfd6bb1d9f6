// SPDX-License-Identifier: GPL-3.0-or-later
// Gradients and the local-contrast grid of a frame (the first stage of detection; declared in
// refine.hpp because refinement reads them too).
//
// Speed (≈ 1 ms per 1024² 8-bit frame on one core; bench/bench_tracking prints it): gx and gy
// come from large_mat() (huge pages: few page faults on fresh buffers); 8-bit frames are
// differentiated by the integer Scharr filter in strips of rows (CV_16S, cache-resident, exact:
// |Scharr| ≤ 16·255) and converted to float with the scale (a power of two, so exact too) — the
// same values as a float Scharr; the per-block percentiles of 8-/16-bit samples are picked from
// histograms (one 256-bin histogram for 8 bits, two passes of 256 bins for 16 bits) instead of
// partial sorts: the same order statistics.
#include "vibra/tracking/refine.hpp"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "detail/detect_util.hpp"
#include "vibra/core/error.hpp"

namespace vibra::tracking {

namespace {

using Hist = std::array<std::uint32_t, 256>;

// The value of rank k (0-based, ascending) of the counted values.
int rank_in(const Hist& h, std::size_t k) {
    std::size_t cum = 0;
    for (int b = 0; b < 256; ++b) {
        cum += h[static_cast<std::size_t>(b)];
        if (cum > k) return b;
    }
    return 255;
}

// Ranks of the block's samples as in the reference definition: n = samples, lo = ⌊3n/100⌋,
// hi = ⌊97n/100⌋ (0-based), contrast = v[hi] − v[lo] of the sorted samples.
void rank_bounds(std::size_t n, std::size_t& lo, std::size_t& hi) {
    lo = n * 3 / 100;
    hi = n * 97 / 100;
}

// 8-bit: one histogram per block of the current block row, filled row by row.
void block_contrast8(const cv::Mat& img, int block, cv::Mat& out) {
    const int nbx = (img.cols + block - 1) / block, nby = (img.rows + block - 1) / block;
    out.create(nby, nbx, CV_32F);
    std::vector<Hist> hist(static_cast<std::size_t>(nbx));
    std::vector<std::size_t> count(static_cast<std::size_t>(nbx));
    for (int by = 0; by < nby; ++by) {
        for (auto& h : hist) h.fill(0);
        std::fill(count.begin(), count.end(), 0);
        const int y1 = std::min(img.rows, (by + 1) * block);
        for (int y = by * block; y < y1; y += 2) {
            const std::uint8_t* row = img.ptr<std::uint8_t>(y);
            for (int bx = 0; bx < nbx; ++bx) {
                Hist& h = hist[static_cast<std::size_t>(bx)];
                const int x1 = std::min(img.cols, (bx + 1) * block);
                int x = bx * block;
                for (; x < x1; x += 2) ++h[row[x]];
                count[static_cast<std::size_t>(bx)] += static_cast<std::size_t>((x1 - bx * block + 1) / 2);
            }
        }
        float* o = out.ptr<float>(by);
        for (int bx = 0; bx < nbx; ++bx) {
            std::size_t lo = 0, hi = 0;
            rank_bounds(count[static_cast<std::size_t>(bx)], lo, hi);
            const Hist& h = hist[static_cast<std::size_t>(bx)];
            o[bx] = static_cast<float>(rank_in(h, hi)) - static_cast<float>(rank_in(h, lo));
        }
    }
}

// The value of rank k of 16-bit samples: high byte by histogram, then the low byte among the
// samples sharing that high byte.
int rank16(const std::vector<std::uint16_t>& v, const Hist& high, std::size_t k) {
    std::size_t below = 0;
    int hb = 0;
    for (; hb < 255; ++hb) {
        const std::size_t c = high[static_cast<std::size_t>(hb)];
        if (below + c > k) break;
        below += c;
    }
    Hist low{};
    for (const std::uint16_t s : v)
        if ((s >> 8) == hb) ++low[s & 0xFFu];
    return hb * 256 + rank_in(low, k - below);
}

void block_contrast16(const cv::Mat& img, int block, cv::Mat& out) {
    const int nbx = (img.cols + block - 1) / block, nby = (img.rows + block - 1) / block;
    out.create(nby, nbx, CV_32F);
    std::vector<std::uint16_t> v;
    v.reserve(static_cast<std::size_t>(block * block / 4 + 4));
    for (int by = 0; by < nby; ++by)
        for (int bx = 0; bx < nbx; ++bx) {
            v.clear();
            Hist high{};
            const int y1 = std::min(img.rows, (by + 1) * block), x1 = std::min(img.cols, (bx + 1) * block);
            for (int y = by * block; y < y1; y += 2) {
                const std::uint16_t* row = img.ptr<std::uint16_t>(y);
                for (int x = bx * block; x < x1; x += 2) {
                    v.push_back(row[x]);
                    ++high[row[x] >> 8];
                }
            }
            std::size_t lo = 0, hi = 0;
            rank_bounds(v.size(), lo, hi);
            out.at<float>(by, bx) =
                static_cast<float>(rank16(v, high, hi)) - static_cast<float>(rank16(v, high, lo));
        }
}

// Scharr / 32 (negated for `invert`) into preallocated CV_32F gx, gy.
void scharr(const cv::Mat& image, bool invert, cv::Mat& gx, cv::Mat& gy) {
    const double s = (invert ? -1.0 : 1.0) / 32.0;
    if (image.depth() != CV_8U) {  // 16-bit: |Scharr| up to 16·65535 does not fit CV_16S
        cv::Scharr(image, gx, CV_32F, 1, 0, s, 0, cv::BORDER_REPLICATE);
        cv::Scharr(image, gy, CV_32F, 0, 1, s, 0, cv::BORDER_REPLICATE);
        return;
    }
    // Strips of rows: a row range is a view, so the filter reads the real neighbours above and
    // below the strip (the border rule applies only at the image's own edges).
    constexpr int kStrip = 32;
    cv::Mat t;
    for (int y0 = 0; y0 < image.rows; y0 += kStrip) {
        const int y1 = std::min(image.rows, y0 + kStrip);
        const cv::Mat src = image.rowRange(y0, y1);
        cv::Mat dx = gx.rowRange(y0, y1), dy = gy.rowRange(y0, y1);
        cv::Scharr(src, t, CV_16S, 1, 0, 1, 0, cv::BORDER_REPLICATE);
        t.convertTo(dx, CV_32F, s);
        cv::Scharr(src, t, CV_16S, 0, 1, 1, 0, cv::BORDER_REPLICATE);
        t.convertTo(dy, CV_32F, s);
    }
}

}  // namespace

Gradients compute_gradients(const cv::Mat& image, bool invert, int block) {
    if (image.empty() || image.channels() != 1 || (image.depth() != CV_8U && image.depth() != CV_16U))
        throw ParameterError("compute_gradients: need a non-empty grey 8- or 16-bit image");
    if (block < 4)
        throw ParameterError("compute_gradients: contrast block must be >= 4 px, got " +
                             std::to_string(block));
    Gradients g;
    g.block = block;
    g.image = image;
    g.gx = detail::large_mat(image.rows, image.cols, CV_32F);
    g.gy = detail::large_mat(image.rows, image.cols, CV_32F);
    scharr(image, invert, g.gx, g.gy);
    if (image.depth() == CV_8U)
        block_contrast8(image, block, g.contrast);
    else
        block_contrast16(image, block, g.contrast);
    // Blocks without particles measure only noise: floor at a quarter of the median block.
    std::vector<float> all(g.contrast.begin<float>(), g.contrast.end<float>());
    std::nth_element(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(all.size() / 2), all.end());
    const float floor_c = std::max(0.25f * all[all.size() / 2], 1.0f);
    for (auto it = g.contrast.begin<float>(); it != g.contrast.end<float>(); ++it)
        *it = std::max(*it, floor_c);
    return g;
}

}  // namespace vibra::tracking
