// SPDX-License-Identifier: GPL-3.0-or-later
// open_video dispatch. (Readers are being added: see issue #3.)
#include "vibra/tracking/video.hpp"

#include "vibra/core/error.hpp"

namespace vibra::tracking {

std::unique_ptr<FrameSource> open_video(const std::string& input, const ReaderParams&) {
    throw FormatError(input + ": no video reader is available yet");
}

}  // namespace vibra::tracking
