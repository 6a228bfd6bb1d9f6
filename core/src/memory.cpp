// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/core/memory.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>  // defines __GLIBC__ on glibc
#include <fstream>
#include <limits>
#include <sstream>

#include "vibra/core/error.hpp"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace vibra {

bool keep_freed_memory() {
#if defined(__GLIBC__)
    return mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1 && mallopt(M_TRIM_THRESHOLD, 512 << 20) == 1;
#else
    return false;
#endif
}

namespace {
std::atomic<std::uint64_t> g_budget{0};

std::uint64_t meminfo_kb(const std::string& key) {
    std::ifstream in("/proc/meminfo");
    std::string k;
    std::uint64_t v = 0;
    std::string unit;
    while (in >> k >> v) {
        std::getline(in, unit);
        if (k == key + ":") return v;
    }
    return std::numeric_limits<std::uint64_t>::max() / 1024;
}

// Resident, not mapped: glibc reserves address space per thread arena that later allocations use,
// so "limit − mapped" would refuse sizes that fit. An allocation that passes this check and still
// fails ends as std::bad_alloc, which the commands report as "out of memory".
std::uint64_t resident_bytes() {
    std::ifstream in("/proc/self/statm");
    std::uint64_t size = 0, pages = 0;
    in >> size >> pages;
    return pages * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}
}  // namespace

std::uint64_t allocatable_bytes() {
    constexpr auto kNone = std::numeric_limits<std::uint64_t>::max();
    std::uint64_t avail = kNone;
    const auto mem = meminfo_kb("MemAvailable"), swap = meminfo_kb("SwapFree");
    if (mem < kNone / 2048 && swap < kNone / 2048) avail = (mem + swap) * 1024;
    struct rlimit rl {};
    if (::getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        const auto used = resident_bytes();
        avail = std::min<std::uint64_t>(avail, rl.rlim_cur > used ? rl.rlim_cur - used : 0);
    }
    if (const auto b = g_budget.load(); b > 0) avail = std::min(avail, b);
    return avail;
}

void set_memory_budget(std::uint64_t bytes) { g_budget = bytes; }

std::string format_bytes(std::uint64_t bytes) {
    char buf[32];
    const double b = static_cast<double>(bytes);
    if (b >= 1e9)
        std::snprintf(buf, sizeof buf, "%.1f GB", b / 1e9);
    else if (b >= 1e6)
        std::snprintf(buf, sizeof buf, "%.0f MB", b / 1e6);
    else
        std::snprintf(buf, sizeof buf, "%.0f kB", b / 1e3);
    return buf;
}

void check_memory(std::uint64_t bytes, const std::string& what) {
    const auto avail = allocatable_bytes();
    if (bytes <= avail) return;
    throw ResourceError(what + ": needs " + format_bytes(bytes) + ", more than the " + format_bytes(avail) +
                        " this process can allocate (free memory, ulimit -v" +
                        (g_budget.load() > 0 ? ", --memory" : "") + ")");
}

}  // namespace vibra
