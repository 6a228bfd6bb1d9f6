// SPDX-License-Identifier: GPL-3.0-or-later
// Small helpers shared by the detection stages (gradients.cpp, candidates.cpp, detect.cpp). Internal.
#pragma once

#include <opencv2/core.hpp>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "large_buffers.hpp"
#include "vibra/core/cell_list.hpp"
#include "vibra/tracking/detect.hpp"

namespace vibra::tracking::detail {

inline int vote_factor(const DetectParams& p) {
    return p.downsample > 0 ? p.downsample : std::max(1, static_cast<int>(std::floor(p.r_small() / 3.0)));
}
inline int contrast_block(const DetectParams& p) {
    return p.contrast_block > 0 ? p.contrast_block
                                : std::max(32, static_cast<int>(std::ceil(6 * p.r_large())));
}

/// One disk refined again on its own from (x, y), with the disks of `parts` within the cell
/// list's reach of (near_x, near_y) as its masked neighbours (all but index `self` and disks
/// without an edge; `cl` holds the centres of `parts`). The second chance of a failed candidate
/// (detect.cpp) and the edge-circle repair (edge_circle.cpp).
inline Particle refine_alone(const Gradients& g, double x, double y, double near_x, double near_y,
                             std::size_t self, const std::vector<Particle>& parts, const CellList& cl,
                             double radius_min, double radius_max, const RefineParams& rp) {
    std::vector<Particle> local{Particle{}};
    local[0].x = x, local[0].y = y;
    cl.for_each_near(near_x, near_y, [&](std::size_t j, double, double, double) {
        if (j != self && parts[j].strength > 0) local.push_back(parts[j]);
    });
    refine_particles(g, local, radius_min, radius_max, rp);
    return local[0];
}

inline float quantile(std::vector<float> v, double q) {
    if (v.empty()) return 0;
    const auto k = static_cast<std::ptrdiff_t>(q * static_cast<double>(v.size() - 1));
    std::nth_element(v.begin(), v.begin() + k, v.end());
    return v[static_cast<std::size_t>(k)];
}

/// The element at index n/2 after a partial sort (the upper median); v must not be empty.
inline float median_of(std::vector<float> v) {
    const auto k = static_cast<std::ptrdiff_t>(v.size() / 2);
    std::nth_element(v.begin(), v.begin() + k, v.end());
    return v[static_cast<std::size_t>(k)];
}

/// CPU time of the calling thread (s): the phase timings of the joint fit and DiskLocator.
inline double cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Greedy by descending score: drop any point within `sep` of a kept one.
template <class T, class Score>
std::vector<T> suppress(std::vector<T> pts, double sep, Score score) {
    if (pts.size() < 2) return pts;
    std::sort(pts.begin(), pts.end(), [&](const T& a, const T& b) { return score(a) > score(b); });
    std::vector<double> xs(pts.size()), ys(pts.size());
    for (std::size_t i = 0; i < pts.size(); ++i) xs[i] = pts[i].x, ys[i] = pts[i].y;
    CellList cl(xs, ys, sep, Geometry{});
    std::vector<char> dead(pts.size(), 0);
    std::vector<T> out;
    out.reserve(pts.size());
    for (std::size_t i = 0; i < pts.size(); ++i) {
        if (dead[i]) continue;
        out.push_back(pts[i]);
        cl.for_each_near(xs[i], ys[i], [&](std::size_t j, double, double, double) {
            if (j > i) dead[j] = 1;
        });
    }
    return out;
}

// Allocator for the large per-frame images of detection (gradients: 2 × 4 MB per 1024² frame;
// vote map). Each frame needs fresh buffers, and every first touch of a fresh 4 KiB page is a
// page fault: on a virtual machine such as the 2-core benchmark machine a fault costs ≈ 10 µs,
// i.e. ≈ 20 ms for the 2048 pages of gx and gy — more than computing them. Buffers of
// ≥ kLargeBufferMin (256 KiB) therefore come from 2 MiB-aligned regions marked for transparent huge pages (Linux, THP
// "always" or "madvise"), packed one after the other: 4 faults instead of 2048, and freed ones
// are kept for re-use (large_buffers.hpp). Every such buffer is followed by kLargeBufferSlack
// readable bytes (readable_after, below).
// Without THP, or off Linux, the kernel simply uses small pages (or cv::fastMalloc is used): same
// results, only the speed differs.
class LargeBufferAllocator final : public cv::MatAllocator {
public:
    cv::UMatData* allocate(int dims, const int* sizes, int type, void* data0, std::size_t* step,
                           cv::AccessFlag, cv::UMatUsageFlags) const override {
        std::size_t total = CV_ELEM_SIZE(type);
        for (int i = dims - 1; i >= 0; --i) {
            if (step) {
                if (data0 && step[i] != cv::Mat::AUTO_STEP)
                    total = step[i];
                else
                    step[i] = total;
            }
            total *= static_cast<std::size_t>(sizes[i]);
        }
        auto* u = new cv::UMatData(this);
        u->size = total;
        if (data0) {
            u->data = u->origdata = static_cast<uchar*>(data0);
            u->flags |= cv::UMatData::USER_ALLOCATED;
            return u;
        }
        bool mapped = false;
        u->data = u->origdata = map(total, mapped);
        u->allocatorFlags_ = mapped ? 1 : 0;
        return u;
    }
    bool allocate(cv::UMatData* u, cv::AccessFlag, cv::UMatUsageFlags) const override { return u != nullptr; }
    void deallocate(cv::UMatData* u) const override {
        if (!u) return;
        if (!(u->flags & cv::UMatData::USER_ALLOCATED)) unmap(u->origdata, u->size, u->allocatorFlags_ == 1);
        delete u;
    }

private:
    static uchar* map(std::size_t n, bool& mapped) { return alloc_large_buffer(n, mapped); }
    static void unmap(uchar* p, std::size_t n, bool mapped) { free_large_buffer(p, n, mapped); }
};

/// The shared stateless instance (never destroyed, so Mats may outlive static destruction).
inline const cv::MatAllocator* large_buffer_allocator() {
    static const auto* a = new LargeBufferAllocator;
    return a;
}

/// True when the `bytes` after `end` (a pointer into m's pixels) may be read: inside m's
/// allocation (a parent's next rows), or in the slack that follows every buffer of
/// large_buffer_allocator() (decoded frames, slabs).
inline bool readable_after(const cv::Mat& m, const uchar* end, std::size_t bytes) {
    if (end + bytes <= m.datalimit) return true;
    const cv::UMatData* u = m.u;
    return u != nullptr && u->currAllocator == large_buffer_allocator() &&
           !(u->flags & cv::UMatData::USER_ALLOCATED) &&
           end + bytes <= u->origdata + u->size + kLargeBufferSlack;
}

/// An uninitialised rows × cols matrix of `type` from large_buffer_allocator().
inline cv::Mat large_mat(int rows, int cols, int type) {
    cv::Mat m;
    m.allocator = const_cast<cv::MatAllocator*>(large_buffer_allocator());
    m.create(rows, cols, type);
    return m;
}

}  // namespace vibra::tracking::detail
