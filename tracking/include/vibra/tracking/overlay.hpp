// SPDX-License-Identifier: GPL-3.0-or-later
// Overlays: tracked disks drawn on the video frames (circles coloured by species, optional ids
// and trails, plus arbitrary extra markers such as defects) — what a person looks at to trust
// the tracking. Drawing is sub-pixel (OpenCV fixed-point shift), in image coordinates: x =
// column, y = row, (0,0) = centre of the top-left pixel, the same convention as detection.
#pragma once

#include <opencv2/core.hpp>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "vibra/core/trajectory_source.hpp"
#include "vibra/tracking/synth.hpp"
#include "vibra/tracking/video_writer.hpp"

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
    /// Stretch the contrast: each frame's 0.1–99.9 percentile range fills 0–255; false = 8-bit
    /// frames as they are, 16-bit ones scaled from 0–65535.
    bool stretch = true;
    /// Draw a colour legend in the top-left corner: one line per name of `species_names`
    /// (species 0, 1, …) in its colour, and "unknown" when a disk of unknown species is drawn.
    bool legend = false;
    std::vector<std::string> species_names{"small", "large"};
    void validate() const;  ///< throws ParameterError naming the field
};

/// Grey frame (8- or 16-bit) → 8-bit BGR for display. stretch: the frame's 0.1–99.9 percentile
/// range fills 0–255; else 8-bit copied, 16-bit scaled from 0–65535.
cv::Mat to_display(const cv::Mat& grey, bool stretch = true);

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

/// What render_overlays draws, from which frames, into what.
struct OverlayRunParams {
    OverlayParams overlay;              ///< legend: on by default here
    std::int64_t first = 0, last = -1;  ///< trajectory frames [first, last); −1 = to the end
    /// Video frame = trajectory frame + offset; −1 = the first video frame the trajectory file
    /// records (`vibra track --frames A:B` records A), else 0.
    std::int64_t offset = -1;
    double radius = 5;  ///< circle radius (px) of a row with neither a radius nor a species diameter
    int channel = -1;   ///< colour → grey of the video (ReaderParams::channel)
    double fps = 25;    ///< frame rate of an output video
    bool progress = false;
    std::function<void(std::int64_t)> on_frame;  ///< after each frame written, with the count so far
    OverlayRunParams() { overlay.legend = true; }
    void validate() const;  ///< throws ParameterError naming the field
};

struct OverlaySummary {
    std::int64_t written = 0;  ///< frames drawn
    std::int64_t skipped = 0;  ///< undecodable video frames skipped
    std::int64_t offset = 0;   ///< the offset used
};

/// `vibra render` as a library call: the rows of trajectory frames [first, last) of `traj` drawn
/// over the matching frames of `video` (path, as open_video takes it) into `output` (a video file
/// or an image-sequence folder, written atomically by FrameSink), each image file named after
/// its trajectory frame number (frame_000012.png for frame 12), with `markers` by trajectory
/// frame. Before anything is written, the video must match what `traj` records of the video it
/// was tracked from — the image size and, when recorded, the frame count (else at least the
/// frames drawn): FormatError naming both files otherwise. `traj_name` names `traj` in messages.
OverlaySummary render_overlays(const TrajectorySource& traj, const std::string& traj_name,
                               const std::string& video, const std::string& output, VideoFormat format,
                               const OverlayRunParams& p,
                               const std::map<std::int64_t, std::vector<OverlayMarker>>& markers = {});

}  // namespace vibra::tracking
