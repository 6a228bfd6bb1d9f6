// SPDX-License-Identifier: GPL-3.0-or-later
// Vibrational density of states of solid-like states from the displacement covariance matrix
// (docs/collective-modes.md §4): C = ⟨δr δrᵀ⟩ (2N × 2N) of the particles present in every frame, mass-weighted
// M^{1/2} C M^{1/2}; in the harmonic ("shadow") system C = k_BT·K⁻¹, so each eigenvalue λ gives
// ω = sqrt(k_BT/λ) (masses in units of the species-0 mass). k_BT comes from the velocities by
// equipartition (Σ m v²/(dof), dof = 2N − 2 when the centre of mass is removed) or is given.
// Refuses when frames < 10 × 2N (sampling noise dominates the spectrum, Marchenko–Pastur) unless forced.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vibra/core/result.hpp"
#include "vibra/core/trajectory_source.hpp"

namespace vibra::analysis {

struct CovarianceVdosParams {
    bool force = false;         ///< compute even when frames < 10 × 2N
    bool subtract_com = true;   ///< remove the centre-of-mass displacement per frame (drops 2 zero modes)
    bool mass_weighted = true;  ///< masses ∝ d² from the species diameters (1 when unknown)
    double temperature = 0;     ///< k_BT in m0·<L>²/<T>²; 0 = from velocities (1 with a note when none)
    std::int64_t bins = 60;     ///< histogram bins of the VDOS
    int threads = 1;            ///< threads of the covariance update (results identical for any count)
    void validate() const;      ///< throws ParameterError naming the field and value
};

struct CovarianceVdosResult {
    CovarianceVdosParams params;
    std::int64_t n_particles = 0, n_frames = 0;
    double temperature = 0;
    std::string temperature_source;     ///< "parameter", "velocities (equipartition)", "unit (no velocities)"
    std::vector<double> eigenvalues;    ///< of the (mass-weighted) covariance, ascending ω order, m0·<L>²
    std::vector<double> omega;          ///< mode frequencies, ascending, rad/<T>
    std::vector<double> participation;  ///< participation ratio of each mode (1/N … 1)
    std::vector<double> omega_bins, vdos;    ///< histogram centres, rad/<T>; normalised density, <T>/rad
    std::vector<std::int64_t> particle_ids;  ///< particles used
};

CovarianceVdosResult compute_covariance_vdos(const TrajectorySource& src, const CovarianceVdosParams& p);

ResultGroup to_group(const CovarianceVdosResult& r, const Metadata& meta);

}  // namespace vibra::analysis
