// SPDX-License-Identifier: GPL-3.0-or-later
// Velocity distributions and the high-energy tail exponent β (docs/analysis-dynamics.md, "velocity_distribution").
//
// Components v_x, v_y pooled and scaled by the rms component velocity, c = v/⟨v_x²+v_y²⟩^{1/2}·√2
// (per species); P(c_x), P(c_y), P(c) and P(|v|/rms speed) histograms; kurtosis ⟨c⁴⟩/⟨c²⟩².
// Tail model for x = |c| > c_min: p(x) = exp(−(x/c₀)^β)/Z, Z = (c₀/β)·Γ(1/β, (c_min/c₀)^β)
// (upper incomplete gamma: the exact truncated normaliser). Maximum likelihood on a fine
// logarithmic grid of |c| (default 4000 bins; each sample at its bin's geometric centre, a
// relative error ≲ 1e-7 on Σx^β), Newton's method in (β, ln c₀). Uncertainty: block bootstrap
// over time blocks (resampling whole blocks with replacement), percentile interval.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "vibra/analysis/velocities.hpp"
#include "vibra/core/result.hpp"
#include "vibra/core/trajectory_source.hpp"

namespace vibra::analysis {

class TrackCache;

/// ln Γ(s, x), the upper incomplete gamma function, s > 0, x ≥ 0 (series / continued fraction).
double log_upper_gamma(double s, double x);

/// Per-block counts of tail samples on a logarithmic grid [lo, hi] (values ≥ hi go to the last bin).
struct TailHistogram {
    double lo = 1, hi = 10;
    std::int64_t n_bins = 0, n_blocks = 0;
    std::vector<double> counts;  ///< [block · n_bins + bin]
    TailHistogram() = default;
    TailHistogram(double lo, double hi, std::int64_t n_bins, std::int64_t n_blocks);
    void add(double x, std::int64_t block);   ///< x < lo is ignored
    double edge(std::int64_t b) const;        ///< lower edge of bin b (b = n_bins gives hi)
    void add_counts(const TailHistogram& o);  ///< counts += o.counts (same grid)

private:
    double log_ratio_ = 0;  ///< ln(hi/lo), computed once
};

struct TailFitParams {
    double threshold = 1.5;         ///< c_min (in rms units); snapped to the grid edge at or above it
    std::int64_t bootstrap = 200;   ///< bootstrap replicates (0 = none)
    double confidence = 0.95;       ///< of the percentile interval
    std::uint64_t seed = 20240601;  ///< bootstrap RNG seed
    int threads = 1;  ///< threads fitting the bootstrap replicates (results identical for any count)
    void validate() const;
};

struct TailFit {
    double beta = 0, c0 = 0;                                   ///< MLE
    double beta_ci_low = 0, beta_ci_high = 0, beta_sigma = 0;  ///< bootstrap percentile CI and std
    double threshold = 0;                                      ///< c_min actually used (grid edge)
    double n_tail = 0;                                         ///< samples above threshold
    bool converged = false;
};

/// MLE of (β, c₀) from the pooled counts, with a block-bootstrap CI.
TailFit fit_tail(const TailHistogram& h, const TailFitParams& p);
/// Same for several thresholds with shared bootstrap resamples (scan); result per threshold.
std::vector<TailFit> fit_tail_scan(const TailHistogram& h, std::span<const double> thresholds,
                                   const TailFitParams& p);

/// Convenience for raw samples: x = |c| values, block = block index of each sample (0 … n_blocks−1).
TailHistogram tail_histogram(std::span<const double> x, std::span<const std::int64_t> block,
                             std::int64_t n_blocks, double lo, double hi, std::int64_t n_bins = 4000);

struct VelocityDistributionParams {
    VelocityScheme scheme = VelocityScheme::automatic;
    DriftMode drift = DriftMode::none;
    std::int64_t drift_window = 51;
    bool fit_speed = false;  ///< fit |v|/rms speed instead of the pooled components
    double threshold = 1.5;  ///< tail threshold, rms units
    std::vector<double> scan{1.5, 1.75, 2.0, 2.25, 2.5, 2.75, 3.0};  ///< thresholds of the scan
    std::int64_t bootstrap = 200;
    std::int64_t blocks = 50;       ///< time blocks of the bootstrap
    std::int64_t bins = 201;        ///< histogram bins of P(c)
    std::int64_t tail_bins = 4000;  ///< fine grid of the likelihood
    std::uint64_t seed = 20240601;
    std::int64_t max_cells = 1 << 21;
    TrackCache* cache =
        nullptr;      ///< shared particle-major copy of the source (track_cache.hpp); null = a private one
    int threads = 1;  ///< worker threads (results identical for any count)
    bool progress = false;
    void validate() const;
};

/// Histograms of the rms-scaled velocities and tail fits, per part present (total, small, large).
struct VelocityDistributionResult {
    struct Part {
        std::string suffix;                              ///< "", "_small", "_large"
        double n = 0, sxx = 0, syy = 0, c4 = 0, v4 = 0;  ///< samples, Σvx², Σvy², Σ(vx⁴+vy⁴), Σ|v|⁴
        double rms_comp = 0;                             ///< sqrt(⟨vx² + vy²⟩/2)
        double hist_n = 0;                               ///< samples histogrammed
        std::vector<double> cx, cy, sp;                  ///< counts per bin of c_x, c_y, speed
        std::vector<TailFit> fits;                       ///< threshold, then the scan
        double tail_fraction = 0, tail_amplitude = 0;
    };
    TrackStreamInfo info;  ///< what was streamed
    std::int64_t n_frames = 0;
    double cmax = 1, smax = 1;  ///< histogram ranges [−cmax, cmax], [0, smax] (rms units)
    double wc = 0, ws = 0;      ///< bin widths
    std::vector<Part> parts;
};
/// Two passes (moments, then histograms and tail grids), then the tail fits.
VelocityDistributionResult compute_velocity_distribution(const TrajectorySource& src,
                                                         const VelocityDistributionParams& p);

/// Group `velocity_distribution`: arrays c, p_c, p_cx, p_cy, speed, p_speed (+ _small/_large),
/// scan_threshold, scan_beta, scan_beta_ci_low, scan_beta_ci_high, scan_n_tail (+ suffixes);
/// attributes beta, beta_ci_low, beta_ci_high, beta_sigma, beta_threshold, c0, tail_amplitude,
/// kurtosis, sonine_a2, rms_velocity, fitted_variable, … (+ _small/_large).
ResultGroup to_group(const VelocityDistributionResult& r, const VelocityDistributionParams& p,
                     const Metadata& meta);

}  // namespace vibra::analysis
