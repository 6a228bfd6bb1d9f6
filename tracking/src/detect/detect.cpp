// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/tracking/detect.hpp"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "detail/detect_util.hpp"
#include "detail/continuation.hpp"
#include "detail/edge_circle.hpp"
#include "detail/joint_fitter.hpp"
#include "vibra/core/cell_list.hpp"
#include "vibra/core/error.hpp"
#include "vibra/tracking/species.hpp"

namespace vibra::tracking {

void DetectParams::validate() const {
    auto bad = [](const std::string& f, double v, const char* rule) {
        throw ParameterError("detect: " + f + " must be " + rule + ", got " + std::to_string(v));
    };
    if (radii.empty() || radii.size() > 2)
        bad("radii (count)", static_cast<double>(radii.size()), "1 or 2 radii");
    for (double r : radii)
        if (!(r >= 1.5) || !std::isfinite(r)) bad("radius", r, ">= 1.5 px");
    if (radii.size() == 2 && radii[1] < radii[0]) bad("radius_large", radii[1], ">= radius_small");
    if (!(radius_tolerance >= 0 && radius_tolerance < 0.9))
        bad("radius_tolerance", radius_tolerance, "in [0, 0.9)");
    if (!(ring_tolerance >= 0 && ring_tolerance < 0.9)) bad("ring_tolerance", ring_tolerance, "in [0, 0.9)");
    if (!(edge_threshold > 0 && edge_threshold < 1)) bad("edge_threshold", edge_threshold, "in (0, 1)");
    if (!(min_score >= 0 && min_score < 1)) bad("min_score", min_score, "in [0, 1)");
    if (!(min_edge >= 0 && min_edge < 1)) bad("min_edge", min_edge, "in [0, 1)");
    if (!(min_separation > 0 && min_separation <= 2)) bad("min_separation", min_separation, "in (0, 2]");
    if (downsample < 0) bad("downsample", downsample, ">= 0");
    if (contrast_block != 0 && contrast_block < 8)
        bad("contrast_block", contrast_block, "0 (auto) or >= 8 px");
    if (!(radius_sigma > 0)) bad("radius_sigma", radius_sigma, "> 0 px");
    refine.validate();
    joint_fit.validate();
}

void LocatorParams::validate() const {
    auto bad = [](const std::string& f, double v, const char* rule) {
        throw ParameterError("locator: " + f + " must be " + rule + ", got " + std::to_string(v));
    };
    if (warm_sweeps < 1) bad("warm_sweeps", warm_sweeps, ">= 1");
    if (warm_coarse_sweeps < 0) bad("warm_coarse_sweeps", warm_coarse_sweeps, ">= 0");
    if (!(snap_distance > 0)) bad("snap_distance", snap_distance, "> 0 px");
    if (warm_refresh < 1) bad("warm_refresh", warm_refresh, ">= 1");
    if (warm_missing_every < 1) bad("warm_missing_every", warm_missing_every, ">= 1");
    if (warm_candidates_every < 1) bad("warm_candidates_every", warm_candidates_every, ">= 1");
    if (warm_search_max_every < 1) bad("warm_search_max_every", warm_search_max_every, ">= 1");
    if (!(warm_one_coarse_below >= 0)) bad("warm_one_coarse_below", warm_one_coarse_below, ">= 0");
    if (warm_hessian_every < 1) bad("warm_hessian_every", warm_hessian_every, ">= 1");
    if (!(warm_tolerance > 0)) bad("warm_tolerance", warm_tolerance, "> 0");
    if (!(warm_max_residual > 0)) bad("warm_max_residual", warm_max_residual, "> 0");
    if (!(continue_distance >= 0 && continue_distance <= 1))
        bad("continue_distance", continue_distance, "in [0, 1]");
    if (!(continue_radius >= 0 && continue_radius <= 0.5))
        bad("continue_radius", continue_radius, "in [0, 0.5]");
    if (!(drop_amplitude >= 0 && drop_amplitude < 1)) bad("drop_amplitude", drop_amplitude, "in [0, 1)");
    if (!(new_disk_separation > 0 && new_disk_separation <= 2))
        bad("new_disk_separation", new_disk_separation, "in (0, 2]");
}

using detail::Continuation;
using detail::continues;
using detail::continuing_disks;
using detail::contrast_block;
using detail::cpu_seconds;
using detail::quantile;
using detail::suppress;
using detail::undo_jumps;
using detail::vote_factor;

namespace {

// Refinement before the joint fit (which finishes the job): two iterations are plenty for small
// disks, and a disk whose first step was under 0.1 px sits out the second (RefineParams::settle:
// the first frame located from scratch ≈ 12% cheaper in the moderate case, the same results;
// dense packings, where the second iteration matters, take it for nearly every disk). Large ones
// (vote cells > 3 px: candidates several px off) keep them all: the candidates that fail or
// drift are judged on the refined positions, and such images (the particletracker discs) are
// also where the joint fit tends to refuse.
RefineParams refine_before_fit(const DetectParams& p) {
    RefineParams rp = p.refine;
    if (vote_factor(p) <= 3) {
        rp.iterations = std::min(rp.iterations, 2),
        rp.coarse_iterations = std::min(rp.coarse_iterations, rp.iterations);
        if (rp.settle == 0) rp.settle = 0.1;
    }
    return rp;
}

// Radius spread of the species confidence: radius_sigma, but at least 5% of the small radius
// (large real disks vary by a few px; a 0.3 px spread would make every call "certain", and a
// disk whose call flips near the threshold would then break its track at linking).
double radius_spread(const DetectParams& p) { return std::max(p.radius_sigma, 0.05 * p.r_small()); }

std::vector<Particle> locate_impl(const cv::Mat& image, const DetectParams& p, DiskTemplates* templates,
                                  JointFitWorkspace* workspace = nullptr, double* relative_residual = nullptr,
                                  const Continuation& cont = {}) {
    p.validate();
    const Gradients g = compute_gradients(image, p.invert, contrast_block(p));
    auto cands = find_candidates(g, p);
    // Small disks (vote cells ≤ 3 px: thousands of them) in image order (bands of 2 r_large, by x
    // within a band): the refinement and the joint fit then read each image row for a run of
    // disks while it is in the cache, not once per disk in score order (a frame from scratch
    // ≈ 20% faster, docs/performance.md). Large ones (few, several px off at first, where the
    // refinement's order matters: the real discs) keep the score order.
    const double band = 2 * p.r_large();
    const bool in_image_order = vote_factor(p) <= 3;
    auto image_order = [band](double ax, double ay, double bx, double by) {
        const auto ka = std::floor(ay / band), kb = std::floor(by / band);
        return ka != kb ? ka < kb : ax < bx;
    };
    if (in_image_order)
        std::sort(cands.begin(), cands.end(),
                  [&](const Candidate& a, const Candidate& b) { return image_order(a.x, a.y, b.x, b.y); });
    std::vector<Particle> parts(cands.size());
    for (std::size_t i = 0; i < cands.size(); ++i) parts[i].x = cands[i].x, parts[i].y = cands[i].y;
    // The radius is searched close to the nominal radii only (±15%), so inner features of a
    // look (the inner edge of a dark ring, a rim) cannot be taken for the outer edge.
    const double rt = std::min(p.radius_tolerance, 0.15);
    const RefineParams rp = p.joint ? refine_before_fit(p) : p.refine;
    refine_particles(g, parts, p.r_small() * (1 - rt), p.r_large() * (1 + rt), rp);
    // Second chance for candidates whose refinement failed (no edge peak within the radius
    // range, e.g. a start several px off on a coarse vote grid): refined again from the
    // candidate with the already refined neighbours around it (masking), and kept when it
    // succeeds this time. Only the failed ones and their neighbours are touched.
    // A refinement that walked away from its candidate by more than 0.4 r_small (or 1.5 vote
    // cells) slid onto a neighbour: also a failure.
    const double max_drift = std::max(0.4 * p.r_small(), 1.5 * vote_factor(p));
    auto drifted = [&](const Particle& q, const Candidate& c) {
        return std::hypot(q.x - c.x, q.y - c.y) > max_drift;
    };
    {
        std::vector<std::size_t> failed;
        for (std::size_t i = 0; i < parts.size(); ++i)
            if (!(parts[i].strength > 0) || drifted(parts[i], cands[i])) failed.push_back(i);
        if (!failed.empty()) {
            std::vector<double> xs(parts.size()), ys(parts.size());
            for (std::size_t i = 0; i < parts.size(); ++i) xs[i] = parts[i].x, ys[i] = parts[i].y;
            const double reach = 2.5 * p.r_large() + 4;
            CellList cl(xs, ys, reach, Geometry{});
            for (std::size_t i : failed) {
                const Particle q =
                    detail::refine_alone(g, cands[i].x, cands[i].y, cands[i].x, cands[i].y, i, parts, cl,
                                         p.r_small() * (1 - rt), p.r_large() * (1 + rt), rp);
                if (q.strength > 0 && !drifted(q, cands[i]))
                    parts[i] = q;
                else
                    parts[i].strength = 0;
            }
        }
    }
    undo_jumps(g, parts, cont, p.min_separation * p.r_small(), p.r_large(), rp);
    // Inside the image, not a duplicate, edge strong enough.
    std::erase_if(parts, [&](const Particle& q) {
        return !(q.x >= -0.5 && q.y >= -0.5 && q.x <= image.cols - 0.5 && q.y <= image.rows - 0.5) ||
               !(q.strength > 0);
    });
    parts = suppress(std::move(parts), p.min_separation * p.r_small(),
                     [](const Particle& q) { return q.strength; });
    if (in_image_order)
        std::sort(parts.begin(), parts.end(),
                  [&](const Particle& a, const Particle& b) { return image_order(a.x, a.y, b.x, b.y); });
    std::vector<float> st;
    st.reserve(parts.size());
    for (const auto& q : parts) st.push_back(q.strength);
    const float med = quantile(st, 0.5);
    // Edge strong enough, or (a frame after another) the continuation of a disk seen there.
    const auto continuing = continuing_disks(parts, cont);
    for (std::size_t i = 0; i < parts.size(); ++i)
        if (parts[i].strength < p.min_edge * med && !continuing[i]) parts[i].strength = 0;
    std::erase_if(parts, [](const Particle& q) { return !(q.strength > 0); });
    // Species from the measured radii: the frame's own two-group split when it agrees with the
    // nominal ratio (radii given a few % off, or a ridge rather than the outer edge), else the
    // nominal midpoint (species.hpp, classify_radii_split). The joint fit, when it applies,
    // re-classifies by its measured template radii below.
    auto classify = [&] {
        std::vector<float> rad(parts.size()), conf(parts.size());
        std::vector<std::int8_t> spc(parts.size());
        for (std::size_t i = 0; i < parts.size(); ++i) rad[i] = parts[i].radius;
        const double split = classify_radii_split(rad, p.radii, radius_spread(p), spc, conf);
        for (std::size_t i = 0; i < parts.size(); ++i) {
            auto& q = parts[i];
            q.quality = med > 0 ? std::min(1.0f, q.strength / med) : 0.0f;
            q.species = spc[i];
            q.species_confidence = conf[i];
        }
        return split;
    };
    double split = classify();
    bool joint_applied = false;
    if (p.joint) {
        // species by the measured template radii (the nominal ones may be off by a few %)
        const auto jf = joint_fit(image, parts, p.radii, p.joint_fit, templates, workspace);
        if (relative_residual) *relative_residual = jf.relative_residual;
        joint_applied = jf.applied;
        if (jf.applied) {
            std::vector<float> st2;
            for (const auto& q : parts) st2.push_back(q.strength);
            const float med2 = quantile(st2, 0.5);
            for (auto& q : parts) {
                q.quality = med2 > 0 ? std::min(1.0f, q.strength / med2) : 0.0f;
                const auto s = classify_radius(q.radius, jf.template_radius, radius_spread(p));
                q.species = s.species;
                q.species_confidence = s.confidence;
            }
        } else if (p.refine.iterations > rp.iterations) {
            // The joint fit refused this image (it does not follow its model): the refinement
            // gets the iterations it gave up for it, and the species are classified again.
            RefineParams more = p.refine;
            more.iterations = p.refine.iterations - rp.iterations;
            more.coarse_iterations = std::max(0, p.refine.coarse_iterations - rp.coarse_iterations);
            more.coarse_iterations = std::min(more.coarse_iterations, more.iterations);
            refine_particles(g, parts, p.r_small() * (1 - rt), p.r_large() * (1 + rt), more);
            std::erase_if(parts, [](const Particle& q) { return !(q.strength > 0); });
            split = classify();
        }
    }
    // Where the joint fit did not measure the radii (off, or refused), two sizes of large disks:
    // the size class gets a second opinion from the outline's curvature (detail/edge_circle.hpp; a
    // locate() with no radius tolerance, the radius estimate's over a range of scales, is left
    // alone).
    if (!joint_applied && p.radii.size() == 2 && vote_factor(p) > 3 && rt > 0 &&
        detail::repair_by_edge_circles(g, parts, p.r_small(), p.r_large(), rt, split, p.refine) > 0)
        classify();
    std::sort(parts.begin(), parts.end(),
              [](const Particle& a, const Particle& b) { return a.y != b.y ? a.y < b.y : a.x < b.x; });
    return parts;
}

void sort_by_position(std::vector<Particle>& parts) {
    std::sort(parts.begin(), parts.end(),
              [](const Particle& a, const Particle& b) { return a.y != b.y ? a.y < b.y : a.x < b.x; });
}

}  // namespace

std::vector<Particle> locate(const cv::Mat& image, const DetectParams& p) {
    return locate_impl(image, p, nullptr);
}

DiskLocator::DiskLocator(DetectParams detect, LocatorParams locator) : p_(std::move(detect)), lp_(locator) {
    p_.validate();
    lp_.validate();
}

void DiskLocator::reset() {
    warm_ = false;
    prev_.clear();
    prev_steady_.clear();
    vx_.clear();
    vy_.clear();
    templates_ = {};
}

/// One warm frame's working state, handed from one step of DiskLocator::next() to the next.
struct DiskLocator::WarmFrame {
    bool refresh = false;          // a refresh frame (every warm_refresh-th): templates re-measured
    bool with_candidates = false;  // the frame's own candidates were searched
    Gradients g;                   // the frame's gradients (with candidates only)
    std::vector<Candidate> cands;
    std::vector<double> cx, cy;   // candidate centres
    std::optional<CellList> cc;   // the candidates, within half a small radius
    std::vector<Particle> parts;  // the start: carried disks (n_prev, prev_'s order), then new ones
    std::size_t n_prev = 0;
    std::size_t n_snapped = 0;  // carried disks started at a candidate instead of their prediction
    JointFitParams jp;          // the warm joint fit's settings
};

std::vector<Particle> DiskLocator::next(const cv::Mat& image) {
    if (!p_.joint || !warm_ || prev_.empty() || image.cols != width_ || image.rows != height_)
        return cold(image);
    ++since_cold_;
    stats_ = {};
    stats_.warm = true;
    WarmFrame f;
    double t0 = cpu_seconds();
    search_candidates(image, f);
    stats_.seconds_candidates = cpu_seconds() - t0;
    t0 = cpu_seconds();
    start_from_previous(f);
    add_new_disks(f);
    stats_.carried = f.n_prev, stats_.new_from_candidates = f.parts.size() - f.n_prev;
    stats_.seconds_new = cpu_seconds() - t0;
    set_warm_fit(f);
    // every warm_hessian_every-th warm frame takes full five-parameter steps (fresh JᵀJ)
    detail::JointFitSwitches sw;
    sw.reuse_hessian = !f.refresh && since_cold_ % lp_.warm_hessian_every != 0;
    const auto jf = detail::joint_fit(image, f.parts, p_.radii, f.jp, sw, &templates_, &workspace_);
    if (!jf.applied) return cold(image);
    stats_.relative_residual = jf.relative_residual;
    stats_.added_from_residual = jf.added, stats_.rescued = jf.rescued;
    stats_.templates_remeasured = jf.templates_remeasured;
    stats_.extra_sweeps = jf.extra_sweeps, stats_.extra_steps = jf.extra_steps;
    if (f.jp.coarse_sweeps < lp_.warm_coarse_sweeps && jf.extra_steps > f.parts.size() / 5)
        full_coarse_for_ = 16;
    for (int k = 0; k < 4; ++k) stats_.seconds_fit[k] = jf.seconds[k];
    const auto keep = surviving_disks(image, f);
    auto out = carry_over(f, keep, jf.template_radius);
    update_search_cadence(f, keep);
    if (jf.relative_residual > lp_.warm_max_residual)
        warm_ = false;  // the next frame from scratch (as in cold())
    sort_by_position(out);
    return out;
}

// The frame's own candidates in every warm_candidates_every-th warm frame (at first), half way
// between the residual searches (both find disks that are not carried; docs/tracking.md 4b, "Frame to frame").
// A refresh frame (every warm_refresh-th) re-measures the templates and looks for new disks both ways.
// The searches back off while they find nothing (warm_search_max_every).
void DiskLocator::search_candidates(const cv::Mat& image, WarmFrame& f) {
    f.refresh = since_cold_ % lp_.warm_refresh == 0;
    f.with_candidates = f.refresh || since_cold_ >= next_candidates_;
    stats_.searched_candidates = f.with_candidates;
    if (f.with_candidates) f.g = compute_gradients(image, p_.invert, contrast_block(p_));
    if (f.with_candidates) f.cands = find_candidates(f.g, p_);
    f.cx.resize(f.cands.size()), f.cy.resize(f.cands.size());
    for (std::size_t k = 0; k < f.cands.size(); ++k) f.cx[k] = f.cands[k].x, f.cy[k] = f.cands[k].y;
    f.cc.emplace(f.cx, f.cy, 0.5 * p_.r_small(), Geometry{});
}

// Start: the previous disks moved by their last displacement. A carried disk whose prediction
// missed (fast or turning disks) starts at the frame's candidate instead: the nearest one within
// half a small radius when it is more than `snap_distance` px from the prediction (candidates are
// good to about a vote cell).
void DiskLocator::start_from_previous(WarmFrame& f) {
    f.parts = prev_;
    f.n_prev = f.parts.size();
    for (std::size_t i = 0; i < f.n_prev; ++i) f.parts[i].x += vx_[i], f.parts[i].y += vy_[i];
    if (f.cands.empty()) return;
    const double near = 0.5 * p_.r_small();
    for (std::size_t i = 0; i < f.n_prev; ++i) {
        double best = near * near;
        std::int64_t kb = -1;
        f.cc->for_each_near(f.parts[i].x, f.parts[i].y, [&](std::size_t k, double, double, double r2) {
            if (r2 < best) best = r2, kb = static_cast<std::int64_t>(k);
        });
        if (kb >= 0 && best > lp_.snap_distance * lp_.snap_distance) {
            f.parts[i].x = f.cx[static_cast<std::size_t>(kb)],
            f.parts[i].y = f.cy[static_cast<std::size_t>(kb)];
            ++f.n_snapped;
        }
    }
}

// Candidates far from every start disk are new disks (entered the field, or missed before):
// refined with their start neighbours around them (masking), then appended when their edge is
// strong enough.
void DiskLocator::add_new_disks(WarmFrame& f) {
    if (f.cands.empty()) return;
    const std::size_t n_prev = f.n_prev;
    std::vector<double> xs(n_prev), ys(n_prev);
    for (std::size_t i = 0; i < n_prev; ++i) xs[i] = f.parts[i].x, ys[i] = f.parts[i].y;
    const CellList near_start(xs, ys, lp_.new_disk_separation * p_.r_small(), Geometry{});
    std::optional<CellList> cl;  // neighbours of new disks (made when needed)
    const double reach = 2.5 * p_.r_large() + 4;
    std::vector<Particle> local, neighbours;  // the new disks first, then their neighbours
    std::vector<char> is_neighbour(n_prev, 0);
    for (const auto& c : f.cands) {
        bool near_one = false;
        near_start.for_each_near(c.x, c.y, [&](std::size_t, double, double, double) { near_one = true; });
        if (near_one) continue;
        if (!cl) cl.emplace(xs, ys, reach, Geometry{});
        Particle q;
        q.x = c.x, q.y = c.y;
        local.push_back(q);
        cl->for_each_near(c.x, c.y, [&](std::size_t j, double, double, double) {
            if (!is_neighbour[j]) is_neighbour[j] = 1, neighbours.push_back(f.parts[j]);
        });
    }
    const std::size_t n_new = local.size();
    if (n_new == 0) return;
    local.insert(local.end(), neighbours.begin(), neighbours.end());
    const double rt = std::min(p_.radius_tolerance, 0.15);
    refine_particles(f.g, local, p_.r_small() * (1 - rt), p_.r_large() * (1 + rt), refine_before_fit(p_));
    for (std::size_t k = 0; k < n_new; ++k) {
        auto& q = local[k];
        if (!(q.strength >= p_.min_edge * median_strength_)) continue;
        q.quality = median_strength_ > 0 ? std::min(1.0f, q.strength / median_strength_) : 0.0f;
        const auto sc = classify_radius(q.radius, p_.radii, radius_spread(p_));
        q.species = sc.species, q.species_confidence = sc.confidence;
        f.parts.push_back(q);
    }
}

// The warm joint fit: its own sweeps and tolerance, the residual search on its cadence, and one
// coarse sweep instead of warm_coarse_sweeps after small steps since the last frame (the
// displacements measured there, RMS, between two warm frames): one coarse sweep brings the
// centres close enough for the full sweep. Not where starts moved (a disk snapped to a
// candidate, new disks from the candidates) nor in a refresh frame; a frame that searches and
// finds nothing to move is a plain one (disks the residual search adds get a fresh search of
// their own, then the full and extra sweeps).
void DiskLocator::set_warm_fit(WarmFrame& f) {
    JointFitParams& jp = f.jp;
    jp = p_.joint_fit;
    jp.sweeps = lp_.warm_sweeps;
    jp.coarse_sweeps = lp_.warm_coarse_sweeps;
    jp.early_rescue = false;
    jp.tolerance = lp_.warm_tolerance;
    jp.find_missing = jp.find_missing && (f.refresh || since_cold_ >= next_missing_);
    stats_.searched_missing = jp.find_missing;
    const std::size_t n_prev = f.n_prev;
    if (full_coarse_for_ > 0) {
        --full_coarse_for_;
    } else if (since_cold_ > 2 && n_prev > 0 && jp.coarse_sweeps > 1 && !f.refresh && f.n_snapped == 0 &&
               f.parts.size() == n_prev) {
        double v2 = 0;
        for (std::size_t i = 0; i < n_prev; ++i) v2 += vx_[i] * vx_[i] + vy_[i] * vy_[i];
        if (std::sqrt(v2 / static_cast<double>(n_prev)) < lp_.warm_one_coarse_below) {
            jp.sweeps -= jp.coarse_sweeps - 1;
            jp.coarse_sweeps = 1;
        }
    }
    stats_.coarse_sweeps = jp.coarse_sweeps;
    jp.remeasure_templates = f.refresh;
}

// Indices (into f.parts) of the fitted disks carried on. Disks that left the image are dropped,
// and so is a disk that has become faint (amplitude < drop_amplitude × the median) or is
// faint-ish (< 2 × that) with no candidate of this frame within half a small radius: on real
// video a false detection would otherwise be carried on for ever. Of two disks closer than
// min_separation·r_small the earlier (older) one wins.
std::vector<std::size_t> DiskLocator::surviving_disks(const cv::Mat& image, const WarmFrame& f) const {
    const auto& parts = f.parts;
    std::vector<float> amps;
    for (const auto& q : parts)
        if (q.amplitude > 0) amps.push_back(q.amplitude);
    const float a_med = quantile(amps, 0.5);
    std::vector<char> has_cand(parts.size(),
                               f.with_candidates ? 0 : 1);  // without candidates: amplitude alone
    if (!f.cands.empty())
        for (std::size_t i = 0; i < parts.size(); ++i)
            f.cc->for_each_near(parts[i].x, parts[i].y,
                                [&](std::size_t, double, double, double) { has_cand[i] = 1; });
    std::vector<std::size_t> keep;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        const auto& q = parts[i];
        if (!(q.x >= -0.5 && q.y >= -0.5 && q.x <= image.cols - 0.5 && q.y <= image.rows - 0.5)) continue;
        const double rel = a_med > 0 ? q.amplitude / a_med : 1.0;
        if (rel < lp_.drop_amplitude || (rel < 2 * lp_.drop_amplitude && !has_cand[i])) continue;
        keep.push_back(i);
    }
    // greedy: an earlier (older) disk wins over a later one closer than min_separation·r_small
    std::vector<double> kx, ky;
    for (auto i : keep) kx.push_back(parts[i].x), ky.push_back(parts[i].y);
    CellList kl(kx, ky, p_.min_separation * p_.r_small(), Geometry{});
    std::vector<char> dead(keep.size(), 0);
    for (std::size_t a = 0; a < keep.size(); ++a) {
        if (dead[a]) continue;
        kl.for_each_near(kx[a], ky[a], [&](std::size_t b, double, double, double) {
            if (b > a) dead[b] = 1;
        });
    }
    std::vector<std::size_t> k2;
    for (std::size_t a = 0; a < keep.size(); ++a)
        if (!dead[a]) k2.push_back(keep[a]);
    return k2;
}

// The kept disks become the next frame's start: species from the templates' radii, velocities
// of the disks that were there before (0 for new ones), and the fit's per-disk JᵀJ in the order
// of the disks carried on. Returns them in fit order.
std::vector<Particle> DiskLocator::carry_over(const WarmFrame& f, const std::vector<std::size_t>& keep,
                                              const std::vector<double>& template_radius) {
    std::vector<Particle> out;
    std::vector<double> vx, vy;
    out.reserve(keep.size());
    for (auto i : keep) {
        Particle q = f.parts[i];
        const auto sc = classify_radius(q.radius, template_radius, radius_spread(p_));
        q.species = sc.species, q.species_confidence = sc.confidence;
        if (i < f.n_prev) {
            vx.push_back(q.x - prev_[i].x), vy.push_back(q.y - prev_[i].y);
        } else {
            if (!(q.strength > 0)) q.strength = median_strength_, q.quality = 1.0f;  // found in the residual
            vx.push_back(0), vy.push_back(0);
        }
        out.push_back(q);
    }
    prev_ = out;
    prev_steady_.clear();  // the undoing of jumps is for frames from scratch after frames from scratch
    std::vector<detail::DiskHessian> hk;
    hk.reserve(keep.size());
    for (auto i : keep)
        hk.push_back(i < workspace_.hessians.size() ? workspace_.hessians[i] : detail::DiskHessian{});
    workspace_.hessians.swap(hk);
    vx_.swap(vx);
    vy_.swap(vy);
    return out;
}

// Search cadence: a search that found no new disk in the owned rows doubles its interval (up
// to warm_search_max_every); a new disk brings both back to their base.
void DiskLocator::update_search_cadence(const WarmFrame& f, const std::vector<std::size_t>& keep) {
    for (auto i : keep)
        if (i >= f.n_prev && f.parts[i].y >= owned_begin_ - 0.5 && f.parts[i].y < owned_end_ - 0.5)
            ++stats_.new_kept;
    const bool with_missing = f.jp.find_missing;
    if (!f.with_candidates && !with_missing) return;
    const int cap_c = std::max(lp_.warm_candidates_every, lp_.warm_search_max_every);
    const int cap_m = std::max(lp_.warm_missing_every, lp_.warm_search_max_every);
    if (stats_.new_kept > 0) {
        candidates_every_ = lp_.warm_candidates_every, missing_every_ = lp_.warm_missing_every;
        next_candidates_ = std::min(next_candidates_, since_cold_ + candidates_every_);
        next_missing_ = std::min(next_missing_, since_cold_ + missing_every_);
    } else {
        if (f.with_candidates) candidates_every_ = std::min(2 * candidates_every_, cap_c);
        if (with_missing) missing_every_ = std::min(2 * missing_every_, cap_m);
    }
    if (f.with_candidates) next_candidates_ = since_cold_ + candidates_every_;
    if (with_missing) next_missing_ = since_cold_ + missing_every_;
}

std::vector<Particle> DiskLocator::cold(const cv::Mat& image) {
    const bool same_size = image.cols == width_ && image.rows == height_;
    const std::vector<Particle> previous = same_size ? std::move(prev_) : std::vector<Particle>{};
    const std::vector<char> steady = same_size ? std::move(prev_steady_) : std::vector<char>{};
    reset();
    stats_ = {};
    std::vector<char> restored(previous.size(), 0);
    const Continuation cont{previous, steady, lp_.continue_distance * p_.r_small(), lp_.continue_radius,
                            &restored};
    auto parts = locate_impl(image, p_, p_.joint ? &templates_ : nullptr, &workspace_,
                             &stats_.relative_residual, cont);
    workspace_.hessians
        .clear();  // locate() re-orders and filters its disks: the next frame computes them afresh
    width_ = image.cols, height_ = image.rows;
    since_cold_ = 0;
    full_coarse_for_ = 0;
    // The first searches as with fixed intervals: candidates half way, the residual search at the end of one.
    candidates_every_ = lp_.warm_candidates_every, missing_every_ = lp_.warm_missing_every;
    next_candidates_ =
        lp_.warm_candidates_every / 2 > 0 ? lp_.warm_candidates_every / 2 : lp_.warm_candidates_every;
    next_missing_ = lp_.warm_missing_every;
    // a fit that explains the frame poorly (a disk-like false detection pollutes the templates,
    // a look the model barely follows) is no start for the next frame
    warm_ = p_.joint && !templates_.profile.empty() && stats_.relative_residual <= lp_.warm_max_residual;
    std::vector<float> st;
    for (const auto& q : parts) st.push_back(q.strength);
    median_strength_ = quantile(st, 0.5);
    prev_ = parts;
    prev_steady_ = lp_.continue_distance > 0 ? detail::steady_disks(parts, cont) : std::vector<char>{};
    vx_.assign(parts.size(), 0.0);
    vy_.assign(parts.size(), 0.0);
    return parts;
}

}  // namespace vibra::tracking
