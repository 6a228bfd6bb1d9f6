// SPDX-License-Identifier: GPL-3.0-or-later
// Constants every analysis source uses: a quiet NaN ("not computed": too few samples, an empty bin)
// and π. One definition here instead of one per file, so that the sources of a module also
// compile together in unity batches (cmake/VibraOptions.cmake, VIBRA_UNITY).
#pragma once

#include <limits>
#include <numbers>

namespace vibra::analysis::detail {
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kPi = std::numbers::pi;
}  // namespace vibra::analysis::detail
