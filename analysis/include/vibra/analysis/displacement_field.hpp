// SPDX-License-Identifier: GPL-3.0-or-later
// Displacement / velocity fields of collective motion (docs/collective-motion.md §1, §2, §4): per-particle
// displacements u_i = r_i(t+Δt) − r_i(t) over a lag Δt, and their coarse-grained Eulerian field
// on a regular grid (normalised Gaussian kernel average, masked where no particle is near).
// Defects, spatial correlations and energy spectra are all computed from these two objects.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "vibra/core/result.hpp"
#include "vibra/core/trajectory.hpp"
#include "vibra/core/trajectory_source.hpp"

namespace vibra::analysis {

/// Positions of the linked particles (id ≥ 0) of one frame, sorted by id.
struct FrameSnapshot {
    std::int64_t frame = 0;
    std::vector<std::int64_t> id;
    std::vector<double> x, y;  ///< length unit
};

/// The snapshot of frame f of a sorted trajectory block (rows with particle < 0 are skipped).
FrameSnapshot snapshot_of(const Trajectory& block, std::int64_t f);

/// What is removed from the displacements of a field before use (docs/analysis-dynamics.md, "Common
/// machinery": collective flow may be physical, so the default removes nothing). Its own type, not the
/// per-track analyses' DriftMode (velocities.hpp), which also knows a low-pass drift.
enum class FieldDrift { none, mean };
FieldDrift field_drift_from_string(const std::string& s);  ///< "none" | "mean"; ParameterError otherwise

/// Displacements of the particles present in both frames of a lag.
struct Displacements {
    std::int64_t frame = 0;  ///< start frame t
    std::int64_t lag = 0;    ///< Δt in frames
    std::vector<std::int64_t> id;
    std::vector<double> x, y;         ///< r_i(t), length unit (the field is attached to the start position)
    std::vector<double> ux, uy;       ///< r_i(t+Δt) − r_i(t), length unit (minimum image when periodic)
    double drift_x = 0, drift_y = 0;  ///< mean displacement removed (0 for FieldDrift::none)
    std::size_t size() const { return id.size(); }
};

/// u_i = r_i(b) − r_i(a) for ids present in both snapshots (merge join on sorted ids).
/// Periodic geometries use the minimum image. Positions are those of `a`.
Displacements displacements(const FrameSnapshot& a, const FrameSnapshot& b, const Geometry& g,
                            FieldDrift drift = FieldDrift::none);

/// Regular grid of nodes (x0 + (i+½)hx, y0 + (j+½)hy), i < nx, j < ny, node index j·nx + i.
/// The cells tile [x0, x0+nx·hx] × [y0, y0+ny·hy] exactly (so a periodic box maps onto a periodic grid).
struct Grid {
    double x0 = 0, y0 = 0;  ///< lower corner, length unit
    double hx = 1, hy = 1;  ///< node spacing, length unit
    std::size_t nx = 0, ny = 0;
    bool periodic = false;  ///< the grid tiles a periodic box
    std::size_t size() const { return nx * ny; }
    double x(std::size_t i) const { return x0 + (static_cast<double>(i) + 0.5) * hx; }
    double y(std::size_t j) const { return y0 + (static_cast<double>(j) + 0.5) * hy; }
    double lx() const { return static_cast<double>(nx) * hx; }
    double ly() const { return static_cast<double>(ny) * hy; }
};

/// The region a grid covers: the box / rectangle of `g`, the bounding square of a circle, or, for
/// unbounded geometry, the bounding box of the finite points (x, y).
Geometry field_region(const Geometry& g, std::span<const double> x, std::span<const double> y);

/// Grid over `region` with spacing close to `spacing` (nx = max(2, round(Lx/spacing))).
/// Throws ParameterError for spacing ≤ 0 or an empty region.
Grid make_grid(const Geometry& region, double spacing);

/// Mean interparticle spacing a = sqrt(area / n) (0 when n = 0 or area ≤ 0).
double mean_spacing(double area, std::size_t n);

/// Coarse-graining by a normalised Gaussian kernel (PyMatterSim "topodefect" recipe, normalised):
/// U(R) = Σ_i w_i(R) u_i / Σ_i w_i(R), w = exp(−|R − r_i|²/(2σ²)) cut at `cutoff`·σ.
struct CoarseGrainParams {
    double sigma = 1.0;       ///< kernel width σ, length unit (default in the CLI: 1 mean spacing)
    double cutoff = 3.0;      ///< kernel support in units of σ
    double min_weight = 0.5;  ///< node is masked when Σ_i w_i < min_weight (≈ "half a particle at the node")
    void validate() const;    ///< throws ParameterError naming the field
};

/// A coarse-grained vector field on a grid. Masked nodes (valid == 0) hold U = 0.
struct GridField {
    Grid grid;
    std::vector<double> ux, uy;       ///< [j·nx + i], field unit
    std::vector<double> weight;       ///< Σ_i w_i at each node
    std::vector<std::uint8_t> valid;  ///< 1 = enough particles near the node and inside the region
    std::size_t n_valid() const;
};

/// Coarse-grains the vectors (ux, uy) attached to points (x, y) onto `grid`. Nodes outside
/// `region` (e.g. outside a circular window) are masked. O(N·(2·cutoff·σ/h)²).
GridField coarse_grain(const Grid& grid, std::span<const double> x, std::span<const double> y,
                       std::span<const double> ux, std::span<const double> uy, const Geometry& region,
                       const CoarseGrainParams& p);

/// The same Gaussian average evaluated at the points themselves (used by the Delaunay route when
/// a smoothing length is asked for). Returns (ux, uy) smoothed, one per point.
void smooth_at_points(std::span<const double> x, std::span<const double> y, std::span<const double> ux,
                      std::span<const double> uy, const Geometry& g, double sigma, double cutoff,
                      std::vector<double>& sx, std::vector<double>& sy);

/// The resolved settings every collective-motion analysis (field, defects, correlations, spectra,
/// evolution) shares: the lags and start frames of the displacement field and the grid it is
/// coarse-grained on, with defaults taken from the data (σ = one mean interparticle spacing, grid
/// spacing = σ). `vibra analyze` fills it from the <name>-lags, -stride, -sigma, -spacing,
/// -min-weight, -drift and -quantity flags.
struct FieldSettings {
    std::string name;                ///< the analysis (flag prefix of error messages)
    std::vector<std::int64_t> lags;  ///< frames, ascending, unique
    std::int64_t stride = 1;
    FieldDrift drift = FieldDrift::none;
    bool velocity = false;
    CoarseGrainParams cg;
    double spacing = 0;       ///< grid spacing asked for
    double mean_spacing = 0;  ///< a = sqrt(area/N) of the first frame
    Geometry geometry;        ///< of the data
    Geometry region;          ///< what the grid covers
    Grid grid;
    std::int64_t n_frames = 0;
    std::int64_t n_times = 0;  ///< start frames t_k = k·stride, k < n_times (t_k + min lag < T)
    std::string L, T;          ///< units
    std::string field_unit() const { return velocity ? L + "/" + T : L; }
    std::string energy_unit() const { return velocity ? L + "^2/" + T + "^2" : L + "^2"; }
};

/// The displacement field analysis (/analysis/field): per lag and start frame the particles'
/// kinetic energy and polar order, the grid's valid fraction and rms; whole fields of a few
/// start frames (snapshots).
struct FieldParams {
    FieldSettings field;
    std::int64_t snapshots = 3;  ///< start frames (evenly spaced) whose grid and particle vectors are kept
    int threads = 1;             ///< (lag, start) fields in parallel, kept in order (identical for any count)
};
struct FieldSnapshots {
    std::vector<double> ux, uy;            ///< [snapshot][ny][nx], NaN where masked
    std::vector<double> px, py, pux, puy;  ///< particles of every snapshot, in turn
    std::vector<std::int64_t> offsets{0};  ///< particles of snapshot k: [offsets[k], offsets[k+1])
    std::vector<std::int64_t> frames;      ///< start frame of each snapshot
    std::vector<std::int64_t> tri;         ///< Delaunay triangles (3 local indices each), in turn
    std::vector<std::int64_t> tri_offsets{0};
};
struct FieldResult {
    /// [lag · n_times + k]
    std::vector<double> kinetic_energy, polar_order, n_particles, valid_fraction, grid_rms;
    std::vector<FieldSnapshots> snapshots;  ///< per lag
};
FieldResult compute_field(const TrajectorySource& src, const FieldParams& p);
/// Group `field` with per-lag sub-groups of the snapshots; `src` gives the frame times.
ResultGroup to_group(const FieldResult& r, const FieldParams& p, const TrajectorySource& src);

}  // namespace vibra::analysis
