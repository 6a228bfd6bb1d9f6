// SPDX-License-Identifier: GPL-3.0-or-later
// What fresh memory costs on this machine, and what the tracking's packed frame-sized buffers
// save (tracking/src/detail/large_buffers.hpp; docs/performance.md, "Memory and fresh pages").
//
//   build/bench/bench_fresh_memory [MiB]       (default 64)
//
// Prints: the first touch of MiB of fresh anonymous memory in 4 KiB pages and in transparent
// huge pages (three mappings each, one after the other: on a virtual machine the first may find
// memory the host has not backed yet), touching the same memory again, and the anonymous memory
// eight 1024 × 1024 8-bit frames take from vibra's allocator against one 2 MiB-rounded mapping
// each (how the buffers were allocated before), with the time to first touch them.
#include <sys/mman.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "../tracking/src/detail/detect_util.hpp"  // large_mat: vibra's frame-sized buffers

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

constexpr std::size_t kMiB = std::size_t{1} << 20, kHuge = 2 * kMiB;

// kB of anonymous memory this process holds (RssAnon in /proc/self/status; -1 if unknown).
long rss_anon_kb() {
    std::ifstream f("/proc/self/status");
    std::string key;
    long v = -1;
    while (f >> key) {
        if (key == "RssAnon:") {
            f >> v;
            return v;
        }
        f.ignore(1 << 12, '\n');
    }
    return -1;
}

// A 2 MiB-aligned anonymous mapping of `len` bytes with the given page advice.
char* map_aligned(std::size_t len, int advice, void*& base, std::size_t& base_len) {
    base_len = len + kHuge;
    base = ::mmap(nullptr, base_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) {
        std::perror("mmap");
        std::exit(1);
    }
    auto* p = reinterpret_cast<char*>((reinterpret_cast<std::uintptr_t>(base) + kHuge - 1) & ~(kHuge - 1));
    ::madvise(p, len, advice);
    return p;
}

// ms per MiB to touch one byte per 4 KiB page of a fresh mapping (that faults every page in).
double first_touch_ms_per_mib(std::size_t mib, int advice) {
    void* base;
    std::size_t base_len;
    char* p = map_aligned(mib * kMiB, advice, base, base_len);
    const auto t0 = Clock::now();
    for (std::size_t i = 0; i < mib * kMiB; i += 4096) p[i] = 1;
    const double ms = ms_since(t0);
    ::munmap(base, base_len);
    return ms / static_cast<double>(mib);
}

}  // namespace

int main(int argc, char** argv) {
    const std::size_t mib = argc > 1 ? static_cast<std::size_t>(std::max(2, std::atoi(argv[1]))) : 64;
    std::string thp = "unknown";
    {
        std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
        std::getline(f, thp);
    }
    std::printf("fresh anonymous memory, %zu MiB per mapping (transparent huge pages: %s)\n", mib,
                thp.c_str());
    for (const auto& [name, advice] : {std::pair{"4 KiB pages (MADV_NOHUGEPAGE)", MADV_NOHUGEPAGE},
                                       std::pair{"huge pages (MADV_HUGEPAGE)", MADV_HUGEPAGE}}) {
        std::printf("  first touch, %-30s", name);
        for (int k = 0; k < 3; ++k) std::printf(" %7.3f", first_touch_ms_per_mib(mib, advice));
        std::printf("  ms/MiB (three fresh mappings in turn)\n");
    }
    {
        void* base;
        std::size_t base_len;
        char* p = map_aligned(mib * kMiB, MADV_HUGEPAGE, base, base_len);
        std::memset(p, 1, mib * kMiB);
        const auto t0 = Clock::now();
        std::memset(p, 2, mib * kMiB);
        std::printf("  the same memory written again (held already): %.3f ms/MiB\n",
                    ms_since(t0) / static_cast<double>(mib));
        ::munmap(base, base_len);
    }

    // Eight decoded 1024 × 1024 8-bit frames (what vibra track's reader holds in flight): vibra's
    // packed buffers against one 2 MiB-rounded, 2 MiB-aligned mapping each, every byte written.
    constexpr int kFrames = 8, kSide = 1024;
    const std::size_t frame_bytes = static_cast<std::size_t>(kSide) * kSide;
    long kb0 = rss_anon_kb();
    auto t0 = Clock::now();
    std::vector<cv::Mat> packed;
    for (int k = 0; k < kFrames; ++k) {
        packed.push_back(vibra::tracking::detail::large_mat(kSide, kSide, CV_8U));
        packed.back().setTo(k + 1);
    }
    const double ms_packed = ms_since(t0);
    const long kb_packed = rss_anon_kb() - kb0;
    kb0 = rss_anon_kb();
    t0 = Clock::now();
    std::vector<std::pair<void*, std::size_t>> own;
    for (int k = 0; k < kFrames; ++k) {
        void* base;
        std::size_t base_len;
        char* p = map_aligned((frame_bytes + kHuge - 1) / kHuge * kHuge, MADV_HUGEPAGE, base, base_len);
        std::memset(p, k + 1, frame_bytes);
        own.emplace_back(base, base_len);
    }
    const double ms_own = ms_since(t0);
    const long kb_own = rss_anon_kb() - kb0;
    std::printf("%d frames of %d x %d 8-bit, written once:\n", kFrames, kSide, kSide);
    std::printf("  vibra's packed buffers:          %6.1f MiB of fresh anonymous memory, %6.2f ms\n",
                kb_packed / 1024.0, ms_packed);
    std::printf("  one 2 MiB-rounded mapping each:  %6.1f MiB of fresh anonymous memory, %6.2f ms\n",
                kb_own / 1024.0, ms_own);
    if (kb_own > 0)
        std::printf("  packed / own mappings:           %6.2f (memory)\n",
                    static_cast<double>(kb_packed) / static_cast<double>(kb_own));
    for (auto& [b, l] : own) ::munmap(b, l);
    return 0;
}
