// SPDX-License-Identifier: GPL-3.0-or-later
// Velocity autocorrelation Z(τ) = ⟨v_i(t)·v_i(t+τ)⟩_{i,t} (both components summed, not
// normalised), by masked FFT correlations per track (gap-aware: a velocity missing at either
// end removes the pair; lags without pairs are NaN). Velocities are given or finite differences
// of positions on the actual frame times (VelocityScheme, recorded). Species-resolved.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "vibra/analysis/msd.hpp"
#include "vibra/analysis/velocities.hpp"
#include "vibra/core/result.hpp"
#include "vibra/core/trajectory_source.hpp"

namespace vibra::analysis {

class TrackCache;

/// Per-lag pair sums (lag 0 … max_lag).
struct VacfSums {
    std::vector<double> pairs;  ///< number of (t, t+τ) pairs with both velocities known
    std::vector<double> s;      ///< Σ v(t)·v(t+τ)
    void resize(std::size_t n_lags);
    void add(const VacfSums& o);
};

/// Adds one track's sums for lags 0 … max_lag by FFT (gap-aware). NaN = unknown velocity.
void accumulate_vacf(std::span<const double> vx, std::span<const double> vy, std::size_t max_lag,
                     VacfSums& sums, FftCorrelator& corr);
/// The O(T·max_lag) definition (reference).
void accumulate_vacf_direct(std::span<const double> vx, std::span<const double> vy, std::size_t max_lag,
                            VacfSums& sums);
/// Z(τ) = s/pairs, NaN where pairs < max(1, min_pairs).
std::vector<double> vacf_from_sums(const VacfSums& s, double min_pairs = 1);

struct VacfParams {
    std::int64_t max_lag = -1;                          ///< frames; −1 = n_frames/2
    VelocityScheme scheme = VelocityScheme::automatic;  ///< given / central / forward
    DriftMode drift = DriftMode::none;
    std::int64_t drift_window = 51;    ///< frames (lowpass drift)
    double min_pairs = 1;              ///< lags with fewer pairs are NaN
    std::int64_t max_cells = 1 << 21;  ///< memory bound, see stream_tracks
    TrackCache* cache =
        nullptr;      ///< shared particle-major copy of the source (track_cache.hpp); null = a private one
    int threads = 1;  ///< worker threads (results identical for any count)
    bool rescan =
        false;  ///< reference path: re-read the frames per particle block (TrackStreamParams::rescan)
    bool progress = false;
    void validate() const;  ///< throws ParameterError naming the field
};

/// Species-resolved VACF sums (total: every track) and what the stream saw.
struct VacfResult {
    TrackStreamInfo info;
    VacfSums total, small, large;
    double dt = 1;  ///< mean frame interval (time unit)
};
VacfResult compute_vacf(const TrajectorySource& src, const VacfParams& p);

/// Group `vacf` {lag, lag_frames, n_pairs*, vacf, vacf_small, vacf_large, vacf_norm*} (units <L>^2/<T>^2).
ResultGroup to_group(const VacfResult& r, const VacfParams& p, const Metadata& meta);

}  // namespace vibra::analysis
