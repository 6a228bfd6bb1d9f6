// SPDX-License-Identifier: GPL-3.0-or-later
// Time correlations by FFT (Wiener–Khinchin with zero padding to 2T, so no wrap-around):
// the building block of MSD, VACF and current correlations. O(T log T) instead of O(T²).
#pragma once

#include <span>
#include <vector>

namespace vibra::analysis {

/// Unnormalised autocorrelation S(m) = Σ_{t=0}^{T-1-m} a(t)·a(t+m), m = 0 … T−1.
std::vector<double> autocorrelation_sum(std::span<const double> a);

/// Unnormalised cross-correlation S(m) = Σ_{t=0}^{T-1-m} a(t)·b(t+m), m = 0 … T−1 (a, b same length).
std::vector<double> crosscorrelation_sum(std::span<const double> a, std::span<const double> b);

}  // namespace vibra::analysis
