// SPDX-License-Identifier: GPL-3.0-or-later
// Frame buffers of a reader, re-used once no frame made of them is held any more (a buffer's
// reference count is back to the pool's own): a fresh megabyte per frame costs page faults
// (≈ 250 per MiB, each several µs on the machines measured, docs/performance.md). Frames handed
// out stay valid for as long as they are held; a reader whose frames are all still held gets a
// fresh buffer. One pool per reader (not shared between threads).
#pragma once

#include <opencv2/core.hpp>

#include <vector>

#include "detail/detect_util.hpp"

namespace vibra::tracking::detail {

class FramePool {
public:
    static constexpr std::size_t kSize = 32;
    /// Index of a buffer that no frame holds (a new, empty one while the pool is small), or −1
    /// when all are held.
    int free_slot() {
        for (std::size_t i = 0; i < pool_.size(); ++i)
            if (pool_[i].u == nullptr || __atomic_load_n(&pool_[i].u->refcount, __ATOMIC_ACQUIRE) == 1)
                return static_cast<int>(i);
        if (pool_.size() >= kSize) return -1;
        pool_.emplace_back();
        pool_.back().allocator = const_cast<cv::MatAllocator*>(large_buffer_allocator());
        return static_cast<int>(pool_.size()) - 1;
    }
    cv::Mat& slot(int i) { return pool_[static_cast<std::size_t>(i)]; }
    /// A rows × cols buffer of `type` (contents undefined) that nobody else holds.
    cv::Mat take(int rows, int cols, int type) {
        const int i = free_slot();
        if (i < 0) return cv::Mat(rows, cols, type);
        cv::Mat& m = slot(i);
        m.create(rows, cols, type);  // re-used as it is when the size and type match
        return m;
    }

private:
    std::vector<cv::Mat> pool_;
};

}  // namespace vibra::tracking::detail
