// SPDX-License-Identifier: GPL-3.0-or-later
// Video-facing pieces of the CLI (built only with the tracking module): `vibra info VIDEO`.
#include <iostream>

#include "commands.hpp"
#include "vibra/core/error.hpp"
#include "vibra/tracking/video.hpp"

namespace vibra::app {

bool print_video_info(const std::string& path, std::ostream& os) {
    auto src = tracking::open_video(path);
    const auto& i = src->info();
    os << "file:        " << i.path << "\n";
    os << "format:      " << i.format << "\n";
    os << "size:        " << i.width << " x " << i.height << " px\n";
    os << "frames:      " << (i.n_frames >= 0 ? std::to_string(i.n_frames) : std::string("unknown")) << "\n";
    os << "frame rate:  " << (i.fps > 0 ? std::to_string(i.fps) + " frames/s" : std::string("unknown"))
       << "\n";
    os << "bit depth:   " << i.bit_depth << "\n";
    for (const auto& [k, v] : i.extra) os << k << ": " << v << "\n";
    return true;
}

}  // namespace vibra::app
