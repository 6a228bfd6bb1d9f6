// SPDX-License-Identifier: GPL-3.0-or-later
// Frame sources: one interface for every kind of input (OpenCV video containers, image
// sequences, and native high-speed camera files such as Phantom .cine and Photron .mraw).
// Frames stream one at a time, never the whole video in memory; grey 8- or 16-bit images.
#pragma once

#include <opencv2/core.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace vibra::tracking {

/// One decoded frame: grey image, CV_8UC1 or CV_16UC1, top row first.
struct Frame {
    std::int64_t index = 0;         ///< 0-based position in the input (after --frames A:B: A, A+1, …)
    double time_s = -1;             ///< camera time stamp in s, < 0 when the input has none
    std::int64_t image_number = 0;  ///< the camera's own image number (= index when none)
    cv::Mat image;
};

/// What an input says about itself.
struct VideoInfo {
    std::string path;
    std::string format;  ///< "opencv", "image-sequence", "cine", "mraw", …
    std::int64_t width = 0, height = 0;
    std::int64_t n_frames = -1;                ///< −1 when unknown
    double fps = 0;                            ///< 0 when unknown
    int bit_depth = 8;                         ///< significant bits per pixel
    std::map<std::string, std::string> extra;  ///< format-specific fields (exposure, trigger time, …)
};

enum class ReadStatus {
    ok,         ///< `frame` holds the next frame
    end,        ///< no more frames
    corrupt,    ///< the next frame could not be decoded; it was skipped (frame.index says which)
    truncated,  ///< the input ends before the frames its header promises
};

/// Parameters shared by all readers.
struct ReaderParams {
    int channel = -1;  ///< colour → grey: −1 = luma (0.299 R + 0.587 G + 0.114 B), else channel 0/1/2 (R/G/B)
    std::int64_t first = 0;  ///< first frame (inclusive)
    std::int64_t last = -1;  ///< last frame (exclusive), −1 = to the end
};

/// How many frames the range of `p` takes from an input of `n_frames` frames (−1: unknown; the
/// range's own length when it has an end, else −1). What `vibra track`'s progress counts to.
std::int64_t frames_in_range(std::int64_t n_frames, const ReaderParams& p);

class FrameSource {
public:
    virtual ~FrameSource() = default;
    virtual const VideoInfo& info() const = 0;
    /// Reads the next frame of the range into `frame`.
    virtual ReadStatus next(Frame& frame) = 0;
    /// Moves to frame `index` of the file (inside the range): the next call of next() reads it.
    /// False when the source cannot move there (the caller reopens it instead): camera files,
    /// uncompressed AVI and image sequences can; videos decoded by OpenCV cannot.
    virtual bool seek(std::int64_t index) {
        (void)index;
        return false;
    }
};

/// Opens INPUT: a video file, a camera file (.cine, .mraw with .cih/.cihx), an image-sequence
/// folder, or a glob ("frames/*.png"). Throws vibra::IoError / FormatError naming the input.
std::unique_ptr<FrameSource> open_video(const std::string& input, const ReaderParams& params = {});

/// Opens a list of image files as one sequence (natural-sorted by file name, as a quoted glob
/// of the same files would be); `name` names it in messages and VideoInfo::path. Throws
/// IoError naming a file that is missing or not an image.
std::unique_ptr<FrameSource> open_image_files(std::vector<std::string> files, const std::string& name,
                                              const ReaderParams& params = {});

/// Writes one image file (format from the extension: .png, .tif, …; 8- or 16-bit) with OpenCV's
/// image codecs, which vibra loads on first use (docs/performance.md, "start-up"); false when
/// the file cannot be written. cv::Exception passes through.
bool write_image(const std::string& path, const cv::Mat& image);

}  // namespace vibra::tracking
