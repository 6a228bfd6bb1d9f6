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

namespace {

// A frame of four disks of radius 20: the one that may jump at (100, 100) and three that stay
// at (40, 40), (160, 40), (40, 160). The previous frame had all four, steady, at the frame's
// median edge (quality 1); this frame's refined disks are the three others (edge 0.3, found
// where they were) plus `at_centre`.
struct JumpScene {
    static constexpr double r = 20;
    std::vector<Particle> prev{disk_at(100.4, 99.7, 20.3), disk_at(40, 40, 20), disk_at(160, 40, 20),
                               disk_at(40, 160, 20)};
    std::vector<char> steady{1, 1, 1, 1};
    std::vector<char> restored = std::vector<char>(4, 0);
    JumpScene() {
        for (auto& q : prev) q.quality = 1;
    }
    static cv::Mat image(cv::Point2d centre) { return disks({centre, {40, 40}, {160, 40}, {40, 160}}, r); }
    static std::vector<Particle> refined(std::vector<Particle> at_centre) {
        std::vector<Particle> v{disk_at(40.2, 40, 20, 0.3f), disk_at(160, 39.9, 20, 0.3f),
                                disk_at(40, 160.1, 20, 0.3f)};
        for (auto& q : at_centre) q.strength = 0.3f, v.push_back(q);
        return v;
    }
    Continuation cont() { return Continuation{prev, steady, 2.0, 0.05, &restored}; }
};

}  // namespace

TEST_CASE("continuation: a one-frame jump of a steady disk is undone, and only that", "[unit]") {
    const double r = JumpScene::r;
    const auto g = compute_gradients(JumpScene::image({100, 100}), false, 64);
    const auto rp = refine_params();
    // The frame's refinement put a larger circle 12 px off (> 2 × 2 px; the wrong circle a wall
    // gives), and a duplicate of it 1 px away: it continues nothing, so the disk is refined again
    // from where it was and replaces the circle; the duplicate goes too.
    const Particle jumped = disk_at(108, 109, 24.5);
    JumpScene s;
    auto parts = JumpScene::refined({jumped, disk_at(108.6, 109.5, 24.6)});
    detail::undo_jumps(g, parts, s.cont(), 14, r, rp);
    REQUIRE(parts.size() == 5);
    CHECK(parts[3].x == Approx(100).margin(0.2));
    CHECK(parts[3].y == Approx(100).margin(0.2));
    CHECK(parts[3].radius == Approx(r).margin(1.0));  // cv::circle's outline lies ≈ 0.5 px out
    CHECK(parts[4].strength == 0);                    // the duplicate
    for (int i = 0; i < 3; ++i) CHECK(parts[i].strength == 0.3f);
    REQUIRE(s.restored == std::vector<char>{1, 0, 0, 0});
    // A restored disk is not steady for the next frame; the disks that continue others are.
    const std::vector<Particle> next{parts[3], parts[0], disk_at(170, 100, 20)};
    REQUIRE(detail::steady_disks(next, s.cont()) == std::vector<char>{0, 1, 0});
    s.restored[0] = 0;
    REQUIRE(detail::steady_disks(next, s.cont()) == std::vector<char>{1, 1, 0});

    auto left_alone = [&](const cv::Mat& image, const Particle& at_centre, JumpScene& scene) {
        const auto gi = compute_gradients(image, false, 64);
        auto v = JumpScene::refined({at_centre});
        detail::undo_jumps(gi, v, scene.cont(), 14, r, rp);
        return v[3].x == at_centre.x && v[3].y == at_centre.y && v[3].strength == 0.3f &&
               scene.restored == std::vector<char>(4, 0);
    };
    const cv::Mat still = JumpScene::image({100, 100});
    {
        JumpScene t;  // the disk was not steady
        t.steady[0] = 0;
        CHECK(left_alone(still, jumped, t));
    }
    {
        JumpScene t;  // the circle is within 2 × the distance: it did not jump
        CHECK(left_alone(still, disk_at(103, 101, 24.5), t));
    }
    {
        JumpScene t;  // nothing within the overlap (14 px): a disk gone is not put back
        CHECK(left_alone(still, disk_at(130, 100, 20), t));
    }
    {
        JumpScene t;  // the disk really moved 8 px, to where the circle is: followed, not put back
        CHECK(left_alone(JumpScene::image({108, 100}), disk_at(108, 100, 20), t));
    }
    {
        JumpScene t;  // the circle continues another previous disk (a disk of its own)
        t.prev.push_back(disk_at(108.5, 109, 24.5));
        t.steady.push_back(1);
        t.restored.push_back(0);
        auto v = JumpScene::refined({jumped});
        detail::undo_jumps(g, v, t.cont(), 14, r, rp);
        CHECK(v[3].x == jumped.x);
        CHECK(t.restored == std::vector<char>(5, 0));
    }
    {
        // At its old place the disk has less than half the edge it had: it had the frame's median
        // edge (quality 1), this frame's median is 0.9 and the disk's own edge ≈ 0.33 < 0.5 × 0.9.
        JumpScene t;
        auto v = JumpScene::refined({jumped});
        for (auto& q : v) q.strength = 0.9f;
        const auto gi = compute_gradients(still, false, 64);
        detail::undo_jumps(gi, v, t.cont(), 14, r, rp);
        CHECK(v[3].x == jumped.x);
        CHECK(t.restored == std::vector<char>(4, 0));
    }
    {
        JumpScene t;  // most steady disks moved (the frame shook): nothing is undone
        auto v = JumpScene::refined({jumped});
        for (int i = 0; i < 3; ++i) v[static_cast<std::size_t>(i)].x += 10;
        detail::undo_jumps(g, v, t.cont(), 14, r, rp);
        CHECK(v[3].x == jumped.x);
        CHECK(t.restored == std::vector<char>(4, 0));
    }
}
