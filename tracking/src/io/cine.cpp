// SPDX-License-Identifier: GPL-3.0-or-later
// Vision Research Phantom .cine: header parsing (pure, fuzzed) and the streaming FrameSource.
// Layout in our own words (docs/formats.md has the full description):
//   [0, 44)            file header: "CI", header size, compression, version, first movie image,
//                      total image count, first image number, image count, offsets of the bitmap
//                      header, the setup block and the image offset table, trigger time (TIME64)
//   off_image_header   BITMAPINFOHEADER (40 bytes): width, height (> 0 = rows bottom-up), bit count,
//                      compression (0 none, 256 packed 10-bit, 1024 packed 12-bit "12L"), image size
//   off_setup          SETUP block; its own length at byte 142; frame rate, shutter, RealBPP, …
//   setup end …        tagged blocks up to the offset table: u32 size, u16 type, u16 reserved, data;
//                      1002 (or 1001) = TIME64 per image, 1003 = exposure per image (2^-32 s)
//   off_image_offsets  image_count × u64: file offset of each image
//   each image         annotation (u32 size incl. itself, …, last u32 = image size) then pixels
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <sstream>
#include <stdexcept>

#include "detail/camera_io.hpp"
#include "detail/camera_linlut.hpp"
#include "vibra/core/error.hpp"
#include "detail/camera_formats.hpp"
#include "vibra/tracking/camera_formats.hpp"

#ifndef VIBRA_CAMERA_PARSERS_ONLY
#include "vibra/tracking/video.hpp"
#endif

namespace vibra::tracking::detail {

namespace {

constexpr std::uint64_t kFileHeaderBytes = 44;
constexpr std::uint64_t kBitmapHeaderBytes = 40;
constexpr std::int64_t kMaxSide = 1 << 20;  // px; no camera comes near this

// Offsets of the SETUP fields vibra reads (packed structure, little-endian).
constexpr std::uint64_t kSetupFrameRate16 = 0, kSetupShutter16 = 2, kSetupMark = 140, kSetupLength = 142,
                        kSetupEnableColor = 788, kSetupFrameRate = 768, kSetupShutterUs = 772,
                        kSetupCfa = 808, kSetupRealBpp = 896, kSetupDecimation = 1556, kSetupShutterNs = 1568,
                        kSetupBlackLevel = 5732, kSetupWhiteLevel = 5736;

std::string bytes_str(std::uint64_t n) { return std::to_string(n) + " bytes"; }

}  // namespace

// ------------------------------------------------------------------------------------------------
// Packing (shared with mraw.cpp through the public header)
// ------------------------------------------------------------------------------------------------

std::uint64_t packed_bytes(PixelPacking p, std::uint64_t n) {
    switch (p) {
        case PixelPacking::u8:
            return n;
        case PixelPacking::u16le:
            return 2 * n;
        case PixelPacking::packed10_msb:
            return (n * 10 + 7) / 8;
        case PixelPacking::packed12_msb:
        case PixelPacking::packed12_lsb:
            return (n * 12 + 7) / 8;
    }
    return 0;
}

void unpack_samples(ByteSpan src, PixelPacking p, std::size_t n, std::uint16_t* out) {
    if (src.size() < packed_bytes(p, n)) throw std::invalid_argument("unpack_samples: source too short");
    const std::uint8_t* s = src.data();
    switch (p) {
        case PixelPacking::u8:
            for (std::size_t i = 0; i < n; ++i) out[i] = s[i];
            return;
        case PixelPacking::u16le:
            for (std::size_t i = 0; i < n; ++i) out[i] = std::uint16_t(s[2 * i] | (s[2 * i + 1] << 8));
            return;
        case PixelPacking::packed10_msb: {
            // Bit stream, most significant bit first: sample i occupies bits [10 i, 10 i + 10).
            for (std::size_t i = 0; i < n; ++i) {
                const std::uint64_t bit = 10 * std::uint64_t(i);
                const std::size_t b = bit / 8;
                const unsigned sh = unsigned(bit % 8);  // 0, 2, 4 or 6
                const unsigned two = (unsigned(s[b]) << 8) | (b + 1 < src.size() ? s[b + 1] : 0u);
                out[i] = std::uint16_t((two >> (6 - sh)) & 0x3FF);
            }
            return;
        }
        case PixelPacking::packed12_msb:
            for (std::size_t i = 0; i < n; ++i) {
                const std::size_t b = (i / 2) * 3;
                if (i % 2 == 0)
                    out[i] = std::uint16_t((s[b] << 4) | (s[b + 1] >> 4));
                else
                    out[i] = std::uint16_t(((s[b + 1] & 0x0F) << 8) | s[b + 2]);
            }
            return;
        case PixelPacking::packed12_lsb:
            for (std::size_t i = 0; i < n; ++i) {
                const std::size_t b = (i / 2) * 3;
                if (i % 2 == 0)
                    out[i] = std::uint16_t(s[b] | ((s[b + 1] & 0x0F) << 8));
                else
                    out[i] = std::uint16_t((s[b + 1] >> 4) | (s[b + 2] << 4));
            }
            return;
    }
}

std::uint16_t cine_lin_lut(std::uint16_t code10) { return detail::kCineLinLut[code10 & 0x3FF]; }

// ------------------------------------------------------------------------------------------------
// .cine header
// ------------------------------------------------------------------------------------------------

std::uint64_t cine_header_extent(ByteSpan b, std::uint64_t file_size, const std::string& name) {
    using detail::load_le;
    if (b.size() < kFileHeaderBytes || file_size < kFileHeaderBytes)
        throw FormatError(name + ": too short to be a Phantom .cine (" +
                          bytes_str(std::min<std::uint64_t>(b.size(), file_size)) + ")");
    if (b[0] != 'C' || b[1] != 'I') throw FormatError(name + ": not a Phantom .cine (no 'CI' signature)");
    const auto header_size = load_le<std::uint16_t>(b, 2);
    if (header_size < kFileHeaderBytes)
        throw FormatError(at_field(name, "Headersize", std::to_string(header_size) + " < 44"));
    const auto image_count = load_le<std::uint32_t>(b, 20);
    const auto off_bitmap = load_le<std::uint32_t>(b, 24);
    const auto off_setup = load_le<std::uint32_t>(b, 28);
    const auto off_offsets = load_le<std::uint32_t>(b, 32);
    if (image_count == 0) throw FormatError(at_field(name, "ImageCount", "the file holds no images"));
    if (!detail::fits(off_bitmap, kBitmapHeaderBytes, file_size) || off_bitmap < kFileHeaderBytes)
        throw FormatError(at_field(name, "OffImageHeader",
                                   "bitmap header at byte " + std::to_string(off_bitmap) +
                                       " lies outside the file (" + bytes_str(file_size) + ")"));
    if (off_setup < kFileHeaderBytes || off_setup > file_size)
        throw FormatError(at_field(name, "OffSetup",
                                   "setup block at byte " + std::to_string(off_setup) +
                                       " lies outside the file (" + bytes_str(file_size) + ")"));
    if (!detail::fits(off_offsets, 8 * std::uint64_t(image_count), file_size) ||
        off_offsets < kFileHeaderBytes)
        throw FormatError(at_field(name, "OffImageOffsets",
                                   "image offset table (" + std::to_string(image_count) +
                                       " entries at byte " + std::to_string(off_offsets) +
                                       ") extends past the end of the file (" + bytes_str(file_size) + ")"));
    return std::max<std::uint64_t>(off_offsets + 8 * std::uint64_t(image_count),
                                   off_bitmap + kBitmapHeaderBytes);
}

namespace {

// The file header's fields (the first 44 bytes) and the compressions that are refused.
void read_file_header(ByteSpan b, CineHeader& h, const std::string& name) {
    using detail::load_le;
    h.compression = load_le<std::uint16_t>(b, 4);
    h.version = load_le<std::uint16_t>(b, 6);
    h.first_movie_image = load_le<std::int32_t>(b, 8);
    h.total_image_count = load_le<std::uint32_t>(b, 12);
    h.first_image_no = load_le<std::int32_t>(b, 16);
    h.image_count = load_le<std::uint32_t>(b, 20);
    h.off_image_header = load_le<std::uint32_t>(b, 24);
    h.off_setup = load_le<std::uint32_t>(b, 28);
    h.off_image_offsets = load_le<std::uint32_t>(b, 32);
    h.trigger_time = load_le<std::uint64_t>(b, 36);

    if (h.compression == 1)
        throw FormatError(at_field(name, "Compression", "JPEG-compressed .cine is not supported"));
    if (h.compression > 2)
        throw FormatError(at_field(name, "Compression", "unknown value " + std::to_string(h.compression)));
}

// BITMAPINFOHEADER: the image size; returns biHeight (its sign says the row order).
std::int32_t read_bitmap_header(ByteSpan b, CineHeader& h, const std::string& name) {
    using detail::load_le;
    const std::uint64_t bo = h.off_image_header;
    const auto bi_size = load_le<std::uint32_t>(b, bo);
    const auto bi_width = load_le<std::int32_t>(b, bo + 4);
    const auto bi_height = load_le<std::int32_t>(b, bo + 8);
    h.bit_count = load_le<std::uint16_t>(b, bo + 14);
    h.bi_compression = load_le<std::uint32_t>(b, bo + 16);
    h.bi_size_image = load_le<std::uint32_t>(b, bo + 20);
    if (bi_size < kBitmapHeaderBytes)
        throw FormatError(at_field(name, "biSize", std::to_string(bi_size) + " < 40"));
    if (bi_width <= 0 || bi_width > kMaxSide)
        throw FormatError(
            at_field(name, "biWidth", std::to_string(bi_width) + " px is not a valid image width"));
    if (bi_height == 0 || bi_height > kMaxSide || bi_height < -kMaxSide)
        throw FormatError(
            at_field(name, "biHeight", std::to_string(bi_height) + " px is not a valid image height"));
    h.width = bi_width;
    h.height = bi_height < 0 ? -std::int64_t(bi_height) : bi_height;
    return bi_height;
}

// The pixel packing, channels and row order of the bitmap's compression and bit count.
void set_pixel_format(CineHeader& h, std::int32_t bi_height, const std::string& name) {
    switch (h.bi_compression) {
        case 0:  // uncompressed; rows bottom-up when biHeight > 0 (the Windows bitmap rule)
            h.bottom_up = bi_height > 0;
            switch (h.bit_count) {
                case 8:
                    h.packing = PixelPacking::u8;
                    h.channels = 1;
                    break;
                case 16:
                    h.packing = PixelPacking::u16le;
                    h.channels = 1;
                    break;
                case 24:
                    h.packing = PixelPacking::u8;
                    h.channels = 3;
                    break;
                case 48:
                    h.packing = PixelPacking::u16le;
                    h.channels = 3;
                    break;
                default:
                    throw FormatError(at_field(
                        name, "biBitCount",
                        std::to_string(h.bit_count) + " bits per pixel is not supported (8, 16, 24, 48)"));
            }
            break;
        case 256:  // packed 10-bit, stored top row first
            h.packing = PixelPacking::packed10_msb;
            h.bottom_up = false;
            break;
        case 1024:  // packed 12-bit "12L", stored top row first
            h.packing = PixelPacking::packed12_lsb;
            h.bottom_up = false;
            break;
        default:
            throw FormatError(
                at_field(name, "biCompression",
                         "value " + std::to_string(h.bi_compression) +
                             " is not supported (0, 256 = packed 10-bit, 1024 = packed 12-bit)"));
    }
}

// SETUP: read only the fields that lie inside both the block's stated length and the header
// bytes (`extent`); then the significant bits of a sample.
void read_setup(ByteSpan b, CineHeader& h, std::uint64_t extent, const std::string& name) {
    using detail::fits;
    using detail::load_le;
    const std::uint64_t so = h.off_setup;
    if (fits(so, kSetupLength + 2, extent)) {
        if (!(b[so + kSetupMark] == 'S' && b[so + kSetupMark + 1] == 'T'))
            throw FormatError(at_field(name, "Setup.Mark", "setup block has no 'ST' mark"));
        h.setup_length = load_le<std::uint16_t>(b, so + kSetupLength);
    }
    const std::uint64_t setup_end = std::min<std::uint64_t>(so + h.setup_length, extent);
    auto setup_u32 = [&](std::uint64_t f, std::uint32_t dflt) -> std::uint32_t {
        return so + f + 4 <= setup_end ? load_le<std::uint32_t>(b, so + f) : dflt;
    };
    auto setup_u16 = [&](std::uint64_t f) -> std::uint32_t {
        return so + f + 2 <= setup_end ? load_le<std::uint16_t>(b, so + f) : 0;
    };
    h.frame_rate = setup_u32(kSetupFrameRate, setup_u16(kSetupFrameRate16));
    h.shutter_ns = setup_u32(kSetupShutterNs, 0);
    if (h.shutter_ns == 0) {
        const std::uint64_t us = setup_u32(kSetupShutterUs, setup_u16(kSetupShutter16));
        h.shutter_ns = static_cast<std::uint32_t>(std::min<std::uint64_t>(us * 1000, 0xFFFFFFFFu));
    }
    h.enable_color = setup_u32(kSetupEnableColor, 0) != 0;
    h.cfa = setup_u32(kSetupCfa, 0);
    h.real_bpp = setup_u32(kSetupRealBpp, 0);
    h.decimation = setup_u32(kSetupDecimation, 0);
    h.black_level = static_cast<std::int32_t>(setup_u32(kSetupBlackLevel, 0));
    h.white_level = static_cast<std::int32_t>(setup_u32(kSetupWhiteLevel, 0));

    const int container_bits = h.packing == PixelPacking::u8             ? 8
                               : h.packing == PixelPacking::u16le        ? 16
                               : h.packing == PixelPacking::packed10_msb ? 10
                                                                         : 12;
    if (h.real_bpp > static_cast<std::uint32_t>(container_bits) && h.packing != PixelPacking::packed10_msb)
        throw FormatError(at_field(name, "RealBPP",
                                   std::to_string(h.real_bpp) + " significant bits do not fit the " +
                                       std::to_string(container_bits) +
                                       "-bit samples the bitmap header declares"));
    if (h.packing == PixelPacking::packed10_msb)
        h.significant_bits = 12;  // after the LinLUT
    else
        h.significant_bits = h.real_bpp > 0 ? static_cast<int>(h.real_bpp) : container_bits;
}

// Tagged blocks between the setup and the offset table: time stamps (1001, 1002) and exposures
// (1003); a damaged tag chain keeps what was read before it.
void read_tagged_blocks(ByteSpan b, CineHeader& h, std::uint64_t extent) {
    using detail::fits;
    using detail::load_le;
    if (h.setup_length == 0) return;
    const std::uint64_t so = h.off_setup;
    std::uint64_t p = so + h.setup_length;
    const std::uint64_t end = h.off_image_offsets;
    while (p + 8 <= end && p + 8 <= extent) {
        const auto size = load_le<std::uint32_t>(b, p);
        const auto type = load_le<std::uint16_t>(b, p + 4);
        if (size < 8 || !fits(p, size, end)) break;  // damaged tag chain: keep what was read
        const std::uint64_t n_data = size - 8;
        if ((type == 1002 || (type == 1001 && h.time_stamps.empty())) && n_data / 8 >= h.image_count) {
            h.time_stamps.resize(h.image_count);
            for (std::uint32_t i = 0; i < h.image_count; ++i)
                h.time_stamps[i] = load_le<std::uint64_t>(b, p + 8 + 8 * std::uint64_t(i));
        } else if (type == 1003 && n_data / 4 >= h.image_count) {
            h.exposures.resize(h.image_count);
            for (std::uint32_t i = 0; i < h.image_count; ++i)
                h.exposures[i] = load_le<std::uint32_t>(b, p + 8 + 4 * std::uint64_t(i));
        }
        p += size;
    }
}

}  // namespace

CineHeader parse_cine_header(ByteSpan b, std::uint64_t file_size, const std::string& name) {
    using detail::load_le;
    const std::uint64_t extent = cine_header_extent(b, file_size, name);
    if (b.size() < extent)
        throw FormatError(name + ": header needs " + bytes_str(extent) + ", only " + bytes_str(b.size()) +
                          " given");
    CineHeader h;
    read_file_header(b, h, name);
    set_pixel_format(h, read_bitmap_header(b, h, name), name);
    const std::uint64_t samples =
        std::uint64_t(h.width) * std::uint64_t(h.height) * std::uint64_t(h.channels);
    h.image_bytes = packed_bytes(h.packing, samples);
    // Sizes that cannot fit in the file at all are rejected before anything is allocated.
    if (h.image_bytes > file_size)
        throw FormatError(name + ": one image of " + std::to_string(h.width) + " x " +
                          std::to_string(h.height) + " px (" + bytes_str(h.image_bytes) +
                          ") is larger than the whole file (" + bytes_str(file_size) + ")");
    read_setup(b, h, extent, name);
    read_tagged_blocks(b, h, extent);
    h.image_offsets.resize(h.image_count);
    for (std::uint32_t i = 0; i < h.image_count; ++i)
        h.image_offsets[i] = load_le<std::uint64_t>(b, h.off_image_offsets + 8 * std::uint64_t(i));
    return h;
}

CineImageExtent cine_image_extent(const CineHeader& h, std::size_t i, std::uint32_t annotation_size,
                                  std::uint32_t image_size, std::uint64_t file_size,
                                  const std::string& name) {
    if (i >= h.image_offsets.size()) throw std::out_of_range("cine_image_extent: frame index");
    const auto fi = static_cast<std::int64_t>(i);
    const std::uint64_t off = h.image_offsets[i];
    const std::string img = " (image number " + std::to_string(std::int64_t(h.first_image_no) + fi) + ")";
    if (!detail::fits(off, 8, file_size))
        throw FormatError(at_frame(name, fi,
                                   "image offset " + std::to_string(off) +
                                       " lies past the end of the file (" + bytes_str(file_size) + ")" +
                                       img));
    if (off < kFileHeaderBytes)
        throw FormatError(
            at_frame(name, fi, "image offset " + std::to_string(off) + " points into the file header" + img));
    if (annotation_size < 8 || !detail::fits(off, annotation_size, file_size))
        throw FormatError(at_frame(name, fi,
                                   "annotation size " + std::to_string(annotation_size) +
                                       " is impossible at byte " + std::to_string(off) + img));
    if (image_size != h.image_bytes)
        throw FormatError(at_frame(name, fi,
                                   "stored image size " + bytes_str(image_size) +
                                       " disagrees with the header (" + std::to_string(h.width) + " x " +
                                       std::to_string(h.height) + " px, " + std::to_string(h.bit_count) +
                                       " bits per pixel, biCompression " + std::to_string(h.bi_compression) +
                                       " → " + bytes_str(h.image_bytes) +
                                       "): the header lies about the size or bit depth" + img));
    CineImageExtent e;
    e.pixel_offset = off + annotation_size;
    e.pixel_bytes = image_size;
    if (!detail::fits(e.pixel_offset, e.pixel_bytes, file_size))
        throw FormatError(at_frame(
            name, fi,
            "image data (" + bytes_str(e.pixel_bytes) + " at byte " + std::to_string(e.pixel_offset) +
                ") extend past the end of the file (" + bytes_str(file_size) + "): truncated" + img));
    return e;
}

}  // namespace vibra::tracking::detail

// ------------------------------------------------------------------------------------------------
// Streaming reader
// ------------------------------------------------------------------------------------------------
#ifndef VIBRA_CAMERA_PARSERS_ONLY
#include <opencv2/core.hpp>

#include "detail/camera_reader.hpp"

namespace vibra::tracking {

namespace {

using namespace detail;  // the header parsers above

/// Seconds between two TIME64 stamps (b − a), exact to the 2^-32 s fraction.
double time64_diff(std::uint64_t a, std::uint64_t b) {
    const auto sa = std::int64_t(a >> 32), sb = std::int64_t(b >> 32);
    const auto fa = std::int64_t(a & 0xFFFFFFFFu), fb = std::int64_t(b & 0xFFFFFFFFu);
    return double(sb - sa) + double(fb - fa) / 4294967296.0;
}

std::string time64_iso(std::uint64_t t) {
    const std::time_t s = static_cast<std::time_t>(t >> 32);
    std::tm tm{};
    if (!gmtime_r(&s, &tm)) return "invalid";
    char buf[64];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    char frac[32];
    std::snprintf(frac, sizeof frac, "%.9f", double(t & 0xFFFFFFFFu) / 4294967296.0);
    return std::string(buf) + (frac + 1) + "Z";  // frac = "0.xxxxxxxxx" → ".xxxxxxxxx"
}

class CineSource final : public detail::CameraSource {
public:
    CineSource(const std::string& path, const ReaderParams& params) : CameraSource(path) {
        const std::uint64_t size = file_.size();
        std::uint8_t first[44] = {};
        if (size < 44 || !file_.read_at(0, first, 44))
            throw FormatError(path + ": too short to be a Phantom .cine (" + std::to_string(size) +
                              " bytes)");
        const std::uint64_t extent = cine_header_extent(ByteSpan(first, 44), size, path);
        const auto head = file_.read_vec(0, extent);
        h_ = parse_cine_header(head, size, path);

        info_.path = path;
        info_.format = "cine";
        info_.width = h_.width;
        info_.height = h_.height;
        info_.n_frames = h_.image_count;
        info_.bit_depth = h_.significant_bits;
        auto& x = info_.extra;
        x["first_image_number"] = std::to_string(h_.first_image_no);
        x["trigger_time"] = time64_iso(h_.trigger_time) + " (camera clock)";
        x["frame_rate_setup"] = std::to_string(h_.frame_rate) + " frames/s";
        x["exposure_s"] = header_number(h_.shutter_ns * 1e-9);
        x["bit_depth_container"] = std::to_string(h_.bit_count);
        x["real_bpp"] = std::to_string(h_.real_bpp);
        x["rows"] = h_.bottom_up ? "stored bottom-up (returned top row first)" : "stored top-down";
        if (h_.decimation > 1) x["decimation"] = std::to_string(h_.decimation);
        if (h_.packing == PixelPacking::packed10_msb)
            x["packing"] = "10-bit packed, linearised to 12 bits by the Phantom LinLUT";
        else if (h_.packing == PixelPacking::packed12_lsb)
            x["packing"] = "12-bit packed (12L)";
        if (h_.channels == 3)
            x["colour"] = params.channel < 0
                              ? "colour read as grey: round(0.299 R + 0.587 G + 0.114 B)"
                              : "colour read as channel " + std::string(1, "RGB"[params.channel % 3]);
        if (h_.compression == 2 || h_.cfa != 0)
            x["sensor"] = "colour-filter-array sensor (CFA " + std::to_string(h_.cfa) +
                          "): stored counts returned, not demosaiced";
        if (h_.black_level || h_.white_level)
            x["levels"] = "black " + std::to_string(h_.black_level) + ", white " +
                          std::to_string(h_.white_level) + " (not applied)";

        if (!h_.exposures.empty()) x["exposure_s"] = header_number(h_.exposures[0] / 4294967296.0);
        if (h_.time_stamps.size() >= 2) {
            const double span = time64_diff(h_.time_stamps.front(), h_.time_stamps.back());
            if (span > 0) info_.fps = double(h_.time_stamps.size() - 1) / span;
            x["time_origin"] = "time_s = 0 at image " + std::to_string(h_.first_image_no) + ", " +
                               time64_iso(h_.time_stamps.front()) + " (camera clock); trigger " +
                               header_number(time64_diff(h_.time_stamps.front(), h_.trigger_time)) +
                               " s later";
        }
        if (info_.fps <= 0) {
            info_.fps = h_.frame_rate;
        } else if (h_.frame_rate > 0 && std::abs(info_.fps - h_.frame_rate) > 0.01 * h_.frame_rate) {
            x["warning"] = "frame rate from the time stamps (" + header_number(info_.fps) +
                           " frames/s) disagrees with the setup's " + std::to_string(h_.frame_rate) +
                           " frames/s (saved with decimation?); the time stamps are used";
        }
        x["fps_source"] = h_.time_stamps.size() >= 2 ? "time stamps" : "setup";
        std::int64_t past = 0;
        for (auto o : h_.image_offsets) past += o >= size ? 1 : 0;
        if (past > 0) x["truncated"] = std::to_string(past) + " image offsets lie past the end of the file";

        set_range(params, h_.image_count);
        channel_ = params.channel;
    }

protected:
    ReadStatus decode(std::int64_t i, Frame& frame) override {
        const auto u = static_cast<std::size_t>(i);
        const std::uint64_t off = h_.image_offsets[u];
        std::uint32_t annot = 0, isize = 0;
        if (off >= file_.size() || !file_.read_at(off, &annot, 4)) {
            return fail(ReadStatus::truncated,
                        at_frame(path_, i,
                                 "image offset " + std::to_string(off) + " lies past the end of the file (" +
                                     std::to_string(file_.size()) + " bytes)"));
        }
        annot = le32(annot);
        if (annot >= 8 && off + annot <= file_.size() && file_.read_at(off + annot - 4, &isize, 4))
            isize = le32(isize);
        CineImageExtent e;
        try {
            e = cine_image_extent(h_, u, annot, isize, file_.size(), path_);
        } catch (const FormatError& err) {
            const bool past_end =
                annot >= 8 && (off + annot > file_.size() ||
                               (isize == h_.image_bytes && off + annot + isize > file_.size()));
            return fail(past_end ? ReadStatus::truncated : ReadStatus::corrupt, err.what());
        }
        buf_.resize(e.pixel_bytes);
        if (!file_.read_at(e.pixel_offset, buf_.data(), e.pixel_bytes))
            return fail(ReadStatus::truncated, at_frame(path_, i, "file ends inside the image data"));

        const auto w = static_cast<int>(h_.width), hh = static_cast<int>(h_.height);
        const std::size_t n = std::size_t(w) * std::size_t(hh) * std::size_t(h_.channels);
        samples_.resize(n);
        unpack_samples(buf_, h_.packing, n, samples_.data());
        if (h_.packing == PixelPacking::packed10_msb)
            for (auto& s : samples_) s = cine_lin_lut(s);
        const bool eight = h_.packing == PixelPacking::u8;
        cv::Mat img(hh, w, eight ? CV_8UC1 : CV_16UC1);
        for (int r = 0; r < hh; ++r) {
            const int src_row = h_.bottom_up ? hh - 1 - r : r;
            const std::uint16_t* s =
                samples_.data() + std::size_t(src_row) * std::size_t(w) * std::size_t(h_.channels);
            for (int c = 0; c < w; ++c) {
                unsigned v;
                if (h_.channels == 1) {
                    v = s[c];
                } else {  // stored B, G, R
                    const std::uint16_t* px = s + 3 * std::size_t(c);
                    v = detail::grey_from_rgb(px[2], px[1], px[0], channel_);
                }
                if (eight)
                    img.at<std::uint8_t>(r, c) = static_cast<std::uint8_t>(v);
                else
                    img.at<std::uint16_t>(r, c) = static_cast<std::uint16_t>(v);
            }
        }
        frame.image = img;
        frame.image_number = std::int64_t(h_.first_image_no) + i;
        frame.time_s =
            h_.time_stamps.size() > u ? time64_diff(h_.time_stamps.front(), h_.time_stamps[u]) : -1.0;
        return ReadStatus::ok;
    }

private:
    static std::uint32_t le32(std::uint32_t v) {
        const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
        return std::uint32_t(p[0]) | (std::uint32_t(p[1]) << 8) | (std::uint32_t(p[2]) << 16) |
               (std::uint32_t(p[3]) << 24);
    }
    CineHeader h_;
    int channel_ = -1;
    std::vector<std::uint8_t> buf_;
    std::vector<std::uint16_t> samples_;
};

}  // namespace

std::unique_ptr<FrameSource> open_cine(const std::string& path, const ReaderParams& params) {
    return std::make_unique<CineSource>(path, params);
}

}  // namespace vibra::tracking
#endif
