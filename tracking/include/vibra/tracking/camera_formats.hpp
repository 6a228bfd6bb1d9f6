// SPDX-License-Identifier: GPL-3.0-or-later
// Native high-speed camera files: Vision Research Phantom .cine and Photron .mraw with its .cih
// (text) or .cihx (XML) header, opened as a FrameSource (usually through open_video, video.hpp).
// Their header parsers are internal (tracking/src/detail/camera_formats.hpp); docs/formats.md has
// the layouts.
#pragma once

#include <memory>
#include <string>

namespace vibra::tracking {

struct ReaderParams;
class FrameSource;

// ------------------------------------------------------------------------------------------------
// Readers
// ------------------------------------------------------------------------------------------------

/// Opens a .cine (Phantom) file as a FrameSource. Per-frame problems (data past the end of the
/// file, an annotation that lies) make next() return ReadStatus::truncated / corrupt and put a
/// message naming the file and frame into info().extra["last_error"].
std::unique_ptr<FrameSource> open_cine(const std::string& path, const ReaderParams& params);

/// Opens a Photron recording: `path` may be the .mraw, the .cih or the .cihx (the partner file is
/// the same name with the other extension; .cihx is preferred over .cih).
std::unique_ptr<FrameSource> open_mraw(const std::string& path, const ReaderParams& params);

/// Opens `path` if its extension is a camera format (.cine, .mraw, .cih, .cihx, any case);
/// returns nullptr for anything else.
std::unique_ptr<FrameSource> open_camera_file(const std::string& path, const ReaderParams& params);

}  // namespace vibra::tracking
