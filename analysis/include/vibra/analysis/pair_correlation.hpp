// SPDX-License-Identifier: GPL-3.0-or-later
// Pair correlation g(r) and its species partials for periodic boxes (minimum image, ideal-gas
// normalisation) and for non-periodic windows (rectangle: Ohser–Stoyan translation weights;
// circle: Ripley isotropic weights with the exact arc fraction). Edge corrections are exact
// for stationary point processes, so an ideal gas gives g ≡ 1 in any geometry
// (docs/analysis-structure.md, "gr"). Also the frame plumbing shared by all
// structure analyses: one frame's particles, cropped to the observation window.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "vibra/core/result.hpp"
#include "vibra/core/trajectory.hpp"
#include "vibra/core/trajectory_source.hpp"

namespace vibra::analysis {

namespace detail {
class PairGrid;  // analysis/src/detail/pair_grid.hpp
}

/// One frame's particles as structure analyses see them: finite positions inside the window
/// (periodic boxes: wrapped into the box), species codes and an optional radius per particle.
struct StructureFrame {
    std::int64_t frame = 0;
    double time = 0;                     ///< time_unit
    Geometry window;                     ///< periodic box, rect or circle (unbounded → data bounding rect)
    std::vector<double> x, y;            ///< length unit
    std::vector<std::int8_t> species;    ///< 0 small, 1 large, −1 unknown
    std::vector<double> radius;          ///< length unit; NaN where unknown (empty when no size info)
    std::vector<std::int64_t> particle;  ///< track id (−1 unlinked)
    std::size_t size() const { return x.size(); }
};

/// Particles of frame `f` of `t` (rows of t.index), cropped to the geometry of t.meta.
/// Radius: from the radius column when present, else species_diameters/2, else NaN.
/// Unbounded geometry: the bounding rectangle of the frame's positions is used as the window.
StructureFrame structure_frame(const Trajectory& t, std::int64_t f);

/// Streams the frames 0, stride, 2·stride, … of `source` (blocks of frames_per_block(source,
/// block_rows) frames, so memory is bounded by about block_rows rows) through `fn`. Throws
/// ParameterError when stride < 1.
void for_each_structure_frame(const TrajectorySource& source, std::int64_t stride,
                              const std::function<void(const StructureFrame&)>& fn, bool progress = false,
                              const std::string& label = "structure",
                              std::int64_t block_rows = std::int64_t{1} << 21);

/// Frames are spread over this many lanes, whatever the thread count: an accumulator per lane,
/// merged in lane order, sums in the same order for any --threads (bit-identical results).
inline constexpr int kStructureLanes = 8;

/// Like for_each_structure_frame, but calls fn(frame, lane) from `threads` std::threads, each frame
/// exactly once: the n-th sampled frame of the run goes to lane n % kStructureLanes, and each lane's
/// frames are handled in order by one thread (lane l by thread l % threads), so fn may touch the
/// state of its lane only, and an accumulator per lane sees the same frames in the same order for
/// any `threads` (threads ≤ 1: all lanes on the calling thread).
void for_each_structure_frame_parallel(const TrajectorySource& source, std::int64_t stride, int threads,
                                       const std::function<void(const StructureFrame&, int)>& fn,
                                       bool progress = false, const std::string& label = "structure",
                                       std::int64_t block_rows = std::int64_t{1} << 21);

/// Frames per batch of for_each_structure_frame_batched with `threads` threads: 4 per thread.
inline std::size_t structure_batch(int threads) {
    return 4 * static_cast<std::size_t>(threads < 1 ? 1 : threads);
}

/// Frames 0, stride, 2·stride, … of `source` in order, with the per-frame work on `threads`
/// std::threads: batches of structure_batch(threads) sampled frames; map(frame, slot) for every
/// frame of a batch, in parallel (slot < structure_batch(threads): the frame's place in its batch,
/// so map writes to storage of its own slot), then reduce(frame, slot) for each, in frame order
/// on the calling thread. Whatever reduce sums is therefore summed in the same order for any
/// `threads` (bit-identical results); map must not touch shared state.
void for_each_structure_frame_batched(const TrajectorySource& source, std::int64_t stride, int threads,
                                      const std::function<void(const StructureFrame&, std::size_t)>& map,
                                      const std::function<void(const StructureFrame&, std::size_t)>& reduce,
                                      bool progress = false, const std::string& label = "structure",
                                      std::int64_t block_rows = std::int64_t{1} << 21);

/// Species index of a partial: 0 small, 1 large, 2 = total (all species, unknown included).
inline constexpr int kSpeciesTotal = 2;

enum class EdgeCorrection {
    automatic,  ///< periodic: none needed; rect: translation; circle: isotropic
    none,       ///< weight 1 everywhere (biased low in windows; for tests and comparison)
};

struct PairCorrelationParams {
    double r_max = 5.0;       ///< largest distance (length unit); < half the box (periodic),
                              ///< < min(Lx,Ly) (rect), < diameter (circle)
    std::int64_t bins = 100;  ///< number of equal-width bins over [0, r_max)
    EdgeCorrection edge = EdgeCorrection::automatic;  ///< default: exact correction for the geometry
    void validate() const;                            ///< throws ParameterError naming the field
};

/// Fraction of the circle of radius r centred at distance d from the centre of a disk of
/// radius R that lies inside the disk (Ripley's isotropic edge correction for a disk window).
double circle_fraction_inside_disk(double d, double r, double R);

/// g(r) and partials, averaged as a ratio of sums over frames (numerator and normalisation
/// N_a N_b'/|W| are accumulated separately, so frames with different N are weighted right).
struct PairCorrelationResult {
    std::vector<double> r;        ///< bin centres (length unit)
    std::vector<double> r_edges;  ///< bins+1 edges
    std::vector<double> g;        ///< total
    std::vector<double> g_err;    ///< standard error of g from the frame-to-frame scatter (NaN if < 2 frames)
    std::vector<double> g_ss, g_sl, g_ll;  ///< partials small–small, small–large, large–large
    double density = 0;                    ///< mean number density N/|W| (1/length²)
    double density_small = 0, density_large = 0;
    std::int64_t frames = 0;
    std::int64_t n_small = 0, n_large = 0, n_unknown = 0;  ///< particle-frames counted
    bool has_partials() const { return n_small > 0 && n_large > 0; }
};

/// Peak/minimum/coordination summary of one g(r) curve.
struct GrPeak {
    double r_peak = 0, g_peak = 0;  ///< first peak = global maximum of g (length unit, 1)
    double r_min = 0;               ///< first minimum after the peak with g < 1 (length unit)
    double coordination = 0;        ///< ρ_b ∫_0^{r_min} g 2πr dr with exact annulus areas
};
/// Peak summary of `g` on the bins of `edges`; `density` = ρ_b of the neighbour species.
GrPeak gr_peak(std::span<const double> edges, std::span<const double> g, double density);

/// Streaming g(r) accumulator (freud-like): accumulate() one frame at a time, result() at the end.
class PairCorrelation {
public:
    explicit PairCorrelation(const PairCorrelationParams& p);
    /// Adds one frame. Non-periodic windows: pairs with translation/isotropic weights; the
    /// window area comes from frame.window. Throws ParameterError when r_max is too large for it.
    void accumulate(const StructureFrame& frame);
    /// Adds the frames accumulated by `other` (same parameters; ParameterError otherwise), so
    /// frames can be split over threads and the partial accumulators combined.
    void merge(const PairCorrelation& other);
    PairCorrelationResult result() const;
    const PairCorrelationParams& params() const { return p_; }

private:
    PairCorrelationParams p_;
    // numerators per (centre species a, neighbour species b) for a,b ∈ {0,1}, and total
    std::vector<double> num_[2][2], num_tot_;
    double norm_[2][2] = {{0, 0}, {0, 0}}, norm_tot_ = 0;  // Σ_frames N_a N_b' / |W|
    std::vector<double> sum_gf_, sum_gf2_;                 // per-frame total g, for the error
    double sum_density_ = 0, sum_density_s_ = 0, sum_density_l_ = 0;
    std::int64_t frames_ = 0, ns_ = 0, nl_ = 0, nu_ = 0;
    std::vector<double> tot_, dcen_;  // per-frame scratch (kept to avoid an allocation per frame)
    std::vector<std::int64_t> counts_;
    std::vector<std::uint8_t> code_;
    void add_counted_pairs(const detail::PairGrid& grid, const StructureFrame& fr, double dr,
                           std::vector<double>& tot);
    void add_weighted_pairs(const detail::PairGrid& grid, const StructureFrame& fr, double dr, double area,
                            const std::vector<double>& dcen, std::vector<double>& tot);
};

/// What the structure analyses' defaults are derived from: the first frame with at least two
/// particles (of frames 0, T/20, 2T/20, …): its window and the mean spacing sqrt(|W|/N).
struct StructureDefaults {
    Geometry window;
    double spacing = 1;  ///< length unit
    std::int64_t n = 0;  ///< particles in that frame
};
/// Throws ParameterError naming the file when no sampled frame has two particles.
StructureDefaults structure_defaults(const TrajectorySource& src);
/// Largest sensible pair distance: half the periodic box, a quarter of the window's short side
/// (Ripley's rule; circle: half its radius), capped at 10 mean spacings.
double default_rmax(const StructureDefaults& d);
/// The edge correction applied in window `w` with the choice `e`, as recorded ("translation (Ohser-Stoyan)").
std::string edge_name(const Geometry& w, EdgeCorrection e);

/// g(r) over a whole source (/analysis/gr).
struct GrParams {
    PairCorrelationParams pair;  ///< pair.r_max ≤ 0: default_rmax of the data
    std::int64_t stride = 1;     ///< every n-th frame
    int threads = 1;             ///< worker threads (kStructureLanes lanes: identical for any count)
    bool progress = false;
};
struct GrResult {
    PairCorrelationResult g;
    PairCorrelationParams pair;  ///< as used (r_max resolved)
    std::int64_t stride = 1;
    Geometry window;  ///< the first frame's (defaults, recorded geometry)
};
GrResult compute_gr(const TrajectorySource& src, const GrParams& p);
/// Group `gr` {r, r_edges, g, g_err, g_small_small, …} with the peak summary (r_peak, g_peak,
/// r_min, coordination, per partial) as attributes.
ResultGroup to_group(const GrResult& r, const Metadata& meta);

}  // namespace vibra::analysis
