// SPDX-License-Identifier: GPL-3.0-or-later
// OpenCV's codecs (imgcodecs, videoio) are loaded on first use (tracking/src/detail/opencv_codecs.hpp):
// an uncompressed AVI is read without them; an image sequence loads them and reads the same pixels.
// Its own executable, so that no other test has loaded the module before.
#include <catch2/catch.hpp>

#include <opencv2/core.hpp>

#include "../../tracking/src/detail/opencv_codecs.hpp"
#include "test_support.hpp"
#include "vibra/tracking/synth.hpp"
#include "vibra/tracking/video_writer.hpp"
#include "vibra/tracking/video.hpp"

using namespace vibra;
using namespace vibra::tracking;

namespace {
cv::Mat ramp(int w, int h, int k) {
    cv::Mat m(h, w, CV_8UC1);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
            m.at<std::uint8_t>(y, x) = static_cast<std::uint8_t>((3 * x + 5 * y + 17 * k) & 255);
    return m;
}
// The frames of `input`, each checked against ramp(w, h, k); returns how many were read.
int frames_matching_ramps(const std::string& input, int w, int h) {
    auto src = open_video(input);
    Frame f;
    int k = 0;
    while (src->next(f) == ReadStatus::ok) {
        REQUIRE(cv::norm(f.image, ramp(w, h, k), cv::NORM_INF) == 0);
        ++k;
    }
    return k;
}
}  // namespace

TEST_CASE("OpenCV's codecs module: not loaded for an uncompressed AVI, loaded for a PNG sequence", "[unit]") {
    test::TempDir dir("opencv_codecs");
    const int w = 33, h = 21;  // odd: vibra's own AVI writer (no OpenCV)
    {
        FrameSink avi(dir.file("raw.avi"), VideoFormat::avi_raw, 50);
        for (int k = 0; k < 3; ++k) avi.write(ramp(w, h, k));
    }
    REQUIRE(frames_matching_ramps(dir.file("raw.avi"), w, h) == 3);
    REQUIRE_FALSE(detail::opencv_codecs_loaded());

    // PNG frames written and read back through the module
    const auto seq = dir.file("png");
    {
        FrameSink png(seq, VideoFormat::png);
        for (int k = 0; k < 2; ++k) png.write(ramp(w, h, k));
    }
    REQUIRE(detail::opencv_codecs_loaded());
    REQUIRE(write_image(dir.file("extra.png"), ramp(w, h, 7)));
    REQUIRE(cv::norm(detail::imread(dir.file("extra.png"), -1), ramp(w, h, 7), cv::NORM_INF) == 0);
    REQUIRE(frames_matching_ramps(seq, w, h) == 2);
    REQUIRE_FALSE(write_image(dir.file("no_such_folder/x.png"), ramp(w, h, 0)));
}
