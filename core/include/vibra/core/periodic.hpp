// SPDX-License-Identifier: GPL-3.0-or-later
// Minimum-image convention of a periodic box, written once: every analysis that takes a
// separation or a displacement across a periodic edge calls these (cell lists, ψ6 bonds, defects,
// fields, VDOS, velocities, the particle-major track copy). A separation of exactly half a box is
// a tie; it rounds to even (std::nearbyint in the default rounding mode), so d = ±L/2 stays as it is.
#pragma once

#include <cmath>

namespace vibra {

/// The whole number of box lengths L to take off `d` so that |d − shift| ≤ L/2: L · nearbyint(d / L).
inline double image_shift(double d, double L) { return L * std::nearbyint(d / L); }

/// `d` (a separation or displacement along an axis of length L) brought into [−L/2, L/2].
inline double minimum_image(double d, double L) { return d - image_shift(d, L); }

/// minimum_image along a periodic axis (L > 0); `d` unchanged along an open one (L ≤ 0).
inline double minimum_image_if_periodic(double d, double L) { return L > 0 ? minimum_image(d, L) : d; }

}  // namespace vibra
