// SPDX-License-Identifier: GPL-3.0-or-later
// Overlays: circles drawn sub-pixel at the given positions in species colours, trails, markers,
// and `vibra render` on a synthetic video with known truth.
#include <catch2/catch.hpp>

#include <opencv2/imgcodecs.hpp>

#include <cmath>
#include <filesystem>

#include "test_support.hpp"
#include "vibra/store/trajectory_file.hpp"
#include "vibra/tracking/overlay.hpp"
#include "vibra/tracking/video.hpp"

using namespace vibra;
using namespace vibra::tracking;
namespace fs = std::filesystem;
using Catch::Matchers::WithinAbs;

namespace {

// Centroid of channel `c` inside a square window around (x, y).
cv::Point2d channel_centroid(const cv::Mat& bgr, int c, double x, double y, int half) {
    double m0 = 0, mx = 0, my = 0;
    for (int j = int(y) - half; j <= int(y) + half; ++j)
        for (int i = int(x) - half; i <= int(x) + half; ++i) {
            if (i < 0 || j < 0 || i >= bgr.cols || j >= bgr.rows) continue;
            const double v = bgr.at<cv::Vec3b>(j, i)[c];
            m0 += v, mx += v * i, my += v * j;
        }
    return {mx / m0, my / m0};
}

// Largest "species colour minus the opposite end" (channel c minus channel 2 − c) in the 3×3
// neighbourhood of pixel (i, j): an anti-aliased 1-px line may straddle two pixels.
int colour_excess(const cv::Mat& bgr, int c, int i, int j) {
    int best = -255;
    for (int dj = -1; dj <= 1; ++dj)
        for (int di = -1; di <= 1; ++di) {
            const int x = i + di, y = j + dj;
            if (x < 0 || y < 0 || x >= bgr.cols || y >= bgr.rows) continue;
            const auto px = bgr.at<cv::Vec3b>(y, x);
            best = std::max(best, int(px[c]) - int(px[2 - c]));
        }
    return best;
}

}  // namespace

TEST_CASE("overlay circles are centred on the disks (sub-pixel) in the species colour", "[unit]") {
    const cv::Mat black(80, 120, CV_8UC1, cv::Scalar(0));
    OverlayParams p;
    const std::vector<OverlayDisk> disks{{30.3, 40.7, 9.0, 0, 1}, {85.6, 38.2, 12.0, 1, 2}};
    for (int up : {1, 3}) {
        p.upscale = up;
        const cv::Mat img = draw_overlay(black, disks, {}, {}, p);
        REQUIRE(img.type() == CV_8UC3);
        REQUIRE(img.cols == 120 * up);
        for (const auto& d : disks) {
            const int c = d.species == 0 ? 2 : 0;  // small: red-dominant orange; large: blue-dominant cyan
            const double ox = (d.x + 0.5) * up - 0.5, oy = (d.y + 0.5) * up - 0.5;
            const auto cen = channel_centroid(img, c, ox, oy, int((d.radius + 3) * up));
            INFO("upscale " << up << " species " << int(d.species));
            REQUIRE_THAT(cen.x, WithinAbs(ox, 0.1 * up));
            REQUIRE_THAT(cen.y, WithinAbs(oy, 0.1 * up));
            // On the circle at 8 angles: coloured; at the centre: untouched.
            for (int k = 0; k < 8; ++k) {
                const double a = k * M_PI / 4;
                const int i = int(std::lround(ox + d.radius * up * std::cos(a)));
                const int j = int(std::lround(oy + d.radius * up * std::sin(a)));
                REQUIRE(colour_excess(img, c, i, j) > 150);  // species colour, the other end of B…R weak
            }
            REQUIRE(img.at<cv::Vec3b>(int(std::lround(oy)), int(std::lround(ox))) == cv::Vec3b(0, 0, 0));
        }
    }
}

TEST_CASE("overlay trails cover the last N positions only — markers and ids are drawn", "[unit]") {
    const cv::Mat black(60, 200, CV_8UC1, cv::Scalar(0));
    OverlayParams p;
    p.trails = 3;
    OverlayRenderer ren(p);
    cv::Mat img;
    for (int f = 0; f <= 10; ++f) {
        const std::vector<OverlayDisk> disks{{20.0 + 15 * f, 30.0, 4.0, 1, 7}};
        img = ren.render(black, f, disks);
    }
    // Trail from x = 20 + 15·7 = 125 to 170 (frames 7…10) drawn on y = 30, nothing before.
    REQUIRE(img.at<cv::Vec3b>(30, 140)[0] > 60);
    REQUIRE(img.at<cv::Vec3b>(30, 130)[0] > 60);
    REQUIRE(img.at<cv::Vec3b>(30, 100) == cv::Vec3b(0, 0, 0));
    REQUIRE(img.at<cv::Vec3b>(30, 60) == cv::Vec3b(0, 0, 0));

    OverlayParams q;
    q.ids = true;
    const std::vector<OverlayDisk> one{{100.0, 30.0, 20.0, 0, 42}};
    const std::vector<OverlayMarker> marks{{30.0, 30.0, 5.0, MarkerShape::cross, cv::Scalar(0, 255, 0), "d"}};
    const cv::Mat with = draw_overlay(black, one, {}, marks, q);
    REQUIRE(with.at<cv::Vec3b>(30, 30)[1] > 150);  // centre of the cross, green
    REQUIRE(with.at<cv::Vec3b>(25, 25)[1] > 100);  // arm of the cross
    REQUIRE(with.at<cv::Vec3b>(30, 30)[0] < 50);
    // The id label puts coloured pixels inside the circle.
    const cv::Rect inner(90, 22, 21, 17);
    std::vector<cv::Mat> ch;
    cv::split(with(inner), ch);
    REQUIRE(cv::countNonZero(ch[2] > 100) > 5);
    const cv::Mat without = draw_overlay(black, one, {}, {}, OverlayParams{});
    cv::split(without(inner), ch);
    REQUIRE(cv::countNonZero(ch[2] > 100) == 0);
}

TEST_CASE("16-bit frames are stretched for display", "[unit]") {
    cv::Mat g(10, 10, CV_16UC1, cv::Scalar(1000));
    g(cv::Rect(0, 0, 5, 10)).setTo(3000);
    const cv::Mat d = to_display(g);
    REQUIRE(d.type() == CV_8UC3);
    REQUIRE(d.at<cv::Vec3b>(0, 0)[0] == 255);
    REQUIRE(d.at<cv::Vec3b>(0, 9)[0] == 0);
}

TEST_CASE("vibra render: circles at the truth positions — bad video → exit 1 and no output", "[unit]") {
    test::TempDir tmp("overlay_cli");
    const std::string video = tmp.file("v.avi"), truth = tmp.file("v.truth.h5");
    auto r = test::run_vibra("-q synth -o '" + video +
                             "' --width 160 --height 120 --n-small 12 --n-large 8 --frames 4 --seed 5");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    REQUIRE(fs::exists(truth));
    const std::string out = tmp.file("ov") + "/";
    r = test::run_vibra("-q render '" + truth + "' --video '" + video + "' -o '" + out +
                        "' --ids --trails 2");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    store::TrajectoryReader tr(truth);
    const auto t = tr.read_all();
    for (int f = 0; f < 4; ++f) {
        char name[64];
        std::snprintf(name, sizeof name, "frame_%06d.png", f);
        const cv::Mat img = cv::imread(out + name, cv::IMREAD_UNCHANGED);
        REQUIRE(img.type() == CV_8UC3);
        REQUIRE(img.cols == 160);
        int checked = 0;
        for (std::size_t k = 0; k < t.rows.size(); ++k) {
            if (t.rows.frame[k] != f) continue;
            const double x = t.rows.x[k], y = t.rows.y[k], rad = t.rows.radius[k];
            const int c = t.rows.species[k] == 0 ? 2 : 0;
            // Points on the circle in 4 diagonal directions (away from the id label): the species
            // colour dominates there (grey video pixels have B = G = R).
            for (int q = 0; q < 4; ++q) {
                const double a = M_PI / 4 + q * M_PI / 2;
                REQUIRE(colour_excess(img, c, int(std::lround(x + rad * std::cos(a))),
                                      int(std::lround(y + rad * std::sin(a)))) > 100);
            }
            ++checked;
        }
        REQUIRE(checked == 20);
    }
    // AVI output (Motion-JPEG) with one frame per trajectory frame.
    r = test::run_vibra("-q render '" + truth + "' --video '" + video + "' -o '" + tmp.file("ov.avi") + "'");
    REQUIRE(r.exit_code == 0);
    REQUIRE(open_video(tmp.file("ov.avi"))->info().n_frames == 4);
    // Unreadable video: exit 1, nothing written.
    test::write_text(tmp.file("bad.avi"), std::string(3000, 'z'));
    r = test::run_vibra("-q render '" + truth + "' --video '" + tmp.file("bad.avi") + "' -o '" +
                        tmp.file("bad_ov.avi") + "'");
    REQUIRE(r.exit_code == 1);
    REQUIRE(r.output.find("bad.avi") != std::string::npos);
    REQUIRE_FALSE(fs::exists(tmp.file("bad_ov.avi")));
    r = test::run_vibra("-q render '" + truth + "' --video '" + tmp.file("bad.avi") + "' -o '" +
                        tmp.file("bad_folder") + "/'");
    REQUIRE(r.exit_code == 1);
    REQUIRE_FALSE(fs::exists(tmp.file("bad_folder")));
    // Frame size change mid-sequence: exit 1 naming the file, and the frames already drawn are removed.
    fs::create_directories(tmp.file("mixed"));
    for (int k = 0; k < 4; ++k)
        cv::imwrite(tmp.file("mixed") + "/m_" + std::to_string(k) + ".png",
                    cv::Mat(k == 2 ? 100 : 120, 160, CV_8UC1, cv::Scalar(50)));
    r = test::run_vibra("-q render '" + truth + "' --video '" + tmp.file("mixed") + "' -o '" +
                        tmp.file("mixed_ov") + "/'");
    REQUIRE(r.exit_code == 1);
    REQUIRE(r.output.find("m_2.png") != std::string::npos);
    REQUIRE_FALSE(fs::exists(tmp.file("mixed_ov")));
    r = test::run_vibra("-q render '" + truth + "' --video '" + tmp.file("mixed") + "' -o '" +
                        tmp.file("mixed_ov.avi") + "'");
    REQUIRE(r.exit_code == 1);
    REQUIRE_FALSE(fs::exists(tmp.file("mixed_ov.avi")));
    for (const auto& e : fs::directory_iterator(tmp.path()))
        REQUIRE(e.path().filename().string().find("partial") == std::string::npos);
}
