// SPDX-License-Identifier: GPL-3.0-or-later
// Image-sequence reader: a folder of images, a glob on the file name ("frames/img_*.png") or
// one image file. Natural sort order, 8- and 16-bit kept, one file decoded per next().
#include <fnmatch.h>

#include <opencv2/imgcodecs.hpp>  // constants only: imread goes through detail::imread (opencv_codecs.hpp)

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string>

#include "detail/opencv_codecs.hpp"
#include "detail/readers.hpp"
#include "vibra/core/error.hpp"

namespace vibra::tracking::detail {

namespace fs = std::filesystem;

bool is_image_file(const std::string& name) {
    std::string ext = fs::path(name).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    return ext == ".png" || ext == ".tif" || ext == ".tiff" || ext == ".jpg" || ext == ".jpeg" ||
           ext == ".bmp" || ext == ".pgm" || ext == ".ppm";
}

std::vector<std::string> list_image_sequence(const std::string& input) {
    std::vector<std::string> files;
    std::error_code ec;
    if (fs::is_directory(input, ec)) {
        for (fs::directory_iterator it(input, ec), end; !ec && it != end; it.increment(ec)) {
            std::error_code ec2;
            if (it->is_regular_file(ec2) && is_image_file(it->path().filename().string()))
                files.push_back(it->path().string());
        }
        if (ec) throw IoError(input + ": cannot list the folder: " + ec.message());
        if (files.empty())
            throw IoError(input + ": the folder contains no image files (png, tif, jpg, bmp, pgm)");
    } else if (input.find_first_of("*?[") != std::string::npos) {
        const fs::path p(input);
        const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
        const std::string pattern = p.filename().string();
        if (dir.string().find_first_of("*?[") != std::string::npos)
            throw IoError(input + ": a glob may only use wildcards in the file name, not in folders");
        if (!fs::is_directory(dir, ec)) throw IoError(input + ": no such folder " + dir.string());
        for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
            std::error_code ec2;
            const std::string name = it->path().filename().string();
            if (it->is_regular_file(ec2) && fnmatch(pattern.c_str(), name.c_str(), 0) == 0)
                files.push_back((p.has_parent_path() ? (dir / name) : fs::path(name)).string());
        }
        if (ec) throw IoError(input + ": cannot list " + dir.string() + ": " + ec.message());
        if (files.empty()) throw IoError(input + ": the pattern matches no files");
    } else {
        if (!fs::is_regular_file(input, ec)) throw IoError(input + ": no such file");
        files.push_back(input);
    }
    std::sort(files.begin(), files.end(), [](const std::string& a, const std::string& b) {
        return natural_less(fs::path(a).filename().string(), fs::path(b).filename().string());
    });
    return files;
}

namespace {

class ImageSequenceSource final : public FrameSource {
public:
    ImageSequenceSource(std::vector<std::string> files, const std::string& input, const ReaderParams& p)
        : params_(p) {
        files_ = std::move(files);
        const auto n = static_cast<std::int64_t>(files_.size());
        info_.path = input;
        info_.format = "image-sequence";
        info_.n_frames = n;
        if (p.first >= n)
            throw FormatError(input + ": frame range starts at " + std::to_string(p.first) +
                              " but the sequence has " + std::to_string(n) + " frames");
        end_ = p.last < 0 ? n : std::min(n, p.last);
        next_ = first_ = p.first;
        // Size and depth from the first decodable file of the range (the frame itself is kept).
        for (std::int64_t k = next_; k < end_; ++k) {
            cv::Mat img = load(k);
            if (img.empty()) continue;
            width_ = img.cols, height_ = img.rows, type_ = img.type();
            pending_ = img;
            pending_index_ = k;
            break;
        }
        if (type_ < 0)
            throw FormatError(input + ": none of the " + std::to_string(end_ - next_) +
                              " image files in the range can be decoded (first: " +
                              files_[static_cast<std::size_t>(next_)] + ")");
        info_.width = width_;
        info_.height = height_;
        info_.bit_depth = CV_MAT_DEPTH(type_) == CV_16U ? 16 : 8;
        info_.extra["first_file"] = files_.front();
        info_.extra["last_file"] = files_.back();
    }

    const VideoInfo& info() const override { return info_; }

    ReadStatus next(Frame& frame) override {
        if (next_ >= end_) return ReadStatus::end;
        const std::int64_t k = next_++;
        cv::Mat img;
        if (k == pending_index_) {
            img = pending_;
            pending_.release();
            pending_index_ = -1;
        } else {
            img = load(k);
        }
        frame.index = k;
        frame.image_number = k;
        frame.time_s = -1;
        if (img.empty()) {
            frame.image.release();
            return ReadStatus::corrupt;
        }
        if (img.cols != width_ || img.rows != height_ || img.type() != type_) {
            const auto& f = files_[static_cast<std::size_t>(k)];
            throw FormatError(
                at_frame(info_.path, k,
                         f + " is " + std::to_string(img.cols) + "x" + std::to_string(img.rows) + " px, " +
                             std::to_string(CV_MAT_DEPTH(img.type()) == CV_16U ? 16 : 8) +
                             "-bit, but the sequence started with " + std::to_string(width_) + "x" +
                             std::to_string(height_) + " px, " + std::to_string(info_.bit_depth) +
                             "-bit (frame size change mid-sequence)"));
        }
        frame.image = img;
        return ReadStatus::ok;
    }

    bool seek(std::int64_t index) override {
        if (index < first_ || index >= end_) return false;
        next_ = index;
        return true;
    }

private:
    // Decoded grey frame k, or an empty Mat when the file cannot be decoded.
    cv::Mat load(std::int64_t k) const {
        const auto& f = files_[static_cast<std::size_t>(k)];
        cv::Mat raw;
        try {
            raw = detail::imread(f, cv::IMREAD_UNCHANGED | cv::IMREAD_ANYDEPTH);
        } catch (const cv::Exception&) {
            return {};
        }
        if (raw.empty()) return {};
        return to_grey(raw, params_.channel, f);
    }

    ReaderParams params_;
    VideoInfo info_;
    std::vector<std::string> files_;
    std::int64_t first_ = 0, next_ = 0, end_ = 0;
    int width_ = 0, height_ = 0, type_ = -1;
    cv::Mat pending_;
    std::int64_t pending_index_ = -1;
};

}  // namespace

std::unique_ptr<FrameSource> open_image_sequence(const std::string& input, const ReaderParams& p) {
    validate_reader_params(p);
    return std::make_unique<ImageSequenceSource>(list_image_sequence(input), input, p);
}

}  // namespace vibra::tracking::detail

namespace vibra::tracking {

namespace fs = std::filesystem;

std::unique_ptr<FrameSource> open_image_files(std::vector<std::string> files, const std::string& name,
                                              const ReaderParams& p) {
    detail::validate_reader_params(p);
    if (files.empty()) throw IoError(name + ": no image files");
    std::error_code ec;
    for (const auto& f : files) {
        if (!detail::is_image_file(f))
            throw IoError(f + ": not an image file (png, tif, jpg, bmp, pgm, ppm) of the sequence " + name);
        if (!fs::is_regular_file(f, ec)) throw IoError(f + ": no such file");
    }
    std::sort(files.begin(), files.end(), [](const std::string& a, const std::string& b) {
        return detail::natural_less(fs::path(a).filename().string(), fs::path(b).filename().string());
    });
    return std::make_unique<detail::ImageSequenceSource>(std::move(files), name, p);
}

}  // namespace vibra::tracking
