// SPDX-License-Identifier: GPL-3.0-or-later
// libvibra_opencv_codecs.so: OpenCV's imgcodecs and videoio behind the table of
// detail/opencv_codecs.hpp, loaded by vibra only when a call needs them (why: that header).
#include <opencv2/imgcodecs.hpp>
#include <opencv2/videoio.hpp>

#include "detail/opencv_codecs.hpp"

namespace {

using vibra::tracking::detail::OpenCvCodecsTable;

cv::VideoCapture& cap(void* h) { return *static_cast<cv::VideoCapture*>(h); }
cv::VideoWriter& wr(void* h) { return *static_cast<cv::VideoWriter*>(h); }

const OpenCvCodecsTable table{
    vibra::tracking::detail::kOpenCvCodecsVersion,
    [](const std::string& path, int flags) { return cv::imread(path, flags); },
    [](const std::string& path, const cv::Mat& image) { return cv::imwrite(path, image); },
    []() -> void* { return new cv::VideoCapture(); },
    [](void* h) { delete static_cast<cv::VideoCapture*>(h); },
    [](void* h, const std::string& path, int api) { return cap(h).open(path, api); },
    [](void* h) { return cap(h).isOpened(); },
    [](void* h, cv::Mat& image) { return cap(h).read(image); },
    [](void* h) { return cap(h).grab(); },
    [](void* h, int property) { return cap(h).get(property); },
    [](void* h) { return cap(h).getBackendName(); },
    [](void* h) { cap(h).release(); },
    []() -> void* { return new cv::VideoWriter(); },
    [](void* h) { delete static_cast<cv::VideoWriter*>(h); },
    [](void* h, const std::string& path, int api, int fourcc, double fps, cv::Size size, bool colour) {
        return wr(h).open(path, api, fourcc, fps, size, colour);
    },
    [](void* h) { return wr(h).isOpened(); },
    [](void* h, const cv::Mat& image) { wr(h).write(image); },
    [](void* h) { wr(h).release(); },
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const OpenCvCodecsTable* vibra_opencv_codecs_table() {
    return &table;
}
