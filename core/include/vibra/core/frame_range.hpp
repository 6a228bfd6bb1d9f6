// SPDX-License-Identifier: GPL-3.0-or-later
// The one rule for a frame range typed on the command line (`--frames` of track, render, convert,
// batch manifests): "A:B" is frames A … B−1 (0-based, B exclusive), "A:" from A to the end, ":B"
// the first B frames, "A" frame A alone; A and B are non-negative integers and A < B.
#pragma once

#include <cstdint>
#include <string>

namespace vibra {

struct FrameRange {
    std::int64_t first = 0;  ///< first frame (0-based)
    std::int64_t last = -1;  ///< one past the last frame; −1 = to the end of the input
};

/// Parses `text` by the rule above. Throws vibra::ParameterError naming `flag` and the text as
/// typed ("--frames: '5:2' is not A:B with 0 <= A < B (B exclusive)") for anything else.
FrameRange parse_frame_range(const std::string& text, const std::string& flag = "--frames");

}  // namespace vibra
