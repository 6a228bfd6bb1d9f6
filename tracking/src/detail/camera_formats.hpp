// SPDX-License-Identifier: GPL-3.0-or-later
// Internal: the camera-file header parsers behind open_cine / open_mraw (camera_formats.hpp).
// They are pure and OpenCV-free: they take bytes and return plain header structs whose every size
// and offset has been checked against the file size, so a lying or damaged header becomes a
// vibra::FormatError naming the file (and frame), never a crash or a huge allocation. The fuzz
// targets (tests/fuzz) and tests/tracking/test_camera_formats.cpp call them directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vibra::tracking::detail {

using ByteSpan = std::span<const std::uint8_t>;

/// How the pixels of one image are stored.
enum class PixelPacking {
    u8,            ///< one byte per sample
    u16le,         ///< two bytes per sample, little-endian
    packed10_msb,  ///< 4 samples in 5 bytes, most significant bit first (Phantom BI_PACKED)
    packed12_msb,  ///< 2 samples in 3 bytes, most significant bit first (Photron 12-bit .mraw)
    packed12_lsb,  ///< 2 samples in 3 bytes, least significant bits first (Phantom "12L")
};

/// Bytes needed for `n_samples` samples packed as `p` (rounded up to whole bytes).
std::uint64_t packed_bytes(PixelPacking p, std::uint64_t n_samples);

/// Unpacks `n` samples from `src` into `out` (src.size() must be ≥ packed_bytes(p, n), else
/// std::invalid_argument). Values are the stored counts (no LUT, no shift).
void unpack_samples(ByteSpan src, PixelPacking p, std::size_t n, std::uint16_t* out);

/// Phantom 10-bit packed code → 12-bit linear count (Vision Research's published "LinLUT").
std::uint16_t cine_lin_lut(std::uint16_t code10);

// ------------------------------------------------------------------------------------------------
// Phantom .cine
// ------------------------------------------------------------------------------------------------

/// Everything vibra needs from a .cine's header, setup and tagged blocks, validated.
struct CineHeader {
    // CINEFILEHEADER
    std::uint16_t compression = 0;  ///< 0 grey/uninterpolated-colour, 1 JPEG, 2 raw (CFA)
    std::uint16_t version = 0;
    std::int32_t first_movie_image = 0;
    std::uint32_t total_image_count = 0;
    std::int32_t first_image_no = 0;  ///< camera image number of stored image 0 (may be < 0)
    std::uint32_t image_count = 0;    ///< stored images
    std::uint32_t off_image_header = 0, off_setup = 0, off_image_offsets = 0;
    std::uint64_t trigger_time = 0;  ///< TIME64: seconds since 1970 (high 32 bits) + 2^-32 s fractions
    // BITMAPINFOHEADER
    std::int64_t width = 0, height = 0;  ///< px (height is |biHeight|)
    bool bottom_up = true;               ///< rows stored last row first (uncompressed files, biHeight > 0)
    std::uint16_t bit_count = 0;         ///< biBitCount: bits per pixel of the container (8, 16, 24, 48)
    std::uint32_t bi_compression = 0;    ///< 0 none, 256 packed 10-bit, 1024 packed 12-bit (12L)
    std::uint32_t bi_size_image = 0;     ///< bytes of one image as the header states it
    // SETUP (only the fields vibra uses; 0 when the setup block is too short to hold them)
    std::uint32_t frame_rate = 0;  ///< frames/s as set on the camera
    std::uint32_t shutter_ns = 0;  ///< exposure, ns
    std::uint32_t real_bpp = 0;    ///< significant bits per sample (e.g. 12 in a 16-bit container)
    std::uint32_t cfa = 0;         ///< colour filter array code, 0 = mono
    bool enable_color = false;
    std::uint32_t decimation = 0;
    std::int32_t black_level = 0, white_level = 0;
    std::uint16_t setup_length = 0;
    // Derived layout
    PixelPacking packing = PixelPacking::u16le;
    int channels = 1;               ///< 1 grey, 3 colour (stored B, G, R)
    int significant_bits = 8;       ///< what VideoInfo.bit_depth reports
    std::uint64_t image_bytes = 0;  ///< bytes of pixel data per image, computed from the size and packing
    // Tagged blocks and offset table
    std::vector<std::uint64_t> image_offsets;  ///< file offset of each image's annotation (size image_count)
    std::vector<std::uint64_t> time_stamps;    ///< TIME64 per image (tag 1002 or 1001), empty if absent
    std::vector<std::uint32_t> exposures;  ///< per-image exposure, 2^-32 s units (tag 1003), empty if absent
};

/// Parses a .cine's metadata. `head` holds the file's first bytes — at least up to the end of the
/// image offset table (off_image_offsets + 8 × image_count); `file_size` is the whole file's size.
/// Checks every offset and size against `file_size`; throws FormatError naming `name`.
CineHeader parse_cine_header(ByteSpan head, std::uint64_t file_size, const std::string& name);

/// Bytes of the file needed by parse_cine_header, from the first 44 bytes (the file header) alone;
/// validated against file_size. Throws FormatError naming `name`.
std::uint64_t cine_header_extent(ByteSpan first44, std::uint64_t file_size, const std::string& name);

/// Where one image's pixels are, after its annotation.
struct CineImageExtent {
    std::uint64_t pixel_offset = 0;
    std::uint64_t pixel_bytes = 0;
};

/// Validates image `i` given the annotation size and the image size stored at the image's
/// offset (the first and last 32-bit words of its annotation). Throws FormatError naming `name`
/// and the frame: annotation too small or past the end, image size that disagrees with the header's
/// width, height and bit depth, pixels past the end of the file.
CineImageExtent cine_image_extent(const CineHeader& h, std::size_t i, std::uint32_t annotation_size,
                                  std::uint32_t image_size, std::uint64_t file_size, const std::string& name);

// ------------------------------------------------------------------------------------------------
// Photron .mraw + .cih / .cihx
// ------------------------------------------------------------------------------------------------

/// What a Photron camera information header says about the .mraw beside it.
struct PhotronHeader {
    std::int64_t width = 0, height = 0;         ///< px
    std::int64_t n_frames = 0;                  ///< total frames in the .mraw
    int color_bit = 0;                          ///< bits per stored pixel: 8, 12 (packed) or 16
    int effective_bit_depth = 0;                ///< significant bits (0 = same as color_bit)
    std::string effective_side;                 ///< "Lower" or "Higher" (where the significant bits sit)
    std::string color_type;                     ///< "Mono", "Raw", "Color", …
    double record_rate = 0;                     ///< frames/s
    std::string shutter;                        ///< as written (e.g. "1/800000" s or a 1/x integer)
    double shutter_s = 0;                       ///< exposure in s when it could be interpreted, else 0
    std::int64_t start_frame = 0;               ///< camera image number of frame 0
    std::int64_t skip_frame = 1;                ///< save step (every n-th recorded frame was saved)
    std::string trigger_time;                   ///< as written
    std::string file_format;                    ///< "MRaw", …
    std::map<std::string, std::string> fields;  ///< every key seen (text) / leaf path (XML), raw values
};

/// Parses a text .cih ("Key : Value" lines). Throws FormatError naming `name` and the field.
PhotronHeader parse_cih_text(std::string_view text, const std::string& name);
/// Parses a .cihx: optional binary preamble, then XML from "<?xml" or "<cih>" to "</cih>".
PhotronHeader parse_cihx_xml(ByteSpan data, const std::string& name);

/// Layout of a .mraw implied by its header, checked against the .mraw's size.
struct MrawLayout {
    PixelPacking packing = PixelPacking::u8;
    std::uint64_t frame_bytes = 0;  ///< bytes per frame
    std::int64_t n_frames = 0;      ///< frames the header promises
    std::int64_t n_complete = 0;    ///< frames wholly present in the file (≤ n_frames)
};

/// Validates the header (sizes, bit depth) and computes the frame layout; `mraw_size` is the size
/// of the .mraw in bytes. Throws FormatError naming `name` for absurd sizes, an unsupported bit
/// depth, or a file whose size is not a whole number of frames larger than the header promises.
MrawLayout mraw_layout(const PhotronHeader& h, std::uint64_t mraw_size, const std::string& name);

}  // namespace vibra::tracking::detail
