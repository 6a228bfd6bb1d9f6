// SPDX-License-Identifier: GPL-3.0-or-later
// Granular temperature per species versus time, T_a(t) = m_a ⟨|v|²⟩_a(t) / 2 (2-D, k_B = 1,
// mass in units of a small disk's mass, m ∝ d² from Metadata::species_diameters), and the
// ratio T_large/T_small (non-equipartition). "Temperature" is an equipartition assumption in an
// active granular system, not a thermal one.
#pragma once

#include <cstdint>

#include "vibra/analysis/velocities.hpp"
#include "vibra/core/result.hpp"
#include "vibra/core/trajectory_source.hpp"

namespace vibra::analysis {

class TrackCache;

struct TemperatureParams {
    VelocityScheme scheme = VelocityScheme::automatic;
    DriftMode drift = DriftMode::none;
    std::int64_t drift_window = 51;
    std::int64_t max_cells = 1 << 21;
    TrackCache* cache =
        nullptr;      ///< shared particle-major copy of the source (track_cache.hpp); null = a private one
    int threads = 1;  ///< worker threads (results identical for any count)
    bool progress = false;
    void validate() const;
};

/// Per-frame sums of the kinetic energy: slot 0 all tracks (Σ m v², m = 1 for small and unknown
/// disks, mass_large for large ones), 1 small (Σ v²), 2 large (Σ v²); counts of velocities.
struct TemperatureResult {
    TrackStreamInfo info;  ///< what was streamed: track counts, drift, frame times
    std::vector<double> sum[3], count[3];
    double mass_small = 1, mass_large = 1;  ///< relative to a small disk (m ∝ d²)
    bool mass_known = false;                ///< the metadata give both diameters
};
TemperatureResult compute_temperature(const TrajectorySource& src, const TemperatureParams& p);

/// Group `temperature` {t, frame, temperature, temperature_small, temperature_large, ratio,
/// n_small, n_large} plus time-averaged attributes (temperature_mean*, ratio_mean).
ResultGroup to_group(const TemperatureResult& r, const Metadata& meta);

}  // namespace vibra::analysis
