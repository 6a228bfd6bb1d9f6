// SPDX-License-Identifier: GPL-3.0-or-later
// Soft-disk simulator of a vibrated bi-disperse monolayer ("Brownian vibrators"): harmonic
// repulsion, inelastic collisions (a normal dashpot), linear damping, random driving
// (Langevin kicks and optional active self-propulsion at fixed speed with rotational
// diffusion). Periodic box or walled box. Ground truth for `vibra synth` (rendered video) and
// for analysis tests that need a realistic liquid rather than an analytic field.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "vibra/core/cell_list.hpp"
#include "vibra/core/trajectory.hpp"

namespace vibra {

struct SoftDiskParams {
    std::int64_t n_small = 200;         ///< number of small disks
    std::int64_t n_large = 200;         ///< number of large disks (0 for one size)
    double diameter_small = 1.0;        ///< length unit
    double diameter_large = 1.4;        ///< length unit
    double packing_fraction = 0.5;      ///< sets the box when box_width/box_height are 0
    double box_width = 0;               ///< explicit box (length unit); 0 = from packing_fraction
    double box_height = 0;              ///< (square box when both are 0)
    bool periodic = true;               ///< periodic box, else hard-ish walls (same spring as disks)
    double dt = 1e-3;                   ///< integration step (time unit)
    std::int64_t steps_per_frame = 10;  ///< integration steps between recorded frames
    double stiffness = 2000;            ///< contact spring k (force / length, mass of small disk = 1)
    double restitution_damping = 2.0;   ///< normal dashpot coefficient (inelastic collisions)
    double friction = 1.0;              ///< linear damping rate γ (1/time)
    double temperature = 1.0;   ///< Langevin noise: ⟨v²⟩/2 per component → T/m without contacts
    double active_speed = 0.0;  ///< self-propulsion speed v0 (active Brownian particle)
    double rotational_diffusion = 1.0;  ///< D_r of the propulsion direction (1/time)
    std::uint64_t seed = 1;
    void validate() const;  ///< throws ParameterError naming the field
};

class SoftDiskSimulator {
public:
    /// Places disks on a jittered lattice without overlap (random species order), velocities
    /// from the Maxwell distribution at `temperature`.
    explicit SoftDiskSimulator(const SoftDiskParams& p);

    /// Advance by n recorded frames (n × steps_per_frame integration steps).
    void advance_frames(std::int64_t n);
    /// Advance by single integration steps.
    void step(std::int64_t n = 1);

    /// Append the current state as frame `frame` (particle = index, species, x, y, vx, vy).
    void record(TrajectoryTable& out, std::int64_t frame) const;
    /// Metadata: units sigma/tau, geometry, species diameters, frame interval.
    Metadata metadata() const;

    /// Run for `n_frames` frames after `equilibrate_frames` unrecorded frames.
    Trajectory run(std::int64_t n_frames, std::int64_t equilibrate_frames = 0);

    const std::vector<double>& x() const { return x_; }
    const std::vector<double>& y() const { return y_; }
    const std::vector<double>& vx() const { return vx_; }
    const std::vector<double>& vy() const { return vy_; }
    const std::vector<double>& diameter() const { return d_; }
    const std::vector<std::int8_t>& species() const { return s_; }
    const Geometry& geometry() const { return geom_; }
    double time() const { return time_; }
    /// Largest overlap d_ij/2+... − r_ij over all pairs (length unit), 0 when none.
    double max_overlap() const;

private:
    void forces();
    SoftDiskParams p_;
    Geometry geom_;
    std::vector<double> x_, y_, vx_, vy_, fx_, fy_, d_, m_, theta_;
    std::vector<std::int8_t> s_;
    std::mt19937_64 rng_;
    double time_ = 0;
};

}  // namespace vibra
