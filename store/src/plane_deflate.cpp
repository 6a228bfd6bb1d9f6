// SPDX-License-Identifier: GPL-3.0-or-later
#include "detail/plane_deflate.hpp"

#include <algorithm>
#include <cstring>

namespace vibra::store::detail {

namespace {

// Stored blocks (RFC 1951, 3.2.4) of p[0, m) at `o`, the last one final when `final_block`;
// returns the end. Byte-aligned: header byte (BFINAL, BTYPE 00, padding), LEN, NLEN, the bytes.
std::uint8_t* put_stored(std::uint8_t* o, const std::uint8_t* p, std::size_t m, bool final_block) {
    do {
        const std::size_t len = std::min<std::size_t>(m, 65535);
        m -= len;
        *o++ = final_block && m == 0 ? 1 : 0;
        *o++ = static_cast<std::uint8_t>(len), *o++ = static_cast<std::uint8_t>(len >> 8);
        *o++ = static_cast<std::uint8_t>(~len), *o++ = static_cast<std::uint8_t>(~len >> 8);
        std::memcpy(o, p, len);
        o += len, p += len;
    } while (m > 0);
    return o;
}

}  // namespace

std::size_t zlib_planes_bound(libdeflate_compressor* z, std::size_t n) {
    return std::max(libdeflate_zlib_compress_bound(z, n), n + 5 * (n / 65535 + 2)) + 2 + 5 + 4;
}

std::size_t zlib_compress_planes(libdeflate_compressor* z, const std::uint8_t* in, std::size_t n,
                                 std::size_t planes, std::uint8_t* out, std::size_t cap) {
    if (planes <= 1 || n % planes != 0 || n < planes * 4096)
        return libdeflate_zlib_compress(z, in, n, out, cap);
    const std::size_t m = n / planes;
    // The leading planes that are noise: a 4 KiB sample from the plane's middle does not deflate
    // to 98% of its size.
    std::size_t k = 0;
    std::uint8_t trial[4096];
    for (; k < planes; ++k) {
        const std::size_t room = sizeof trial * 49 / 50;
        if (libdeflate_deflate_compress(z, in + k * m + (m - sizeof trial) / 2, sizeof trial, trial, room) !=
            0)
            break;
    }
    if (k == 0) return libdeflate_zlib_compress(z, in, n, out, cap);  // nothing to store: deflated whole
    const std::size_t stored = k * m;
    if (cap < stored + 5 * (stored / 65535 + 2) + 2 + 4) return 0;
    std::uint8_t* o = out;
    *o++ = 0x78, *o++ = 0x01;  // zlib header: deflate, 32 KiB window, fastest
    o = put_stored(o, in, stored, k == planes);
    if (k < planes) {  // the rest by libdeflate: its output starts on a byte and ends with the final block
        const std::size_t rest = libdeflate_deflate_compress(z, in + stored, n - stored, o,
                                                             cap - static_cast<std::size_t>(o - out) - 4);
        if (rest == 0) return 0;
        o += rest;
    }
    const std::uint32_t adler = libdeflate_adler32(1, in, n);
    o[0] = static_cast<std::uint8_t>(adler >> 24), o[1] = static_cast<std::uint8_t>(adler >> 16);
    o[2] = static_cast<std::uint8_t>(adler >> 8), o[3] = static_cast<std::uint8_t>(adler);
    return static_cast<std::size_t>(o + 4 - out);
}

}  // namespace vibra::store::detail
