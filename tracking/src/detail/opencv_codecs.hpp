// SPDX-License-Identifier: GPL-3.0-or-later
// OpenCV's image and video codecs (imgcodecs, videoio), loaded on first use. Internal.
//
// Why: those two OpenCV modules bring ≈ 190 more shared libraries (FFmpeg, GStreamer, GDAL, OpenEXR,
// …) whose loading and start-up code cost every `vibra` process ≈ 0.17 s before main() — more
// than a quarter of tracking a 60-frame video, and paid by analyses that never touch a video
// (docs/performance.md). vibra reads uncompressed AVI and the camera formats itself; only image
// sequences, compressed containers and the video/PNG writers need OpenCV's codecs. Those calls
// go through a small module (libvibra_opencv_codecs.so, tracking/codecs/) that is dlopen()ed the
// first time one of them runs; the classes below mirror the part of cv::VideoCapture,
// cv::VideoWriter, cv::imread and cv::imwrite that vibra uses.
#pragma once

#include <opencv2/core.hpp>

#include <string>

namespace vibra::tracking::detail {

/// The module's entry points (one table; `version` guards against a stale module).
struct OpenCvCodecsTable {
    int version;
    cv::Mat (*imread)(const std::string& path, int flags);
    bool (*imwrite)(const std::string& path, const cv::Mat& image);
    void* (*capture_new)();
    void (*capture_delete)(void*);
    bool (*capture_open)(void*, const std::string& path, int api);
    bool (*capture_is_opened)(void*);
    bool (*capture_read)(void*, cv::Mat& image);
    bool (*capture_grab)(void*);
    double (*capture_get)(void*, int property);
    std::string (*capture_backend)(void*);
    void (*capture_release)(void*);
    void* (*writer_new)();
    void (*writer_delete)(void*);
    bool (*writer_open)(void*, const std::string& path, int api, int fourcc, double fps, cv::Size size,
                        bool colour);
    bool (*writer_is_opened)(void*);
    void (*writer_write)(void*, const cv::Mat& image);
    void (*writer_release)(void*);
};
inline constexpr int kOpenCvCodecsVersion = 1;
/// The symbol the module exports (extern "C"): returns its table.
inline constexpr const char* kOpenCvCodecsEntry = "vibra_opencv_codecs_table";

/// The module's table, loaded on the first call (thread-safe); throws vibra::Error naming the
/// module's file when it cannot be loaded.
const OpenCvCodecsTable& opencv_codecs();
/// True once the module has been loaded in this process (tests: a raw AVI never loads it).
bool opencv_codecs_loaded();

/// cv::imread / cv::imwrite through the module (cv::Exception passes through).
cv::Mat imread(const std::string& path, int flags);
bool imwrite(const std::string& path, const cv::Mat& image);
/// cv::VideoWriter::fourcc without videoio.
constexpr int fourcc(char a, char b, char c, char d) {
    return (a & 255) | ((b & 255) << 8) | ((c & 255) << 16) | ((d & 255) << 24);
}

/// The part of cv::VideoCapture vibra uses (module loaded at construction).
class VideoCapture {
public:
    VideoCapture();
    ~VideoCapture();
    VideoCapture(const VideoCapture&) = delete;
    VideoCapture& operator=(const VideoCapture&) = delete;
    bool open(const std::string& path, int api);
    bool isOpened() const;
    bool read(cv::Mat& image);
    bool grab();
    double get(int property) const;
    std::string getBackendName() const;
    void release();

private:
    const OpenCvCodecsTable* t_;
    void* h_;
};

/// The part of cv::VideoWriter vibra uses (module loaded at construction).
class VideoWriter {
public:
    VideoWriter();
    ~VideoWriter();
    VideoWriter(const VideoWriter&) = delete;
    VideoWriter& operator=(const VideoWriter&) = delete;
    bool open(const std::string& path, int api, int fourcc, double fps, cv::Size size, bool colour);
    bool isOpened() const;
    void write(const cv::Mat& image);
    void release();

private:
    const OpenCvCodecsTable* t_;
    void* h_;
};

}  // namespace vibra::tracking::detail
