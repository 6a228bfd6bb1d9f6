// SPDX-License-Identifier: GPL-3.0-or-later
// Private pieces shared by the frame readers: the colour → grey rule, range checks, natural
// sort, and the concrete reader factories that open_video dispatches to.
#pragma once

#include <opencv2/core.hpp>

#include <memory>
#include <string>
#include <vector>

#include "vibra/tracking/video.hpp"

namespace vibra::tracking::detail {

/// The documented colour rule (video.hpp, ReaderParams::channel): 1-channel images pass
/// through; 3-channel BGR / 4-channel BGRA (OpenCV order, alpha ignored) become
/// (299 R + 587 G + 114 B + 500) div 1000 = round(0.299 R + 0.587 G + 0.114 B), halves up,
/// computed exactly in integers, when channel = −1, else channel 0/1/2 = R/G/B. Depth is
/// kept (8 or 16 bit). Throws FormatError naming `where` for other layouts or depths.
cv::Mat to_grey(const cv::Mat& img, int channel, const std::string& where);

/// Throws ParameterError for a bad channel or frame range.
void validate_reader_params(const ReaderParams& p);

/// "frame2.png" < "frame10.png": digit runs compare by value, the rest byte-wise.
bool natural_less(const std::string& a, const std::string& b);

/// True when `name` has an image-file extension the sequence reader accepts (png, tif, tiff,
/// jpg, jpeg, bmp, pgm, ppm; case-insensitive).
bool is_image_file(const std::string& name);

/// The files of an image-sequence INPUT (a folder, a glob on the file name, or one image
/// file), natural-sorted. Throws IoError / FormatError naming the input when there are none.
std::vector<std::string> list_image_sequence(const std::string& input);

std::unique_ptr<FrameSource> open_image_sequence(const std::string& input, const ReaderParams& p);
std::unique_ptr<FrameSource> open_opencv_video(const std::string& input, const ReaderParams& p);
/// Uncompressed 8-bit grey AVI read directly (raw_avi.cpp); nullptr when the file is not one
/// (compressed, colour, not an AVI): the OpenCV reader takes it.
std::unique_ptr<FrameSource> open_raw_avi(const std::string& input, const ReaderParams& p);

}  // namespace vibra::tracking::detail
