// SPDX-License-Identifier: GPL-3.0-or-later
// What stays still in a video of moving disks: the plate's texture and the illumination (the
// background seen between the disks) and stuck sensor pixels (hot/dead). Measured per pixel
// from a fixed set of frames spread over the tracked range (never from the frames a worker
// happens to see, so the result does not depend on --threads or the strips), then taken out of
// every frame before detection (docs/tracking.md, "Static background"):
//
//   I'(p) = ( I(p) − T(p)·(1 − ĉ(p)) ) · G₀ / G(p)      ĉ = clamp((I − G − T) / Δ, 0, 1)
//
// G: the smooth background level (per block of 4 r_large px, interpolated), T: the fine static
// structure of the background (plate texture, dust: each pixel's mean over the frames where no
// disk is near it, minus G), Δ = κ·G the local disk − background contrast (κ measured), ĉ the
// disk's coverage of the pixel (a disk hides the texture under it), G₀ the median of G (flat
// field: the disks' contrast the same over the frame). Stuck pixels are replaced by the mean of
// their good neighbours.
//
// Switched on from measured statistics: the background correction when the texture measured
// from two disjoint halves of the frames agrees (split-half correlation ≥ 0.5) and is above
// 1% of the contrast; the pixel masking when stuck pixels are found (constant over every
// frame while the rest of the video is noisy, and far from their neighbours).
#pragma once

#include <opencv2/core.hpp>

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace vibra::tracking::detail {

/// The order statistics of samples u = sign·v of 8-bit grey values v, from their histogram: the
/// k-th smallest u exactly as a partial sort of the samples gives it, in O(256) per query
/// instead of a partial sort of a block's thousands of samples (the level's block quantiles).
class OrderStatistics8 {
public:
    explicit OrderStatistics8(float sign) : s_(sign) {}
    void clear() { counts_.fill(0), n_ = 0; }
    /// Adds row[i0], row[i0 + 2], … (below i1).
    void add_every_other(const std::uint8_t* row, int i0, int i1) {
        for (int i = i0; i < i1; i += 2) ++counts_[row[i]];
        n_ += static_cast<std::size_t>((i1 - i0 + 1) / 2);
    }
    std::size_t size() const { return n_; }
    /// The k-th smallest u (0-based, k < size()).
    float kth(std::size_t k) const {
        const std::size_t rank = s_ > 0 ? k : n_ - 1 - k;  // in the order of v
        std::size_t below = 0;
        for (int v = 0; v < 256; ++v) {
            below += counts_[static_cast<std::size_t>(v)];
            if (below > rank) return s_ * float(v);
        }
        return s_ * 255.f;
    }

private:
    float s_;
    std::array<std::uint32_t, 256> counts_{};
    std::size_t n_ = 0;
};

struct StaticBackgroundParams {
    bool invert = false;  ///< dark disks on a bright background
    double r_large = 8;   ///< px: sets the block size of the smooth level (4 × r_large, ≥ 16)
    double min_correlation = 0.5;
    double min_texture = 0.01;  ///< texture RMS / contrast below which the correction is off
    double stuck_sigma = 5;     ///< a stuck pixel differs from its neighbours by > this × noise
};

class StaticBackground {
public:
    bool correct_background = false;  ///< T and the flat field are applied
    std::vector<std::int64_t> stuck;  ///< pixel indices (row-major) replaced by their neighbours
    // Measured (reported in /meta):
    int frames_used = 0;
    double noise = 0;        ///< temporal noise σ of a background pixel (grey levels)
    double contrast = 0;     ///< median |Δ| (grey levels)
    double texture_rms = 0;  ///< RMS of the static structure both halves agree on (grey levels)
    double correlation = 0;  ///< split-half correlation of the fine structure
    bool active() const { return correct_background || !stuck.empty(); }
    /// The correction of one frame (same size and type as the frames measured), in place.
    void apply(cv::Mat& image) const;
    /// One line for stderr / the metadata.
    std::string describe() const;

    cv::Mat level;                         ///< G, CV_32F
    cv::Mat texture;                       ///< T, CV_32F (0 where unknown)
    float kappa = 0;                       ///< Δ = κ·G
    float level0 = 0;                      ///< G₀
    std::vector<std::uint8_t> stuck_mask;  ///< W·H, 1 = stuck (empty when `stuck` is)
};

/// Shows each of a fixed set of frames in turn to its argument: the same frames, in the same
/// order, on every call (a frame need not outlive the call that shows it).
using FrameVisitor = std::function<void(const std::function<void(const cv::Mat&)>&)>;

/// Measures from the `few` frames (CV_8UC1 or CV_16UC1, same size; 8–16 of them spread over the
/// video: the quick look and the stuck pixels; shown once, and a second time only when some pixel
/// is constant over them, so they are never all held at once) and, only when the quick look sees a
/// texture, from the frames `load_all` returns (up to 48, spread). Deterministic: a function of
/// the frames and the parameters only.
StaticBackground measure_static_background(const FrameVisitor& few,
                                           const std::function<std::vector<cv::Mat>()>& load_all,
                                           const StaticBackgroundParams& p);
/// The same from one set of frames (`few` = up to 16 of them, evenly spaced).
StaticBackground measure_static_background(std::span<const cv::Mat> frames, const StaticBackgroundParams& p);

/// The frame indices (in the range [first, last)) the measurement reads: up to `max_frames`
/// spread evenly, the same for every run of the range.
std::vector<std::int64_t> static_background_frames(std::int64_t first, std::int64_t last, int max_frames);

}  // namespace vibra::tracking::detail
