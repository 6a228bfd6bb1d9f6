// SPDX-License-Identifier: GPL-3.0-or-later
// parallel_for over contiguous chunks and parallel_for_each over items, on core's run_workers
// (worker exceptions reach the caller). Callers keep results bit-identical for any thread count
// by writing per-item (or per fixed chunk) outputs that are combined in a fixed order afterwards.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <functional>
#include <vector>

#include "vibra/core/workers.hpp"

namespace vibra::analysis::detail {

/// Runs fn(begin, end, thread_index) over [0, n) split into `threads` contiguous chunks.
inline void parallel_for(std::size_t n, int threads,
                         const std::function<void(std::size_t, std::size_t, int)>& fn) {
    const int nt = std::max(1, std::min<int>(threads, static_cast<int>(std::max<std::size_t>(n, 1))));
    if (nt == 1) {
        fn(0, n, 0);
        return;
    }
    const std::size_t chunk = (n + static_cast<std::size_t>(nt) - 1) / static_cast<std::size_t>(nt);
    run_workers(nt, [&](int t) {
        const std::size_t b = std::min(n, static_cast<std::size_t>(t) * chunk), e = std::min(n, b + chunk);
        fn(b, e, t);
    });
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
    run_workers(nt, [&](int t) {
        for (std::size_t i = next++; i < n; i = next++) fn(i, t);
    });
}

}  // namespace vibra::analysis::detail
