// SPDX-License-Identifier: GPL-3.0-or-later
// keep_freed_memory(): a large block freed and allocated again is served without new page faults.
#include <catch2/catch.hpp>

#include <sys/resource.h>

#include <cstdlib>
#include <cstring>

#include "vibra/core/memory.hpp"

namespace {
long minor_faults() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}
// Allocates `bytes`, writes every page, frees; returns the page faults this took.
long faults_of_touching(std::size_t bytes) {
    const long f0 = minor_faults();
    auto* p = static_cast<char*>(std::malloc(bytes));
    REQUIRE(p != nullptr);
    for (std::size_t k = 0; k < bytes; k += 4096) p[k] = static_cast<char>(k);
    volatile char sink = p[bytes / 2];
    (void)sink;
    std::free(p);
    return minor_faults() - f0;
}
}  // namespace

TEST_CASE("keep_freed_memory: a freed 8 MiB block is re-used without page faults", "[unit]") {
#if defined(__GLIBC__)
    REQUIRE(vibra::keep_freed_memory());
    const std::size_t bytes = 8u << 20;  // 2048 pages
    const long first = faults_of_touching(bytes);
    const long second = faults_of_touching(bytes);
    INFO("page faults: first " << first << ", second " << second);
    if (first < 1000) {  // transparent huge pages for all memory: too few faults to tell
        WARN("a fresh 8 MiB block took only " << first
                                              << " page faults (huge pages?): re-use not measurable here");
        return;
    }
    REQUIRE(second <= 50);  // the same block again: served from the process's own memory
#else
    WARN("not glibc: keep_freed_memory() has no effect here");
    REQUIRE_FALSE(vibra::keep_freed_memory());
#endif
}
