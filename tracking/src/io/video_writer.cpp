// SPDX-License-Identifier: GPL-3.0-or-later
// FrameSink: frames to a video file or an image-sequence folder (video_writer.hpp).
#include "vibra/tracking/video_writer.hpp"

#include <opencv2/videoio.hpp>  // constants only: the writers go through detail::VideoWriter (opencv_codecs.hpp)

#include <cerrno>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "detail/opencv_codecs.hpp"
#include "vibra/core/error.hpp"
#include "vibra/core/output_file.hpp"

namespace vibra::tracking {

const char* to_string(VideoFormat f) {
    switch (f) {
        case VideoFormat::avi_raw:
            return "avi";
        case VideoFormat::avi_ffv1:
            return "ffv1";
        case VideoFormat::png:
            return "png";
        case VideoFormat::tiff:
            return "tiff";
        case VideoFormat::avi_mjpeg:
            return "mjpeg";
    }
    return "avi";
}

VideoFormat video_format_from_string(const std::string& s) {
    if (s == "avi" || s == "raw" || s == "avi-raw") return VideoFormat::avi_raw;
    if (s == "ffv1" || s == "avi-ffv1") return VideoFormat::avi_ffv1;
    if (s == "png") return VideoFormat::png;
    if (s == "tiff" || s == "tif") return VideoFormat::tiff;
    if (s == "mjpeg" || s == "mjpg") return VideoFormat::avi_mjpeg;
    throw ParameterError("video format must be avi, ffv1, mjpeg, png or tiff, got '" + s + "'");
}

namespace detail {  // not an anonymous namespace: FrameSink::Impl holds one

// Minimal uncompressed AVI writer (RIFF AVI 1.0, one 'Y800' 8-bit grey video stream, rows top
// down, no padding, idx1 index). Used for frame sizes OpenCV's FFmpeg writer cannot represent
// exactly (it crops odd widths/heights to even).
class Y800AviWriter {
public:
    Y800AviWriter(const std::string& path, int w, int h, double fps) : path_(path), w_(w), h_(h), fps_(fps) {
        f_ = std::fopen(path.c_str(), "wb");
        if (!f_) throw IoError(path + ": cannot create the file");
        write_headers(0);
        movi_pos_ = std::ftell(f_) - 4;  // position of the 'movi' fourcc
    }
    ~Y800AviWriter() {
        if (f_) std::fclose(f_);
    }
    void write(const cv::Mat& img) {
        const auto size = static_cast<std::uint32_t>(w_) * static_cast<std::uint32_t>(h_);
        const long off = std::ftell(f_) - movi_pos_;
        put4("00dc");
        put32(size);
        for (int j = 0; j < h_; ++j)
            check(std::fwrite(img.ptr<std::uint8_t>(j), 1, static_cast<std::size_t>(w_), f_) ==
                  static_cast<std::size_t>(w_));
        if (size % 2) std::fputc(0, f_);
        index_.push_back({static_cast<std::uint32_t>(off), size});
        if (std::ftell(f_) > 0x7FF00000L)
            throw IoError(path_ + ": uncompressed AVI larger than 2 GB; use a png/tiff sequence");
    }
    void close() {
        if (!f_) return;
        const long movi_end = std::ftell(f_);
        put4("idx1");
        put32(static_cast<std::uint32_t>(index_.size() * 16));
        for (const auto& e : index_) {
            put4("00dc");
            put32(0x10);
            put32(e.first);
            put32(e.second);
        }
        const long end = std::ftell(f_);
        // Patch RIFF size, the headers (frame count) and the movi LIST size.
        std::fseek(f_, 0, SEEK_SET);
        write_headers(static_cast<std::uint32_t>(end - 8));
        std::fseek(f_, movi_pos_ - 4, SEEK_SET);
        put32(static_cast<std::uint32_t>(movi_end - movi_pos_));
        const bool ok = std::fflush(f_) == 0;
        const int err = errno;
        std::fclose(f_);
        f_ = nullptr;
        if (!ok) throw IoError(path_ + ": " + write_failure(path_, err));
    }

private:
    void check(bool ok) {
        if (!ok) throw IoError(path_ + ": " + write_failure(path_, errno));
    }
    void put4(const char* s) { check(std::fwrite(s, 1, 4, f_) == 4); }
    void put32(std::uint32_t v) {
        const unsigned char b[4] = {static_cast<unsigned char>(v), static_cast<unsigned char>(v >> 8),
                                    static_cast<unsigned char>(v >> 16), static_cast<unsigned char>(v >> 24)};
        check(std::fwrite(b, 1, 4, f_) == 4);
    }
    void put16(std::uint16_t v) {
        const unsigned char b[2] = {static_cast<unsigned char>(v), static_cast<unsigned char>(v >> 8)};
        check(std::fwrite(b, 1, 2, f_) == 2);
    }
    void write_headers(std::uint32_t riff_size) {
        const auto n = static_cast<std::uint32_t>(index_.size());
        const auto frame = static_cast<std::uint32_t>(w_) * static_cast<std::uint32_t>(h_);
        const auto rate = static_cast<std::uint32_t>(std::llround(fps_ * 1000));
        put4("RIFF");
        put32(riff_size);
        put4("AVI ");
        put4("LIST");
        put32(4 + 8 + 56 + 8 + 4 + 8 + 56 + 8 + 40);
        put4("hdrl");
        put4("avih");
        put32(56);
        put32(static_cast<std::uint32_t>(std::llround(1e6 / fps_)));
        put32(static_cast<std::uint32_t>(frame * fps_));
        put32(0);
        put32(0x10);  // AVIF_HASINDEX
        put32(n);
        put32(0);
        put32(1);
        put32(frame);
        put32(static_cast<std::uint32_t>(w_));
        put32(static_cast<std::uint32_t>(h_));
        for (int k = 0; k < 4; ++k) put32(0);
        put4("LIST");
        put32(4 + 8 + 56 + 8 + 40);
        put4("strl");
        put4("strh");
        put32(56);
        put4("vids");
        put4("Y800");
        put32(0);
        put16(0);
        put16(0);
        put32(0);
        put32(1000);
        put32(rate);
        put32(0);
        put32(n);
        put32(frame);
        put32(0xFFFFFFFFu);
        put32(0);
        put16(0), put16(0), put16(static_cast<std::uint16_t>(w_)), put16(static_cast<std::uint16_t>(h_));
        put4("strf");
        put32(40);
        put32(40);
        put32(static_cast<std::uint32_t>(w_));
        put32(static_cast<std::uint32_t>(h_));
        put16(1);
        put16(8);
        put4("Y800");
        put32(frame);
        for (int k = 0; k < 4; ++k) put32(0);
        put4("LIST");
        put32(4);  // patched at close
        put4("movi");
    }

    std::string path_;
    int w_, h_;
    double fps_;
    std::FILE* f_ = nullptr;
    long movi_pos_ = 0;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> index_;
};

}  // namespace detail

struct FrameSink::Impl {
    std::unique_ptr<AtomicOutput> out;  // frames go to out->path(), renamed into place by close()
    int unwinding_at_start = 0;         // std::uncaught_exceptions() when constructed
    std::string path, target;           // where frames are written (the temporary); the name the user gave
    VideoFormat format;
    double fps;
    std::unique_ptr<detail::VideoWriter>
        writer;  // created when a format needs OpenCV (loads its codecs module)
    std::unique_ptr<detail::Y800AviWriter> native;
    std::int64_t n = 0;
    int type = -1;
    cv::Size size;
    bool closed = false;
};

FrameSink::FrameSink(const std::string& path, VideoFormat format, double fps)
    : impl_(std::make_unique<Impl>()) {
    impl_->format = format;
    impl_->fps = fps > 0 ? fps : 25.0;
    impl_->unwinding_at_start = std::uncaught_exceptions();
    const bool folder = format == VideoFormat::png || format == VideoFormat::tiff;
    if (!folder) {
        const auto parent = std::filesystem::path(path).parent_path();
        if (!parent.empty() && !std::filesystem::is_directory(parent))
            throw IoError(path + ": the output folder " + parent.string() + " does not exist");
    }
    std::string target = path;  // "frames/" names the folder "frames"
    while (target.size() > 1 && target.back() == '/') target.pop_back();
    if (const auto parent = std::filesystem::path(target).parent_path(); folder && !parent.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(parent, ec);
    }
    AtomicOutput::Options opt;
    opt.kind = folder ? AtomicOutput::Kind::folder : AtomicOutput::Kind::file;
    opt.keep_extension = true;  // OpenCV picks the container by the extension
    impl_->out = std::make_unique<AtomicOutput>(target, opt);
    impl_->path = impl_->out->path();
    impl_->target = path;
}

FrameSink::~FrameSink() {
    if (std::uncaught_exceptions() > impl_->unwinding_at_start) {
        // Leaving by an exception (an error, an interruption): close the writers, publish nothing.
        auto& m = *impl_;
        m.closed = true;
        if (m.writer && m.writer->isOpened()) m.writer->release();
        if (m.native) {
            try {
                m.native->close();
            } catch (...) {}
        }
        return;  // ~AtomicOutput removes the temporary
    }
    try {
        close();
    } catch (...) {}
}

std::string FrameSink::sequence_file(const std::string& folder, VideoFormat f, std::int64_t k) {
    char name[64];
    std::snprintf(name, sizeof name, "frame_%06lld.%s", static_cast<long long>(k),
                  f == VideoFormat::tiff ? "tif" : "png");
    return (std::filesystem::path(folder) / name).string();
}

void FrameSink::write(const cv::Mat& image) { write(image, impl_->n); }

void FrameSink::write(const cv::Mat& image, std::int64_t number) {
    auto& m = *impl_;
    if (m.closed) throw IoError(m.target + ": write after close");
    if (image.empty()) throw IoError(m.target + ": empty frame");
    if (m.n == 0) {
        m.type = image.type();
        m.size = image.size();
        const bool grey8 = m.type == CV_8UC1, bgr8 = m.type == CV_8UC3, grey16 = m.type == CV_16UC1;
        if (m.format == VideoFormat::avi_raw && !grey8)
            throw IoError(
                m.target +
                ": uncompressed AVI output takes 8-bit grey frames only (use png/tiff for 16 bits)");
        if (m.format == VideoFormat::avi_ffv1 && !(grey8 || bgr8))
            throw IoError(m.target + ": FFV1 output takes 8-bit frames (use png/tiff for 16 bits)");
        if (m.format == VideoFormat::avi_mjpeg && !(grey8 || bgr8))
            throw IoError(m.target + ": MJPEG output takes 8-bit frames");
        if (!(grey8 || bgr8 || grey16)) throw IoError(m.target + ": unsupported frame type");
        const bool odd = (m.size.width % 2) != 0 || (m.size.height % 2) != 0;
        if (m.format == VideoFormat::avi_ffv1 && odd)
            throw IoError(m.target + ": FFV1 output needs even width and height (got " +
                          std::to_string(m.size.width) + "x" + std::to_string(m.size.height) +
                          "); use avi, png or tiff");
        if (m.format == VideoFormat::avi_mjpeg) {
            bool ok = false;
            try {
                m.writer = std::make_unique<detail::VideoWriter>();
                ok = m.writer->open(m.path, cv::CAP_OPENCV_MJPEG, detail::fourcc('M', 'J', 'P', 'G'), m.fps,
                                    m.size, !grey8);
            } catch (const cv::Exception&) {
                ok = false;
            }
            if (!ok) throw IoError(m.target + ": cannot open the MJPEG video writer");
        } else if (m.format == VideoFormat::avi_raw && odd) {
            m.native = std::make_unique<detail::Y800AviWriter>(m.path, m.size.width, m.size.height, m.fps);
        } else if (m.format == VideoFormat::avi_raw || m.format == VideoFormat::avi_ffv1) {
            const int fourcc = m.format == VideoFormat::avi_raw ? 0 : detail::fourcc('F', 'F', 'V', '1');
            bool ok = false;
            try {
                m.writer = std::make_unique<detail::VideoWriter>();
                ok = m.writer->open(m.path, cv::CAP_FFMPEG, fourcc, m.fps, m.size, !grey8);
            } catch (const cv::Exception&) {
                ok = false;
            }
            if (!ok || !m.writer->isOpened())
                throw IoError(
                    m.target + ": cannot open the video writer (" + std::string(to_string(m.format)) +
                    (m.format == VideoFormat::avi_ffv1 ? "; FFV1 needs OpenCV built with FFmpeg" : "") + ")");
        }
    } else if (image.type() != m.type || image.size() != m.size) {
        throw IoError(m.target + ": frame " + std::to_string(m.n) +
                      " differs in size or type from the first frame");
    }
    if (m.format == VideoFormat::png || m.format == VideoFormat::tiff) {
        const auto file = sequence_file(m.path, m.format, number);
        bool ok = false;
        try {
            ok = detail::imwrite(file, image);
        } catch (const cv::Exception& e) {
            throw IoError(file + ": cannot write the image: " + e.what());
        }
        if (!ok)
            throw IoError(m.target + ": cannot write frame " + std::to_string(m.n) + ": " +
                          write_failure(file));
    } else if (m.native) {
        m.native->write(image);
    } else {
        m.writer->write(image);
    }
    ++m.n;
}

void FrameSink::close() {
    auto& m = *impl_;
    if (m.closed) return;
    m.closed = true;
    if (m.writer && m.writer->isOpened()) m.writer->release();
    if (m.native) m.native->close();
    // OpenCV's writers do not report a failed write: a full file system is checked here.
    if (file_system_full(m.path)) throw IoError(m.out->target() + ": " + write_failure(m.path, ENOSPC));
    m.out->commit();
}

std::int64_t FrameSink::frames_written() const { return impl_->n; }

}  // namespace vibra::tracking
