// SPDX-License-Identifier: GPL-3.0-or-later
// Detection + refinement + species on synthetic frames with exact truth (vibra synth renderer),
// and on the real particletracker discs / trackpy bulk-water frames when ../shared is present.
// CI sizes: 512×512 frames (≈1000–2000 disks per frame) instead of the 1024×1024, a few
// frames each, so the statistics still resolve the thresholds (see docs/tracking.md, "Accuracy
// table", for what each threshold is and where the issue's target is not met yet).
#include <catch2/catch.hpp>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "detection_score.hpp"
#include "discs_truth.hpp"
#include "test_support.hpp"
#include "vibra/core/cell_list.hpp"
#include "vibra/core/error.hpp"
#include "vibra/tracking/detect.hpp"
#include "vibra/tracking/species.hpp"
#include "vibra/tracking/synth.hpp"

using namespace vibra;
using namespace vibra::tracking;

namespace {

using test::score;
using test::Stats;

Stats run_case(SynthParams sp, const DetectParams& dp) {
    SynthGenerator gen(sp);
    Stats s;
    cv::Mat img;
    TrajectoryTable truth;
    while (true) {
        const std::size_t row0 = truth.size();
        if (!gen.next(img, truth)) break;
        score(locate(img, dp), truth, row0, s);
    }
    return s;
}

void report(const char* name, Stats& s) {
    WARN(name << ": truth " << s.truth << ", recall " << s.recall() << ", precision " << s.precision()
              << ", RMS/axis " << s.rms() << " px, median |err| " << s.quantile(0.5) << ", 90% "
              << s.quantile(0.9) << ", outliers>0.3px " << s.outliers << ", species "
              << double(s.species_ok) / double(s.matched) << ", max bin bias " << s.max_bin_bias());
}

}  // namespace

TEST_CASE("detect parameters are validated", "[unit]") {
    DetectParams p;
    REQUIRE_THROWS_AS(p.validate(), ParameterError);  // no radii
    p.radii = {8, 6};
    REQUIRE_THROWS_AS(p.validate(), ParameterError);  // large < small
    p.radii = {6, 8};
    REQUIRE_NOTHROW(p.validate());
    // Each bad value alone is refused, with the field's name in the message.
    auto refused = [&](const char* field, auto DetectParams::*member, auto bad) {
        DetectParams q = p;
        q.*member = bad;
        INFO(field);
        REQUIRE_THROWS_WITH(q.validate(), Catch::Contains(field));
    };
    refused("edge_threshold", &DetectParams::edge_threshold, 0.0);
    REQUIRE_NOTHROW(p.validate());
    // The locator's own settings (LocatorParams) likewise, and DiskLocator checks both.
    REQUIRE_NOTHROW(LocatorParams{}.validate());
    auto refused_locator = [&](const char* field, auto LocatorParams::*member, auto bad) {
        LocatorParams q;
        q.*member = bad;
        INFO(field);
        REQUIRE_THROWS_WITH(q.validate(), Catch::Contains(field));
        REQUIRE_THROWS_WITH(DiskLocator(p, q), Catch::Contains(field));
    };
    refused_locator("warm_missing_every", &LocatorParams::warm_missing_every, 0);
    refused_locator("warm_coarse_sweeps", &LocatorParams::warm_coarse_sweeps, -1);
    refused_locator("warm_candidates_every", &LocatorParams::warm_candidates_every, 0);
    refused_locator("warm_tolerance", &LocatorParams::warm_tolerance, 0.0);
    refused_locator("warm_search_max_every", &LocatorParams::warm_search_max_every, 0);
    refused_locator("warm_one_coarse_below", &LocatorParams::warm_one_coarse_below, -0.1);
    refused_locator("snap_distance", &LocatorParams::snap_distance, 0.0);
    refused_locator("drop_amplitude", &LocatorParams::drop_amplitude, 1.0);
    refused_locator("new_disk_separation", &LocatorParams::new_disk_separation, 2.5);
    refused_locator("warm_max_residual", &LocatorParams::warm_max_residual, 0.0);
    cv::Mat colour(10, 10, CV_8UC3);
    REQUIRE_THROWS_AS(compute_gradients(colour, false, 16), ParameterError);
}

TEST_CASE("species from radius and per-trajectory vote", "[unit]") {
    const std::vector<double> radii{6, 8};
    REQUIRE(classify_radius(6.1, radii).species == kSpeciesSmall);
    REQUIRE(classify_radius(7.9, radii).species == kSpeciesLarge);
    REQUIRE_THAT(classify_radius(7.0, radii).confidence, Catch::Matchers::WithinAbs(0.5, 1e-6));
    REQUIRE(classify_radius(8.0, radii).confidence > 0.99f);
    // the clear calls skip erfc (z > 5.5): the same single-precision value on either side
    for (double z : {5.3, 5.45, 5.5, 5.55, 6.0, 9.0}) {
        const double r = 7.0 + z * 0.1;
        const auto expect = static_cast<float>(0.5 * std::erfc(-z / std::sqrt(2.0)));
        INFO("z = " << z);
        REQUIRE(classify_radius(r, radii, 0.1).confidence == expect);
    }
    std::vector<std::int64_t> particle{0, 0, 0, 1, 1, -1};
    std::vector<std::int8_t> species{0, 1, 0, 1, 1, 0};
    std::vector<float> conf{0.9f, 0.6f, 0.9f, 1.0f, 1.0f, 0.7f};
    vote_species(particle, species, conf);
    REQUIRE(species == std::vector<std::int8_t>{0, 0, 0, 1, 1, 0});
    REQUIRE_THAT(conf[1], Catch::Matchers::WithinAbs(1.8 / 2.4, 1e-6));
    REQUIRE(conf[5] == 0.7f);
}

TEST_CASE("single plain disks: sub-pixel centre, radius, no pixel locking", "[unit]") {
    // 400 isolated disks on a 20×20 grid, sub-pixel offsets sweeping the unit square.
    RenderParams rp;
    rp.width = rp.height = 20 * 24;
    rp.noise_sigma = 0;
    std::vector<Disk> disks;
    for (int i = 0; i < 20; ++i)
        for (int j = 0; j < 20; ++j)
            disks.push_back(
                {12.0 + 24 * i + 0.05 * i + 0.0025 * j, 12.0 + 24 * j + 0.05 * j + 0.0025 * i, 7.0, 0});
    const cv::Mat img = render_frame(disks, rp);
    DetectParams dp;
    dp.radii = {7};
    const auto parts = locate(img, dp);
    REQUIRE(parts.size() == disks.size());
    TrajectoryTable t;
    for (const auto& d : disks) t.push(0, 0, d.x, d.y, 0);
    Stats s;
    score(parts, t, 0, s);
    report("isolated plain disks", s);
    REQUIRE(s.matched == 400);
    REQUIRE(s.rms() < 0.01);
    REQUIRE(s.max_bin_bias() < 0.005);
    for (const auto& q : parts) REQUIRE_THAT(q.radius, Catch::Matchers::WithinAbs(7.0, 0.3));
}

TEST_CASE("moderate case: ringed bi-disperse disks at packing fraction 0.6", "[unit]") {
    SynthParams sp = reference_case(ReferenceCase::moderate, 512, 8, 21);
    DetectParams dp;
    dp.radii = {6, 8};
    auto s = run_case(sp, dp);
    report("moderate", s);
    // Issue targets (512² frames here, ~7800 detections; the 1024² figures are in
    // docs/tracking.md, measured by bench/accuracy_tracking): recall and precision ≥ 99.9%,
    // RMS ≤ 0.03 px counting touching pairs, species ≥ 99.9% per detection, no pixel locking
    // (each of 10 bins of the true fractional x within ±0.005 px; statistical noise of a bin
    // mean here ≈ 0.021/√780 ≈ 0.0008 px).
    REQUIRE(s.truth > 7000);
    REQUIRE(s.recall() >= 0.999);
    REQUIRE(s.precision() >= 0.999);
    REQUIRE(s.rms() <= 0.03);
    REQUIRE(double(s.species_ok) / double(s.matched) >= 0.999);
    REQUIRE(s.max_bin_bias() <= 0.005);
}

TEST_CASE("dense case: marker-dot disks at packing fraction 0.8", "[unit]") {
    SynthParams sp = reference_case(ReferenceCase::dense, 384, 2, 22);
    DetectParams dp;
    dp.radii = {6, 8};
    auto s = run_case(sp, dp);
    report("dense", s);
    // Issue targets: recall ≥ 99.5%, RMS ≤ 0.05 px.
    REQUIRE(s.truth > 1000);
    REQUIRE(s.recall() >= 0.995);
    REQUIRE(s.precision() >= 0.995);
    REQUIRE(s.rms() <= 0.05);
}

TEST_CASE("noisy case: uneven light, motion blur, hot and dead pixels", "[unit]") {
    SynthParams sp = reference_case(ReferenceCase::noisy, 512, 3, 23);  // disks move 2 px per frame
    DetectParams dp;
    dp.radii = {6, 8};
    auto s = run_case(sp, dp);
    report("noisy", s);
    REQUIRE(s.truth > 1000);
    // Issue targets: recall ≥ 99.5%, RMS ≤ 0.1 px.
    REQUIRE(s.recall() >= 0.995);
    REQUIRE(s.precision() >= 0.99);
    REQUIRE(s.rms() <= 0.1);
}

TEST_CASE("dark particles on a bright background with --invert", "[unit]") {
    SynthParams sp;
    sp.render.width = sp.render.height = 256;
    sp.render.dark_on_bright = true;
    sp.render.noise_sigma = 0.03;
    sp.packing_fraction = 0.5;
    sp.frames = 1;
    sp.seed = 24;
    DetectParams dp;
    dp.radii = {6, 8};
    dp.invert = true;
    auto s = run_case(sp, dp);
    report("inverted", s);
    REQUIRE(s.recall() >= 0.995);
    REQUIRE(s.precision() >= 0.995);
}

namespace {

using test::TruthDisc;

// Matches truth discs to detections one-to-one, closest pairs first, within `tol` px.
struct DiscMatch {
    int found = 0, extra_in_roi = 0, in_roi = 0, class_errors = 0;
    // matched pairs: truth row (= disc id: the same disc has the same row in every frame), the
    // detection's species and confidence, the true class
    std::vector<std::int64_t> id;
    std::vector<std::int8_t> species;
    std::vector<float> confidence;
    std::vector<int> cls;
};

// Class errors after a per-disc vote over the frames (vote_species, as after linking; the truth's
// disc ids stand in for the trajectories).
int voted_class_errors(const std::vector<DiscMatch>& ms) {
    std::vector<std::int64_t> id;
    std::vector<std::int8_t> sp;
    std::vector<float> cf;
    std::vector<int> cls;
    for (const auto& m : ms) {
        id.insert(id.end(), m.id.begin(), m.id.end());
        sp.insert(sp.end(), m.species.begin(), m.species.end());
        cf.insert(cf.end(), m.confidence.begin(), m.confidence.end());
        cls.insert(cls.end(), m.cls.begin(), m.cls.end());
    }
    vote_species(id, sp, cf);
    int e = 0;
    for (std::size_t i = 0; i < sp.size(); ++i) e += sp[i] != cls[i];
    return e;
}
DiscMatch match_discs(const std::vector<TruthDisc>& truth, const std::vector<Particle>& det, double tol) {
    const auto mp = test::match_discs_closest_first(
        truth, det.size(),
        [&](std::size_t j) {
            return std::pair{det[j].x, det[j].y};
        },
        tol);
    DiscMatch m;
    for (const auto& [i, j] : mp.pairs) {
        ++m.found;
        m.class_errors += det[j].species != truth[i].cls;
        m.id.push_back(static_cast<std::int64_t>(i));
        m.species.push_back(det[j].species);
        m.confidence.push_back(det[j].species_confidence);
        m.cls.push_back(truth[i].cls);
    }
    for (std::size_t j = 0; j < det.size(); ++j) {
        if (!test::in_discs_roi(det[j].x, det[j].y)) continue;
        ++m.in_roi;
        m.extra_in_roi += mp.truth_of_detection[j] < 0;
    }
    return m;
}

}  // namespace

TEST_CASE("real data: particletracker discs, bright rims, two sizes", "[unit]") {
    {
        // classify_radii_split on made-up radii: nominal 10 / 12 px, measured 10 % larger (11 and
        // 13.2 px, ±0.3) → threshold in the gap between the groups, not at the nominal midpoint 11.
        std::vector<float> r;
        for (int i = 0; i < 20; ++i) r.push_back(11.0f + 0.03f * static_cast<float>(i - 10));
        for (int i = 0; i < 30; ++i) r.push_back(13.2f + 0.02f * static_cast<float>(i - 15));
        std::vector<std::int8_t> sp(r.size());
        std::vector<float> cf(r.size());
        const std::vector<double> nominal{10, 12};
        const double t = classify_radii_split(r, nominal, 0.3, sp, cf);
        REQUIRE(t > 11.27);
        REQUIRE(t < 12.9);
        for (std::size_t i = 0; i < r.size(); ++i) REQUIRE(sp[i] == (i < 20 ? kSpeciesSmall : kSpeciesLarge));
        // groups whose ratio (1.6) is far from the nominal 1.2: the nominal midpoint is kept
        for (std::size_t i = 20; i < r.size(); ++i) r[i] = 17.6f;
        REQUIRE_THAT(classify_radii_split(r, nominal, 0.3, sp, cf), Catch::Matchers::WithinAbs(11.0, 1e-12));
    }
    const auto shared = test::shared_dir();
    if (shared.empty()) {
        WARN("../shared not found: skipping the particletracker discs detection test");
        return;
    }
    // Hand-checked truth (tests/tracking/data/README.md): 72 discs with centres in the ROI
    // x 142–1082, y 30–846 in each of the 9 frames, 34 small + 38 large; outer radii ≈ 51 and
    // ≈ 59.4 px, rim ridge radii ≈ 45 and ≈ 54.5 px. Centres good to 1–4 px; the detector's centre of
    // a rim seen in perspective (thicker along the walls, cut by the left bar) can differ from the
    // truth's (mean of outer-edge and ridge fits) by up to ~8 px, so a disc counts as found within
    // 10 px (nearest other disc centre ≥ 80 px: unambiguous); the 6 px figures are reported too.
    const auto truth = test::discs_truth();
    std::vector<cv::Mat> frames;
    for (int f = 0; f < 9; ++f) {
        char name[64];
        std::snprintf(name, sizeof name, "data/real/particletracker_discs/discs_luma_%03d.png", f);
        frames.push_back(cv::imread((shared / name).string(), cv::IMREAD_GRAYSCALE));
        REQUIRE(!frames.back().empty());
    }
    // Settings documented in docs/tracking.md for this video (compressed MPEG-4, soft rim edges
    // of ~9 px; faint outer edges in the lower left): --edge-threshold 0.06 --min-edge 0.1.
    DetectParams dp;
    dp.edge_threshold = 0.06;
    dp.min_edge = 0.1;

    // The first two sections run without the joint fit (vibra track --no-joint-fit). Before its
    // residual check (relative residual ≤ 0.8) it applied on some of these frames and moved the
    // radii to the inner rim edge (≈ 38 / 48 px) with most species wrong (radii 51/59, frame 5:
    // 64 class errors); the third section runs the default, which now refuses it.
    dp.joint = false;
    SECTION("outer radii 51 / 59 px, species from the nominal midpoint (what vibra track does)") {
        dp.radii = {51, 59};
        int found6 = 0, found10 = 0, extra = 0, cls = 0;
        std::vector<DiscMatch> all;
        for (int f = 0; f < 9; ++f) {
            const auto det = locate(frames[static_cast<std::size_t>(f)], dp);
            const auto m6 = match_discs(truth[static_cast<std::size_t>(f)], det, 6.0);
            const auto m = match_discs(truth[static_cast<std::size_t>(f)], det, 10.0);
            all.push_back(m);
            INFO("frame " << f << ": " << m.in_roi << " in the ROI, found " << m.found << "/72 within 10 px ("
                          << m6.found << " within 6 px), " << m.extra_in_roi << " extra, " << m.class_errors
                          << " class errors");
            // measured 70–72 within 10 px (66–72 within 6 px), 0–2 extra, 0–2 class errors per frame
            REQUIRE(m.found >= 68);
            REQUIRE(m6.found >= 64);
            REQUIRE(m.extra_in_roi <= 4);
            REQUIRE(m.class_errors <= 3);
            found6 += m6.found, found10 += m.found, extra += m.extra_in_roi, cls += m.class_errors;
        }
        WARN("particletracker discs, radii 51/59, no joint fit: found "
             << found10 << "/648 within 10 px (" << found6 << " within 6 px), " << extra
             << " extra in the ROI, " << cls << " class errors in the per-frame calls "
             << "(issue target, every disc: NOT met)");
        REQUIRE(voted_class_errors(all) == 0);  // after the per-disc vote
    }
    SECTION("ridge radii 46 / 55 px (the issue's), no joint fit, species by the frame's radius split") {
        // Species come from classify_radii_split (the measured outer radii split into two groups),
        // not from the nominal midpoint 50.5 px, which lies inside the small discs' outer radii
        // (46–54 px).
        dp.radii = {46, 55};
        int found6 = 0, found10 = 0, extra = 0, cls = 0;
        std::vector<DiscMatch> all;
        for (int f = 0; f < 9; ++f) {
            auto det = locate(frames[static_cast<std::size_t>(f)], dp);
            std::vector<float> radius, conf(det.size());
            std::vector<std::int8_t> species(det.size());
            for (const auto& q : det) radius.push_back(q.radius);
            const double thr = classify_radii_split(radius, dp.radii, dp.radius_sigma, species, conf);
            REQUIRE(thr > 54.2);  // the truth's empty gap of outer radii is 54.2–57.5 px
            REQUIRE(thr < 57.5);
            for (std::size_t i = 0; i < det.size(); ++i)
                det[i].species = species[i], det[i].species_confidence = conf[i];
            const auto m6 = match_discs(truth[static_cast<std::size_t>(f)], det, 6.0);
            const auto m = match_discs(truth[static_cast<std::size_t>(f)], det, 10.0);
            all.push_back(m);
            INFO("frame " << f << ": " << m.in_roi << " in the ROI, found " << m.found << "/72 within 10 px ("
                          << m6.found << " within 6 px), " << m.extra_in_roi << " extra, " << m.class_errors
                          << " class errors");
            // measured: 72 in the ROI and 72/72 within 10 px (68–71 within 6 px) in every frame, no
            // extra, 0–2 class errors per frame (discs at the walls)
            REQUIRE(m.in_roi == 72);
            REQUIRE(m.found == 72);
            REQUIRE(m6.found >= 67);
            REQUIRE(m.extra_in_roi == 0);
            REQUIRE(m.class_errors <= 3);
            found6 += m6.found, found10 += m.found, extra += m.extra_in_roi, cls += m.class_errors;
        }
        WARN("particletracker discs, radii 46/55, no joint fit, split species: found "
             << found10 << "/648 within 10 px (" << found6 << " within 6 px), " << extra
             << " extra in the ROI, " << cls << " class errors in the per-frame calls");
        REQUIRE(cls <= 8);  // measured 6 of 648 (7 before the edge-circle check, detail/edge_circle.hpp)
        // after the per-disc vote (as vibra track does after linking): every class right
        const int voted = voted_class_errors(all);
        WARN("after the per-disc species vote: " << voted << " class errors in 648");
        REQUIRE(voted == 0);
    }
    SECTION(
        "ridge radii 46 / 55 px with the default joint fit (which refuses these frames), species inside "
        "locate()") {
        // What `vibra track --radius-small 46 --radius-large 55 --edge-threshold 0.06 --min-edge 0.1`
        // does: the joint fit's checks (template edge within 15% of the nominal radius, residual
        // ≤ 0.8 of the template contrast; here ≈ 2.5) refuse it, locate() then refines fully and
        // classifies by the frame's radius split.
        dp.joint = true;
        dp.radii = {46, 55};
        int found10 = 0, cls = 0;
        std::vector<DiscMatch> all;
        for (int f = 0; f < 9; ++f) {
            const auto det = locate(frames[static_cast<std::size_t>(f)], dp);
            const auto m = match_discs(truth[static_cast<std::size_t>(f)], det, 10.0);
            all.push_back(m);
            INFO("frame " << f << ": " << m.in_roi << " in the ROI, found " << m.found << "/72 within 10 px, "
                          << m.extra_in_roi << " extra, " << m.class_errors << " class errors");
            REQUIRE(m.in_roi == 72);
            REQUIRE(m.found == 72);
            REQUIRE(m.extra_in_roi == 0);
            REQUIRE(m.class_errors <= 3);
            found10 += m.found, cls += m.class_errors;
        }
        const int voted = voted_class_errors(all);
        WARN("particletracker discs, default joint fit (refused), radii 46/55: found "
             << found10 << "/648 within 10 px, " << cls << " class errors per frame, " << voted
             << " after the per-disc vote");
        REQUIRE(cls <= 8);  // measured 6
        REQUIRE(voted == 0);
    }
}
