// SPDX-License-Identifier: GPL-3.0-or-later
// Self intermediate scattering function F_s(k,t) = ⟨cos(k·Δr_i(t))⟩, averaged over n_dir
// wave-vector directions θ_j = jπ/n_dir (isotropic average; not just the x and y axes), and the
// α-relaxation time τ_α where F_s = 1/e (docs/analysis-dynamics.md, "fs"). For a fixed k-vector the sum over
// pairs is C(c,c) + C(s,s) with c = m·cos(k·r), s = m·sin(k·r): the same masked FFT engine as
// the MSD, gap-aware. Default k: the first S(k) peak of an earlier `sk` result, else 2π/d_small.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "vibra/analysis/msd.hpp"
#include "vibra/core/result.hpp"
#include "vibra/core/trajectory_source.hpp"

namespace vibra::analysis {

class TrackCache;

/// Sums per (k, lag): s[ik·n_lags + lag] = Σ_pairs (1/n_dir) Σ_j cos(k_j·Δr); pairs per lag.
struct FsSums {
    std::size_t n_k = 0, n_lags = 0;
    std::vector<double> pairs, s;
    void resize(std::size_t n_k, std::size_t n_lags);
    void add(const FsSums& o);
};

void accumulate_fs(std::span<const double> x, std::span<const double> y, std::span<const double> k,
                   std::int64_t n_dir, std::size_t max_lag, FsSums& sums, FftCorrelator& corr);
/// O(T·max_lag) definition (reference).
void accumulate_fs_direct(std::span<const double> x, std::span<const double> y, std::span<const double> k,
                          std::int64_t n_dir, std::size_t max_lag, FsSums& sums);

/// First time (linear interpolation between lags, time = lag·dt) where f drops below 1/e; NaN if never.
double tau_alpha(std::span<const double> f, double dt);

struct FsParams {
    std::vector<double> k;        ///< rad/length; empty = default (S(k) peak, else 2π/d_small)
    std::int64_t directions = 8;  ///< k directions over [0, π)
    std::int64_t max_lag = -1;    ///< frames; −1 = n_frames/2
    DriftMode drift = DriftMode::none;
    std::int64_t drift_window = 51;
    double min_pairs = 1;
    std::int64_t max_cells = 1 << 21;
    TrackCache* cache =
        nullptr;      ///< shared particle-major copy of the source (track_cache.hpp); null = a private one
    int threads = 1;  ///< worker threads (results identical for any count)
    bool progress = false;
    void validate() const;
};

/// Default k (rad/length) and where it came from: the first-peak attribute of an `sk` group
/// (k_peak, first_peak_k, peak_k, k_first_peak), or the maximum of its (k, s) arrays, else
/// 2π/d_small, else 2π/(mean spacing) from the geometry area and particles per frame.
std::pair<double, std::string> default_fs_k(const TrajectorySource& src, const ResultGroup* sk);

/// F_s sums per species (total: every track) for each k, and what the stream saw.
struct FsResult {
    TrackStreamInfo info;     ///< what was streamed: track counts, drift, frame times
    double dt = 1;            ///< mean frame interval (time unit)
    std::size_t max_lag = 0;  ///< frames
    std::vector<double> k;    ///< rad/length: p.k, or the default
    std::string k_source;     ///< "option", or where the default k came from (default_fs_k)
    FsSums total, small, large;
};
/// `sk`: an `sk` group of the same run for the default k (may be null).
FsResult compute_fs(const TrajectorySource& src, const FsParams& p, const ResultGroup* sk = nullptr);

/// Group `fs` {lag, lag_frames, k, fs, fs_small, fs_large ([n_k × n_lags]), tau_alpha* [n_k]}.
ResultGroup to_group(const FsResult& r, const FsParams& p, const Metadata& meta);

}  // namespace vibra::analysis
