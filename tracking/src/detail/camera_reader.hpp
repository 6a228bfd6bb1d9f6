// SPDX-License-Identifier: GPL-3.0-or-later
// Common skeleton of the camera-file FrameSources: the frame range, the read loop and the
// per-frame error reporting (status + info().extra["last_error"] naming file and frame).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>

#include "detail/camera_io.hpp"
#include "vibra/core/error.hpp"
#include "vibra/tracking/video.hpp"

namespace vibra::tracking::detail {

/// Colour → grey: channel < 0 = luma round(0.299 R + 0.587 G + 0.114 B), else R (0), G (1) or B (2).
inline unsigned grey_from_rgb(unsigned r, unsigned g, unsigned b, int channel) {
    switch (channel) {
        case 0:
            return r;
        case 1:
            return g;
        case 2:
            return b;
        default:
            return static_cast<unsigned>(
                std::nearbyint(0.299 * r + 0.587 * g + 0.114 * b));  // as detail::to_grey
    }
}

/// A header value as text for VideoInfo::extra: 10 significant digits, no trailing zeros.
inline std::string header_number(double v) {
    std::ostringstream os;
    os.precision(10);
    os << v;
    return os.str();
}

class CameraSource : public FrameSource {
public:
    explicit CameraSource(const std::string& path) : path_(path), file_(path) {}
    const VideoInfo& info() const override { return info_; }

    ReadStatus next(Frame& frame) override {
        if (done_ || pos_ >= last_) return ReadStatus::end;
        const std::int64_t i = pos_++;
        frame = Frame{};
        frame.index = i;
        frame.image_number = i;
        const ReadStatus st = decode(i, frame);
        if (st == ReadStatus::truncated) done_ = true;
        return st;
    }

    bool seek(std::int64_t index) override {
        if (index < first_ || index >= last_) return false;
        pos_ = index;
        done_ = false;
        return true;
    }

protected:
    /// Decodes frame i (0-based in the file) into `frame` (index already set).
    virtual ReadStatus decode(std::int64_t i, Frame& frame) = 0;

    void set_range(const ReaderParams& p, std::int64_t n) {
        if (p.first < 0) throw ParameterError("--frames: first frame " + std::to_string(p.first) + " < 0");
        if (p.last >= 0 && p.last < p.first)
            throw ParameterError("--frames: last " + std::to_string(p.last) + " < first " +
                                 std::to_string(p.first));
        if (p.first > n)
            throw ParameterError("--frames: first frame " + std::to_string(p.first) + " is past the end of " +
                                 path_ + " (" + std::to_string(n) + " frames)");
        pos_ = first_ = p.first;
        last_ = p.last < 0 ? n : std::min(p.last, n);
    }

    ReadStatus fail(ReadStatus st, const std::string& message) {
        info_.extra["last_error"] = message;
        return st;
    }

    std::string path_;
    InputFile file_;
    VideoInfo info_;

private:
    std::int64_t pos_ = 0, first_ = 0, last_ = 0;
    bool done_ = false;
};

}  // namespace vibra::tracking::detail
