// SPDX-License-Identifier: GPL-3.0-or-later
// Transverse (and longitudinal) vibrational density of states from the current spectra summed
// over every k-vector up to the 2-D Debye wavenumber (docs/collective-modes.md §3), the reduced form D(ω)/ω
// against the Debye level 2/(c k_D)², and exactly additive per-particle contributions:
// with a_i(k,ω) = Σ_t w_t (v_i·ê_⊥) e^{ik·r_i} e^{iωt} and ĵ_T = Σ_i a_i,
//   p_i(band) = A Δω Σ_{ω∈band} Σ_k Re[a_i* ĵ_T]  ⇒  Σ_i p_i = ∫_band D_T^{(segment)} dω,
// computed without forming a_i: p_i = A Δω Re Σ_t w_t Σ_k (a_i·ê_⊥) e^{−ik·r_i} g(k,t) with g the
// band-passed current (one inverse FFT per k) — the adjoint Fourier sum. One streamed pass, one
// segment at a time (its frames and its n_k × segment currents), so memory does not grow with the
// run's length.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vibra/analysis/currents.hpp"
#include "vibra/analysis/velocities.hpp"
#include "vibra/core/result.hpp"
#include "vibra/core/trajectory_source.hpp"

namespace vibra::analysis {

struct TransverseVdosParams {
    double k_max = 0;  ///< rad/<L>; 0 = Debye wavenumber sqrt(4πρ)
    std::int64_t segment =
        0;  ///< frames per Hann-windowed segment, even; 0 = min(T, 256) (back to back, the last one ending at the last frame)
    double band_min = 0;        ///< band of the per-particle map, rad/<T>
    double band_max = 0;        ///< rad/<T>; 0 = Nyquist
    double omega_max = 0;       ///< largest ω written in the spectra, rad/<T>; 0 = Nyquist
    double c_t = 0, c_l = 0;    ///< sound speeds for the Debye levels, <L>/<T>; 0 = unknown (NaN level)
    double taper = 0.2;         ///< spatial Tukey taper for windows
    bool subtract_mean = true;  ///< subtract the mean velocity per frame
    bool per_particle = true;   ///< compute the per-particle map (second pass)
    int threads = 1;
    VelocityScheme velocity = VelocityScheme::automatic;  ///< as CurrentsParams::velocity
    FourierSums fourier = FourierSums::automatic;         ///< as CurrentsParams::fourier
    void validate() const;  ///< throws ParameterError naming the field and value
};

struct TransverseVdosResult {
    TransverseVdosParams params;
    std::vector<double> omega;                     ///< rad/<T>
    std::vector<double> d_t, d_l;                  ///< ∫₀^{ω_N} D dω = 1 (over all ω_f), <T>/rad
    std::vector<double> d_t_reduced, d_l_reduced;  ///< D/ω, <T>²/rad² (NaN at ω = 0)
    double debye_t = 0, debye_l = 0;               ///< Debye levels 2/(c k_D)² of D/ω
    double k_debye = 0, domega = 0, dt = 1;
    std::int64_t n_segments = 0, n_vectors = 0;
    std::string velocity_source;            ///< "columns", "central differences …", "forward differences"
    std::vector<double> d_t_segments;       ///< [segment][ω] D_T of each segment (same normalisation)
    std::vector<double> band_sum_segments;  ///< ∫_band D_T^{(s)} dω per segment (bins in band, both signs)
    // per segment × particle table (ragged: rows of segment s are [segment_offsets[s], segment_offsets[s+1]))
    std::vector<std::int64_t> segment_offsets, segment_first_frame;
    std::vector<std::int64_t> particle, frames_present;
    std::vector<double> x_mean, y_mean, p_band;  ///< p_band in the units of D_T·ω (1)
};

TransverseVdosResult compute_transverse_vdos(const TrajectorySource& src, TransverseVdosParams p);

/// /analysis/tvdos group.
ResultGroup to_group(const TransverseVdosResult& r, const Metadata& meta);

}  // namespace vibra::analysis
