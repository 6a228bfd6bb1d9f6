// SPDX-License-Identifier: GPL-3.0-or-later
// Writing frames: a video file (uncompressed 8-bit AVI, lossless FFV1, Motion-JPEG) or a folder of
// PNG/TIFF images, one frame at a time, atomically (nothing appears at the path unless close()
// succeeds). Used by `vibra synth`, `vibra render` and the benchmarks; the readers are video.hpp.
#pragma once

#include <opencv2/core.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace vibra::tracking {

/// Video output formats (of `vibra synth`, `vibra render` and the benchmarks).
enum class VideoFormat {
    avi_raw,    ///< uncompressed AVI, 8-bit grey (what high-speed cameras deliver); 8-bit only
    avi_ffv1,   ///< lossless FFV1 in AVI (needs FFmpeg with FFV1); 8-bit grey or BGR
    png,        ///< folder of frame_000000.png …, 8- or 16-bit
    tiff,       ///< folder of frame_000000.tif …, 8- or 16-bit
    avi_mjpeg,  ///< Motion-JPEG AVI (lossy, small, plays everywhere): for overlays, 8-bit grey or BGR
};
const char* to_string(VideoFormat f);
/// "avi" / "raw" → avi_raw, "ffv1", "png", "tiff" / "tif", "mjpeg"; throws ParameterError.
VideoFormat video_format_from_string(const std::string& s);

/// Writes frames one at a time to a video file or an image-sequence folder (created if
/// missing). All frames must have the size and type of the first. Errors → IoError naming the
/// path (e.g. FFV1 not supported by the installed OpenCV/FFmpeg).
class FrameSink {
public:
    FrameSink(const std::string& path, VideoFormat format, double fps = 25.0);
    ~FrameSink();
    FrameSink(const FrameSink&) = delete;
    FrameSink& operator=(const FrameSink&) = delete;
    /// CV_8UC1, CV_16UC1 (png/tiff only) or CV_8UC3 (BGR; avi_ffv1, avi_mjpeg, png, tiff).
    void write(const cv::Mat& image);
    /// The same; an image-sequence file is named after `number` (frame_%06d of it) instead of
    /// the count written so far (`vibra render` keeps the trajectory's frame numbers).
    void write(const cv::Mat& image, std::int64_t number);
    /// Flushes and closes; called by the destructor too (which swallows errors).
    void close();
    std::int64_t frames_written() const;
    /// Path of frame k of an image-sequence output (folder/frame_%06d.ext).
    static std::string sequence_file(const std::string& folder, VideoFormat f, std::int64_t k);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace vibra::tracking
