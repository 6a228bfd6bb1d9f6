// SPDX-License-Identifier: GPL-3.0-or-later
// `--radii auto` (the default without a radius): estimate_radius_classes on synthetic frames
// with known radii (one or two sizes, 4–60 px, bright and dark disks, plain, ringed, marker dot,
// bright rim), on the real samples in ../shared when present, and `vibra track` end to end.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <opencv2/imgcodecs.hpp>

#include "test_support.hpp"
#include "vibra/core/error.hpp"
#include "vibra/core/trajectory.hpp"
#include "vibra/store/trajectory_file.hpp"
#include "vibra/tracking/detect.hpp"
#include "vibra/tracking/synth.hpp"
#include "vibra/tracking/video.hpp"

using namespace vibra;
using namespace vibra::tracking;

namespace {
std::vector<cv::Mat> frames_of(SynthParams sp) {
    SynthGenerator gen(sp);
    std::vector<cv::Mat> out;
    cv::Mat img;
    TrajectoryTable t;
    while (gen.next(img, t)) out.push_back(img.clone());
    return out;
}
}  // namespace

TEST_CASE("estimate_radii finds two sizes, or one", "[unit]") {
    struct Case {
        double rs, rl;
        DiskLook look;
        double phi;
        bool dark;
    };
    // sizes 4–60 px, both polarities, every look; frames large enough for ≥ 15 disks
    for (const auto& c :
         {Case{6, 8, DiskLook::dark_ring, 0.6, false}, Case{5, 7, DiskLook::plain, 0.4, false},
          Case{10, 13, DiskLook::marker_dot, 0.5, false}, Case{7, 7, DiskLook::plain, 0.5, false},
          Case{4, 4, DiskLook::plain, 0.4, true}, Case{4, 5.5, DiskLook::plain, 0.5, false},
          Case{16, 20, DiskLook::dark_ring, 0.55, true}, Case{25, 25, DiskLook::bright_rim, 0.5, false},
          Case{30, 38, DiskLook::plain, 0.5, true}, Case{48, 60, DiskLook::dark_ring, 0.5, false},
          Case{60, 60, DiskLook::plain, 0.4, true}}) {
        SynthParams sp;
        const int side = std::max(320, static_cast<int>(std::ceil(12 * c.rl)));
        sp.render.width = sp.render.height = side;
        sp.render.look = c.look;
        sp.render.dark_on_bright = c.dark;
        sp.render.noise_sigma = 0.05;
        sp.radius_small = c.rs;
        sp.radius_large = c.rl;
        sp.packing_fraction = c.phi;
        sp.frames = 1;
        sp.seed = 61;
        RadiusEstimateParams rp;
        rp.invert = c.dark;
        const auto e = estimate_radius_classes(frames_of(sp), rp);
        const auto& r = e.radii;
        INFO("truth " << c.rs << "/" << c.rl << " " << to_string(c.look) << (c.dark ? " dark" : " bright")
                      << ": " << e.summary() << " (scan scale " << e.scale << " px)");
        if (c.rs == c.rl) {
            REQUIRE(r.size() == 1);
            REQUIRE_THAT(r[0], Catch::Matchers::WithinRel(c.rs, 0.05));
        } else {
            REQUIRE(r.size() == 2);
            REQUIRE_THAT(r[0], Catch::Matchers::WithinRel(c.rs, 0.05));
            REQUIRE_THAT(r[1], Catch::Matchers::WithinRel(c.rl, 0.05));
        }
        REQUIRE(e.disks_per_frame > 10);
    }
    REQUIRE_THROWS_AS(estimate_radii({}, false), ParameterError);
    const cv::Mat blank(64, 64, CV_8U, cv::Scalar(30));
    REQUIRE_THROWS_AS(estimate_radii({blank}, false), FormatError);
}

TEST_CASE("estimate_radii on Gaussian blobs: the blob rule gives 2.65 sigma", "[unit]") {
    // Blurred spots without a plateau (colloids in a microscope): Gaussian spots of σ 1.9 px, dark
    // on a light background, on a jittered grid (no overlaps), noise 3% of the depth. Their radius
    // is the spot's extent, where the Gaussian falls to 3% of its depth: 2.65 σ = 5.03 px.
    const double sigma = 1.9;
    cv::Mat img(360, 480, CV_32F, cv::Scalar(200));
    cv::RNG rng(71);
    int n = 0;
    for (int gy = 12; gy < img.rows - 12; gy += 20)
        for (int gx = 12; gx < img.cols - 12; gx += 20, ++n) {
            const double cx = gx + rng.uniform(-3.0, 3.0), cy = gy + rng.uniform(-3.0, 3.0);
            const double depth = rng.uniform(60.0, 100.0);
            for (int y = gy - 10; y <= gy + 10; ++y)
                for (int x = gx - 10; x <= gx + 10; ++x) {
                    const double d2 = (x - cx) * (x - cx) + (y - cy) * (y - cy);
                    img.at<float>(y, x) -= static_cast<float>(depth * std::exp(-d2 / (2 * sigma * sigma)));
                }
        }
    cv::Mat noise(img.size(), CV_32F);
    rng.fill(noise, cv::RNG::NORMAL, 0, 2.4);
    img += noise;
    cv::Mat u8;
    img.convertTo(u8, CV_8U);
    RadiusEstimateParams rp;
    rp.invert = true;
    const auto e = estimate_radius_classes({u8}, rp);
    INFO(e.summary() << " (" << n << " spots, scan scale " << e.scale << " px)");
    REQUIRE(e.radii.size() == 1);
    REQUIRE_THAT(e.radii[0], Catch::Matchers::WithinRel(std::sqrt(2 * std::log(1 / 0.03)) * sigma, 0.05));
}

TEST_CASE("RadiusEstimate::summary says what was found", "[unit]") {
    RadiusEstimate e;
    e.radii = {46.14, 55.33};
    e.frames = 9;
    e.disks_per_frame = 72;
    REQUIRE(e.summary() == "radii: small 46.1 px, large 55.3 px from 9 frames, 72 disks per frame");
    e.radii = {5.04};
    e.frames = 1;
    e.disks_per_frame = 580;
    REQUIRE(e.summary() == "radius: 5.0 px (one size) from 1 frame, 580 disks per frame");
}

namespace {
// Up to n frames of a real input (any reader), or none when ../shared is absent.
std::vector<cv::Mat> real_frames(const std::string& rel, int n, int channel = -1) {
    const auto shared = test::shared_dir();
    if (shared.empty()) return {};
    ReaderParams rp;
    rp.channel = channel;
    rp.last = n;
    auto src = open_video((shared / rel).string(), rp);
    std::vector<cv::Mat> out;
    Frame fr;
    while (src->next(fr) == ReadStatus::ok) out.push_back(fr.image.clone());
    return out;
}
}  // namespace

TEST_CASE("real data: estimated radii of the particletracker discs, the falling ball, the Phantom rings",
          "[unit]") {
    if (test::shared_dir().empty()) {
        WARN("../shared not found: skipping the real-data radius estimates");
        return;
    }
    struct Real {
        const char* input;
        bool invert;
        int channel;
        std::vector<double> truth;  // px
    };
    // Truths: discs — outer radii of the hand-checked truth (tests/tracking/data/README.md: medians
    // 51.0 and 59.4 px; the shared README's 46 / 55 px are the rims' bright ridge); ball — ≈ 128 px
    // across (README); cine — the two dark rings' outer edges, 27.5 and 26.5 px (steepest rise of
    // the azimuthal profile of frame 0 about the rings' centres (127.3, 96.5) and (119.5, 143.7),
    // left and right sectors; computed once with numpy).
    for (const auto& c : {Real{"data/real/particletracker_discs/discs_luma_*.png", false, -1, {51.0, 59.4}},
                          Real{"data/real/particletracker_discs/discs.mp4", false, -1, {51.0, 59.4}},
                          Real{"data/real/highspeed_camera_formats/ball_12bit.mraw", true, -1, {64.0}},
                          Real{"data/real/highspeed_camera_formats/cine_781.cine", true, -1, {27.0}}}) {
        const auto frames = real_frames(c.input, 9, c.channel);
        REQUIRE(!frames.empty());
        RadiusEstimateParams rp;
        rp.invert = c.invert;
        const auto e = estimate_radius_classes(frames, rp);
        INFO(c.input << ": " << e.summary() << " (scan scale " << e.scale << " px)");
        REQUIRE(e.radii.size() == c.truth.size());
        for (std::size_t k = 0; k < c.truth.size(); ++k)
            REQUIRE_THAT(e.radii[k], Catch::Matchers::WithinRel(c.truth[k], 0.05));
    }
    // Bulk water: one size. The spots are blurred blobs without a plateau: the steepest edge of
    // their mean profile lies at ≈ 2.2 px, where they reach the background at ≈ 5 px: trackpy's
    // walkthrough uses diameter 11, i.e. a mask of radius 11 // 2 = 5 px (trackpy's radius). The
    // blob rule fits a Gaussian to the median profile (σ ≈ 1.86 px) and takes the radius where it
    // falls to 3% of its depth, 2.65 σ (docs/tracking.md, "Radii"): within 5% of 5 px.
    const auto water = real_frames("data/real/trackpy_bulk_water/*.png", 9, 1);
    RadiusEstimateParams rp;
    rp.invert = true;
    const auto e = estimate_radius_classes(water, rp);
    INFO("bulk water: " << e.summary());
    REQUIRE(e.radii.size() == 1);
    REQUIRE_THAT(e.radii[0], Catch::Matchers::WithinRel(5.0, 0.05));
    REQUIRE(e.disks_per_frame > 300);
}

TEST_CASE("vibra track --radii auto", "[unit]") {
    test::TempDir dir("radii_auto");
    const auto video = dir.file("v.avi"), out = dir.file("v.h5");
    const auto syn = test::run_vibra("synth -o " + video +
                                     " --width 256 --height 256 --frames 5 --seed 62 --look ring --noise 0.04"
                                     " --packing-fraction 0.5 -q");
    INFO(syn.output);
    REQUIRE(syn.exit_code == 0);
    const auto r = test::run_vibra("track " + video + " -o " + out + " --radii auto -q");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    store::TrajectoryReader tr(out);
    const auto& d = tr.meta().species_diameters;
    REQUIRE(d.size() == 2);
    REQUIRE_THAT(d[0], Catch::Matchers::WithinAbs(12.0, 0.6));  // synth defaults: radii 6 and 8 px
    REQUIRE_THAT(d[1], Catch::Matchers::WithinAbs(16.0, 0.6));
}

TEST_CASE("vibra track without a radius estimates them, says what it found and records it", "[unit]") {
    test::TempDir dir("radii_default");
    const auto video = dir.file("v.avi"), out = dir.file("v.h5");
    const auto syn =
        test::run_vibra("synth -o " + video +
                        " --width 256 --height 256 --frames 4 --seed 63 --look plain --noise 0.04"
                        " --radius-small 9 --radius-large 12 --packing-fraction 0.5 --invert -q");
    INFO(syn.output);
    REQUIRE(syn.exit_code == 0);
    const auto r = test::run_vibra("track " + video + " -o " + out + " --invert");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    // "v.avi: radii: small 9.0 px, large 12.0 px from 4 frames, N disks per frame" on stderr
    const auto at = r.output.find(video + ": radii: small ");
    REQUIRE(at != std::string::npos);
    REQUIRE(r.output.find(" from 4 frames, ", at) != std::string::npos);
    store::TrajectoryReader tr(out);
    const auto& m = tr.meta();
    REQUIRE(m.user.at("radii_source") == "estimated");
    REQUIRE(r.output.find(m.user.at("radii_estimate")) != std::string::npos);
    REQUIRE(m.species_diameters.size() == 2);
    REQUIRE_THAT(m.species_diameters[0], Catch::Matchers::WithinRel(18.0, 0.05));
    REQUIRE_THAT(m.species_diameters[1], Catch::Matchers::WithinRel(24.0, 0.05));
    // given radii: recorded as given, nothing estimated
    const auto r2 = test::run_vibra("track " + video + " -o " + dir.file("g.h5") +
                                    " --invert --radius-small 9 "
                                    "--radius-large 12");
    REQUIRE(r2.exit_code == 0);
    REQUIRE(r2.output.find("radii: small") == std::string::npos);
    store::TrajectoryReader tg(dir.file("g.h5"));
    REQUIRE(tg.meta().user.at("radii_source") == "given");
    REQUIRE(tg.meta().user.count("radii_estimate") == 0);
    // --radii auto with a radius is a usage error
    const auto r3 =
        test::run_vibra("track " + video + " -o " + dir.file("x.h5") + " --radii auto --radius 9 -q");
    REQUIRE(r3.exit_code == 2);
    REQUIRE(r3.output.find("--radii auto excludes") != std::string::npos);
}

TEST_CASE("vibra track --radii auto on frames without disks: error names the input, no output", "[unit]") {
    test::TempDir dir("radii_auto_blank");
    const cv::Mat blank(64, 64, CV_8U, cv::Scalar(40));
    for (int k = 0; k < 3; ++k) REQUIRE(cv::imwrite(dir.file("f" + std::to_string(k) + ".png"), blank));
    const auto r = test::run_vibra("track " + dir.file("") + " -o " + dir.file("o.h5") + " --radii auto -q");
    INFO(r.output);
    REQUIRE(r.exit_code == 1);
    REQUIRE(r.output.find("too few disks") != std::string::npos);
    REQUIRE(r.output.find(dir.file("")) != std::string::npos);
    REQUIRE(!std::filesystem::exists(dir.file("o.h5")));
}
