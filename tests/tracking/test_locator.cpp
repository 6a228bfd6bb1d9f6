// SPDX-License-Identifier: GPL-3.0-or-later
// DiskLocator (frame-to-frame detection; here each of two locators sees every other frame, as
// `vibra track`'s workers do when frames are dealt in turn, the harder case: by default they
// share each frame by strips and see every frame, test_strips.cpp): the warm-started frames meet the same
// targets as locate() on the
// moderate and noisy cases, against the exact truth of the renderer; a frame of another size
// or a reset starts from scratch.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <opencv2/imgproc.hpp>

#include "detection_score.hpp"
#include "vibra/core/trajectory.hpp"
#include "vibra/tracking/detect.hpp"
#include "vibra/tracking/synth.hpp"

using namespace vibra;
using namespace vibra::tracking;

namespace {

// Frames dealt in turn to two locators, as two pipeline workers see them.
struct VideoScore : test::Stats {
    std::int64_t warm_frames = 0;
};

VideoScore run_video(const SynthParams& sp, const DetectParams& dp, const LocatorParams& lp = {}) {
    SynthGenerator gen(sp);
    std::vector<DiskLocator> loc{DiskLocator(dp, lp), DiskLocator(dp, lp)};
    VideoScore s;
    cv::Mat img;
    TrajectoryTable truth;
    for (std::size_t f = 0;; ++f) {
        const std::size_t row0 = truth.size();
        if (!gen.next(img, truth)) break;
        auto& L = loc[f % 2];
        const auto parts = L.next(img);
        s.warm_frames += L.last().warm;
        test::score(parts, truth, row0, s);
    }
    return s;
}

// A sparse 192² video (φ 0.25) in which the disk nearest the centre can be painted out: its
// truth rows are at `frame * per_frame + hidden` (same order in every frame).
struct HiddenDiskVideo {
    std::vector<cv::Mat> frames;
    TrajectoryTable truth;
    std::size_t per_frame = 0, hidden = 0;
    std::size_t row(std::size_t frame) const { return frame * per_frame + hidden; }
    // Paints the disk over in `frame` with the background level (noise-free, uniform light: the image's
    // median).
    void paint_out(std::size_t frame, cv::Mat& img) const {
        std::vector<std::uint8_t> px(img.datastart, img.dataend);
        std::nth_element(px.begin(), px.begin() + static_cast<std::ptrdiff_t>(px.size() / 2), px.end());
        const std::size_t r = row(frame);
        cv::circle(img, cv::Point(int(std::lround(truth.x[r])), int(std::lround(truth.y[r]))),
                   int(truth.radius[r]) + 3, cv::Scalar(px[px.size() / 2]), cv::FILLED);
    }
    bool found_in(const std::vector<Particle>& parts, std::size_t frame) const {
        const std::size_t r = row(frame);
        for (const auto& q : parts)
            if (std::hypot(q.x - truth.x[r], q.y - truth.y[r]) < 1.0) return true;
        return false;
    }
};

HiddenDiskVideo hidden_disk_video(std::int64_t n_frames, std::uint64_t seed) {
    SynthParams sp;
    sp.render.width = sp.render.height = 192;
    sp.packing_fraction = 0.25;
    sp.frames = n_frames;
    sp.seed = seed;
    SynthGenerator gen(sp);
    HiddenDiskVideo v;
    for (cv::Mat img; gen.next(img, v.truth);) v.frames.push_back(img.clone());
    REQUIRE(static_cast<std::int64_t>(v.frames.size()) == n_frames);
    v.per_frame = v.truth.size() / v.frames.size();
    double best = 1e9;
    for (std::size_t i = 0; i < v.per_frame; ++i)
        if (const double d = std::hypot(v.truth.x[i] - 96, v.truth.y[i] - 96); d < best)
            best = d, v.hidden = i;
    for (std::size_t f = 0; f < v.frames.size(); ++f)
        REQUIRE(v.truth.particle[v.row(f)] == v.truth.particle[v.hidden]);
    return v;
}

}  // namespace

TEST_CASE("DiskLocator: warm-started frames of the moderate case meet the targets", "[unit]") {
    SynthParams sp = reference_case(ReferenceCase::moderate, 384, 8, 51);
    DetectParams dp;
    dp.radii = {6, 8};
    const auto s = run_video(sp, dp);
    WARN("locator, moderate: truth " << s.truth << ", recall " << double(s.matched) / double(s.truth)
                                     << ", precision " << double(s.matched) / double(s.detected) << ", RMS "
                                     << s.rms() << " px, warm frames " << s.warm_frames);
    REQUIRE(s.warm_frames == 6);  // every frame after each locator's first
    REQUIRE(double(s.matched) / double(s.truth) >= 0.999);
    REQUIRE(double(s.matched) / double(s.detected) >= 0.999);
    REQUIRE(s.rms() <= 0.03);
    REQUIRE(double(s.species_ok) / double(s.matched) >= 0.999);
}

// One locator on every frame (as a strip's locator runs): the disks move ≈ 0.3 px between
// frames, below warm_one_coarse_below, and the warm frames whose starts no search moved take one
// coarse sweep, with the same targets; dealt every other frame (≈ 0.55 px) they keep two.
TEST_CASE("DiskLocator: one coarse sweep while the disks move little between frames", "[unit]") {
    SynthParams sp = reference_case(ReferenceCase::moderate, 384, 12, 57);
    DetectParams dp;
    dp.radii = {6, 8};
    SynthGenerator gen(sp);
    DiskLocator L(dp);
    test::Stats s;
    int one = 0, warm = 0;
    cv::Mat img;
    TrajectoryTable truth;
    while (true) {
        const std::size_t row0 = truth.size();
        if (!gen.next(img, truth)) break;
        const auto parts = L.next(img);
        if (L.last().warm) ++warm, one += L.last().coarse_sweeps == 1;
        test::score(parts, truth, row0, s);
    }
    WARN("one locator on every frame: " << one << " of " << warm << " warm frames with one coarse sweep, RMS "
                                        << s.rms() << " px");
    REQUIRE(warm == 11);
    REQUIRE(one >=
            8);  // frames 3.. whose starts no search moved (searching frames included; 7 when those kept two)
    REQUIRE(s.recall() >= 0.999);
    REQUIRE(s.precision() >= 0.999);
    REQUIRE(s.rms() <= 0.03);
    // dealt in turn to two locators: larger steps, two coarse sweeps throughout
    SynthGenerator gen2(sp);
    std::vector<DiskLocator> two{DiskLocator(dp), DiskLocator(dp)};
    int one2 = 0;
    for (std::size_t f = 0; gen2.next(img, truth); ++f) {
        (void)two[f % 2].next(img);
        one2 += two[f % 2].last().coarse_sweeps == 1;
    }
    REQUIRE(one2 == 0);
    // off: never
    LocatorParams off;
    off.warm_one_coarse_below = 0;
    SynthGenerator gen3(sp);
    DiskLocator L3(dp, off);
    int one3 = 0;
    while (gen3.next(img, truth)) {
        (void)L3.next(img);
        one3 += L3.last().coarse_sweeps == 1;
    }
    REQUIRE(one3 == 0);
}

TEST_CASE("DiskLocator: templates re-measured in warm frames keep the targets", "[unit]") {
    // Every 2nd warm frame re-measures the templates (warm_refresh = 2, against 100 by default):
    // the moderate case still meets its targets, and no frame after each locator's first is
    // located from scratch.
    SynthParams sp = reference_case(ReferenceCase::moderate, 384, 8, 55);
    DetectParams dp;
    dp.radii = {6, 8};
    LocatorParams lp;
    lp.warm_refresh = 2;
    const auto s = run_video(sp, dp, lp);
    WARN("locator, moderate, templates re-measured every 2nd warm frame: RMS "
         << s.rms() << " px, warm frames " << s.warm_frames);
    REQUIRE(s.warm_frames == 6);
    REQUIRE(double(s.matched) / double(s.truth) >= 0.999);
    REQUIRE(double(s.matched) / double(s.detected) >= 0.999);
    REQUIRE(s.rms() <= 0.03);
    REQUIRE(double(s.species_ok) / double(s.matched) >= 0.999);
}

TEST_CASE("DiskLocator: fast disks with motion blur (noisy case)", "[unit]") {
    SynthParams sp =
        reference_case(ReferenceCase::noisy, 384, 8, 52);  // 4 px between the frames one locator sees
    DetectParams dp;
    dp.radii = {6, 8};
    const auto s = run_video(sp, dp);
    WARN("locator, noisy: truth " << s.truth << ", recall " << double(s.matched) / double(s.truth)
                                  << ", precision " << double(s.matched) / double(s.detected) << ", RMS "
                                  << s.rms() << " px");
    REQUIRE(s.warm_frames == 6);
    REQUIRE(double(s.matched) / double(s.truth) >= 0.995);
    REQUIRE(double(s.matched) / double(s.detected) >= 0.99);
    REQUIRE(s.rms() <= 0.1);
    // A disk predicted a few px off (it turned) must not be doubled by a "new" disk at its own
    // candidate: with new disks only beyond 0.6 r_small (the old default) this case was worse.
    // Candidates in every warm frame here, so that every frame can show it.
    LocatorParams every;
    every.warm_candidates_every = 1;
    LocatorParams close = every;
    close.new_disk_separation = 0.6;
    auto s06 = run_video(sp, dp, close);
    auto s15 = run_video(sp, dp, every);
    WARN("locator, noisy, new disks beyond 0.6 r_small: RMS "
         << s06.rms() << " px, p99 " << s06.quantile(0.99) << " px; default (1.5 r_small): RMS " << s15.rms()
         << " px, p99 " << s15.quantile(0.99) << " px");
    REQUIRE(s15.rms() < s06.rms());
}

// A disk that the locator does not carry (it entered the field, or was missed) is found from
// the candidates of the frame half way between the residual searches, or by the residual search.
TEST_CASE("DiskLocator: a disk not carried is found within half the candidate/residual-search cadence",
          "[unit]") {
    // Frame 0 with the disk nearest the centre painted over.
    const auto v = hidden_disk_video(6, 54);
    cv::Mat first = v.frames[0].clone();
    v.paint_out(0, first);
    DetectParams dp;
    dp.radii = {6, 8};
    auto first_found = [&](const LocatorParams& lp) {
        DiskLocator L(dp, lp);
        if (v.found_in(L.next(first), 0)) return std::int64_t(-1);
        for (std::size_t f = 1; f < v.frames.size(); ++f) {
            const auto parts = L.next(v.frames[f]);
            REQUIRE(L.last().warm);
            if (v.found_in(parts, f)) return std::int64_t(f);
        }
        return std::int64_t(99);
    };
    LocatorParams lp;
    CHECK(first_found(lp) == 2);  // candidates in warm frame 2 (the residual search would find it in frame 4)
    lp.warm_candidates_every = 1;
    CHECK(first_found(lp) == 1);
    lp.warm_candidates_every = 8;
    CHECK(first_found(lp) == 4);  // candidates only in warm frame 4, and the residual search there too
    lp.warm_missing_every = 2;
    CHECK(first_found(lp) == 2);  // the residual search alone (every 2nd warm frame)
}

// While the searches for new disks find nothing (a closed box), each backs off to every 16th warm
// frame (warm_search_max_every); a disk that appears is found at the next search, and the
// cadence comes back to every 4th at once.
TEST_CASE("DiskLocator: the searches back off while nothing is new and come back when a disk appears",
          "[unit]") {
    auto v = hidden_disk_video(48, 56);
    const int appears = 24;  // painted over in frames 0..23
    for (int f = 0; f < appears; ++f)
        v.paint_out(static_cast<std::size_t>(f), v.frames[static_cast<std::size_t>(f)]);
    struct Run {
        std::vector<int> searches;  // warm frames with a search for new disks
        int found = -1;
    };
    DetectParams dp;
    dp.radii = {6, 8};
    auto run = [&](const LocatorParams& lp) {
        Run r;
        DiskLocator L(dp, lp);
        for (int f = 0; f < 48; ++f) {
            const auto parts = L.next(v.frames[static_cast<std::size_t>(f)]);
            REQUIRE(L.last().warm == (f > 0));
            if (L.last().searched_candidates || L.last().searched_missing) r.searches.push_back(f);
            const bool seen = v.found_in(parts, static_cast<std::size_t>(f));
            if (seen && r.found < 0) r.found = f;
            if (f < appears) REQUIRE_FALSE(seen);
        }
        return r;
    };
    LocatorParams fixed;
    fixed.warm_search_max_every = 4;  // the cadence kept at candidates every 4th (from 2), residual every 4th
    LocatorParams backoff = fixed;
    backoff.warm_search_max_every = 16;  // the default
    REQUIRE(LocatorParams{}.warm_search_max_every == 16);
    const auto a = run(fixed), b = run(backoff);
    auto before = [&](const Run& r, int f) {
        return std::count_if(r.searches.begin(), r.searches.end(), [&](int s) { return s < f; });
    };
    WARN("searches before frame " << appears << ": fixed " << before(a, appears) << ", backing off "
                                  << before(b, appears) << "; the disk found in frame " << a.found << " / "
                                  << b.found);
    CHECK(before(a, appears) == 11);  // 2, 4, 6, …, 22
    CHECK(before(b, appears) == 4);   // candidates 2, 10; residual 4, 12 (then 26, 28)
    CHECK(a.found >= appears);
    CHECK(a.found <= appears + 2);
    CHECK(b.found >= appears);
    CHECK(b.found <= appears + 8);  // the next search after frame 24 (26 or 28)
    // Found: the cadence is back to every 4th at once (a search within 4 frames of the find).
    const auto next = std::find_if(b.searches.begin(), b.searches.end(), [&](int s) { return s > b.found; });
    REQUIRE(next != b.searches.end());
    CHECK(*next - b.found <= 4);
}

TEST_CASE("DiskLocator: a reset or a frame of another size starts from scratch", "[unit]") {
    SynthParams sp;
    sp.render.width = sp.render.height = 160;
    sp.packing_fraction = 0.4;
    sp.frames = 3;
    sp.seed = 53;
    DetectParams dp;
    dp.radii = {6, 8};
    SynthGenerator gen(sp);
    cv::Mat a, b, c;
    TrajectoryTable t;
    REQUIRE(gen.next(a, t));
    REQUIRE(gen.next(b, t));
    REQUIRE(gen.next(c, t));
    DiskLocator L(dp);
    const auto pa = L.next(a);
    REQUIRE_FALSE(L.last().warm);
    const auto pb = L.next(b);
    REQUIRE(L.last().warm);
    REQUIRE(pb.size() == pa.size());
    L.reset();
    (void)L.next(c);
    REQUIRE_FALSE(L.last().warm);
    const cv::Mat crop = c(cv::Rect(0, 0, 120, 120)).clone();
    (void)L.next(crop);
    REQUIRE_FALSE(L.last().warm);
    // every warm_refresh-th warm frame re-measures the templates, warm (not from scratch)
    LocatorParams dr;
    dr.warm_refresh = 2;
    DiskLocator L3(dp, dr);
    std::vector<bool> warm, remeasured;
    for (const auto* im : {&a, &b, &c, &b, &c}) {
        (void)L3.next(*im);
        warm.push_back(L3.last().warm);
        remeasured.push_back(L3.last().templates_remeasured);
    }
    REQUIRE(warm == std::vector<bool>{false, true, true, true, true});
    REQUIRE(remeasured == std::vector<bool>{false, false, true, false, true});
    // without the joint fit every frame is located from scratch, and the results are locate()'s
    dp.joint = false;
    DiskLocator L2(dp);
    (void)L2.next(a);
    const auto p2 = L2.next(b);
    REQUIRE_FALSE(L2.last().warm);
    const auto ref = locate(b, dp);
    REQUIRE(p2.size() == ref.size());
    for (std::size_t i = 0; i < ref.size(); ++i) REQUIRE(p2[i].x == ref[i].x);
}

namespace {

// 3×3 disks of radius 14 px, 150 grey levels above the background, edges blurred by a lens
// (Gaussian σ 1 px), on a 240² frame; the centre one, at (120, 120) + (dx, dy), blurred by
// `centre_blur` px instead (a faint edge, as a disk out of focus or seen through a bar), or left
// out when centre_blur is 0.
cv::Mat nine_disks(double centre_blur, double dx = 0, double dy = 0) {
    cv::Mat others(240, 240, CV_32FC1, cv::Scalar(0)), centre = others.clone();
    constexpr int shift = 4;  // sub-pixel centres for cv::circle
    auto disk = [](cv::Mat& m, double x, double y) {
        cv::circle(m, cv::Point(int(std::lround(x * 16)), int(std::lround(y * 16))), 14 * 16, cv::Scalar(150),
                   cv::FILLED, cv::LINE_AA, shift);
    };
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
            if (i != 1 || j != 1) disk(others, 50 + 70 * j, 50 + 70 * i);
    cv::GaussianBlur(others, others, cv::Size(0, 0), 1.0);
    if (centre_blur > 0) {
        disk(centre, 120 + dx, 120 + dy);
        cv::GaussianBlur(centre, centre, cv::Size(0, 0), centre_blur);
    }
    cv::Mat img;
    cv::Mat(others + centre + 40).convertTo(img, CV_8UC1);
    return img;
}

bool has_disk_at(const std::vector<Particle>& parts, double x, double y) {
    return std::any_of(parts.begin(), parts.end(),
                       [&](const Particle& q) { return std::hypot(q.x - x, q.y - y) < 1.0; });
}

}  // namespace

TEST_CASE("DiskLocator: a frame from scratch keeps a faint disk that continues one of the last frame's",
          "[unit]") {
    DetectParams dp;
    dp.radii = {14};
    dp.joint = false;   // every frame from scratch (as when the joint fit refuses the images)
    dp.min_edge = 0.7;  // the centre disk's edge: ≈ 1 × the median sharp, ≈ 0.57 × blurred by 2 px
    const cv::Mat strong = nine_disks(1), faint = nine_disks(2), absent = nine_disks(0);
    // The faint centre disk alone: a circle is found there, but its edge is below min_edge.
    DetectParams keep_all = dp;
    keep_all.min_edge = 0;
    const auto all = locate(faint, keep_all);
    REQUIRE(has_disk_at(all, 120, 120));
    REQUIRE(all.size() == 9);
    const auto alone = locate(faint, dp);
    REQUIRE(alone.size() == 8);
    REQUIRE_FALSE(has_disk_at(alone, 120, 120));
    // Seen strong in the frame before: kept (hysteresis in time), with the same eight others.
    DiskLocator L(dp);
    REQUIRE(L.next(strong).size() == 9);
    const auto kept = L.next(faint);
    REQUIRE_FALSE(L.last().warm);
    REQUIRE(kept.size() == 9);
    REQUIRE(has_disk_at(kept, 120, 120));
    // ... and in the frames after, while it stays where it was.
    REQUIRE(has_disk_at(L.next(faint), 120, 120));
    // Not seen before, or not where it was (moved by more than continue_distance × r), or after
    // a reset: dropped as locate() drops it.
    DiskLocator fresh(dp);
    REQUIRE(fresh.next(absent).size() == 8);
    REQUIRE_FALSE(has_disk_at(fresh.next(faint), 120, 120));
    DiskLocator moved(dp);
    (void)moved.next(nine_disks(1, -3, 0));  // 3 px > 0.1 × 14 px
    REQUIRE_FALSE(has_disk_at(moved.next(faint), 120, 120));
    DiskLocator near(dp);
    (void)near.next(nine_disks(1, -1, 0));  // 1 px: the same disk
    REQUIRE(has_disk_at(near.next(faint), 120, 120));
    L.reset();
    REQUIRE_FALSE(has_disk_at(L.next(faint), 120, 120));
    // Switched off: as locate().
    LocatorParams off;
    off.continue_distance = 0;
    DiskLocator L0(dp, off);
    (void)L0.next(strong);
    REQUIRE(L0.next(faint).size() == 8);
}

TEST_CASE("DiskLocator: a circle that jumps away from a steady disk for one frame is undone", "[unit]") {
    DetectParams dp;
    dp.radii = {14};
    dp.joint = false;  // every frame from scratch
    const cv::Mat sharp = nine_disks(1);
    // A bright ring of radius 15.5 px centred 8 px from the centre disk (a reflection), sharper
    // than the disk's edge: a frame located alone takes the ring instead of the disk.
    cv::Mat ring = sharp.clone();
    cv::circle(ring, cv::Point(127 * 16, 124 * 16), int(15.5 * 16), cv::Scalar(255), 2, cv::LINE_AA, 4);
    auto near = [](const std::vector<Particle>& parts, double x, double y, double tol) {
        return std::any_of(parts.begin(), parts.end(),
                           [&](const Particle& q) { return std::hypot(q.x - x, q.y - y) < tol; });
    };
    const auto alone = locate(ring, dp);
    REQUIRE(alone.size() == 9);
    REQUIRE(near(alone, 127, 124, 1.5));
    REQUIRE_FALSE(near(alone, 120, 120, 1.5));
    // After two frames with the disk steady at (120, 120): the disk is put back (the ring's edge
    // runs through the disk's, so within 0.5 px), the ring is gone.
    DiskLocator L(dp);
    (void)L.next(sharp);
    (void)L.next(sharp);
    const auto third = L.next(ring);
    REQUIRE(third.size() == 9);
    REQUIRE(near(third, 120, 120, 0.5));
    REQUIRE_FALSE(near(third, 127, 124, 1.5));
    // A restored disk is not steady: when the ring stays, it is taken in the next frame.
    const auto fourth = L.next(ring);
    REQUIRE(near(fourth, 127, 124, 1.5));
    // After one sharp frame only (not steady yet), or with the hysteresis off: the ring.
    DiskLocator once(dp);
    (void)once.next(sharp);
    REQUIRE(near(once.next(ring), 127, 124, 1.5));
    LocatorParams off;
    off.continue_distance = 0;
    DiskLocator L0(dp, off);
    (void)L0.next(sharp);
    (void)L0.next(sharp);
    REQUIRE(near(L0.next(ring), 127, 124, 1.5));
}
