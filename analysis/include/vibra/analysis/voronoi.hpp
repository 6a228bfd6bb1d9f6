// SPDX-License-Identifier: GPL-3.0-or-later
// Radical (power, Laguerre) Voronoi tessellation of one frame of disks, written for vibra: each
// cell is a bounding polygon (window or periodic box around the particle) clipped by the radical
// lines of neighbours found with the core CellList, with a search radius that grows until no
// farther particle can cut the cell. Gives local areas, local packing fractions φ_i = πR_i²/A_i
// and neighbour lists (ψ6). Cells touching the window boundary are flagged (docs/analysis-structure.md, "voronoi").
#pragma once

#include <cstdint>
#include <vector>

#include "vibra/analysis/pair_correlation.hpp"
#include "vibra/core/result.hpp"

namespace vibra::analysis {

struct VoronoiParams {
    bool radical = true;       ///< true: power diagram weighted by radius²; false: plain Voronoi
    double search_radius = 0;  ///< first neighbour search radius (length unit); 0 = 3 × mean spacing
    void validate() const;     ///< throws ParameterError naming the field
};

/// Tessellation of one frame. Neighbours in CSR form: particle i's neighbours are
/// neighbour[offsets[i] … offsets[i+1]) with the length of the shared cell edge.
struct VoronoiTessellation {
    std::vector<double> area;            ///< cell area (length unit²); 0 for an empty power cell
    std::vector<std::uint8_t> boundary;  ///< 1 when the cell touches the window boundary (area truncated)
    std::vector<double> radius;          ///< radius weighting each cell (length unit; 0 for plain)
    /// each particle's own radius (length unit; unknown ones get the mean of the known), for its
    /// packing fraction in either tessellation; empty when the frame has no sizes
    std::vector<double> particle_radius;
    std::vector<std::int64_t> offsets{0};
    std::vector<std::int64_t> neighbour;
    std::vector<double> edge_length;     ///< length unit
    std::int64_t brute_force_cells = 0;  ///< cells that needed a search beyond the first radius
};

/// Radical Voronoi tessellation of `frame` (positions inside frame.window; periodic boxes by
/// minimum image). Radius per particle: frame.radius; NaN entries (unknown species without a
/// measured radius) get the mean of the finite radii. Throws ParameterError when `radical` is set
/// and the frame has no radius information (neither species diameters nor a radius column); a
/// plain tessellation needs none, and keeps the sizes it has in `particle_radius`.
/// Complexity O(N) for homogeneous data (O(N) extra per boundary cell of a window).
VoronoiTessellation radical_voronoi(const StructureFrame& frame, const VoronoiParams& p = {});

/// Local packing fraction φ_i = π R_i² / A_i with R_i = particle_radius (NaN for empty cells, and
/// for every cell when the frame had no sizes).
std::vector<double> local_packing_fraction(const VoronoiTessellation& v);

/// Local and global packing fractions over a whole source (/analysis/voronoi).
struct VoronoiAnalysisParams {
    VoronoiParams cells;            ///< radical (power) or plain cells
    std::int64_t stride = 1;        ///< every n-th frame
    std::int64_t bins = 100;        ///< histogram bins of the local packing fraction over [0, 1]
    bool include_boundary = false;  ///< keep cells touching the window boundary
    int threads = 1;  ///< frames tessellated in parallel, summed in order (identical for any count)
    bool progress = false;
};
/// Per sampled frame: φ, φ over the cells used, their density and counts; over all frames, per
/// part [0 small, 1 large, 2 all]: the local-φ histogram counts, cells, cell areas, φ moments.
struct VoronoiAnalysisResult {
    VoronoiAnalysisParams params;
    Geometry window;  ///< the first frame's (recorded geometry)
    std::vector<double> t, phi, phi_voronoi, density_voronoi, n_cells, n_boundary;
    std::vector<std::int64_t> frame;
    std::vector<double> hist[3];
    double cells[3] = {0, 0, 0}, area_sum[3] = {0, 0, 0}, phi_count[3] = {0, 0, 0}, phi_sum[3] = {0, 0, 0},
           phi_sum2[3] = {0, 0, 0};
    std::int64_t brute_force_cells = 0;
    bool any_sizes = false;  ///< some frame had particle sizes (else every φ is NaN)
};
/// Throws ParameterError when radical cells are asked for and the data give no particle sizes.
VoronoiAnalysisResult compute_voronoi_analysis(const TrajectorySource& src, const VoronoiAnalysisParams& p);
/// Group `voronoi` {t, phi, phi_voronoi, density_voronoi, n_cells, phi_local_hist*, …}.
ResultGroup to_group(const VoronoiAnalysisResult& r, const Metadata& meta);

}  // namespace vibra::analysis
