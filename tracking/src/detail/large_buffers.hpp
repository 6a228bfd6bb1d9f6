// SPDX-License-Identifier: GPL-3.0-or-later
// Frame-sized buffers (≥ 1 MiB: decoded frames, gradients, vote maps, the joint fit's slab) as
// 2 MiB-aligned mappings marked for transparent huge pages, and a bounded cache of freed ones.
//
// Why a cache: a mapping's pages are backed only when first touched, and on the benchmark's
// virtual machine a fresh 2 MiB page costs ≈ 3 ms (the host backs it; re-touching memory the
// process already holds costs nothing). Without the cache every candidate frame's gradients, and
// every video of a batch, paid for fresh pages again (docs/performance.md). Freed mappings are
// kept, up to kCacheBytes in all, and handed out again for a request of the same mapped size
// (oldest beyond the bound returned to the system). Their contents are left as they were: every
// user treats a buffer as uninitialised. Thread-safe; process-wide, like malloc's own free lists.
// Internal.
#pragma once

#include <cstddef>
#include <cstdint>

namespace vibra::tracking::detail {

inline constexpr std::size_t kLargeBufferMin = std::size_t{1} << 20;  ///< smaller ones: cv::fastMalloc
inline constexpr std::size_t kLargeBufferCacheBytes = std::size_t{512} << 20;

/// A buffer of at least n bytes, 2 MiB-aligned when `mapped` comes back true (then free it with
/// free_large_buffer(p, n, true)); otherwise from cv::fastMalloc.
std::uint8_t* alloc_large_buffer(std::size_t n, bool& mapped);
void free_large_buffer(std::uint8_t* p, std::size_t n, bool mapped);

struct LargeBufferStats {
    std::size_t cached_bytes = 0;    ///< freed mappings held for re-use now
    std::uint64_t reused = 0;        ///< requests served from the cache so far
    std::uint64_t mapped = 0;        ///< fresh mappings so far
};
LargeBufferStats large_buffer_stats();

}  // namespace vibra::tracking::detail
