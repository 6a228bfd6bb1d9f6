// SPDX-License-Identifier: GPL-3.0-or-later
// `vibra track` on native camera files: camera image numbers and time stamps go to /index, the
// frame interval comes from the stamps (they win over the setup's rate), exposure etc. to /meta.
#include <catch2/catch.hpp>

#include <cmath>

#include "test_support.hpp"
#include "vibra/store/trajectory_file.hpp"

using namespace vibra;

TEST_CASE("tracking a Phantom .cine records image numbers, stamps and camera metadata", "[integration]") {
    const auto shared = test::shared_dir();
    if (shared.empty()) {
        WARN("../shared is absent: skipping the real .cine tracking test");
        return;
    }
    const auto cine = (shared / "data/real/highspeed_camera_formats/cine_781.cine").string();
    test::TempDir dir("track_cine");
    const auto out = dir.file("cine.h5");
    const auto r = test::run_vibra("track '" + cine + "' -o '" + out + "' --radius 20 --invert -q");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    store::TrajectoryReader rd(out);
    REQUIRE(rd.n_frames() == 15);
    const auto& fc = rd.frame_columns();
    REQUIRE(fc.image_number.size() == 15);
    REQUIRE(fc.image_number.front() == -5417);  // frames before the trigger (README of the file)
    REQUIRE(fc.image_number.back() == -5403);
    REQUIRE(fc.time_s.size() == 15);
    // Stamps 111 µs apart (9000 frames/s, saved with decimation 10), although the setup says 90 000.
    for (std::size_t i = 1; i < fc.time_s.size(); ++i)
        REQUIRE_THAT(fc.time_s[i] - fc.time_s[i - 1], Catch::Matchers::WithinRel(1.11e-4, 0.02));
    REQUIRE(rd.meta().time_unit == "s");
    REQUIRE_THAT(rd.meta().frame_interval, Catch::Matchers::WithinRel(1.11e-4, 0.02));
    REQUIRE(rd.meta().user.count("camera_warning") == 1);  // the setup's 90 000 frames/s disagrees
    REQUIRE_THAT(rd.meta().user.at("camera_warning"), Catch::Contains("time stamps are used"));
    REQUIRE(rd.meta().user.count("camera_trigger_time") == 1);
    REQUIRE(rd.meta().user.at("camera_real_bpp") == "12");
    bool exposure = false;
    for (const auto& [k, v] : rd.meta().user) exposure |= k.find("camera_exposure") == 0;
    REQUIRE(exposure);
}
