// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: Phantom .cine header, setup, tagged blocks, offset table and per-image extents.
// The input is a whole (small) file. Every accepted header must describe extents inside the file.
#include <cstdint>
#include <cstdlib>

#include "vibra/core/error.hpp"
#include "detail/camera_formats.hpp"  // the internal header parsers

using namespace vibra::tracking;
using namespace vibra::tracking::detail;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const ByteSpan b(data, size);
    // Also pretend the file is longer than the bytes given (header read from a prefix).
    for (const std::uint64_t file_size : {std::uint64_t(size), std::uint64_t(size) + 4096}) {
        try {
            (void)cine_header_extent(b, file_size, "fuzz.cine");
        } catch (const vibra::FormatError&) {}
        CineHeader h;
        try {
            h = parse_cine_header(b, file_size, "fuzz.cine");
        } catch (const vibra::FormatError&) {
            continue;
        }
        if (h.image_offsets.size() != h.image_count || h.width <= 0 || h.height <= 0 ||
            h.image_bytes > file_size)
            std::abort();
        if (!h.time_stamps.empty() && h.time_stamps.size() != h.image_count) std::abort();
        for (std::size_t i = 0; i < h.image_offsets.size() && i < 64; ++i) {
            const std::uint64_t off = h.image_offsets[i];
            std::uint32_t annot = 0, isize = 0;
            if (off <= size && size - off >= 4)
                annot = std::uint32_t(data[off]) | std::uint32_t(data[off + 1]) << 8 |
                        std::uint32_t(data[off + 2]) << 16 | std::uint32_t(data[off + 3]) << 24;
            if (annot >= 8 && off + annot <= size) {
                const std::uint64_t p = off + annot - 4;
                isize = std::uint32_t(data[p]) | std::uint32_t(data[p + 1]) << 8 |
                        std::uint32_t(data[p + 2]) << 16 | std::uint32_t(data[p + 3]) << 24;
            }
            try {
                const auto e = cine_image_extent(h, i, annot, isize, file_size, "fuzz.cine");
                if (e.pixel_offset + e.pixel_bytes > file_size || e.pixel_bytes != h.image_bytes)
                    std::abort();
                if (e.pixel_offset + e.pixel_bytes <= size && e.pixel_bytes <= (1u << 20)) {
                    static std::uint16_t out[1u << 20];
                    const std::uint64_t n =
                        std::uint64_t(h.width) * std::uint64_t(h.height) * std::uint64_t(h.channels);
                    if (n <= (1u << 20))
                        unpack_samples(ByteSpan(data + e.pixel_offset, e.pixel_bytes), h.packing, n, out);
                }
            } catch (const vibra::FormatError&) {}
        }
    }
    return 0;
}
