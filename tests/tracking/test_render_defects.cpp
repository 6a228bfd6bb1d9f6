// SPDX-License-Identifier: GPL-3.0-or-later
// `vibra render --defects`: ±1 markers from /analysis/defects are drawn where the defects are.
#include <catch2/catch.hpp>

#include <opencv2/imgcodecs.hpp>

#include "test_support.hpp"
#include "vibra/store/results_file.hpp"

using namespace vibra;

TEST_CASE("render draws defect markers at the defect positions of the chosen lag", "[integration]") {
    test::TempDir dir("render_defects");
    auto q = [](const std::string& s) { return "'" + s + "'"; };
    const auto clip = dir.file("clip.avi"), tr = dir.file("clip.h5"), res = dir.file("res.h5");
    REQUIRE(test::run_vibra("synth -o " + q(clip) +
                            " --frames 16 --width 192 --height 192 --packing-fraction 0.5 "
                            "--active-speed 0.5 --seed 3 -q")
                .exit_code == 0);
    REQUIRE(test::run_vibra("track " + q(clip) + " -o " + q(tr) + " --radius-small 6 --radius-large 8 -q")
                .exit_code == 0);
    const auto a = test::run_vibra("analyze " + q(tr) + " -o " + q(res) + " --only defects -q");
    INFO(a.output);
    REQUIRE(a.exit_code == 0);
    REQUIRE(test::run_vibra("render " + q(tr) + " --video " + q(clip) + " -o " + q(dir.file("plain") + "/") +
                            " --frames 0:2 -q")
                .exit_code == 0);
    REQUIRE(test::run_vibra("render " + q(tr) + " --video " + q(clip) + " -o " + q(dir.file("marked") + "/") +
                            " --frames 0:2 --defects " + q(res) + " -q")
                .exit_code == 0);
    const cv::Mat plain = cv::imread(dir.file("plain/frame_000000.png"));
    const cv::Mat marked = cv::imread(dir.file("marked/frame_000000.png"));
    REQUIRE(!plain.empty());
    REQUIRE(plain.size() == marked.size());

    const auto g = store::read_results(res, "defects");
    const auto& lag = std::get<std::vector<std::int64_t>>(g.find("lag")->data);
    const auto& frame = std::get<std::vector<std::int64_t>>(g.find("frame")->data);
    const auto& x = std::get<std::vector<double>>(g.find("x")->data);
    const auto& y = std::get<std::vector<double>>(g.find("y")->data);
    const auto min_lag = *std::min_element(lag.begin(), lag.end());
    int checked = 0;
    for (std::size_t i = 0; i < frame.size(); ++i) {
        if (frame[i] != 0 || lag[i] != min_lag) continue;
        // Some pixel within the marker's reach (size 6 px) changed.
        const int cx = static_cast<int>(std::lround(x[i])), cy = static_cast<int>(std::lround(y[i]));
        bool changed = false;
        for (int dy = -7; dy <= 7 && !changed; ++dy)
            for (int dx = -7; dx <= 7 && !changed; ++dx) {
                const int px = cx + dx, py = cy + dy;
                if (px < 0 || py < 0 || px >= plain.cols || py >= plain.rows) continue;
                changed = plain.at<cv::Vec3b>(py, px) != marked.at<cv::Vec3b>(py, px);
            }
        INFO("defect " << i << " at (" << x[i] << ", " << y[i] << ")");
        REQUIRE(changed);
        ++checked;
    }
    WARN(checked << " defects of frame 0 checked");
    REQUIRE(checked > 0);
    // Frame 1 without markers elsewhere stays as plain where no defect is near: images differ only near defects.
    REQUIRE(cv::norm(plain, marked, cv::NORM_L1) > 0);
}
