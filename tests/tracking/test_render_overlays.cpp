// SPDX-License-Identifier: GPL-3.0-or-later
// vibra render (render_overlays, overlay.hpp) on a tracked synthetic clip: PNG files named after
// their trajectory frame, the colour legend, the contrast stretch and --no-stretch, and a video
// that differs from the file's record refused before anything is written.
#include <catch2/catch.hpp>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <filesystem>

#include "test_support.hpp"

using namespace vibra;
namespace fs = std::filesystem;

namespace {
std::string q(const std::string& s) { return "'" + s + "'"; }
struct Clip {
    test::TempDir dir{"render_overlays"};
    std::string video = dir.file("clip.avi");
    Clip() {
        const auto r = test::run_vibra("-q synth -o " + q(video) +
                                       " --width 256 --height 256 --frames 12 --packing-fraction 0.6 "
                                       "--radius-small 6 --radius-large 8 --seed 11");
        INFO(r.output);
        REQUIRE(r.exit_code == 0);
    }
};
}  // namespace

TEST_CASE("render: real frame numbers, a legend, contrast stretch, and a video that must match",
          "[integration]") {
    Clip c;
    const auto h5 = c.dir.file("t.h5");
    REQUIRE(test::run_vibra("-q track " + q(c.video) + " -o " + q(h5) + " --radius-small 6 --radius-large 8")
                .exit_code == 0);
    const auto out = c.dir.file("ov") + "/";
    auto r =
        test::run_vibra("-q render " + q(h5) + " --video " + q(c.video) + " -o " + q(out) + " --frames 5:7");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(fs::exists(out + "frame_000005.png"));
    CHECK(fs::exists(out + "frame_000006.png"));
    CHECK_FALSE(fs::exists(out + "frame_000000.png"));
    const cv::Mat img = cv::imread(out + "frame_000005.png", cv::IMREAD_COLOR);
    REQUIRE(!img.empty());
    // the legend: orange (small) and cyan (large) pixels in the top-left corner
    int orange = 0, cyan = 0;
    for (int y = 0; y < 40; ++y)
        for (int x = 0; x < 70; ++x) {
            const auto p = img.at<cv::Vec3b>(y, x);
            orange += p[2] > 200 && p[1] > 100 && p[1] < 180 && p[0] < 60;
            cyan += p[0] > 200 && p[1] > 150 && p[2] < 60;
        }
    CHECK(orange > 5);
    CHECK(cyan > 5);
    // stretch: the frame fills the grey scale; --no-stretch keeps the video's own levels
    const auto raw = c.dir.file("raw") + "/";
    REQUIRE(test::run_vibra("-q render " + q(h5) + " --video " + q(c.video) + " -o " + q(raw) +
                            " --frames 5:6 --no-stretch --no-legend")
                .exit_code == 0);
    const cv::Mat a = cv::imread(raw + "frame_000005.png", cv::IMREAD_GRAYSCALE);
    cv::Mat grey;
    cv::cvtColor(img, grey, cv::COLOR_BGR2GRAY);
    double lo_a, hi_a, lo_s, hi_s;
    cv::minMaxLoc(a, &lo_a, &hi_a);
    cv::minMaxLoc(grey(cv::Rect(80, 80, 96, 96)), &lo_s, &hi_s);
    CHECK(hi_s - lo_s >= 250);  // stretched
    CHECK(hi_a - lo_a < 250);   // the synthetic video's own contrast
    // another video of the same size but fewer frames: refused, naming both
    const auto other = c.dir.file("other.avi");
    REQUIRE(test::run_vibra("-q synth -o " + q(other) + " --width 256 --height 256 --frames 6 --seed 2")
                .exit_code == 0);
    r = test::run_vibra("-q render " + q(h5) + " --video " + q(other) + " -o " + q(c.dir.file("bad") + "/"));
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Catch::Contains("other.avi") && Catch::Contains("t.h5") &&
                             Catch::Contains("6 frames") && Catch::Contains("12 frames"));
    CHECK_FALSE(fs::exists(c.dir.file("bad")));
}
