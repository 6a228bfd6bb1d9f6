// SPDX-License-Identifier: GPL-3.0-or-later
// One way to run work on several threads: every analysis, writer and simulator that splits work
// over `--threads` goes through run_workers, so the two failure modes of std::thread are handled
// once:
//   - a worker's exception (std::bad_alloc, vibra::Interrupted, an Error) is carried to the
//     caller and rethrown there after every worker has finished — never std::terminate;
//   - a thread that cannot be started (ulimit -u / -v: std::system_error EAGAIN) is either an
//     error after the started workers finished (WorkerStart::all) or tolerated, the started
//     workers and the calling thread doing all the work (WorkerStart::at_least_caller; the
//     work must then hand out its items dynamically).
// Results stay bit-identical for any thread count only when the work writes per-item (or
// per-fixed-chunk) outputs that the caller combines in a fixed order; run_workers does not
// reorder anything itself.
#pragma once

#include <exception>
#include <functional>
#include <system_error>
#include <thread>
#include <vector>

namespace vibra {

enum class WorkerStart {
    all,              ///< every worker must start; a failed start is rethrown (after joining)
    at_least_caller,  ///< worker 0 runs on the calling thread; workers that cannot start are skipped
};

/// Runs work(w) for w in [0, n_workers), each on its own thread (n_workers <= 1: inline). Returns
/// after every started worker has finished; rethrows the first worker exception (lowest w).
inline void run_workers(int n_workers, const std::function<void(int)>& work,
                        WorkerStart start = WorkerStart::all) {
    if (n_workers <= 1) {
        work(0);
        return;
    }
    const int first_thread = start == WorkerStart::at_least_caller ? 1 : 0;
    std::vector<std::thread> pool;
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n_workers));
    const auto join_all = [&pool] {
        for (auto& th : pool)
            if (th.joinable()) th.join();
    };
    const auto guarded = [&work, &errors](int w) noexcept {
        try {
            work(w);
        } catch (...) {
            errors[static_cast<std::size_t>(w)] = std::current_exception();
        }
    };
    try {
        for (int w = first_thread; w < n_workers; ++w) pool.emplace_back(guarded, w);
    } catch (const std::system_error&) {  // no thread to spare
        if (start == WorkerStart::all) {
            join_all();
            throw;
        }
    } catch (...) {  // std::bad_alloc while growing the pool
        join_all();
        throw;
    }
    if (first_thread == 1) guarded(0);
    join_all();
    for (const auto& e : errors)
        if (e) std::rethrow_exception(e);
}

}  // namespace vibra
