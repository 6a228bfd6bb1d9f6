// SPDX-License-Identifier: GPL-3.0-or-later
// Spatial velocity / displacement correlations (docs/collective-motion.md §3):
//   C_vv(r) = Σ_{i≠j} δu_i·δu_j δ(r − r_ij) / Σ_{i≠j} δ(r − r_ij) / ⟨|δu|²⟩,
// normalised by the pair count of each bin, so the window geometry cancels (no ideal-gas
// normalisation); longitudinal / transverse parts; a correlation length ξ from an exponential
// fit; and the polar order of the field directions. Pairs by cell list up to r_max.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "vibra/analysis/displacement_field.hpp"
#include "vibra/core/result.hpp"
#include "vibra/core/trajectory.hpp"
#include "vibra/core/trajectory_source.hpp"

namespace vibra::analysis {

struct VelocityCorrelationParams {
    double r_max = 10;          ///< largest separation, length unit
    double dr = 0.5;            ///< bin width, length unit
    bool subtract_mean = true;  ///< δu = u − ⟨u⟩_frame (docs/collective-motion.md §3: say so)
    void validate() const;
};

/// Accumulates C_vv(r) over frames: sums of δu_i·δu_j (total, longitudinal, transverse) and pair
/// counts per bin, plus Σ|δu|² and N over frames.
class VelocityCorrelation {
public:
    explicit VelocityCorrelation(const VelocityCorrelationParams& p);
    /// Adds one frame of vectors (ux, uy) at points (x, y); periodic geometries use minimum image.
    void add(std::span<const double> x, std::span<const double> y, std::span<const double> ux,
             std::span<const double> uy, const Geometry& g);
    std::vector<double> r() const;  ///< bin centres
    std::vector<double> c() const;  ///< C_vv(r), NaN where a bin has no pair
    std::vector<double> c_long()
        const;  ///< ⟨(δu_i·r̂)(δu_j·r̂)⟩ / ⟨|δu|²⟩ (normalised like c, so c = c_long + c_trans)
    std::vector<double> c_trans() const;
    const std::vector<double>& pair_counts() const { return pairs_; }
    double mean_square() const;  ///< ⟨|δu|²⟩ over all accumulated vectors
    void reset();
    /// Adds the sums of another accumulator with the same parameters.
    void merge(const VelocityCorrelation& o);

private:
    VelocityCorrelationParams p_;
    std::vector<double> pairs_, dot_, lon_;
    double sum_sq_ = 0, n_ = 0;
};

/// Exponential fit C(r) ≈ A·exp(−r/ξ): least squares of log C over consecutive bins from the first
/// bin with pairs while C > floor·C(first bin) (default floor e^{-2}, i.e. up to about 2ξ).
/// Returns NaN when fewer than 3 bins qualify or the slope is not negative.
double correlation_length(std::span<const double> r, std::span<const double> c,
                          double floor = 0.1353352832366127);

/// Polar order of the directions: |Σ u_i/|u_i|| / N over vectors with |u| > 0 (1 = all parallel,
/// ~1/√N for random directions). NaN when no vector is non-zero.
double polar_order(std::span<const double> ux, std::span<const double> uy);

/// The correlations analysis (/analysis/correlations): C_vv(r) per lag (time-averaged) and the
/// correlation length and polar order of every start frame.
struct CorrelationsParams {
    FieldSettings field;
    /// r_max NaN: min(15 mean spacings, a quarter of the grid's shorter side); dr NaN: half a spacing.
    VelocityCorrelationParams corr{std::numeric_limits<double>::quiet_NaN(),
                                   std::numeric_limits<double>::quiet_NaN(), true};
    double fit_floor = 0.1;  ///< ξ: fit of log C(r) while C > fit_floor × C(first bin), in (0, 1)
    int threads = 1;         ///< (lag, start) pairs in parallel, merged in order (identical for any count)
};
struct CorrelationsResult {
    VelocityCorrelationParams corr;        ///< as used
    std::vector<double> r;                 ///< bin centres
    std::vector<VelocityCorrelation> acc;  ///< per lag, over all start frames
    std::vector<double> xi, polar;         ///< [lag · n_times + k]
};
CorrelationsResult compute_correlations(const TrajectorySource& src, const CorrelationsParams& p);
ResultGroup to_group(const CorrelationsResult& r, const CorrelationsParams& p, const TrajectorySource& src);

}  // namespace vibra::analysis
