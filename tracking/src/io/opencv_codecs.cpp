// SPDX-License-Identifier: GPL-3.0-or-later
// Loading OpenCV's codecs module on first use (why: detail/opencv_codecs.hpp).
#include "detail/opencv_codecs.hpp"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "vibra/core/error.hpp"
#include "vibra/tracking/video.hpp"

#ifndef VIBRA_OPENCV_CODECS_PATH
#define VIBRA_OPENCV_CODECS_PATH ""
#endif
#ifndef VIBRA_OPENCV_CODECS_INSTALL_PATH
#define VIBRA_OPENCV_CODECS_INSTALL_PATH ""
#endif

namespace vibra::tracking::detail {

namespace {

constexpr const char* kModuleName = "libvibra_opencv_codecs.so";

std::atomic<bool> g_loaded{false};

// Where the module may be: $VIBRA_OPENCV_CODECS when set (that file only); otherwise where the
// build wrote it, where `cmake --install` puts it (<prefix>/lib: a program linked against the
// installed vibra::tracking), beside the running program (or in ../lib or ../tracking of it: a
// build tree or an install tree moved as a whole), then the loader's search path.
std::vector<std::string> candidates() {
    std::vector<std::string> c;
    if (const char* env = std::getenv("VIBRA_OPENCV_CODECS"); env && *env) return {env};
    if (*VIBRA_OPENCV_CODECS_PATH) c.emplace_back(VIBRA_OPENCV_CODECS_PATH);
    if (*VIBRA_OPENCV_CODECS_INSTALL_PATH) c.emplace_back(VIBRA_OPENCV_CODECS_INSTALL_PATH);
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        c.push_back((exe.parent_path() / kModuleName).string());
        c.push_back((exe.parent_path().parent_path() / "lib" / kModuleName).string());
        c.push_back((exe.parent_path().parent_path() / "tracking" / kModuleName)
                        .string());  // a build tree moved as a whole
    }
    c.emplace_back(kModuleName);
    return c;
}

const OpenCvCodecsTable* load() {
    std::string why;
    for (const auto& path : candidates()) {
        const bool by_name = path.find('/') == std::string::npos;
        if (!by_name && !std::filesystem::exists(path)) {
            why += "\n  " + path + ": no such file";
            continue;
        }
        void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            const char* e = dlerror();
            why += "\n  " + path + ": " + (e ? e : "cannot load");
            continue;
        }
        using Entry = const OpenCvCodecsTable* (*)();
        const auto entry = reinterpret_cast<Entry>(dlsym(lib, kOpenCvCodecsEntry));
        const OpenCvCodecsTable* t = entry ? entry() : nullptr;
        if (!t || t->version != kOpenCvCodecsVersion) {
            why += "\n  " + path + ": not vibra's OpenCV codecs module of this version";
            dlclose(lib);
            continue;
        }
        g_loaded = true;
        return t;  // kept loaded for the life of the process
    }
    throw Error(std::string("cannot load ") + kModuleName +
                " (OpenCV's image and video codecs, needed for image sequences, compressed videos and "
                "video/PNG output); "
                "set VIBRA_OPENCV_CODECS to its file. Tried:" +
                why);
}

}  // namespace

const OpenCvCodecsTable& opencv_codecs() {
    static const OpenCvCodecsTable* table =
        load();  // thread-safe initialisation; a failure is retried next call
    return *table;
}

bool opencv_codecs_loaded() { return g_loaded; }

cv::Mat imread(const std::string& path, int flags) { return opencv_codecs().imread(path, flags); }
bool imwrite(const std::string& path, const cv::Mat& image) { return opencv_codecs().imwrite(path, image); }

VideoCapture::VideoCapture() : t_(&opencv_codecs()), h_(t_->capture_new()) {}
VideoCapture::~VideoCapture() { t_->capture_delete(h_); }
bool VideoCapture::open(const std::string& path, int api) { return t_->capture_open(h_, path, api); }
bool VideoCapture::isOpened() const { return t_->capture_is_opened(h_); }
bool VideoCapture::read(cv::Mat& image) { return t_->capture_read(h_, image); }
bool VideoCapture::grab() { return t_->capture_grab(h_); }
double VideoCapture::get(int property) const { return t_->capture_get(h_, property); }
std::string VideoCapture::getBackendName() const { return t_->capture_backend(h_); }
void VideoCapture::release() { t_->capture_release(h_); }

VideoWriter::VideoWriter() : t_(&opencv_codecs()), h_(t_->writer_new()) {}
VideoWriter::~VideoWriter() { t_->writer_delete(h_); }
bool VideoWriter::open(const std::string& path, int api, int fourcc, double fps, cv::Size size, bool colour) {
    return t_->writer_open(h_, path, api, fourcc, fps, size, colour);
}
bool VideoWriter::isOpened() const { return t_->writer_is_opened(h_); }
void VideoWriter::write(const cv::Mat& image) { t_->writer_write(h_, image); }
void VideoWriter::release() { t_->writer_release(h_); }

}  // namespace vibra::tracking::detail

namespace vibra::tracking {

bool write_image(const std::string& path, const cv::Mat& image) { return detail::imwrite(path, image); }

}  // namespace vibra::tracking
