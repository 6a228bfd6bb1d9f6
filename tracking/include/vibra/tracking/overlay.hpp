// SPDX-License-Identifier: GPL-3.0-or-later
// Overlays: tracked disks drawn on the video frames (circles coloured by species, optional ids
// and trails, plus arbitrary extra markers such as defects) — what a person looks at to trust
// the tracking. Drawing is sub-pixel (OpenCV fixed-point shift), in image coordinates: x =
// column, y = row, (0,0) = centre of the top-left pixel, the same convention as detection.
#pragma once

#include <opencv2/core.hpp>

#include <cstdint>
#include <deque>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace vibra::tracking {

/// One tracked disk in one frame.
struct OverlayDisk {
    double x = 0, y = 0;       ///< centre (px)
    double radius = 5;         ///< drawn radius (px)
    std::int8_t species = -1;  ///< 0 small, 1 large, −1 unknown (selects the colour)
    std::int64_t id = -1;      ///< trajectory id (≥ 0), −1 = unlinked (no id label, no trail)
};

enum class MarkerShape { circle, cross, plus, square, triangle };

/// An extra marker (e.g. a topological defect, a lost track), drawn on top of the disks.
struct OverlayMarker {
    double x = 0, y = 0;  ///< position (px)
    double size = 4;      ///< half-size / radius (px)
    MarkerShape shape = MarkerShape::cross;
    cv::Scalar colour{0, 0, 255};  ///< BGR
    std::string label;             ///< drawn beside the marker when not empty
};

/// Colours and options. Colours are BGR. Defaults: small = orange, large = cyan, unknown = magenta.
struct OverlayParams {
    cv::Scalar colour_small{0, 140, 255};
    cv::Scalar colour_large{255, 200, 0};
    cv::Scalar colour_unknown{255, 0, 255};
    int thickness = 1;  ///< line thickness (output px)
    bool ids = false;   ///< draw trajectory ids
    int trails = 0;     ///< draw the last N positions of each trajectory (0 = none)
    int upscale = 1;    ///< output = input × upscale (nearest), for small disks
    double font_scale = 0.35;
    void validate() const;  ///< throws ParameterError naming the field
};

/// Grey frame (8- or 16-bit) → 8-bit BGR for display: 8-bit copied, 16-bit scaled so the
/// frame's 0.1–99.9 percentile range fills 0–255.
cv::Mat to_display(const cv::Mat& grey);

/// Draws one frame. `trails` maps id → its previous positions (oldest first); may be empty.
cv::Mat draw_overlay(const cv::Mat& frame, std::span<const OverlayDisk> disks,
                     const std::map<std::int64_t, std::deque<cv::Point2d>>& trails,
                     std::span<const OverlayMarker> markers, const OverlayParams& p);

/// Stateful renderer for a sequence: keeps the trails of the last `trails` frames.
class OverlayRenderer {
public:
    explicit OverlayRenderer(const OverlayParams& p);
    /// Draws frame `frame_number` (consecutive calls should use increasing numbers; a trail
    /// point older than `trails` frames is dropped).
    cv::Mat render(const cv::Mat& frame, std::int64_t frame_number, std::span<const OverlayDisk> disks,
                   std::span<const OverlayMarker> markers = {});

private:
    OverlayParams p_;
    std::map<std::int64_t, std::deque<cv::Point2d>> trails_;
    std::map<std::int64_t, std::deque<std::int64_t>> trail_frames_;
};

}  // namespace vibra::tracking
