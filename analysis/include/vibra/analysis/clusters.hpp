// SPDX-License-Identifier: GPL-3.0-or-later
// Clusters of touching disks: a bond joins i and j when r_ij < λ (d_i + d_j)/2 (or a fixed
// cut-off), clusters are the connected components (union–find over CellList pairs), labelled by
// decreasing size with deterministic tie-breaking. In windows, clusters that reach the boundary
// are truncated: they are flagged and counted separately (docs/analysis-structure.md, "clusters").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vibra/analysis/pair_correlation.hpp"
#include "vibra/core/result.hpp"

namespace vibra::analysis {

struct ClusterParams {
    double lambda = 1.1;    ///< bond if r_ij < lambda × (R_i + R_j) (contact criterion, dimensionless)
    double r_cut = 0;       ///< > 0: bond if r_ij < r_cut instead (length unit); needed without sizes
    void validate() const;  ///< throws ParameterError naming the field
};

/// Clusters of one frame.
struct ClusterFrame {
    std::vector<std::int64_t> label;  ///< per particle: cluster id, 0 = largest cluster
    std::vector<std::int64_t> size;   ///< per cluster id: number of particles (non-increasing)
    std::vector<std::uint8_t>
        boundary;  ///< per cluster id: 1 when a member is within a bond length of the window edge
    /// per cluster id: 1 when the cluster spans the system — periodic box: it wraps around the box
    /// (bonds close a loop with a net winding); rectangle: it reaches two opposite edges (within a bond
    /// length); circular windows: 0 (not defined)
    std::vector<std::uint8_t> spanning;
    std::vector<double> radius_of_gyration;  ///< per cluster id (length unit), from unwrapped positions
};

/// Connected components of the bond graph. Sizes from frame.radius (NaN → mean of the finite
/// radii); throws ParameterError when no size is known and r_cut is 0. O(N) per frame.
ClusterFrame find_clusters(const StructureFrame& frame, const ClusterParams& p);

struct ClusterResult {
    std::vector<std::int64_t> size;      ///< s = 1 … s_max
    std::vector<double> count;           ///< clusters of size s summed over frames
    std::vector<double> count_interior;  ///< same, clusters not touching the window boundary
    std::vector<double> probability;     ///< P(s) = count / Σ count (number distribution)
    std::vector<std::int64_t> frame;
    std::vector<double> t;                 ///< time_unit
    std::vector<double> largest;           ///< size of the largest cluster per frame
    std::vector<double> largest_fraction;  ///< largest / N per frame
    std::vector<double> n_clusters;        ///< clusters per frame
    std::vector<double> weight_average;    ///< Σ s² / Σ s per frame
    std::vector<double> spanning;          ///< 1 when some cluster spans the system in that frame
    std::vector<double> largest_rg;  ///< radius of gyration of the largest cluster per frame (length unit)
    double mean_size = 0;            ///< number-average cluster size over all frames
};

class ClusterAccumulator {
public:
    explicit ClusterAccumulator(const ClusterParams& p);
    void accumulate(const StructureFrame& frame);  ///< add(frame, find_clusters(frame, params()))
    /// Adds a frame whose clusters were found already (on another thread): frames added in the
    /// same order give the same result whatever thread found their clusters.
    void add(const StructureFrame& frame, const ClusterFrame& clusters);
    const ClusterParams& params() const { return p_; }
    ClusterResult result() const;

private:
    ClusterParams p_;
    ClusterResult r_;
};

/// Clusters over a whole source (/analysis/clusters).
struct ClustersParams {
    ClusterParams clusters;
    std::int64_t stride = 1;   ///< every n-th frame
    std::string r_cut_source;  ///< where clusters.r_cut came from, when set (recorded)
    int threads = 1;           ///< frames clustered in parallel, added in order (identical for any count)
    bool progress = false;
};
struct ClustersResult {
    ClusterResult r;
    ClusterParams clusters;
    std::int64_t stride = 1;
    std::string r_cut_source;
};
ClustersResult compute_clusters(const TrajectorySource& src, const ClustersParams& p);
/// Group `clusters` {size, count, probability, t, largest, …}.
ResultGroup to_group(const ClustersResult& r, const Metadata& meta);

}  // namespace vibra::analysis
