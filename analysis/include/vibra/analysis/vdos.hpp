// SPDX-License-Identifier: GPL-3.0-or-later
// Vibrational density of states from the normalised VACF Ẑ (methods.md §4.1):
//   D(ω) = (2/π) ∫₀^{t_max} Ẑ(t) w(t) cos(ωt) dt,  ∫₀^{ω_N} D dω = 1,
// evaluated on ω_j = j·π/(M·Δt), j = 0 … M (M = max lag, ω_M = ω_Nyquist = π/Δt) by a DCT-I
// (real FFT of the even extension), trapezoid rule in t. Window w: "hann" (default),
// w(t) = cos²(π t / (2 t_max)), which goes to 0 at t_max and suppresses Gibbs ringing; "none".
// Reduced VDOS D(ω)/ω (2-D Debye level). Optional deconvolution of the finite-difference
// transfer function |H(ω)|² (central: sin(ωΔt)/(ωΔt), forward: sin(ωΔt/2)/(ωΔt/2)).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "vibra/analysis/vacf.hpp"
#include "vibra/core/result.hpp"

namespace vibra::analysis {

enum class VdosWindow { hann, none };
VdosWindow vdos_window_from_string(const std::string& s, const std::string& flag = "vdos-window");

/// D(ω_j) for j = 0 … M from Ẑ(m·dt), m = 0 … M (Ẑ(0) = 1; entries after the first NaN are
/// dropped, shrinking M), NOT renormalised (with Ẑ(0) = 1 the trapezoid integral is 1 by construction).
std::vector<double> vdos_from_vacf(std::span<const double> z_norm, double dt, VdosWindow w);

/// ω_j = j·π/(M·dt), j = 0 … M.
std::vector<double> vdos_omega(std::size_t M, double dt);

/// |H(ω)|² of a finite-difference scheme (1 for given velocities).
double transfer_function_sq(VelocityScheme s, double omega, double dt);

struct VdosParams {
    VacfParams vacf;                  ///< VACF settings (max_lag sets the resolution π/(max_lag·Δt))
    VdosWindow window = VdosWindow::hann;
    bool biased = false;  ///< Ẑ(m) = Σv·v(m)/Σv·v(0) (Bartlett-weighted; with window none and max_lag = T−1
                          ///< the spectrum is an average periodogram, non-negative) instead of the unbiased per-pair mean
    bool transfer_correction = false;  ///< divide by |H(ω)|² for ω ≤ transfer_cutoff·ω_N
    double transfer_cutoff = 0.5;      ///< fraction of the Nyquist frequency, (0, 1]
    void validate() const;
};

/// Group `vdos` {omega, vdos, vdos_small, vdos_large, vdos_reduced, vdos_reduced_small, …,
/// vdos_mass, vdos_reduced_mass (species weighted by m_a Σv_a², both species present)}.
ResultGroup vdos_analysis(const TrajectorySource& src, const VdosParams& p);

}  // namespace vibra::analysis
