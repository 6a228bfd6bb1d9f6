// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/tracking/detect.hpp"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "detail/detect_util.hpp"
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
    if (!(radius_tolerance >= 0 && radius_tolerance < 0.9)) bad("radius_tolerance", radius_tolerance, "in [0, 0.9)");
    if (!(edge_threshold > 0 && edge_threshold < 1)) bad("edge_threshold", edge_threshold, "in (0, 1)");
    if (!(min_score >= 0 && min_score < 1)) bad("min_score", min_score, "in [0, 1)");
    if (!(min_edge >= 0 && min_edge < 1)) bad("min_edge", min_edge, "in [0, 1)");
    if (!(min_separation > 0 && min_separation <= 2)) bad("min_separation", min_separation, "in (0, 2]");
    if (downsample < 0) bad("downsample", downsample, ">= 0");
    if (contrast_block != 0 && contrast_block < 8) bad("contrast_block", contrast_block, "0 (auto) or >= 8 px");
    if (!(radius_sigma > 0)) bad("radius_sigma", radius_sigma, "> 0 px");
    refine.validate();
    joint_fit.validate();
}

using detail::contrast_block;
using detail::quantile;
using detail::suppress;
using detail::vote_factor;

std::vector<Particle> locate(const cv::Mat& image, const DetectParams& p) {
    p.validate();
    const Gradients g = compute_gradients(image, p.invert, contrast_block(p));
    const auto cands = find_candidates(g, p);
    std::vector<Particle> parts(cands.size());
    for (std::size_t i = 0; i < cands.size(); ++i) parts[i].x = cands[i].x, parts[i].y = cands[i].y;
    // The radius is searched close to the nominal radii only (±15%), so inner features of a
    // look (the inner edge of a dark ring, a rim) cannot be taken for the outer edge.
    const double rt = std::min(p.radius_tolerance, 0.15);
    // Before the joint fit (which finishes the job) two refinement iterations are plenty.
    RefineParams rp = p.refine;
    if (p.joint) rp.iterations = std::min(rp.iterations, 2), rp.coarse_iterations = std::min(rp.coarse_iterations, rp.iterations);
    refine_particles(g, parts, p.r_small() * (1 - rt), p.r_large() * (1 + rt), rp);
    // Second chance for candidates whose refinement failed (no edge peak within the radius
    // range, e.g. a start several px off on a coarse vote grid): refined again from the
    // candidate with the already refined neighbours around it (masking), and kept when it
    // succeeds this time. Only the failed ones and their neighbours are touched.
    // A refinement that walked away from its candidate by more than 0.4 r_small (or 1.5 vote
    // cells) slid onto a neighbour: also a failure.
    const double max_drift = std::max(0.4 * p.r_small(), 1.5 * vote_factor(p));
    auto drifted = [&](const Particle& q, const Candidate& c) { return std::hypot(q.x - c.x, q.y - c.y) > max_drift; };
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
                std::vector<Particle> local{Particle{}};
                local[0].x = cands[i].x, local[0].y = cands[i].y;
                cl.for_each_near(cands[i].x, cands[i].y, [&](std::size_t j, double, double, double) {
                    if (j != i && parts[j].strength > 0) local.push_back(parts[j]);
                });
                refine_particles(g, local, p.r_small() * (1 - rt), p.r_large() * (1 + rt), rp);
                if (local[0].strength > 0 && !drifted(local[0], cands[i])) parts[i] = local[0];
                else parts[i].strength = 0;
            }
        }
    }
    // Inside the image, not a duplicate, edge strong enough.
    std::erase_if(parts, [&](const Particle& q) {
        return !(q.x >= -0.5 && q.y >= -0.5 && q.x <= image.cols - 0.5 && q.y <= image.rows - 0.5) || !(q.strength > 0);
    });
    parts = suppress(std::move(parts), p.min_separation * p.r_small(), [](const Particle& q) { return q.strength; });
    std::vector<float> st;
    st.reserve(parts.size());
    for (const auto& q : parts) st.push_back(q.strength);
    const float med = quantile(st, 0.5);
    std::erase_if(parts, [&](const Particle& q) { return q.strength < p.min_edge * med; });
    auto classify = [&] {
        for (auto& q : parts) {
            q.quality = med > 0 ? std::min(1.0f, q.strength / med) : 0.0f;
            const auto s = classify_radius(q.radius, p.radii, p.radius_sigma);
            q.species = s.species;
            q.species_confidence = s.confidence;
        }
    };
    classify();
    if (p.joint) {
        // species by the measured template radii (the nominal ones may be off by a few %)
        const auto jf = joint_fit(image, parts, p.radii, p.joint_fit);
        if (jf.applied) {
            std::vector<float> st2;
            for (const auto& q : parts) st2.push_back(q.strength);
            const float med2 = quantile(st2, 0.5);
            for (auto& q : parts) {
                q.quality = med2 > 0 ? std::min(1.0f, q.strength / med2) : 0.0f;
                const auto s = classify_radius(q.radius, jf.template_radius, p.radius_sigma);
                q.species = s.species;
                q.species_confidence = s.confidence;
            }
        }
    }
    std::sort(parts.begin(), parts.end(), [](const Particle& a, const Particle& b) {
        return a.y != b.y ? a.y < b.y : a.x < b.x;
    });
    return parts;
}

std::vector<double> estimate_radii(const std::vector<cv::Mat>& frames, bool invert, double r_min, double r_max) {
    if (frames.empty()) throw ParameterError("estimate_radii: no frames");
    if (!(r_min >= 1.5 && r_max > r_min)) throw ParameterError("estimate_radii: need 1.5 <= r_min < r_max");
    DetectParams p;
    p.radii = {r_min, r_max};
    p.radius_tolerance = 0;
    p.invert = invert;
    p.min_separation = 1.2;
    std::vector<float> radii;
    for (const auto& fr : frames) {
        auto parts = locate(fr, p);
        std::vector<float> st;
        for (const auto& q : parts) st.push_back(q.strength);
        const float med = quantile(st, 0.5);
        for (const auto& q : parts)
            if (q.strength >= med && q.radius > r_min + 0.25 && q.radius < r_max - 0.25) radii.push_back(q.radius);
    }
    if (radii.size() < 3) throw FormatError("estimate_radii: too few disks found to estimate their radii (give --radius)");
    std::sort(radii.begin(), radii.end());
    // Two-cluster split (Otsu on the sorted values): minimise the within-cluster variance.
    const std::size_t n = radii.size();
    std::vector<double> cs(n + 1, 0), cs2(n + 1, 0);
    for (std::size_t i = 0; i < n; ++i) cs[i + 1] = cs[i] + radii[i], cs2[i + 1] = cs2[i] + double(radii[i]) * radii[i];
    double best = 1e300;
    std::size_t k_best = 0;
    for (std::size_t k = n / 10 + 1; k + n / 10 < n; ++k) {
        const double m1 = cs[k] / k, m2 = (cs[n] - cs[k]) / (n - k);
        const double v = (cs2[k] - k * m1 * m1) + (cs2[n] - cs2[k] - (n - k) * m2 * m2);
        if (v < best) best = v, k_best = k;
    }
    const double med_all = radii[n / 2];
    if (k_best > 0) {
        const double m1 = radii[k_best / 2], m2 = radii[k_best + (n - k_best) / 2];
        if (m2 > 1.1 * m1) return {m1, m2};
    }
    return {med_all};
}

}  // namespace vibra::tracking
