// SPDX-License-Identifier: GPL-3.0-or-later
// The frame-sized buffers (tracking/src/detail/large_buffers.hpp): freed ones are handed out
// again, the cache stays within its bound, buffers are packed and followed by readable slack,
// and nothing depends on a buffer's contents
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
// A buffer's size as the cache counts it: its bytes and the slack after them, in 4 KiB pages.
static std::size_t held_bytes(std::size_t n) { return (n + detail::kLargeBufferSlack + 4095) / 4096 * 4096; }

TEST_CASE("a freed frame-sized buffer is handed out again", "[tracking][buffers]") {
    const auto before = detail::large_buffer_stats();
    const std::size_t len = held_bytes(std::size_t{1024} * 1536);  // 1.5 MiB (+ one page of slack)
    const std::uint8_t* first = nullptr;
    {
        cv::Mat a = detail::large_mat(1024, 1536, CV_8U);
        first = a.data;
        a.setTo(7);
    }
    const auto freed = detail::large_buffer_stats();
    CHECK(freed.cached_bytes >= before.cached_bytes + len);
    cv::Mat b = detail::large_mat(1024, 1536, CV_8U);
    const auto again = detail::large_buffer_stats();
    CHECK(b.data == first);  // the most recently freed buffer of that size
    CHECK(again.reused == freed.reused + 1);
    CHECK(again.mapped == freed.mapped);
    CHECK(again.cached_bytes == freed.cached_bytes - len);
}

TEST_CASE("frame-sized buffers are packed, not each rounded up to 2 MiB pages", "[tracking][buffers]") {
    // Three fresh 1.01 MiB buffers (a size no earlier test freed): carved one after the other,
    // so they touch ≈ 3 MiB of fresh memory, not 3 × 2 MiB. A new 32 MiB region may begin
    // between two of them, but not twice.
    const int rows = 1031, cols = 1031;
    const std::size_t len = held_bytes(std::size_t{rows} * cols);
    cv::Mat a = detail::large_mat(rows, cols, CV_8U), b = detail::large_mat(rows, cols, CV_8U),
            c = detail::large_mat(rows, cols, CV_8U);
    const bool ab = b.data == a.data + len, bc = c.data == b.data + len;
    CHECK((ab || bc));
    CHECK(reinterpret_cast<std::uintptr_t>(a.data) % 4096 == 0);
    CHECK(reinterpret_cast<std::uintptr_t>(b.data) % 4096 == 0);
}

TEST_CASE("reads past a large buffer's last row stay inside its slack", "[tracking][buffers]") {
    cv::Mat m = detail::large_mat(100, 1000, CV_8U);
    const uchar* end = m.ptr<uchar>(99) + 1000;
    CHECK(detail::readable_after(m, end, detail::kLargeBufferSlack));
    CHECK_FALSE(detail::readable_after(m, end, detail::kLargeBufferSlack + 1));
    // a view of the top rows: its parent's next rows follow
    const cv::Mat top = m.rowRange(0, 50);
    CHECK(detail::readable_after(top, top.ptr<uchar>(49) + 1000, 1000));
    // an ordinary matrix promises nothing past its end; nor does one over someone else's pixels
    cv::Mat plain(100, 1000, CV_8U);
    CHECK_FALSE(detail::readable_after(plain, plain.ptr<uchar>(99) + 1000, 1));
    std::vector<uchar> px(100 * 1000);
    cv::Mat wrapped(100, 1000, CV_8U, px.data());
    CHECK_FALSE(detail::readable_after(wrapped, wrapped.ptr<uchar>(99) + 1000, 1));
}

TEST_CASE("the buffer cache stays within its bound", "[tracking][buffers]") {
    // 300 buffers of 2 MiB (never touched: no memory is used) freed together: 600 MiB > bound
    std::vector<cv::Mat> held;
    for (int k = 0; k < 300; ++k) held.push_back(detail::large_mat(1024, 2048, CV_8U));
    held.clear();
    const auto s = detail::large_buffer_stats();
    CHECK(s.cached_bytes <= detail::kLargeBufferCacheBytes);
    CHECK(s.cached_bytes >= detail::kLargeBufferCacheBytes - held_bytes(std::size_t{2} << 20));
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
