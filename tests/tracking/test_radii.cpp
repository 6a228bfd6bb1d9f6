// SPDX-License-Identifier: GPL-3.0-or-later
// `--radii auto`: estimate_radii on synthetic frames with known radii (two sizes, one size,
// other looks), and `vibra track --radii auto` end to end.
#include <catch2/catch.hpp>

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
    };
    for (const auto& c : {Case{6, 8, DiskLook::dark_ring, 0.6}, Case{5, 7, DiskLook::plain, 0.4},
                          Case{10, 13, DiskLook::marker_dot, 0.5}, Case{7, 7, DiskLook::plain, 0.5}}) {
        SynthParams sp;
        sp.render.width = sp.render.height = 320;
        sp.render.look = c.look;
        sp.render.noise_sigma = 0.05;
        sp.radius_small = c.rs;
        sp.radius_large = c.rl;
        sp.packing_fraction = c.phi;
        sp.frames = 1;
        sp.seed = 61;
        const auto r = estimate_radii(frames_of(sp), false, 3, 30);
        INFO("truth " << c.rs << "/" << c.rl << " " << to_string(c.look) << ": estimated " << r.front()
                      << (r.size() > 1 ? " / " : "")
                      << (r.size() > 1 ? std::to_string(r.back()) : std::string()));
        if (c.rs == c.rl) {
            REQUIRE(r.size() == 1);
            REQUIRE_THAT(r[0], Catch::Matchers::WithinAbs(c.rs, 0.3));
        } else {
            REQUIRE(r.size() == 2);
            REQUIRE_THAT(r[0], Catch::Matchers::WithinAbs(c.rs, 0.3));
            REQUIRE_THAT(r[1], Catch::Matchers::WithinAbs(c.rl, 0.3));
        }
    }
    REQUIRE_THROWS_AS(estimate_radii({}, false), ParameterError);
    const cv::Mat blank(64, 64, CV_8U, cv::Scalar(30));
    REQUIRE_THROWS_AS(estimate_radii({blank}, false), FormatError);
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
