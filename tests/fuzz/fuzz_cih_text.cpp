// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: Photron text .cih header parser and the .mraw layout computed from it.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "vibra/core/error.hpp"
#include "detail/camera_formats.hpp"  // the internal header parsers

using namespace vibra::tracking;
using namespace vibra::tracking::detail;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        const auto h =
            parse_cih_text(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.cih");
        if (h.width <= 0 || h.height <= 0 || h.n_frames < 0) std::abort();
        for (std::uint64_t mraw_size : {std::uint64_t(0), std::uint64_t(1) << 20, std::uint64_t(1) << 40}) {
            try {
                const auto L = mraw_layout(h, mraw_size, "fuzz.cih");
                if (L.frame_bytes == 0 || L.frame_bytes > mraw_size || L.n_complete > L.n_frames)
                    std::abort();
            } catch (const vibra::FormatError&) {}
        }
    } catch (const vibra::FormatError&) {}
    return 0;
}
