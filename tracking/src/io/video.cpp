// SPDX-License-Identifier: GPL-3.0-or-later
// open_video dispatch (one INPUT → one FrameSource) and the helpers every reader shares: the
// colour → grey rule, parameter checks, natural sort order.
#include "vibra/tracking/video.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <string>

#include "detail/readers.hpp"
#include "vibra/tracking/camera_formats.hpp"
#include "vibra/core/error.hpp"

namespace vibra::tracking {

namespace detail {

void validate_reader_params(const ReaderParams& p) {
    if (p.channel < -1 || p.channel > 2)
        throw ParameterError("--channel must be -1 (luma), 0 (R), 1 (G) or 2 (B), got " +
                             std::to_string(p.channel));
    if (p.first < 0)
        throw ParameterError("frame range: first frame must be >= 0, got " + std::to_string(p.first));
    if (p.last != -1 && p.last <= p.first)
        throw ParameterError("frame range: last frame (exclusive) must be > first (" +
                             std::to_string(p.first) + ") or -1 for the end, got " + std::to_string(p.last));
}

namespace {
template <typename T>
void luma_or_channel(const cv::Mat& src, cv::Mat& dst, int channel) {
    const int cn = src.channels();
    // OpenCV stores colour as B, G, R(, A).
    for (int j = 0; j < src.rows; ++j) {
        const T* s = src.ptr<T>(j);
        T* d = dst.ptr<T>(j);
        if (channel >= 0) {
            const int off = 2 - channel;
            for (int i = 0; i < src.cols; ++i) d[i] = s[i * cn + off];
        } else {
            // Exact integer form of round(0.299 R + 0.587 G + 0.114 B), halves rounded up.
            for (int i = 0; i < src.cols; ++i) {
                const T* px = s + i * cn;
                d[i] = static_cast<T>((299u * px[2] + 587u * px[1] + 114u * px[0] + 500u) / 1000u);
            }
        }
    }
}
}  // namespace

cv::Mat to_grey(const cv::Mat& img, int channel, const std::string& where) {
    const int depth = img.depth();
    if (depth != CV_8U && depth != CV_16U)
        throw FormatError(where + ": unsupported pixel type (only 8- and 16-bit unsigned images are read)");
    const int cn = img.channels();
    if (cn == 1) return img;
    if (cn != 3 && cn != 4)
        throw FormatError(where + ": unsupported number of channels " + std::to_string(cn));
    cv::Mat out(img.rows, img.cols, CV_MAKETYPE(depth, 1));
    if (depth == CV_8U)
        luma_or_channel<std::uint8_t>(img, out, channel);
    else
        luma_or_channel<std::uint16_t>(img, out, channel);
    return out;
}

bool natural_less(const std::string& a, const std::string& b) {
    std::size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        const bool da = std::isdigit(static_cast<unsigned char>(a[i])) != 0;
        const bool db = std::isdigit(static_cast<unsigned char>(b[j])) != 0;
        if (da && db) {
            std::size_t i2 = i, j2 = j;
            while (i2 < a.size() && std::isdigit(static_cast<unsigned char>(a[i2]))) ++i2;
            while (j2 < b.size() && std::isdigit(static_cast<unsigned char>(b[j2]))) ++j2;
            // Compare by value: strip leading zeros, then length, then digits.
            std::size_t za = i, zb = j;
            while (za + 1 < i2 && a[za] == '0') ++za;
            while (zb + 1 < j2 && b[zb] == '0') ++zb;
            if (i2 - za != j2 - zb) return i2 - za < j2 - zb;
            const int c = a.compare(za, i2 - za, b, zb, j2 - zb);
            if (c != 0) return c < 0;
            if (i2 - i != j2 - j) return i2 - i < j2 - j;  // fewer leading zeros first
            i = i2, j = j2;
        } else {
            if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
            ++i, ++j;
        }
    }
    return a.size() - i < b.size() - j;
}

}  // namespace detail

std::int64_t frames_in_range(std::int64_t n_frames, const ReaderParams& p) {
    std::int64_t end = n_frames;
    if (p.last >= 0 && (end < 0 || p.last < end)) end = p.last;
    return end < 0 ? -1 : std::max<std::int64_t>(0, end - p.first);
}

std::unique_ptr<FrameSource> open_video(const std::string& input, const ReaderParams& params) {
    namespace fs = std::filesystem;
    detail::validate_reader_params(params);
    if (input.empty()) throw IoError("empty input name");
    const bool has_glob = input.find_first_of("*?[") != std::string::npos;
    std::error_code ec;
    if (has_glob && !fs::exists(input, ec)) return detail::open_image_sequence(input, params);
    if (fs::is_directory(input, ec)) return detail::open_image_sequence(input, params);
    if (!fs::exists(input, ec)) throw IoError(input + ": no such file or folder");
    if (!fs::is_regular_file(input, ec)) throw IoError(input + ": not a regular file");
    std::string ext = fs::path(input).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });

    // ---- camera formats (docs/formats.md) ----
    if (ext == ".cine") return open_cine(input, params);
    if (ext == ".mraw" || ext == ".cih" || ext == ".cihx") return open_mraw(input, params);
    // ---- end of camera formats ----

    if (detail::is_image_file(input)) return detail::open_image_sequence(input, params);
    if (auto raw = detail::open_raw_avi(input, params)) return raw;
    return detail::open_opencv_video(input, params);
}

}  // namespace vibra::tracking
