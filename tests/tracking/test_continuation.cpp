// SPDX-License-Identifier: GPL-3.0-or-later
// Hysteresis in time for frames from scratch (tracking/src/detail/continuation.hpp): which
// disks continue the previous frame's, and the undoing of a one-frame jump — a steady disk
// whose place a circle from farther than 2 × the continuation distance took is put back when
// it is still there, and left alone when it is not steady, did not jump, moved, or when the
// circle is a disk of its own. Images: plain disks of known centre (cv::circle, blurred).
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include <opencv2/imgproc.hpp>

#include "../../tracking/src/detail/continuation.hpp"
#include "vibra/tracking/refine.hpp"

using namespace vibra::tracking;
using detail::Continuation;

namespace {

// Bright disks of radius r on a dark 200² frame, edges blurred by σ 1 px.
cv::Mat disks(std::vector<cv::Point2d> centres, double r) {
    cv::Mat img(200, 200, CV_8UC1, cv::Scalar(40));
    for (const auto& c : centres)
        cv::circle(img, cv::Point(int(std::lround(c.x * 16)), int(std::lround(c.y * 16))),
                   int(std::lround(r * 16)), cv::Scalar(190), cv::FILLED, cv::LINE_AA, 4);
    cv::GaussianBlur(img, img, cv::Size(0, 0), 1.0);
    return img;
}

Particle disk_at(double x, double y, double r, float strength = 1) {
    Particle q;
    q.x = x, q.y = y, q.radius = static_cast<float>(r), q.strength = strength;
    return q;
}

RefineParams refine_params() {
    RefineParams rp;
    rp.iterations = 8;
    return rp;
}

}  // namespace

TEST_CASE("continuation: a disk continues a previous one within the distance and the radius tolerance",
          "[unit]") {
    const std::vector<Particle> prev{disk_at(50, 50, 20), disk_at(150, 150, 24)};
    const Continuation c{prev, {}, 2.0, 0.05};
    REQUIRE(detail::continues(disk_at(51.9, 50, 20.9), prev[0], c));
    REQUIRE_FALSE(detail::continues(disk_at(52.1, 50, 20), prev[0], c));  // 2.1 px away
    REQUIRE_FALSE(detail::continues(disk_at(50, 50, 21.1), prev[0], c));  // radius 5.5% off
    const std::vector<Particle> now{disk_at(150.5, 149.5, 24.5), disk_at(90, 90, 20), disk_at(50, 50, 17)};
    REQUIRE(detail::continuing_disks(now, c) == std::vector<char>{1, 0, 0});
    REQUIRE(detail::continuing_disks(now, Continuation{}) == std::vector<char>{0, 0, 0});
}

TEST_CASE("continuation: a one-frame jump of a steady disk is undone, and only that", "[unit]") {
    const double r = 20;
    const cv::Mat img = disks({{100, 100}}, r);
    const auto g = compute_gradients(img, false, 64);
    const auto rp = refine_params();
    const std::vector<Particle> prev{disk_at(100.4, 99.7, 20.3)};  // where the disk was, as measured
    const std::vector<char> steady{1};
    // The frame's refinement put a larger circle 12 px off (> 2 × 2 px; the wrong circle a wall
    // gives): it continues nothing, so the disk is refined again from where it was.
    const std::vector<Particle> jumped{disk_at(108, 109, 24.5)};
    std::vector<char> restored(1, 0);
    Continuation c{prev, steady, 2.0, 0.05, &restored};
    auto parts = jumped;
    detail::undo_jumps(g, parts, c, 14, r, rp);
    REQUIRE(parts.size() == 1);
    CHECK(parts[0].x == Approx(100).margin(0.2));
    CHECK(parts[0].y == Approx(100).margin(0.2));
    CHECK(parts[0].radius == Approx(r).margin(1.0));  // cv::circle's outline lies ≈ 0.5 px out
    REQUIRE(restored == std::vector<char>{1});
    // A restored disk is not steady for the next frame; the disks that continue others are.
    const std::vector<Particle> next{parts[0], disk_at(170, 30, 20)};
    REQUIRE(detail::steady_disks(next, c) == std::vector<char>{0, 0});
    restored[0] = 0;
    REQUIRE(detail::steady_disks(next, c) == std::vector<char>{1, 0});
    // Left alone: the disk was not steady; the circle is within 2 × the distance (it did not
    // jump); no refined disk within the overlap (a disk gone is not put back).
    const std::vector<char> not_steady{0};
    parts = jumped;
    detail::undo_jumps(g, parts, Continuation{prev, not_steady, 2.0, 0.05}, 14, r, rp);
    REQUIRE(parts[0].x == jumped[0].x);
    const std::vector<Particle> near{disk_at(103, 101, 24.5)};  // 2.8 px < 4 px
    parts = near;
    detail::undo_jumps(g, parts, Continuation{prev, steady, 2.0, 0.05}, 14, r, rp);
    REQUIRE(parts[0].x == near[0].x);
    const std::vector<Particle> far{disk_at(130, 100, 20)};  // 30 px: beyond the overlap
    parts = far;
    detail::undo_jumps(g, parts, Continuation{prev, steady, 2.0, 0.05}, 14, r, rp);
    REQUIRE(parts[0].x == far[0].x);
    // The disk really moved (the image has it 8 px away, where the circle is): refined from where
    // it was, the result does not continue it, nothing changes.
    const cv::Mat moved_img = disks({{108, 100}}, r);
    const auto gm = compute_gradients(moved_img, false, 64);
    const std::vector<Particle> found{disk_at(108, 100, 20)};
    parts = found;
    detail::undo_jumps(gm, parts, Continuation{prev, steady, 2.0, 0.05}, 14, r, rp);
    REQUIRE(parts[0].x == found[0].x);
    // The circle continues another previous disk (a disk of its own, which came close): kept.
    const std::vector<Particle> two_prev{prev[0], disk_at(108.5, 109, 24.5)};
    const std::vector<char> both_steady{1, 1};
    parts = jumped;
    detail::undo_jumps(g, parts, Continuation{two_prev, both_steady, 2.0, 0.05}, 14, r, rp);
    REQUIRE(parts[0].x == jumped[0].x);
}
