// SPDX-License-Identifier: GPL-3.0-or-later
// parse_frame_range: the one rule of `--frames` (track, render, convert, batch).
#include <catch2/catch.hpp>

#include "vibra/core/error.hpp"
#include "vibra/core/frame_range.hpp"

using vibra::parse_frame_range;

TEST_CASE("frame range: A:B, A:, :B and A", "[unit]") {
    auto r = parse_frame_range("10:16");
    CHECK(r.first == 10);
    CHECK(r.last == 16);
    r = parse_frame_range("7:");
    CHECK(r.first == 7);
    CHECK(r.last == -1);
    r = parse_frame_range(":5");
    CHECK(r.first == 0);
    CHECK(r.last == 5);
    r = parse_frame_range("3");
    CHECK(r.first == 3);
    CHECK(r.last == 4);
    r = parse_frame_range("0:1");
    CHECK(r.first == 0);
    CHECK(r.last == 1);
}

TEST_CASE("frame range: empty, reversed, negative or non-numeric ranges name the flag and the text",
          "[unit]") {
    for (const char* bad : {"", ":", "5:5", "5:2", "-1:4", "1:-4", "a:b", "1.5:3", "1:3:5", " 1:3", "1 :3",
                            "+1:3", "99999999999999999999:"}) {
        INFO(bad);
        try {
            parse_frame_range(bad, "--frames");
            FAIL("accepted");
        } catch (const vibra::ParameterError& e) {
            CHECK_THAT(e.what(), Catch::Contains("--frames: '" + std::string(bad) + "'"));
            CHECK_THAT(e.what(), Catch::Contains("0 <= A < B"));
        }
    }
}
