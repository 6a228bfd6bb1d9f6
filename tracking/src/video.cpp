// SPDX-License-Identifier: GPL-3.0-or-later
// open_video dispatch. (Readers are being added: see issue #3.)
#include "vibra/tracking/video.hpp"

#include "vibra/core/error.hpp"
#include "vibra/tracking/camera_formats.hpp"  // camera formats (issue 7)

namespace vibra::tracking {

std::unique_ptr<FrameSource> open_video(const std::string& input, const ReaderParams& params) {
    // Camera formats (.cine, .mraw/.cih/.cihx) first (issue 7).
    if (auto cam = open_camera_file(input, params)) return cam;
    throw FormatError(input + ": no video reader is available yet");
}

}  // namespace vibra::tracking
