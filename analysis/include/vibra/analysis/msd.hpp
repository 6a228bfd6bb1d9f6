// SPDX-License-Identifier: GPL-3.0-or-later
// Mean square displacement, non-Gaussian parameter α2 and self van Hove function, gap-aware.
//
// Per track, with mask m_t (1 where the particle is seen) and positions set to 0 in gaps, every
// pair sum over (t, t+τ) is a sum of FFT cross-correlations C(a,b)(τ) = Σ_t a_t b_{t+τ} of masked
// monomials (docs/analysis-dynamics.md, "msd", mask-aware FFT):
//   Σ m m Δx²  = C(m, m x²) + C(m x², m) − 2 C(m x, m x),   pairs(τ) = C(m, m),
// and likewise Σ m m Δr⁴ from the expansion of |Δr|⁴ in w = x² + y², wx, wy, x² − y², 2xy (7 series
// and the mask). A track without gaps needs no transform of the mask: pairs(τ) = L − τ and the sums
// against the mask are running sums (7 real FFTs and 2 inverse ones per track). Leading and trailing
// gaps are trimmed first.
// Positions are relative to the track mean, in double precision. Gaps never count as zeros:
// lags without pairs are NaN. The ensemble average weights every (particle, t) pair equally.
#pragma once

#include <complex>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "vibra/analysis/velocities.hpp"
#include "vibra/core/result.hpp"
#include "vibra/core/trajectory_source.hpp"

namespace vibra::analysis {

class TrackCache;

/// Reusable FFT engine for sums of cross-correlations of real series of one length, up to a
/// maximum lag: forward() stores spectra in slots, add_cross() accumulates coef·conj(S_a)·S_b,
/// inverse() returns Σ coef·C(a,b)(τ) for τ = 0 … max_lag. Plans are cached per FFT length.
class FftCorrelator {
public:
    FftCorrelator();
    ~FftCorrelator();
    FftCorrelator(const FftCorrelator&) = delete;
    FftCorrelator& operator=(const FftCorrelator&) = delete;
    /// Prepare for series of `length` and lags 0 … max_lag (FFT length ≥ length + max_lag,
    /// so no circular wrap-around) with `slots` spectra; clears the accumulator.
    void prepare(std::size_t length, std::size_t max_lag, std::size_t slots);
    /// Spectrum of `series` (length ≤ prepared length, zero-padded) into slot `slot`.
    void forward(std::span<const double> series, std::size_t slot);
    /// acc += coef · conj(S_a) · S_b  (↔ coef · Σ_t a_t b_{t+τ}).
    void add_cross(std::size_t a, std::size_t b, double coef);
    /// acc += coef·|S_a|², then acc += coef·|S_b|² (the same sums as add_cross(a, a, coef),
    /// add_cross(b, b, coef): the imaginary parts they add are exactly 0).
    void add_power(std::size_t a, std::size_t b, double coef);
    /// Σ of the accumulated correlations at lags 0 … min(max_lag, length−1) into out (out
    /// must have at least that many + 1 entries; further entries untouched); clears the accumulator.
    void inverse(std::span<double> out);
    std::size_t fft_length() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

/// Per-lag pair sums (lag 0 … max_lag).
struct MsdSums {
    std::vector<double> pairs;  ///< number of (t, t+τ) pairs with both ends seen
    std::vector<double> s2;     ///< Σ |Δr|²
    std::vector<double> s4;     ///< Σ |Δr|⁴
    void resize(std::size_t n_lags);
    void add(const MsdSums& o);
};

/// Adds one track's pair sums for lags 0 … max_lag by FFT (gap-aware). x, y: NaN = absent.
void accumulate_msd(std::span<const double> x, std::span<const double> y, std::size_t max_lag, MsdSums& sums,
                    FftCorrelator& corr);
/// The O(T·max_lag) definition (reference for tests and the benchmark baseline).
void accumulate_msd_direct(std::span<const double> x, std::span<const double> y, std::size_t max_lag,
                           MsdSums& sums);

/// MSD(τ) = s2/pairs and α2(τ) = (s4/pairs)/(2·MSD²) − 1 (2-D); NaN where pairs < min_pairs.
std::vector<double> msd_from_sums(const MsdSums& s, double min_pairs = 1);
std::vector<double> alpha2_from_sums(const MsdSums& s, double min_pairs = 1);

struct MsdParams {
    std::int64_t max_lag = -1;          ///< frames; −1 = n_frames/2
    DriftMode drift = DriftMode::none;  ///< drift removal (recorded as attribute `drift`)
    std::int64_t drift_window = 51;     ///< frames, for DriftMode::lowpass
    std::vector<std::int64_t> vanhove_lags{1, 10,
                                           100};  ///< frames; lags > max_lag are dropped; empty = no van Hove
    std::int64_t vanhove_bins = 101;              ///< bins of G_s per lag
    double vanhove_range = 5.0;                   ///< half-range of G_s(Δx) in units of sqrt(MSD(τ)/2)
    std::int64_t sigma_fit_lags = 5;              ///< lags 1 … n used for the short-lag intercept (σ_loc)
    double min_pairs = 1;                         ///< lags with fewer pairs are NaN
    std::int64_t max_cells = 1 << 21;             ///< track-series cells per particle block (memory bound)
    TrackCache* cache =
        nullptr;      ///< shared particle-major copy of the source (track_cache.hpp); null = a private one
    int threads = 1;  ///< worker threads (results identical for any count)
    bool rescan =
        false;  ///< reference path: re-read the frames per particle block (TrackStreamParams::rescan)
    bool progress = false;
    void validate() const;  ///< throws ParameterError naming the field
};

/// The MSD of the tracks, pooled (total: every track, unknown species included) and per species,
/// and the self van Hove function G_s(Δx, τ) of x and y displacement components pooled.
struct MsdResult {
    TrackStreamInfo info;     ///< what was streamed: track counts, drift, frame times
    std::size_t max_lag = 0;  ///< frames
    double dt = 0;            ///< mean frame interval (time unit)
    MsdSums total, small, large;
    /// Van Hove lags kept (≤ max_lag, with MSD > 0; empty = none) and the half-range of each
    /// (vanhove_range · sqrt(MSD(τ)/2)); per species the counts [lag · bins + bin] and the
    /// samples per lag (those outside the range included).
    std::vector<std::int64_t> vanhove_lags;
    std::vector<double> vanhove_range;
    std::vector<double> hist_total, hist_small, hist_large;
    std::vector<double> samples_total, samples_small, samples_large;
};

/// One pass for the MSD sums, and a second for G_s when van Hove lags remain (ranges from the MSD).
MsdResult compute_msd(const TrajectorySource& src, const MsdParams& p);

/// Group `msd` {lag, lag_frames, n_pairs[_small|_large], msd[…], alpha2[…]} with attributes (drift,
/// D, sigma_loc, …) and, when van Hove lags remain, its sub-group `van_hove` {lag, lag_frames, dx,
/// gs[_small|_large], fraction_outside[…]}.
ResultGroup to_group(const MsdResult& r, const MsdParams& p, const Metadata& meta);

/// Least-squares fit MSD(τ) ≈ c + aτ + bτ² over lags 1 … n_fit (frames) → σ_loc = sqrt(max(c,0)/4)
/// (2-D: localisation noise adds 4σ_loc² at every lag). Returns {c, σ_loc}.
std::pair<double, double> localisation_noise(std::span<const double> msd, std::int64_t n_fit);

}  // namespace vibra::analysis
