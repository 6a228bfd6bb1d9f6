// SPDX-License-Identifier: GPL-3.0-or-later
// Frame-sized buffers (≥ 256 KiB: decoded frames, gradients, vote maps, the joint fit's slab),
// carved one after the other (4 KiB-aligned) from 2 MiB-aligned regions marked for transparent
// huge pages, and a bounded cache of freed ones.
//
// Why huge pages, packed: on the benchmark's virtual machine every fresh 4 KiB page costs
// ≈ 11 µs to fault in, and fresh memory the host has not backed yet ≈ 2 ms per MiB however it
// is paged (docs/performance.md). Huge pages cut the faults 512-fold; packing the buffers
// (instead of one 2 MiB-rounded mapping each) means a 1.1 MiB frame or a 2.2 MiB gradient
// image touches no more fresh memory than its own size plus part of one page.
// Why a cache: a buffer's pages are backed only when first touched; re-touching memory the
// process already holds costs nothing. Without the cache every candidate frame's gradients, and
// every video of a batch, paid for fresh pages again. Freed buffers are kept, up to
// kCacheBytes in all, and handed out again for a request of the same size (rounded to 4 KiB;
// the oldest beyond the bound are returned to the system). Their contents are left as they
// were: every user treats a buffer as uninitialised. Thread-safe; process-wide, like malloc's
// own free lists. Internal.
#pragma once

#include <cstddef>
#include <cstdint>

namespace vibra::tracking::detail {

inline constexpr std::size_t kLargeBufferMin = std::size_t{256} << 10;  ///< smaller ones: cv::fastMalloc
inline constexpr std::size_t kLargeBufferCacheBytes = std::size_t{512} << 20;
/// Every buffer is followed by at least this many bytes of its own (readable, contents
/// undefined): row kernels that read whole vectors may pass the last row's end (joint_fit).
inline constexpr std::size_t kLargeBufferSlack = 64;

/// A buffer of at least n bytes, 4 KiB-aligned when `mapped` comes back true (then free it with
/// free_large_buffer(p, n, true)); otherwise from cv::fastMalloc.
std::uint8_t* alloc_large_buffer(std::size_t n, bool& mapped);
void free_large_buffer(std::uint8_t* p, std::size_t n, bool mapped);

struct LargeBufferStats {
    std::size_t cached_bytes = 0;  ///< freed mappings held for re-use now
    std::uint64_t reused = 0;      ///< requests served from the cache so far
    std::uint64_t mapped = 0;      ///< fresh buffers (carved from new memory) so far
};
LargeBufferStats large_buffer_stats();

}  // namespace vibra::tracking::detail
