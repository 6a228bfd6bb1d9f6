// SPDX-License-Identifier: GPL-3.0-or-later
// A zlib stream (RFC 1950/1951: what HDF5's deflate filter stores, any zlib inflates) of
// byte-shuffled data whose leading planes are noise. A shuffled chunk of 8-byte coordinates is
// six planes of mantissa bytes that no compressor shrinks, then two planes of exponent bytes;
// deflating the noise costs ≈ 6 ns per byte and gains nothing (docs/performance.md). The leading
// planes that a 4 KiB sample shows incompressible go out as stored blocks; the rest, from the
// first plane that is not noise, through libdeflate (its output starts on a byte and ends with
// the final block, so it can only come last). Same bytes after inflating; on the trajectory
// columns measured the size is within 0.1% of deflating the chunk whole (at worst a plane whose
// middle looks like noise is stored as it is: never more than its own size). Internal.
#pragma once

#include <libdeflate.h>

#include <cstddef>
#include <cstdint>

namespace vibra::store::detail {

/// Output bound of zlib_compress_planes for n bytes.
std::size_t zlib_planes_bound(libdeflate_compressor* z, std::size_t n);

/// Encodes `in` (n bytes: `planes` planes of n / planes bytes each; n a multiple of planes) into
/// `out` (cap ≥ zlib_planes_bound); returns the stream's size, 0 if it did not fit.
std::size_t zlib_compress_planes(libdeflate_compressor* z, const std::uint8_t* in, std::size_t n,
                                 std::size_t planes, std::uint8_t* out, std::size_t cap);

}  // namespace vibra::store::detail
