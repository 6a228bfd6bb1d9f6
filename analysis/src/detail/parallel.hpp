// SPDX-License-Identifier: GPL-3.0-or-later
// A tiny parallel_for over contiguous chunks (std::thread, one chunk per thread). Callers keep
// results bit-identical for any thread count by writing per-item (or per fixed chunk) outputs
// that are combined in a fixed order afterwards.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <functional>
#include <thread>
#include <vector>

namespace vibra::analysis::detail {

/// Runs fn(begin, end, thread_index) over [0, n) split into `threads` contiguous chunks.
inline void parallel_for(std::size_t n, int threads, const std::function<void(std::size_t, std::size_t, int)>& fn) {
    const int nt = std::max(1, std::min<int>(threads, static_cast<int>(std::max<std::size_t>(n, 1))));
    if (nt == 1) {
        fn(0, n, 0);
        return;
    }
    std::vector<std::thread> pool;
    const std::size_t chunk = (n + static_cast<std::size_t>(nt) - 1) / static_cast<std::size_t>(nt);
    for (int t = 0; t < nt; ++t) {
        const std::size_t b = std::min(n, static_cast<std::size_t>(t) * chunk), e = std::min(n, b + chunk);
        pool.emplace_back([&fn, b, e, t] { fn(b, e, t); });
    }
    for (auto& th : pool) th.join();
}

/// Runs fn(i, thread_index) for every i in [0, n), items handed out one at a time (balanced when
/// their costs differ); fn must write only per-item outputs.
inline void parallel_for_each(std::size_t n, int threads, const std::function<void(std::size_t, int)>& fn) {
    const int nt = std::max(1, std::min<int>(threads, static_cast<int>(std::max<std::size_t>(n, 1))));
    if (nt == 1) {
        for (std::size_t i = 0; i < n; ++i) fn(i, 0);
        return;
    }
    std::atomic<std::size_t> next{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < nt; ++t)
        pool.emplace_back([&, t] {
            for (std::size_t i = next++; i < n; i = next++) fn(i, t);
        });
    for (auto& th : pool) th.join();
}

}  // namespace vibra::analysis::detail
