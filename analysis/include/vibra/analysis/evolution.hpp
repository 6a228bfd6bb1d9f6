// SPDX-License-Identifier: GPL-3.0-or-later
// Stages of the time evolution (docs/collective-motion.md §5): change points of a time series located by
// an optimal piecewise-linear fit in log time (segments fitted independently, least squares,
// exact dynamic programming). The rule is a documented choice, not a method confirmed by the
// source papers: see docs/collective-motion.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <span>
#include <vector>

#include "vibra/core/result.hpp"
#include "vibra/core/trajectory.hpp"

namespace vibra::analysis {

struct PiecewiseParams {
    std::size_t segments = 3;    ///< number of linear segments (stages); the CLI's --evolution-segments
    std::size_t min_points = 3;  ///< minimum points per segment (≥ 2)
    void validate() const;       ///< throws ParameterError naming the field
};

struct PiecewiseFit {
    std::vector<std::size_t>
        starts;  ///< first point of each segment, counted among the finite points (starts[0] = 0)
    std::vector<double> slopes, intercepts;  ///< per segment, in the (x, y) given
    double rss = 0;                          ///< total residual sum of squares
    /// x-values where a new segment begins (the change points): x[starts[s]] for s ≥ 1.
    std::vector<double> change_x;
};

/// Best fit of y(x) (x ascending, finite points only) by `segments` independent straight lines on
/// consecutive runs of at least min_points points, minimising the total squared residual. Fewer
/// segments are used when there are not enough points. O(segments · n²).
PiecewiseFit piecewise_linear_fit(std::span<const double> x, std::span<const double> y,
                                  const PiecewiseParams& p);

/// The evolution analysis (/analysis/evolution): stages of series taken from the other collective
/// analyses (kinetic energy, defect density, ξ, spectral slope), which `vibra analyze` gathers
/// (from this run's groups, else computed with their defaults).
struct EvolutionSeries {
    std::string name;  ///< output name ("kinetic_energy", …)
    std::vector<double> time, value;
    std::string units;   ///< of value
    std::string origin;  ///< "earlier" (a group of the run) or "computed"
};
struct EvolutionParams {
    PiecewiseParams fit;
    std::int64_t lag = 1;       ///< frames: the lag whose series are summarised (recorded)
    double frame_interval = 1;  ///< time unit: the fit is in log(t − t0 + frame_interval)
};
struct EvolutionResult {
    struct Stages {
        EvolutionSeries series;
        std::vector<double> change_times;    ///< time unit
        std::vector<double> segment_slopes;  ///< per segment, in (log t, y)
        bool log_scale = false;              ///< y = log(value) (all finite values > 0)
    };
    std::vector<Stages> stages;  ///< per series, in order
};
EvolutionResult compute_evolution(const std::vector<EvolutionSeries>& series, const EvolutionParams& p);
ResultGroup to_group(const EvolutionResult& r, const EvolutionParams& p, const Metadata& meta);

}  // namespace vibra::analysis
