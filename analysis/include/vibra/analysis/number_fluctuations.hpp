// SPDX-License-Identifier: GPL-3.0-or-later
// Number fluctuations in sub-boxes: the window (periodic box, rectangle, or the square inscribed
// in a circular window) is tiled with square boxes of side ℓ for a range of ℓ; the variance
// ΔN² of the counts against the mean ⟨N⟩ gives the exponent ΔN² ∝ ⟨N⟩^a (a = 1 for Poisson,
// > 1 "giant" fluctuations, < 1 hyperuniform). docs/analysis-structure.md, "number_fluctuations".
#pragma once

#include <cstdint>
#include <vector>

#include "vibra/analysis/pair_correlation.hpp"
#include "vibra/core/result.hpp"

namespace vibra::analysis {

struct NumberFluctuationParams {
    std::vector<double> sizes;  ///< box sides ℓ (length unit); empty = n_sizes log-spaced from the
                                ///< mean spacing to half the short side of the region
    std::int64_t n_sizes = 12;  ///< number of automatic sizes
    void validate() const;      ///< throws ParameterError naming the field
};

struct NumberFluctuationResult {
    std::vector<double> ell;        ///< box side (length unit)
    std::vector<double> boxes;      ///< box samples per size (all frames)
    std::vector<double> mean, var;  ///< ⟨N⟩, ΔN² (total)
    std::vector<double> mean_small, var_small, mean_large, var_large;
    double exponent = 0;  ///< a in ΔN² ∝ ⟨N⟩^a, least squares in log–log over sizes with ⟨N⟩ ≥ 1
    double exponent_small = 0, exponent_large = 0;
    std::int64_t frames = 0;
};

/// Least-squares slope of log(var) against log(mean) over points with mean ≥ min_mean and var > 0
/// (NaN with fewer than two such points).
double log_log_slope(const std::vector<double>& mean, const std::vector<double>& var, double min_mean = 1.0);

class NumberFluctuationAccumulator {
public:
    explicit NumberFluctuationAccumulator(const NumberFluctuationParams& p);
    /// The sizes are fixed by the first frame (auto mode) and kept for all later frames.
    void accumulate(const StructureFrame& frame);
    NumberFluctuationResult result() const;

    /// One frame's box counts summed over its tiles: sum[species][size] = Σ N, sum2 = Σ N²
    /// (species 0 small, 1 large, 2 all), tiles[size] (0: the box does not fit in the region).
    struct BoxCounts {
        std::vector<double> sum[3], sum2[3];
        std::vector<std::size_t> tiles;
        std::vector<std::uint32_t> scratch;  ///< per tile and species, reused
    };
    /// The counts of `frame` into `out` (false, nothing counted, until a frame fixed the sizes or
    /// when the frame has fewer than 2 particles); const: safe from several threads.
    bool box_counts(const StructureFrame& frame, BoxCounts& out) const;
    /// Adds counts made by box_counts (frames added in the same order give the same result).
    void add(const BoxCounts& counts);

private:
    void choose_sizes(const StructureFrame& frame);
    NumberFluctuationParams p_;
    std::vector<double> ell_;
    std::vector<double> n_, s1_[3], s2_[3];
    std::int64_t frames_ = 0;
};

/// Number fluctuations over a whole source (/analysis/number_fluctuations).
struct NumberFluctuationsParams {
    NumberFluctuationParams boxes;
    std::int64_t stride = 1;  ///< every n-th frame
    int threads = 1;          ///< frames counted in parallel, added in order (identical for any count)
    bool progress = false;
};
struct NumberFluctuationsResult {
    NumberFluctuationResult r;
    std::int64_t stride = 1;
    Geometry window;  ///< the first frame's (recorded region)
};
NumberFluctuationsResult compute_number_fluctuations(const TrajectorySource& src,
                                                     const NumberFluctuationsParams& p);
/// Group `number_fluctuations` {ell, boxes, mean_n, var_n, …} with the exponent as attributes.
ResultGroup to_group(const NumberFluctuationsResult& r, const Metadata& meta);

}  // namespace vibra::analysis
