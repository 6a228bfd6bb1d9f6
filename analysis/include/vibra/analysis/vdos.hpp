// SPDX-License-Identifier: GPL-3.0-or-later
// Vibrational density of states D(ω), ∫₀^{ω_N} D dω = 1 (docs/analysis-dynamics.md, "vdos"), on
// ω_j = j·π/(M·Δt), j = 0 … M (ω_M = ω_Nyquist = π/Δt). Two routes:
//  * welch (default): D(ω) ∝ Σ_i |ṽ_i(ω)|², the Fourier transform of each track's velocity over
//    segments of 2M frames (50 % overlap, window w on the segment), Welch-averaged over segments
//    and tracks. Wiener–Khinchin makes this the VACF's transform, and it is non-negative by
//    construction: no negative side lobes from a truncated or noisy VACF.
//  * unbiased / biased: D(ω) = (2/π) ∫₀^{t_max} Ẑ(t) w(t) cos(ωt) dt of the normalised VACF Ẑ by
//    a DCT-I (real FFT of the even extension, trapezoid in t), window w(t) = cos²(π t/(2 t_max)).
//    Kept for comparison: the transform of the unbiased VACF goes negative where the VACF is noisy.
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
enum class VdosEstimator { welch, unbiased, biased };
/// "welch", "unbiased", "biased"; anything else throws ParameterError naming `flag`.
VdosEstimator vdos_estimator_from_string(const std::string& s, const std::string& flag = "vdos-estimator");
VdosWindow vdos_window_from_string(const std::string& s, const std::string& flag = "vdos-window");

/// D(ω_j) for j = 0 … M from Ẑ(m·dt), m = 0 … M (Ẑ(0) = 1; entries after the first NaN are
/// dropped, shrinking M), NOT renormalised (with Ẑ(0) = 1 the trapezoid integral is 1 by construction).
std::vector<double> vdos_from_vacf(std::span<const double> z_norm, double dt, VdosWindow w);

/// ω_j = j·π/(M·dt), j = 0 … M.
std::vector<double> vdos_omega(std::size_t M, double dt);

/// |H(ω)|² of a finite-difference scheme (1 for given velocities).
double transfer_function_sq(VelocityScheme s, double omega, double dt);

/// Welch sums of one part (total or a species): Σ over segments of the weighted |ṽ_j|² (j = 0 … M)
/// and the summed squared speeds of the samples the segments cover.
struct WelchSums {
    std::vector<double>
        power;  ///< Σ g_s (|X_j|² + |Y_j|²), g_s = f_run · n_s / Σ_t w_t², f_run = run samples / Σ n_s
    double energy = 0;  ///< Σ over covered samples of vx² + vy²
    std::int64_t segments = 0;
    std::int64_t samples = 0;  ///< velocity samples covered
    void add(const WelchSums& o);
};

/// Adds one track's velocity periodograms for segment length 2M. Each run of finite velocities
/// (both components) of ≥ min_run samples is cut into segments of 2M frames with 50 % overlap (the
/// last one aligned to the run's end); a run shorter than 2M is one segment of its own length,
/// windowed and zero-padded to 2M. Segment weights make each run count by its number of samples.
void accumulate_welch(std::span<const double> vx, std::span<const double> vy, std::size_t M, VdosWindow w,
                      std::size_t min_run, WelchSums& sums);

/// D_j = (Δt/π) · power_j / energy (∫ D dω = 1 by Parseval up to the window's edge effects).
std::vector<double> vdos_from_welch(const WelchSums& s, double dt);

struct VdosParams {
    VacfParams vacf;  ///< velocity settings; max_lag = M sets the resolution π/(M·Δt)
                      ///< (−1: n_frames/2 for the VACF routes, min(n_frames/2, 128) for welch)
    VdosWindow window = VdosWindow::hann;
    VdosEstimator estimator = VdosEstimator::welch;
    /// biased: Ẑ(m) = Σv·v(m)/Σv·v(0) (Bartlett-weighted) instead of the unbiased per-pair mean.
    std::int64_t min_run = 16;         ///< welch: velocity runs shorter than this (frames) are not used
    bool transfer_correction = false;  ///< divide by |H(ω)|² for ω ≤ transfer_cutoff·ω_N
    double transfer_cutoff = 0.5;      ///< fraction of the Nyquist frequency, (0, 1]
    void validate() const;
};

/// The spectra of the parts present (total, small, large) on one ω grid, before the transfer
/// correction and the normalisation ∫ D dω = 1 (done by to_group, which records both).
struct VdosResult {
    struct Part {
        std::string suffix;     ///< "", "_small", "_large"
        std::vector<double> d;  ///< D(ω), time unit/rad
        double weight = 0;      ///< Σ v² of the part: the kinetic-energy weight of the mass-weighted total
    };
    /// welch: segments and velocity samples of every species present (with or without a spectrum)
    struct Counted {
        std::string suffix;
        std::int64_t segments = 0, samples = 0;
    };
    TrackStreamInfo info;  ///< what was streamed: velocity scheme, counts, drift, frame times
    double dt = 1;         ///< mean frame interval (time unit)
    std::int64_t max_lag = 0, max_lag_used = 0;  ///< M (welch: segments of 2M frames) / VACF lags
    std::vector<double> omega;                   ///< rad/time unit, 0 … π/Δt
    std::vector<Part> parts;
    std::vector<Counted> counted;  ///< welch only
};

/// Throws InsufficientData when no part has a usable spectrum (too few frames or velocity runs).
VdosResult compute_vdos(const TrajectorySource& src, const VdosParams& p);

/// Group `vdos` {omega, vdos, vdos_small, vdos_large, vdos_reduced, vdos_reduced_small, …,
/// vdos_mass, vdos_reduced_mass (species weighted by m_a Σv_a², both species present)}.
ResultGroup to_group(const VdosResult& r, const VdosParams& p, const Metadata& meta);

}  // namespace vibra::analysis
