// SPDX-License-Identifier: GPL-3.0-or-later
#include "detail/large_buffers.hpp"

#include <opencv2/core.hpp>

#include <deque>
#include <mutex>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace vibra::tracking::detail {

namespace {

constexpr std::size_t kHuge = std::size_t{2} << 20;
std::size_t mapped_size(std::size_t n) { return (n + kHuge - 1) / kHuge * kHuge; }

struct Cache {
    std::mutex m;
    std::deque<std::pair<std::uint8_t*, std::size_t>> free;  // oldest first
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
        const std::size_t len = mapped_size(n);
        {
            auto& c = cache();
            std::lock_guard lk(c.m);
            for (auto it = c.free.rbegin(); it != c.free.rend(); ++it)  // the most recently freed first (still in cache)
                if (it->second == len) {
                    std::uint8_t* p = it->first;
                    c.free.erase(std::next(it).base());
                    c.stats.cached_bytes -= len;
                    ++c.stats.reused;
                    mapped = true;
                    return p;
                }
        }
        // Over-allocate by one huge page, then unmap the unaligned head and the tail.
        void* p = ::mmap(nullptr, len + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p != MAP_FAILED) {
            const auto base = reinterpret_cast<std::uintptr_t>(p);
            const std::uintptr_t aligned = (base + kHuge - 1) & ~static_cast<std::uintptr_t>(kHuge - 1);
            if (aligned > base) ::munmap(p, aligned - base);
            if (base + len + kHuge > aligned + len) ::munmap(reinterpret_cast<void*>(aligned + len), base + len + kHuge - (aligned + len));
            ::madvise(reinterpret_cast<void*>(aligned), len, MADV_HUGEPAGE);  // advice only: may fail harmlessly
            {
                auto& c = cache();
                std::lock_guard lk(c.m);
                ++c.stats.mapped;
            }
            mapped = true;
            return reinterpret_cast<std::uint8_t*>(aligned);
        }
    }
#endif
    mapped = false;
    return static_cast<std::uint8_t*>(cv::fastMalloc(n));
}

void free_large_buffer(std::uint8_t* p, std::size_t n, bool mapped) {
    if (!p) return;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (mapped) {
        const std::size_t len = mapped_size(n);
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
