// SPDX-License-Identifier: GPL-3.0-or-later
#include "detail/large_buffers.hpp"

#include <opencv2/core.hpp>

#include <algorithm>
#include <deque>
#include <mutex>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace vibra::tracking::detail {

namespace {

constexpr std::size_t kHuge = std::size_t{2} << 20;
constexpr std::size_t kPage = 4096;
constexpr std::size_t kRegion = std::size_t{32} << 20;  // mapped at once, buffers carved from it
std::size_t huge_multiple(std::size_t n) { return (n + kHuge - 1) / kHuge * kHuge; }
std::size_t page_multiple(std::size_t n) { return (n + kPage - 1) / kPage * kPage; }

struct Cache {
    std::mutex m;
    std::deque<std::pair<std::uint8_t*, std::size_t>> free;  // oldest first
    std::uint8_t* next = nullptr;  // the current region's part not yet handed out ...
    std::size_t room = 0;          // ... and its size
    LargeBufferStats stats;
};
Cache& cache() {
    static auto* c = new Cache;  // never destroyed: buffers may be freed during static destruction
    return *c;
}

}  // namespace

std::uint8_t* alloc_large_buffer(std::size_t n, bool& mapped) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (n >= kLargeBufferMin) {
        const std::size_t len = page_multiple(n + kLargeBufferSlack);
        auto& c = cache();
        std::lock_guard lk(c.m);
        for (auto it = c.free.rbegin(); it != c.free.rend();
             ++it)  // the most recently freed first (still in cache)
            if (it->second == len) {
                std::uint8_t* p = it->first;
                c.free.erase(std::next(it).base());
                c.stats.cached_bytes -= len;
                ++c.stats.reused;
                mapped = true;
                return p;
            }
        if (len > c.room) {
            // A new region, 2 MiB-aligned: over-allocate by one huge page, then unmap the
            // unaligned head and the tail. What is left of the last region stays unused (address
            // space only: pages never touched cost nothing).
            const std::size_t region = std::max(kRegion, huge_multiple(len));
            void* p =
                ::mmap(nullptr, region + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p == MAP_FAILED) {
                mapped = false;
                return static_cast<std::uint8_t*>(cv::fastMalloc(n + kLargeBufferSlack));
            }
            const auto base = reinterpret_cast<std::uintptr_t>(p);
            const std::uintptr_t aligned = (base + kHuge - 1) & ~static_cast<std::uintptr_t>(kHuge - 1);
            if (aligned > base) ::munmap(p, aligned - base);
            if (base + region + kHuge > aligned + region)
                ::munmap(reinterpret_cast<void*>(aligned + region),
                         base + region + kHuge - (aligned + region));
            ::madvise(reinterpret_cast<void*>(aligned), region,
                      MADV_HUGEPAGE);  // advice only: may fail harmlessly
            c.next = reinterpret_cast<std::uint8_t*>(aligned), c.room = region;
        }
        // Buffers are packed one after the other (4 KiB-aligned), not each on its own 2 MiB
        // pages: a 1.1 MiB frame no longer costs a whole fresh huge page of 2 MiB, and the
        // rest of the page serves the next buffer.
        std::uint8_t* p = c.next;
        c.next += len, c.room -= len;
        ++c.stats.mapped;
        mapped = true;
        return p;
    }
#endif
    mapped = false;
    return static_cast<std::uint8_t*>(cv::fastMalloc(n + kLargeBufferSlack));
}

void free_large_buffer(std::uint8_t* p, std::size_t n, bool mapped) {
    if (!p) return;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (mapped) {
        const std::size_t len = page_multiple(n + kLargeBufferSlack);
        std::deque<std::pair<std::uint8_t*, std::size_t>> evicted;
        {
            auto& c = cache();
            std::lock_guard lk(c.m);
            c.free.emplace_back(p, len);
            c.stats.cached_bytes += len;
            while (c.stats.cached_bytes > kLargeBufferCacheBytes && !c.free.empty()) {
                evicted.push_back(c.free.front());
                c.stats.cached_bytes -= c.free.front().second;
                c.free.pop_front();
            }
        }
        for (const auto& [q, l] : evicted) ::munmap(q, l);
        return;
    }
#else
    (void)n, (void)mapped;
#endif
    cv::fastFree(p);
}

LargeBufferStats large_buffer_stats() {
    auto& c = cache();
    std::lock_guard lk(c.m);
    return c.stats;
}

}  // namespace vibra::tracking::detail
