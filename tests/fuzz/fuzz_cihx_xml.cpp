// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: Photron .cihx (binary preamble + XML) header parser and the .mraw layout.
#include <cstdint>
#include <cstdlib>

#include "vibra/core/error.hpp"
#include "detail/camera_formats.hpp"  // the internal header parsers

using namespace vibra::tracking;
using namespace vibra::tracking::detail;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        const auto h = parse_cihx_xml(ByteSpan(data, size), "fuzz.cihx");
        if (h.width <= 0 || h.height <= 0 || h.n_frames < 0) std::abort();
        try {
            const auto L = mraw_layout(h, std::uint64_t(1) << 30, "fuzz.cihx");
            if (L.frame_bytes == 0 || L.n_complete > L.n_frames) std::abort();
        } catch (const vibra::FormatError&) {}
    } catch (const vibra::FormatError&) {}
    return 0;
}
