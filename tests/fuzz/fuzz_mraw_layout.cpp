// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: .mraw frame-size logic (mraw_layout) on arbitrary header numbers and file
// sizes, and the sample unpacking of the frame that would be read.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "vibra/core/error.hpp"
#include "detail/camera_formats.hpp"  // the internal header parsers

using namespace vibra::tracking;
using namespace vibra::tracking::detail;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 40) return 0;
    std::int64_t v[5];
    std::memcpy(v, data, sizeof v);
    PhotronHeader h;
    h.width = v[0];
    h.height = v[1];
    h.n_frames = v[2];
    h.color_bit = static_cast<int>(v[3] & 0xFF);
    h.effective_bit_depth = static_cast<int>((v[3] >> 8) & 0xFF);
    const std::uint64_t mraw_size = static_cast<std::uint64_t>(v[4]);
    try {
        const auto L = mraw_layout(h, mraw_size, "fuzz.cihx");
        if (L.frame_bytes == 0 || L.frame_bytes > mraw_size || L.n_complete > L.n_frames || L.n_complete < 0)
            std::abort();
        if (std::uint64_t(L.n_complete) * L.frame_bytes > mraw_size) std::abort();
        if (packed_bytes(L.packing, std::uint64_t(h.width) * std::uint64_t(h.height)) != L.frame_bytes)
            std::abort();
        // Unpack the rest of the input as one frame when it is large enough.
        const std::size_t n = std::size_t(h.width) * std::size_t(h.height);
        if (L.frame_bytes <= size - 40 && n <= (1u << 16)) {
            std::vector<std::uint16_t> out(n);
            unpack_samples(ByteSpan(data + 40, size - 40), L.packing, n, out.data());
            const unsigned max = L.packing == PixelPacking::packed12_msb ? 4095u
                                 : L.packing == PixelPacking::u8         ? 255u
                                                                         : 65535u;
            for (auto s : out)
                if (s > max) std::abort();
        }
    } catch (const vibra::FormatError&) {}
    return 0;
}
