// SPDX-License-Identifier: GPL-3.0-or-later
// Bond-orientational order ψ_n (n = 6 for hexatic order): local ψ6(i) over Voronoi neighbours
// (radical tessellation, optionally edge-length weighted) or over a distance cut-off, the global
// |⟨ψ6⟩| per frame and the bond-orientational correlation g6(r) normalised by the pair count per
// bin (which cancels the window geometry). docs/analysis-structure.md, "psi6"; Mickel et al. JCP 138, 044501 (2013).
#pragma once

#include <complex>
#include <cstdint>
#include <string>
#include <vector>

#include "vibra/analysis/pair_correlation.hpp"
#include "vibra/analysis/voronoi.hpp"
#include "vibra/core/result.hpp"

namespace vibra::analysis {

enum class BondNeighbours {
    voronoi,  ///< (radical) Voronoi neighbours: parameter free
    cutoff,   ///< all particles closer than r_cut
};
BondNeighbours bond_neighbours_from_string(
    const std::string& s);  ///< "voronoi" | "cutoff"; throws ParameterError
const char* to_string(BondNeighbours b);

struct BondOrderParams {
    int order = 6;                                        ///< n of ψ_n (6 hexatic, 4 square)
    BondNeighbours neighbours = BondNeighbours::voronoi;  ///< neighbour definition (stored with results)
    double r_cut = 0;       ///< cut-off for BondNeighbours::cutoff (length unit), must be > 0 then
    bool weighted = false;  ///< Voronoi only: weight bonds by the shared edge length (Minkowski)
    bool radical = true;    ///< Voronoi only: radical (size-weighted) tessellation when sizes are known
    void validate() const;  ///< throws ParameterError naming the field
};

/// Local ψ_n of every particle of a frame. valid[i] = 0 for particles whose neighbourhood is
/// truncated by the window (Voronoi cell touching the boundary; cut-off: closer than r_cut to the
/// edge) or that have no neighbours; their psi is NaN.
struct LocalBondOrder {
    std::vector<std::complex<double>> psi;
    std::vector<std::uint8_t> valid;
    std::vector<std::int64_t> n_neighbours;
};
LocalBondOrder local_bond_order(const StructureFrame& frame, const BondOrderParams& p);

struct BondOrderAccumulatorParams {
    BondOrderParams bond;
    double r_max = 5;             ///< g6 range (length unit)
    std::int64_t bins = 100;      ///< g6 bins over [0, r_max)
    std::int64_t hist_bins = 50;  ///< histogram bins of |ψ6| over [0, 1]
    double crystalline = 0.7;     ///< |ψ6| threshold of the "crystalline" fraction
    void validate() const;
};

struct BondOrderResult {
    std::vector<std::int64_t> frame;
    std::vector<double> t;                                   ///< time_unit
    std::vector<double> global, global_small, global_large;  ///< |⟨ψ6⟩| over valid particles per frame
    std::vector<double> crystalline_fraction;  ///< fraction of valid particles with |ψ6| > threshold
    std::vector<double> r, g6, g6_pairs;       ///< bin centres, Σ Re ψ_i ψ_j* / pairs, pairs per bin
    std::vector<double> hist_edges;            ///< |ψ6| histogram edges
    std::vector<double> hist, hist_small, hist_large;  ///< probability densities of |ψ6|
    double mean_abs = 0, mean_abs2 = 0;    ///< ⟨|ψ6|⟩, ⟨|ψ6|²⟩ over all valid particle-frames
    std::int64_t valid = 0, excluded = 0;  ///< particle-frames used / excluded at the boundary
    std::int64_t n_small = 0, n_large = 0;
};

/// One frame's share of a BondOrderAccumulator, computed without touching the accumulator (so
/// frames can be computed on several threads and added in frame order): local ψ_n and the
/// frame's g6 pair sums and pair counts per bin.
struct BondOrderFrame {
    LocalBondOrder local;
    std::vector<double> g6_sum, g6_pairs;
};

class BondOrderAccumulator {
public:
    explicit BondOrderAccumulator(const BondOrderAccumulatorParams& p);
    /// frame_share then add.
    void accumulate(const StructureFrame& frame);
    /// The share of `frame` into `out` (its buffers reused); const: safe from several threads.
    void frame_share(const StructureFrame& frame, BondOrderFrame& out) const;
    /// Adds a frame's share (frames in order: the per-frame series follow the calls).
    void add(const StructureFrame& frame, const BondOrderFrame& share);
    BondOrderResult result() const;

private:
    BondOrderAccumulatorParams p_;
    BondOrderResult r_;
    std::vector<double> sum_, cnt_;
    std::vector<double> h_[3];
};

/// ψ6 over a whole source (/analysis/psi6).
struct Psi6Params {
    BondOrderAccumulatorParams acc;  ///< acc.r_max ≤ 0: default_rmax of the data
    std::int64_t stride = 1;         ///< every n-th frame
    bool per_particle = false;       ///< also the ragged table of every particle's ψ6 (sub-group `local`)
    std::string r_cut_source;        ///< cut-off neighbours: where acc.bond.r_cut came from (recorded)
    int threads = 1;  ///< frames computed in parallel, added in order (identical for any count)
    bool progress = false;
};
struct Psi6Result {
    BondOrderResult r;
    BondOrderAccumulatorParams acc;  ///< as used (r_max resolved)
    std::int64_t stride = 1;
    bool per_particle = false;
    std::string r_cut_source;
    /// per_particle: rows (frame, particle, Re ψ6, Im ψ6, valid), frame f's rows at
    /// [local_offsets[k], local_offsets[k+1]) of the k-th sampled frame
    std::vector<std::int64_t> local_frame, local_particle, local_offsets;
    std::vector<double> local_re, local_im;
    std::vector<std::int8_t> local_valid;
};
Psi6Result compute_psi6(const TrajectorySource& src, const Psi6Params& p);
/// Group `psi6` {t, psi6_global, crystalline_fraction, r, g6, abs_psi6_hist, …} and, per
/// particle, its sub-group `local`.
ResultGroup to_group(const Psi6Result& r, const Metadata& meta);

}  // namespace vibra::analysis
