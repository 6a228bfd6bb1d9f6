// SPDX-License-Identifier: GPL-3.0-or-later
// Vortex-like topological defects of a 2-D vector field (docs/collective-motion.md §2): the winding number
// q = (1/2π)∮dθ of the field direction θ = atan2(u_y, u_x) around every grid plaquette or Delaunay
// triangle (differences wrapped to (−π, π]), +1 vortex-like, −1 saddle-like; clusters of adjacent
// charged cells merged; defects tracked across frames with the core assignment solver
// (creation / annihilation events, lifetimes, mean-square displacement) and their pair correlations.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <span>
#include <vector>

#include "vibra/analysis/delaunay.hpp"
#include "vibra/analysis/displacement_field.hpp"
#include "vibra/core/result.hpp"
#include "vibra/core/trajectory_source.hpp"

namespace vibra::analysis {

/// One defect: position (length unit), integer charge, number of cells merged into it.
struct Defect {
    double x = 0, y = 0;
    int charge = 0;
    int cells = 1;
};

struct DefectParams {
    /// |U| threshold (field unit): a loop touching a node/particle with |U| < min_magnitude (or
    /// |U| = 0, or a masked node) is skipped. Default 0 = only exact zeros and masked nodes.
    double min_magnitude = 0;
    /// Merge touching charged cells (plaquettes sharing an edge or a corner; triangles sharing a
    /// vertex) into one defect with the summed charge, located at the mean of their centres;
    /// clusters summing to 0 are dropped (choice, docs/collective-motion.md §2).
    bool merge = true;
    /// Grid route: a defect core has |U| → 0, so with a threshold its own nodes are skipped. Each
    /// 8-connected cluster of valid nodes below the threshold whose bounding box is at most
    /// max_core nodes on a side is enclosed by the ring of nodes around that box; when all ring
    /// nodes are usable, the ring's winding minus the charges of the evaluated plaquettes inside
    /// it is the core's charge (discrete Poincaré–Hopf), placed at the cluster's centroid.
    /// 0 disables. Clusters touching the grid edge are not recovered.
    int max_core = 5;
    /// Delaunay route: skip triangles with an edge longer than this (length unit; 0 = no limit).
    /// Long hull slivers and holes are not loops around a physical region.
    double max_edge = 0;
    void validate() const;  ///< throws ParameterError naming the field
};

/// Angle wrapped to (−π, π].
double wrap_angle(double a);
/// Winding number of a closed loop of directions (radians), visited in order: round(Σ wrap(Δθ)/2π).
int winding_number(std::span<const double> angles);

/// Charge of every plaquette (i, j)–(i+1, j+1), stored at [j·nx + i] (size nx·ny; on a periodic
/// grid the last row/column wrap, otherwise they stay 0). Skipped plaquettes hold 0.
std::vector<std::int8_t> plaquette_charges(const GridField& f, const DefectParams& p);
/// Number of plaquettes that were evaluated (all four corners usable).
std::size_t evaluated_plaquettes(const GridField& f, const DefectParams& p);

/// Defects of a grid field: plaquette charges, merged per DefectParams::merge; position = plaquette centre
/// (mean over a cluster).
std::vector<Defect> defects_on_grid(const GridField& f, const DefectParams& p);

/// Defects on a triangulation of the points carrying (ux, uy): each counter-clockwise triangle
/// is a loop; position = centroid.
std::vector<Defect> defects_on_triangulation(std::span<const double> x, std::span<const double> y,
                                             std::span<const double> ux, std::span<const double> uy,
                                             const Triangulation& tri, const DefectParams& p);

/// Winding of the field around the outer ring of grid nodes (counter-clockwise); empty when a
/// ring node is unusable (masked or below the threshold). Discrete Poincaré–Hopf: equals the sum
/// of all plaquette charges when every plaquette is evaluated.
std::optional<int> boundary_winding(const GridField& f, const DefectParams& p);

// ---------------------------------------------------------------------------------------------
// Tracking

/// The defects of one sampled frame.
struct DefectFrame {
    std::int64_t frame = 0;
    std::vector<Defect> defects;
};

struct DefectTrackParams {
    /// largest displacement of a defect between consecutive sampled frames, length unit
    double max_step = 1;
    /// a +1 and a −1 appearing/vanishing together within this distance = one event, length unit
    double pair_distance = 1;
    Geometry geometry;  ///< periodic_box: minimum-image distances (both lengths below half the box)
    void validate() const;
};

/// A pair creation (+1) or annihilation (−1) event.
struct DefectEvent {
    std::int64_t frame = 0;  ///< creation: first frame with the pair; annihilation: first frame without it
    double x = 0, y = 0;     ///< midpoint of the pair
    int type = 0;            ///< +1 creation, −1 annihilation
    std::int64_t track_plus = -1, track_minus = -1;
};

struct DefectTracks {
    std::vector<std::vector<std::int64_t>> track_of;            ///< per frame, per defect: its track id
    std::vector<int> charge;                                    ///< per track
    std::vector<std::int64_t> first_frame, last_frame, length;  ///< per track; length = sampled frames seen
    std::vector<std::uint8_t> censored;  ///< per track: seen in the first or last sampled frame
    std::vector<DefectEvent> events;
    std::size_t n_tracks() const { return charge.size(); }
};

/// Links same-charge defects of consecutive frames by minimum total squared distance (core
/// assignment solver; links longer than max_step are forbidden; unlinked defects start/end
/// tracks), then pairs vanishing +1/−1 track ends (and appearing starts) within pair_distance
/// into annihilation (creation) events. Minimum-image distances in a periodic box.
DefectTracks track_defects(std::span<const DefectFrame> frames, const DefectTrackParams& p);

/// Mean-square displacement of tracked defects: msd[m] = ⟨|r(k+m) − r(k)|²⟩ over all tracks and
/// starts k, m = 0 … max_lag sampled steps; count[m] = number of displacements averaged.
/// In a periodic box (g) the paths are unwrapped by minimum-image steps first.
void defect_msd(std::span<const DefectFrame> frames, const DefectTracks& tracks, std::size_t max_lag,
                std::vector<double>& msd, std::vector<std::int64_t>& count, const Geometry& g = {});

/// Defect–defect g(r) and charge–charge correlation, accumulated over frames.
/// g_dd(r) = [Σ_frames pairs(r) / Σ_frames N(N−1)/2] / p_ref(r), where p_ref(r) is the pair-distance
/// probability of reference points covering the observed region (e.g. the usable grid nodes),
/// so the window geometry cancels. c_qq(r) = Σ q_i q_j / (number of pairs) per bin.
class DefectPairCorrelation {
public:
    /// Bins [m·dr, (m+1)·dr) up to r_max. Reference points: the region defects can occupy.
    DefectPairCorrelation(double r_max, double dr, std::span<const double> ref_x,
                          std::span<const double> ref_y);
    void add(std::span<const Defect> defects);
    std::vector<double> r() const;     ///< bin centres
    std::vector<double> g_dd() const;  ///< NaN where the reference has no pairs
    std::vector<double> c_qq() const;  ///< NaN where no defect pairs
    const std::vector<double>& pair_counts() const { return pairs_; }

private:
    double r_max_, dr_;
    std::vector<double> ref_p_, pairs_, qq_;
    double total_pairs_ = 0;
};

// ---------------------------------------------------------------------------------------------
// The defects analysis of `vibra analyze` (/analysis/defects, docs/collective-motion.md §3)

struct DefectAnalysisParams {
    FieldSettings field;  ///< lags, start frames (stride), grid and coarse-graining
    /// field.stride was chosen by defect_stride_for_memory (recorded in the group), not given.
    bool stride_from_memory = false;
    bool delaunay = false;  ///< loops: false = plaquettes of the coarse-grained field; true = Delaunay
                            ///< triangles of the particles
    double threshold = -1;  ///< skip loops touching |u| below this, field unit; < 0: threshold_rms × rms|u|
    double threshold_rms = 0.1;  ///< relative threshold, used when threshold < 0
    bool merge = true;           ///< merge adjacent charged cells into one defect
    double max_edge = 0;         ///< delaunay: skip triangles with a longer edge, length unit
    double smooth = 0;           ///< delaunay: Gaussian smoothing width at the particles (0 = raw)
    DefectTrackParams tracks;    ///< linking, creation/annihilation pairs
    double rmax = 0, dr = 0;     ///< pair correlations: range and bin width, length unit
    std::int64_t msd_lags = 50;  ///< defect MSD up to this many sampled steps
    int threads = 1;             ///< (lag, start) fields analysed in parallel (identical for any count)
};

/// Bytes the defect tables may take per grid node, start frame and lag (in memory while the run
/// streams, then as result rows): about a defect on 10% of the plaquettes of a random field.
inline constexpr double kDefectBytesPerNode = 16;

/// Tracking wants consecutive frames: 1 (every frame) unless the tables of a long run would not
/// fit half of `memory_bytes`; then the smallest stride that makes them fit.
std::int64_t defect_stride_for_memory(const FieldSettings& s, std::int64_t memory_bytes);

/// Every sampled frame's defects (per lag and start index), tracked per lag.
struct DefectAnalysisResult {
    std::size_t n_times = 0;                       ///< start indices per lag
    std::vector<std::vector<DefectFrame>> frames;  ///< [lag][start index]; meaningful where done
    std::vector<std::uint8_t> done;                ///< [lag · n_times + k]: computed
    std::vector<double> area;                      ///< [lag · n_times + k]: evaluated area, length²
    std::vector<double> threshold_used;            ///< [lag · n_times + k]: field unit
    std::vector<DefectTracks> tracks;              ///< per lag, over its computed frames in order
    std::vector<double> ref_x,
        ref_y;  ///< reference points of the pair correlation (grid nodes in the region)
};

/// Streams the displacement fields of `src` and finds, then tracks, the defects of every sampled
/// frame and lag.
DefectAnalysisResult compute_defects(const TrajectorySource& src, const DefectAnalysisParams& p);

/// The group /analysis/defects (docs/hdf5-layout.md): one row per defect, per-lag sub-groups with
/// tracks, events, defect MSD and pair correlations. `src` gives the frame times.
ResultGroup to_group(const DefectAnalysisResult& r, const DefectAnalysisParams& p,
                     const TrajectorySource& src);

}  // namespace vibra::analysis
