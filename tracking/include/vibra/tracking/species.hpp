// SPDX-License-Identifier: GPL-3.0-or-later
// Species of bi-disperse disks from their measured radius: per detection (nearest nominal
// radius, with a confidence from the distance to the midpoint between the two sizes), then per
// trajectory by a confidence-weighted majority vote after linking, so one mis-sized detection
// cannot split a track or change its species.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "vibra/core/trajectory.hpp"

namespace vibra::tracking {

/// Species of one measured radius. `radii` holds 1 (one size: species 0 always, confidence 1)
/// or 2 nominal radii (px, small then large). `radius_sigma` is the measurement spread (px) that
/// sets how fast the confidence rises away from the midpoint: confidence = Φ(|r − mid| / σ),
/// 0.5 at the midpoint, → 1 far from it.
struct SpeciesCall {
    std::int8_t species = kSpeciesUnknown;
    float confidence = 0;  ///< in [0.5, 1] for two sizes
};
SpeciesCall classify_radius(double radius, std::span<const double> radii, double radius_sigma = 0.3);

/// Species of all disks of one frame from their measured radii, for nominal radii that may be off
/// by a common factor (e.g. ring-like disks whose given radius is that of the bright ridge while
/// the detector measures the outer edge, ≈ 10% larger). The threshold is the two-group split of the
/// measured radii (minimum within-group variance) when each group holds ≥ 10% of the disks and the
/// ratio of the group medians is within 15% of r_large / r_small; otherwise the nominal midpoint
/// (classify_radius). Non-finite radii get kSpeciesUnknown. `species` and `confidence` are written
/// per disk; confidence = Φ(|r − threshold| / radius_sigma). Returns the threshold used (px).
double classify_radii_split(std::span<const float> radius, std::span<const double> radii, double radius_sigma,
                            std::span<std::int8_t> species, std::span<float> confidence);

/// Per-trajectory vote: every row of a trajectory (particle ≥ 0) gets the species with the
/// largest summed confidence of its rows, and species_confidence = that sum / total sum (so 1 =
/// unanimous). Unlinked rows keep their own call. `species` and `confidence` are per row.
void vote_species(std::span<const std::int64_t> particle, std::span<std::int8_t> species,
                  std::span<float> confidence);

/// Online form of the vote for streaming: add rows as they come, read the result at the end.
class SpeciesVote {
public:
    void add(std::int64_t particle, std::int8_t species, float confidence);
    /// Voted species and its share of the confidence mass of `particle` (unknown, 0 if never seen).
    SpeciesCall result(std::int64_t particle) const;

private:
    std::vector<double> w0_, w1_;
};

}  // namespace vibra::tracking
