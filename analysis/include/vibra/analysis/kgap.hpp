// SPDX-License-Identifier: GPL-3.0-or-later
// Dispersion and k-gap of transverse excitations (docs/collective-modes.md §2). Per |k| shell: a damped-
// oscillator (Maxwell–Frenkel) fit of C_T(k,t) = C₀e^{−Γt}[cos ωt + (Γ/ω) sin ωt] (cosh/sinh
// below the gap; fitted in s = ω², which may be negative) gives the pole frequency ω and the
// damping Γ; the maximum of the lag-windowed transform of C_T(k,t) gives the peak position
// ω_peak. Then ω(k)² = c²k² − 1/(4τ²) is fitted (weighted, linear in (k², ω²)) once to the pole
// frequencies and once to the peak positions: k_gap = 1/(2cτ). For the Maxwell model the peak sits
// at sqrt(c²k² − 1/(2τ²)), so the peak fit returns τ/√2 and √2·k_gap (both are reported, labelled).
// Errors: block bootstrap over time blocks of C_T(k,t) (blocks longer than the decay time).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vibra/analysis/currents.hpp"
#include "vibra/core/result.hpp"

namespace vibra::analysis {

struct KgapParams {
    double k_min =
        0;  ///< smallest |k| of the dispersion fits, rad/<L>; 0 = from the data (propagating shells)
    double k_max = 0;     ///< largest |k| of the dispersion fits, rad/<L>; 0 = all shells
    double fit_time = 0;  ///< lags used by the per-shell oscillator fit, <T>; 0 = all lags of C_T(k,t)
    std::string lag_window = "tukey";  ///< window on C(k,t) before the peak transform: none | tukey | hann
    double tukey_fraction = 0.3;       ///< tapered fraction (at the long-lag end) of the Tukey window
    int pad = 16;                      ///< zero padding factor of the peak transform (finer ω grid)
    int bootstrap = 200;               ///< bootstrap replicates over time blocks (≥ 10)
    std::uint64_t seed = 1;            ///< bootstrap random seed
    int cl_shells = 3;        ///< lowest shells used for c_L (slope of the longitudinal peak through 0)
    double significance = 2;  ///< a shell is propagating when ω² > significance·σ(ω²) (and ω_peak > 0)
    int threads = 1;          ///< threads fitting the bootstrap replicas (results identical for any count)
    void validate() const;    ///< throws ParameterError naming the field and value
};

/// What the k-gap fit needs: shell-averaged C_T (and C_L) at lags, full and per time block.
struct KgapInput {
    std::vector<double> k, t;                    ///< rad/<L>, <T>
    std::vector<double> c_t, c_l;                ///< [shell][lag]
    std::vector<double> c_t_blocks, c_l_blocks;  ///< [block][shell][lag]
    std::size_t n_blocks = 0;
};
KgapInput kgap_input(const CurrentsResult& r);
/// From a /analysis/currents group (as returned by to_group or read back).
KgapInput kgap_input(const ResultGroup& currents);

/// One dispersion fit ω² = c²k² − 1/(4τ²).
struct DispersionFit {
    std::string method;                                                       ///< "pole" or "peak"
    double k_gap = 0, k_gap_err = 0, c = 0, c_err = 0, tau = 0, tau_err = 0;  ///< rad/<L>, <L>/<T>, <T>
    double k_min = 0, k_max = 0;  ///< range of the shells used, rad/<L>
    double chi2 = 0;
    std::int64_t n_points = 0, n_bootstrap_ok = 0;
    std::vector<std::int64_t> used;  ///< per shell: 1 if used
};

struct KgapResult {
    KgapParams params;
    std::vector<double> k;                               ///< rad/<L>
    std::vector<double> omega_pole, omega_pole_err;      ///< sqrt(s) (NaN when s < 0), rad/<T>
    std::vector<double> omega2_pole, omega2_pole_err;    ///< s = ω², rad²/<T>²
    std::vector<double> gamma, gamma_err;                ///< damping Γ, 1/<T>
    std::vector<double> omega_peak, omega_peak_err;      ///< rad/<T>
    std::vector<double> omega_l_peak, omega_l_peak_err;  ///< rad/<T>
    DispersionFit pole, peak;
    double c_l = 0, c_l_err = 0;  ///< <L>/<T>
};

KgapResult fit_kgap(const KgapInput& in, KgapParams p);

/// Per-shell oscillator fit of one C(t) (lags t): returns {C₀, Γ, s}.
std::vector<double> fit_damped_oscillator(const std::vector<double>& t, const double* c, std::size_t n,
                                          const std::vector<double>* start = nullptr);

/// /analysis/kgap with sub-groups pole and peak.
ResultGroup to_group(const KgapResult& r, const Metadata& meta);

}  // namespace vibra::analysis
