// SPDX-License-Identifier: GPL-3.0-or-later
// Detection of disks of one or two known radii in a grey frame, independent of what the disk
// looks like inside (plain, dark ring, marker dot, bright rim with textured interior):
//   1. gradients and a coarse grid of local contrast (robust 3rd–97th percentile range), which
//      flattens uneven illumination and per-frame flicker (thresholds and votes are relative
//      to the local contrast);
//   2. gradient-direction voting: every pixel on an outer edge (gradient ≥ edge_threshold ×
//      local contrast) votes along its gradient, towards the bright side, at distances covering
//      the radii; votes of one disk pile up at its centre, on a grid downsampled by `factor`
//      (voting pixels sampled every 2 px whatever the factor, so large disks keep their votes);
//   3. local maxima of the smoothed vote map with a minimum separation (non-maximum
//      suppression), kept when their score is at least min_score × the frame's typical score;
//   4. sub-pixel refinement, radius and species (refine.hpp, species.hpp); a candidate whose
//      refinement fails or drifts away is refined once more locally from the candidate;
//      removal of duplicates and of weak edges.
#pragma once

#include <opencv2/core.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "vibra/tracking/joint_fit.hpp"
#include "vibra/tracking/refine.hpp"

namespace vibra::tracking {

/// The joint fit of a frame located from scratch: two full sweeps (the templates re-measured
/// after the first) and the extra sweeps, which after the refinement's starts leave the moderate
/// case as accurate as three and the dense one more (RMS 0.0263 → 0.0249 px at 232 → 192 ms CPU
/// per 1024² frame; docs/tracking.md section 4).
inline JointFitParams frame_from_scratch_fit() {
    JointFitParams p;
    p.sweeps = 2;
    return p;
}

/// How disks are found in one frame from scratch: the radii, the gradient votes, the candidate
/// maxima, the refinement and the joint fit (locate(), find_candidates(); the first frame and
/// every cold frame of a DiskLocator). `vibra track` maps its detection flags (and the same
/// keys of a --config file) onto it.
struct DetectParams {
    std::vector<double> radii;       ///< nominal radii, px: {r} or {r_small, r_large}; required
    bool invert = false;             ///< dark particles on a bright background
    double radius_tolerance = 0.25;  ///< radii searched: [r_small·(1−tol), r_large·(1+tol)]
    /// Large disks (vote cells > 3 px): radii of the ring search that places each candidate,
    /// [r_small·(1−tol), r_large·(1+tol)], at most radius_tolerance. `vibra track` narrows it to
    /// 0.15 (the refinement's own range) when it estimated the radii: they are measured outer
    /// radii, and a wider ring can run through the neighbours' rims (docs/tracking.md).
    double ring_tolerance = 0.25;
    double edge_threshold = 0.12;  ///< a pixel votes when |∇I| ≥ this × local contrast (per px)
    double min_score = 0.2;        ///< keep maxima with score ≥ this × 75th-percentile score of the frame
    double min_edge = 0.35;        ///< keep refined disks with edge strength ≥ this × median strength
    double min_separation = 0.7;   ///< × r_small: closest two centres may be (NMS and duplicates)
    int downsample = 0;            ///< vote grid = image / factor; 0 = automatic (r_small / 3)
    int contrast_block = 0;        ///< px per contrast cell; 0 = automatic (max(32, 6 r_large))
    /// px: radius spread for the species confidence (at least 5% of r_small is used)
    double radius_sigma = 0.3;
    RefineParams refine;
    bool joint = true;  ///< finish with the joint template fit of all disks (joint_fit.hpp)
    /// the joint fit of a frame located from scratch (2 full sweeps, docs/tracking.md 4)
    JointFitParams joint_fit = frame_from_scratch_fit();
    void validate() const;  ///< throws ParameterError naming the field
    double r_small() const { return radii.front(); }
    double r_large() const { return radii.back(); }
};

/// How a DiskLocator carries disks from one frame to the next (warm frames): the joint fit's
/// sweeps and tolerance there, the cadence of the searches for new disks, when a carried disk
/// snaps to a candidate or is dropped, and when a frame is no start for the next. Frames
/// located from scratch use DetectParams alone. Not exposed as flags: the defaults are the
/// measured trade-off of docs/tracking.md 4b (bench/accuracy_tracking reads WARM_* etc.).
struct LocatorParams {
    /// full joint-fit sweeps of a warm-started frame (its own count, not joint_fit.sweeps)
    int warm_sweeps = 3;
    /// of those, the first this many on every other row (JointFitParams::coarse_sweeps)
    int warm_coarse_sweeps = 2;
    /// px; while the carried disks' last displacements are this small (RMS), a warm frame takes one coarse
    /// sweep instead of warm_coarse_sweeps (a locator that sees every frame of a high-speed video) — unless
    /// its starts moved (disks snapped to candidates or new ones from them) or it is a refresh frame; 0 =
    /// never. A frame where that left more than 20% of the disks to extra steps (tightly coupled, dense
    /// packings) puts the locator back on warm_coarse_sweeps for 16 warm frames
    double warm_one_coarse_below = 0.45;
    /// a carried disk fainter than this × median (or 2× this without a candidate) is dropped
    double drop_amplitude = 0.35;
    /// the residual search for disks missing from the start (JointFitParams::find_missing) runs in every this
    /// many warm frames
    int warm_missing_every = 4;
    /// the frame's own candidates (votes: new disks, starts for disks whose prediction missed) in every this
    /// many warm frames, half way between the residual searches: a disk not yet carried is found within
    /// max(this, warm_missing_every) / 2 frames of the locator
    int warm_candidates_every = 4;
    /// each search (candidates, residual) that finds no new disk doubles its own interval, up to this many
    /// warm frames; a new disk found by either (in the locator's own rows) brings both back to
    /// warm_candidates_every / warm_missing_every. Set it to those to keep them fixed
    int warm_search_max_every = 16;
    /// px, JointFitParams::tolerance of a warm frame (cold frames keep the joint fit's own 0.01); after the
    /// Gauss–Seidel last sweep few disks move more (docs/tracking.md 4b)
    double warm_tolerance = 0.1;
    /// every this many warm frames the five-parameter steps accumulate JᵀJ afresh; in the others they take it
    /// from the disk's last full step (the joint fit's internal reuse_hessian switch)
    int warm_hessian_every = 8;
    /// in every this many warm frames the joint fit re-measures its templates (light or focus that drifts),
    /// with the candidates and the residual search on; a frame is located from scratch only when the warm fit
    /// fails
    int warm_refresh = 100;
    /// a candidate this far (× r_small) from every carried disk is a new disk (disks do not overlap: a real
    /// new disk is ≥ 2 r_small from every other)
    double new_disk_separation = 1.5;
    /// a frame whose joint fit leaves a relative residual above this (JointFitResult::relative_residual;
    /// synthetic frames 0.05–0.3, the falling ball with a false disk on the floor 0.78) is no start for the
    /// next frame, which is located from scratch: templates polluted by a poorly fitting disk let a warm fit
    /// stall short of a fast disk
    double warm_max_residual = 0.5;
    /// px; a carried disk predicted farther than this from its candidate starts at the candidate
    double snap_distance = 1.0;
    /// A frame located from scratch right after another frame (the joint fit refused these images,
    /// or its warm start ended) keeps a disk whose edge is below DetectParams::min_edge when it
    /// continues one of the previous frame's disks: centre within this × r_small of it and radius
    /// within `continue_radius` of its radius (hysteresis in time: a disk seen does not vanish
    /// from one frame to the next while its edge stays where it was), and undoes a circle's
    /// one-frame jump away from a disk steady over the two frames before (detail/continuation.hpp,
    /// docs/tracking.md "Frame to frame"). 0 = off.
    double continue_distance = 0.1;
    double continue_radius = 0.05;  ///< relative
    void validate() const;          ///< throws ParameterError naming the field
};

/// Candidate centres (px, pixel accuracy) with their vote scores, before refinement.
struct Candidate {
    double x, y;
    float score;
};
std::vector<Candidate> find_candidates(const Gradients& g, const DetectParams& p);

/// Whole detection of one frame: gradients → candidates → refinement → species. Particles
/// sorted by (y, x). Deterministic.
std::vector<Particle> locate(const cv::Mat& image, const DetectParams& p);

/// Detection along a video, frame after frame, for one thread. High-speed video moves a disk a
/// small fraction of its radius between the frames one locator sees, so each frame starts from
/// the previous one: its disks moved by their last displacement, their light, the joint fit's
/// templates and each disk's JᵀJ; disks that were not there come from the frame's candidates
/// (votes, every warm_candidates_every-th frame) and the residual search (every
/// warm_missing_every-th), and every warm_refresh-th frame re-measures the templates
/// (docs/tracking.md 4b, "Frame to frame"; those settings are LocatorParams). The first frame, a
/// frame of another size and any frame where the warm fit fails are located from scratch
/// (locate(), DetectParams). Needs `joint`; without it every frame is located from scratch.
class DiskLocator {
public:
    /// What the last next() did (for diagnostics and benchmarks; CPU s of the calling thread).
    struct Stats {
        bool warm = false;
        /// a warm frame whose fit re-measured the templates (warm_refresh)
        bool templates_remeasured = false;
        bool searched_candidates = false, searched_missing = false;  ///< which searches for new disks ran
        std::size_t new_kept = 0;  ///< new disks kept in the owned rows (from either search)
        std::size_t carried = 0, new_from_candidates = 0, added_from_residual = 0, rescued = 0,
                    extra_sweeps = 0, extra_steps = 0;
        int coarse_sweeps = 0;         ///< coarse sweeps of the warm fit (warm_one_coarse_below)
        double relative_residual = 0;  ///< the joint fit's (JointFitResult::relative_residual; 0 without one)
        double seconds_candidates = 0, seconds_new = 0;
        double seconds_fit[4] = {0, 0, 0, 0};  ///< joint fit phases (JointFitResult::seconds)
    };
    const Stats& last() const { return stats_; }
    /// `detect` for the frames located from scratch, `locator` for the warm ones.
    explicit DiskLocator(DetectParams detect, LocatorParams locator = {});
    /// Disks of the next frame (sorted by (y, x), like locate()).
    std::vector<Particle> next(const cv::Mat& image);
    /// The next frame is located from scratch (e.g. after a skipped frame).
    void reset();
    /// Rows [begin, end) of the frames this locator sees whose new disks count as news for the
    /// search cadence (warm_search_max_every); default all. A strip's locator (strips.hpp) owns
    /// its own rows: the disks of its margins belong to the neighbouring strip, and those cut by
    /// the margin's edge would be found "new" again and again.
    void set_owned_rows(int begin, int end) { owned_begin_ = begin, owned_end_ = end; }
    const DetectParams& params() const { return p_; }
    const LocatorParams& locator_params() const { return lp_; }

private:
    // The steps of a warm frame (next()), in order, on its working state (detect.cpp).
    struct WarmFrame;
    void search_candidates(const cv::Mat& image, WarmFrame& f);
    void start_from_previous(WarmFrame& f);
    void add_new_disks(WarmFrame& f);
    void set_warm_fit(WarmFrame& f);
    std::vector<std::size_t> surviving_disks(const cv::Mat& image, const WarmFrame& f) const;
    std::vector<Particle> carry_over(const WarmFrame& f, const std::vector<std::size_t>& keep,
                                     const std::vector<double>& template_radius);
    void update_search_cadence(const WarmFrame& f, const std::vector<std::size_t>& keep);
    std::vector<Particle> cold(const cv::Mat& image);
    DetectParams p_;
    LocatorParams lp_;
    DiskTemplates templates_;
    JointFitWorkspace workspace_;    // frame buffers re-used from frame to frame
    std::vector<Particle> prev_;     // last frame's disks, in fit order
    std::vector<char> prev_steady_;  // after a frame from scratch: each continued a disk of the frame before
    std::vector<double> vx_, vy_;    // their last displacement (px per call)
    float median_strength_ = 0;
    int width_ = 0, height_ = 0;
    int since_cold_ = 0;
    int candidates_every_ = 0, missing_every_ = 0;  // current search intervals (warm frames)
    int next_candidates_ = 0, next_missing_ = 0;    // the warm frame (since_cold_) of the next search
    int owned_begin_ = 0, owned_end_ = 1 << 30;
    int full_coarse_for_ = 0;  // warm frames left on warm_coarse_sweeps after one coarse sweep fell short
    bool warm_ = false;
    Stats stats_;
};

/// Settings of the radius estimate (`vibra track --radii auto`, the default without a radius).
struct RadiusEstimateParams {
    bool invert = false;             ///< dark particles on a bright background
    double r_min = 3, r_max = 80;    ///< px: the radii considered
    std::size_t enough_disks = 300;  ///< the fine stage stops once this many disks are measured
    double max_valley = 0.6;         ///< two sizes: the histogram dips below this × the lower peak
    double ambiguous_valley =
        0.85;               ///< a second peak whose dip lies between max_valley and this is ambiguous
    void validate() const;  ///< throws ParameterError naming the field
};

/// What estimate_radius_classes found.
struct RadiusEstimate {
    std::vector<double> radii;   ///< {r} or {r_small, r_large}, px (outer edge, as refine.hpp measures it)
    double scale = 0;            ///< px: the scale of the coarse scan (the best circles)
    std::int64_t frames = 0;     ///< frames measured
    double disks_per_frame = 0;  ///< median disks per frame found at the estimated radii
    std::size_t measured = 0;    ///< radii in the histogram
    /// One line for people, e.g. "radii: small 46.1 px, large 55.3 px from 9 frames, 72 disks per frame".
    std::string summary() const;
};

/// Estimates one or two radii (px) from frames in two stages (docs/tracking.md, "Radii"):
///  1. coarse scan: for radii r on a 10% grid in [r_min, r_max], on an image downsampled so that
///     r spans 4–8 px, every edge pixel votes at ±r along its gradient; each maximum of the vote
///     map is scored by how well a circle of radius r about it is an edge all around (the lower
///     quartile, over 64 directions, of the signed radial gradient / local contrast); the scale
///     whose circles explain the most edge (Σ (score − 0.15)₊ · r) wins — texture, noise and
///     voids make broken circles, disks whole ones;
///  2. fine stage: locate() over [scale/1.5, 1.5·scale] on the frames (until enough_disks), the
///     measured radii of the stronger half, the modes of their histogram (2% bins): one size, or
///     two when a second peak within a factor 1.6 is separated by a clear dip.
/// Throws FormatError when no disk is found, or when the histogram is ambiguous (a second peak
/// with an unclear dip): the message says to give the radii.
RadiusEstimate estimate_radius_classes(const std::vector<cv::Mat>& frames, const RadiusEstimateParams& p);

/// Edge thresholds adapted to the frames (`vibra track` without --edge-threshold/--min-edge).
/// The defaults (edge_threshold 0.12, min_edge 0.35) suit sharp edges: disks whose edge is 1–3 px
/// wide have a median strength (peak inward gradient / local contrast) of ≈ 0.3 — every synthetic
/// case, bulk water, the falling ball. Soft, wide or textured edges are weaker (the
/// particletracker discs, MPEG-4 rims ≈ 9 px wide: ≈ 0.09), and with the default thresholds a
/// third of those discs got no candidate. Both thresholds are therefore scaled by
/// f = min(1, median strength / 0.2), measured on a frame with the frame's radii.
struct EdgeAdaptation {
    double median_strength = 0;  ///< of the disks found on the frame (× local contrast per px)
    double factor = 1;           ///< f applied to edge_threshold and min_edge (1 = unchanged)
    std::size_t disks = 0;       ///< disks measured
    /// e.g. "weak edges (median strength 0.086 × local contrast): edge threshold 0.052, min edge 0.15"
    std::string summary(const DetectParams& adapted) const;
};
/// Measures the frame's edge strength with `p` (its radii; joint fit off, no min_edge) and scales
/// p.edge_threshold and p.min_edge by the factor. Deterministic; a locate() of a central crop of a
/// quarter of the frame's side (or 20 large radii), enough when its disks are clearly sharp, else
/// of half the side (or 40 large radii) alone; disks cut by the crop's border left out.
EdgeAdaptation adapt_edge_thresholds(const cv::Mat& frame, DetectParams& p);

/// The radii of estimate_radius_classes (compatibility wrapper).
std::vector<double> estimate_radii(const std::vector<cv::Mat>& frames, bool invert, double r_min = 3,
                                   double r_max = 80);

}  // namespace vibra::tracking
