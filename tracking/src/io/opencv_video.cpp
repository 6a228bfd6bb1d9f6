// SPDX-License-Identifier: GPL-3.0-or-later
// Video containers through OpenCV's VideoCapture (FFmpeg backend): AVI, MP4, MKV, MOV, …
// Decoded frames are 8-bit; colour → grey by the documented rule. Uncompressed 8-bit grey AVI
// ('Y800'/'GREY', what `vibra synth` and many camera exports write) does not come here: vibra
// reads it itself (raw_avi.cpp).
#include <opencv2/videoio.hpp>  // constants only: the calls go through detail::VideoCapture (opencv_codecs.hpp)

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>

#include "detail/opencv_codecs.hpp"
#include "detail/readers.hpp"
#include "vibra/core/error.hpp"

namespace vibra::tracking::detail {

namespace {

std::string fourcc_string(int fourcc) {
    std::string s;
    for (int k = 0; k < 4; ++k) {
        const char c = static_cast<char>((fourcc >> (8 * k)) & 0xFF);
        s += (c >= 32 && c < 127) ? c : '?';
    }
    return s;
}

bool open_capture(VideoCapture& cap, const std::string& path) {
    try {
        cap.release();
        // FFmpeg only: the other backends (GStreamer, image-pattern) print noise on bad input.
        if (!cap.open(path, cv::CAP_FFMPEG)) return false;
        return cap.isOpened();
    } catch (const cv::Exception&) {
        return false;
    }
}

class OpenCvVideoSource final : public FrameSource {
public:
    OpenCvVideoSource(const std::string& input, const ReaderParams& p) : params_(p) {
        info_.path = input;
        info_.format = "opencv";
        if (!open_capture(cap_, input))
            throw FormatError(input + ": cannot open as a video (not a container/codec OpenCV can decode)");
        info_.width = static_cast<std::int64_t>(cap_.get(cv::CAP_PROP_FRAME_WIDTH));
        info_.height = static_cast<std::int64_t>(cap_.get(cv::CAP_PROP_FRAME_HEIGHT));
        const double n = cap_.get(cv::CAP_PROP_FRAME_COUNT);
        info_.n_frames = (std::isfinite(n) && n > 0) ? static_cast<std::int64_t>(std::llround(n)) : -1;
        const double fps = cap_.get(cv::CAP_PROP_FPS);
        info_.fps = (std::isfinite(fps) && fps > 0) ? fps : 0;
        info_.bit_depth = 8;
        const int fourcc = static_cast<int>(cap_.get(cv::CAP_PROP_FOURCC));
        info_.extra["fourcc"] = fourcc_string(fourcc);
        try {
            info_.extra["backend"] = cap_.getBackendName();
        } catch (const cv::Exception&) {}
        if (info_.n_frames == 0) throw FormatError(input + ": the video has 0 frames");
        // (Uncompressed grey AVI is read by vibra's own reader, raw_avi.cpp, before this one is
        // tried; what comes here is decoded.)
        // First frame read eagerly: an input without a single readable frame fails at open.
        {
            cv::Mat first;
            if (!read_one(first))
                throw FormatError(input + ": no frame can be decoded (empty or unreadable video)");
            pending_ = first;
            have_pending_ = true;
        }
        if (info_.width <= 0 || info_.height <= 0) info_.width = pending_.cols, info_.height = pending_.rows;
        if (info_.n_frames >= 0 && p.first >= info_.n_frames)
            throw FormatError(input + ": frame range starts at " + std::to_string(p.first) +
                              " but the video has " + std::to_string(info_.n_frames) + " frames");
        end_ = p.last;
        if (info_.n_frames >= 0 && (end_ < 0 || end_ > info_.n_frames)) end_ = info_.n_frames;
        // Skip to the first frame of the range (grab: demux without decoding where possible).
        while (pos_ < p.first) {
            if (have_pending_) {
                have_pending_ = false;
                pending_.release();
                ++pos_;
                continue;
            }
            if (!cap_.grab()) {
                if (info_.n_frames < 0)
                    throw FormatError(input + ": frame range starts at " + std::to_string(p.first) +
                                      " but the video ends at frame " + std::to_string(pos_));
                skip_failed_ = true;
                break;
            }
            ++pos_;
        }
    }

    const VideoInfo& info() const override { return info_; }

    ReadStatus next(Frame& frame) override {
        if (end_ >= 0 && pos_ >= end_) return ReadStatus::end;
        if (finished_) return ReadStatus::end;
        frame.index = pos_;
        frame.image_number = pos_;
        frame.time_s = -1;
        cv::Mat grey;
        if (have_pending_) {
            grey = pending_;
            pending_.release();
            have_pending_ = false;
        } else if (skip_failed_ || !read_one(grey)) {
            skip_failed_ = false;
            // End, a corrupt frame, or a truncated file. When the header promises more frames, try
            // the frame after: if it decodes, this one was corrupt (skipped); if not, truncated.
            if (info_.n_frames < 0 || pos_ >= info_.n_frames) {
                finished_ = true;
                return ReadStatus::end;
            }
            cv::Mat after;
            if (read_one(after)) {
                pending_ = after;
                have_pending_ = true;
                ++pos_;
                frame.image.release();
                return ReadStatus::corrupt;
            }
            finished_ = true;
            return ReadStatus::truncated;
        }
        frame.image = grey;
        ++pos_;
        return ReadStatus::ok;
    }

private:
    bool read_one(cv::Mat& grey) {
        cv::Mat m;
        try {
            if (!cap_.read(m) || m.empty()) return false;
        } catch (const cv::Exception&) {
            return false;
        }
        grey = to_grey(m, params_.channel, info_.path);
        return true;
    }

    ReaderParams params_;
    VideoInfo info_;
    VideoCapture cap_;
    cv::Mat pending_;
    bool have_pending_ = false;
    bool skip_failed_ = false;
    bool finished_ = false;
    std::int64_t pos_ = 0, end_ = -1;
};

}  // namespace

std::unique_ptr<FrameSource> open_opencv_video(const std::string& input, const ReaderParams& p) {
    validate_reader_params(p);
    return std::make_unique<OpenCvVideoSource>(input, p);
}

}  // namespace vibra::tracking::detail
