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

/// Group `temperature` {t, frame, temperature, temperature_small, temperature_large, ratio,
/// n_small, n_large} plus time-averaged attributes (temperature_mean*, ratio_mean).
ResultGroup temperature_analysis(const TrajectorySource& src, const TemperatureParams& p);

}  // namespace vibra::analysis
