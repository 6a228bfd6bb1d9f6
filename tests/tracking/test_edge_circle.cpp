// SPDX-License-Identifier: GPL-3.0-or-later
// The circle through a disk's edge points and the repair of wrongly refined large disks
// (tracking/src/detail/edge_circle.hpp), against the renderer's exact circles: an isolated disk,
// a disk partly behind a bar (where the refinement's azimuthally averaged profile settles on a
// larger circle and the outline's curvature does not), touching neighbours, images with no
// outline.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "../../tracking/src/detail/edge_circle.hpp"
#include "vibra/tracking/refine.hpp"
#include "vibra/tracking/synth.hpp"

using namespace vibra::tracking;
using detail::EdgeNeighbour;
using detail::fit_edge_circle;

namespace {

RenderParams rim_look(int size) {
    RenderParams rp;
    rp.width = rp.height = size;
    rp.look = DiskLook::bright_rim;
    rp.texture_amplitude = 0;
    return rp;
}

// A dark bar over the columns x < x_bar (the level of the image's darkest pixel − 20).
void cover_by_bar(cv::Mat& img, int x_bar) {
    double lo = 0;
    cv::minMaxLoc(img, &lo);
    img(cv::Rect(0, 0, x_bar, img.rows)).setTo(std::max(0.0, lo - 20));
}

}  // namespace

TEST_CASE("edge circle: an isolated disk from a start 4 px and 10% off", "[unit]") {
    const auto rp = rim_look(200);
    const Disk d{100.37, 95.81, 40, 0, 1};
    const std::vector<Disk> disks{d};
    const cv::Mat img = render_frame(disks, rp);
    const auto g = compute_gradients(img, false, 32);
    const double r0 = 44;
    const auto c = fit_edge_circle(g, 103.4, 93.2, r0, 0.75 * r0, 1.12 * r0, {});
    REQUIRE(c.ok);
    INFO("fit (" << c.x << ", " << c.y << ") r " << c.r << ", rms " << c.rms << " px, " << c.points
                 << " points");
    REQUIRE(c.points >= 28);  // of 32 rays
    REQUIRE(std::hypot(c.x - d.x, c.y - d.y) < 0.2);
    REQUIRE(std::abs(c.r - d.radius) < 0.3);  // the outer edge's steepest fall (blur 0.7 px)
    REQUIRE(c.rms < 0.3);
}

TEST_CASE("edge circle: a disk behind a bar, where the averaged profile fits a larger circle", "[unit]") {
    // The left 30% of the disk's outline is hidden by a dark bar; the refinement from a start on
    // the larger circle through the bar's edge (as the particletracker disc 44) keeps that circle,
    // the edge points' circle finds the disk's own.
    const auto rp = rim_look(200);
    const Disk d{110.4, 100.6, 40, 0, 1};
    const std::vector<Disk> disks{d};
    cv::Mat img = render_frame(disks, rp);
    cover_by_bar(img, static_cast<int>(d.x - 28));
    const auto g = compute_gradients(img, false, 32);
    const double sx = d.x - 7, sy = d.y + 1, r0 = 47;  // the larger circle: right side on the disk's edge
    std::vector<Particle> parts(1);
    parts[0].x = sx, parts[0].y = sy;
    refine_particles(g, parts, 0.93 * r0, 1.07 * r0, {});
    INFO("refinement from the larger circle: (" << parts[0].x << ", " << parts[0].y << ") r "
                                                << parts[0].radius);
    REQUIRE(parts[0].radius > 1.05 * d.radius);  // the fixture reproduces the failure (measured 44.1 px)
    const auto c = fit_edge_circle(g, sx, sy, r0, 0.75 * r0, 1.12 * r0, {});
    REQUIRE(c.ok);
    INFO("edge circle (" << c.x << ", " << c.y << ") r " << c.r << ", " << c.points << " points");
    REQUIRE(std::abs(c.r - d.radius) < 0.5);
    REQUIRE(std::hypot(c.x - d.x, c.y - d.y) < 0.5);
    // repair_by_edge_circles: the refined disk on the larger circle is refined again from the
    // edge circle and takes the disk's own circle; a disk refined right is left as it is
    const Particle wrong = parts[0];
    REQUIRE(detail::repair_by_edge_circles(g, parts, 40, 47, 0.15, 43.5, {}) == 1);
    INFO("repaired: (" << parts[0].x << ", " << parts[0].y << ") r " << parts[0].radius);
    // measured (112.06, 100.52) r 39.49: the refinement's own bias where the bar hides 30% of the
    // outline (locate() from the vote's candidate gives the same), not the larger circle's 3.3 / 4.1 px
    REQUIRE(std::abs(parts[0].radius - d.radius) < 1.0);
    REQUIRE(std::hypot(parts[0].x - d.x, parts[0].y - d.y) < 2.0);
    REQUIRE(parts[0].strength > 0);
    const Particle right = parts[0];
    REQUIRE(detail::repair_by_edge_circles(g, parts, 40, 47, 0.15, 43.5, {}) == 0);
    REQUIRE(parts[0].x == right.x);
    REQUIRE(parts[0].radius == right.radius);
    // no repair where the edge circle is outside the radius range the classes allow (radii 44–47
    // ±5%), nor where it is in the same size class as the refined circle (threshold 30 px)
    parts[0] = wrong;
    REQUIRE(detail::repair_by_edge_circles(g, parts, 44, 47, 0.05, 45.5, {}) == 0);
    REQUIRE(parts[0].radius == wrong.radius);
    REQUIRE(detail::repair_by_edge_circles(g, parts, 40, 47, 0.15, 30, {}) == 0);
    REQUIRE(parts[0].radius == wrong.radius);
}

TEST_CASE("edge circle: touching neighbours' edges are left out", "[unit]") {
    const auto rp = rim_look(240);
    const Disk a{90.3, 120.2, 40, 0, 1}, b{90.3 + 88.0, 121.0, 48, 1, 2};  // touching
    const std::vector<Disk> disks{a, b};
    const cv::Mat img = render_frame(disks, rp);
    const auto g = compute_gradients(img, false, 32);
    const std::vector<EdgeNeighbour> nb{{b.x, b.y, b.radius}};
    const auto c = fit_edge_circle(g, a.x + 2, a.y - 2, 42, 0.75 * 42, 1.12 * 42, nb);
    REQUIRE(c.ok);
    INFO("fit (" << c.x << ", " << c.y << ") r " << c.r);
    REQUIRE(std::abs(c.r - a.radius) < 0.3);
    REQUIRE(std::hypot(c.x - a.x, c.y - a.y) < 0.3);
}

TEST_CASE("edge circle: no outline, no circle", "[unit]") {
    const cv::Mat flat(160, 160, CV_8UC1, cv::Scalar(90));
    const auto g = compute_gradients(flat, false, 32);
    REQUIRE_FALSE(fit_edge_circle(g, 80, 80, 40, 30, 45, {}).ok);
    // a disk whose outline lies outside the searched radii
    const std::vector<Disk> small{Disk{80, 80, 20, 0, 1}};
    const cv::Mat img = render_frame(small, rim_look(160));
    REQUIRE_FALSE(fit_edge_circle(compute_gradients(img, false, 32), 80, 80, 50, 45, 60, {}).ok);
}
