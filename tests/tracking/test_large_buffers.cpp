// SPDX-License-Identifier: GPL-3.0-or-later
// The frame-sized buffers' cache (tracking/src/detail/large_buffers.hpp): freed mappings are
// handed out again, the cache stays within its bound, and nothing depends on a buffer's contents
// (a frame located with buffers dirty from another frame gives the same disks).
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "../../tracking/src/detail/detect_util.hpp"  // large_mat, over the internal cache
#include "../../tracking/src/detail/large_buffers.hpp"
#include "vibra/core/trajectory.hpp"
#include "vibra/tracking/detect.hpp"
#include "vibra/tracking/synth.hpp"

using namespace vibra;
using namespace vibra::tracking;

#if defined(__linux__)
TEST_CASE("a freed frame-sized buffer is handed out again", "[tracking][buffers]") {
    const auto before = detail::large_buffer_stats();
    const std::uint8_t* first = nullptr;
    {
        cv::Mat a = detail::large_mat(1024, 1536, CV_8U);  // 1.5 MiB: one 2 MiB mapping
        first = a.data;
        a.setTo(7);
    }
    const auto freed = detail::large_buffer_stats();
    CHECK(freed.cached_bytes >= before.cached_bytes + (std::size_t{2} << 20));
    cv::Mat b = detail::large_mat(1024, 1536, CV_8U);
    const auto again = detail::large_buffer_stats();
    CHECK(b.data == first);  // the most recently freed mapping of that size
    CHECK(again.reused == freed.reused + 1);
    CHECK(again.mapped == freed.mapped);
    CHECK(again.cached_bytes == freed.cached_bytes - (std::size_t{2} << 20));
}

TEST_CASE("the buffer cache stays within its bound", "[tracking][buffers]") {
    // 300 mappings of 2 MiB (never touched: no memory is used) freed together: 600 MiB > bound
    std::vector<cv::Mat> held;
    for (int k = 0; k < 300; ++k) held.push_back(detail::large_mat(1024, 2048, CV_8U));
    held.clear();
    const auto s = detail::large_buffer_stats();
    CHECK(s.cached_bytes <= detail::kLargeBufferCacheBytes);
    CHECK(s.cached_bytes >= detail::kLargeBufferCacheBytes - (std::size_t{2} << 20));
}
#endif

TEST_CASE("locating does not depend on what re-used buffers hold", "[tracking][buffers]") {
    SynthParams sp = reference_case(ReferenceCase::moderate, 512, 2, 91);
    SynthGenerator gen(sp);
    cv::Mat f0, f1;
    TrajectoryTable truth;
    REQUIRE(gen.next(f0, truth));
    f0 = f0.clone();
    REQUIRE(gen.next(f1, truth));
    DetectParams dp;
    dp.radii = {6, 8};
    const auto a = locate(f0, dp);
    (void)locate(f1, dp);  // its gradients, vote map and fit buffers are freed dirty
    const auto reused_before = detail::large_buffer_stats().reused;
    const auto b = locate(f0, dp);
#if defined(__linux__)
    CHECK(detail::large_buffer_stats().reused > reused_before);
#endif
    REQUIRE(a.size() == b.size());
    REQUIRE(a.size() > 100);
    for (std::size_t i = 0; i < a.size(); ++i) {
        CHECK(a[i].x == b[i].x);
        CHECK(a[i].y == b[i].y);
        CHECK(a[i].radius == b[i].radius);
        CHECK(a[i].species == b[i].species);
    }
}
