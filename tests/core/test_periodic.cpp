// SPDX-License-Identifier: GPL-3.0-or-later
// minimum_image / image_shift: the one minimum-image convention of a periodic box.
#include <catch2/catch.hpp>

#include "vibra/core/periodic.hpp"

TEST_CASE("minimum image: separations come back into [-L/2, L/2], half a box is a tie kept as it is",
          "[unit]") {
    const double L = 10;
    CHECK(vibra::minimum_image(3, L) == 3);
    CHECK(vibra::minimum_image(6, L) == -4);
    CHECK(vibra::minimum_image(-6, L) == 4);
    CHECK(vibra::minimum_image(26, L) == -4);
    CHECK(vibra::minimum_image(5, L) == 5);  // tie: nearbyint(0.5) = 0
    CHECK(vibra::minimum_image(-5, L) == -5);
    CHECK(vibra::minimum_image(15, L) == -5);  // nearbyint(1.5) = 2
    CHECK(vibra::image_shift(26, L) == 30);
    for (double d = -37.3; d < 40; d += 0.7) {
        const double m = vibra::minimum_image(d, L);
        CHECK(std::abs(m) <= L / 2);
        CHECK(std::abs(std::remainder(d - m, L)) < 1e-12);  // differs from d by whole boxes
    }
}
