// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/tracking/detect.hpp"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <string>

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
}

namespace {

int vote_factor(const DetectParams& p) {
    return p.downsample > 0 ? p.downsample : std::max(1, static_cast<int>(std::floor(p.r_small() / 3.0)));
}
int contrast_block(const DetectParams& p) {
    return p.contrast_block > 0 ? p.contrast_block : std::max(32, static_cast<int>(std::ceil(6 * p.r_large())));
}

float quantile(std::vector<float> v, double q) {
    if (v.empty()) return 0;
    const auto k = static_cast<std::ptrdiff_t>(q * static_cast<double>(v.size() - 1));
    std::nth_element(v.begin(), v.begin() + k, v.end());
    return v[static_cast<std::size_t>(k)];
}

// Greedy by descending score: drop any point within `sep` of a kept one.
template <class T, class Score>
std::vector<T> suppress(std::vector<T> pts, double sep, Score score) {
    if (pts.size() < 2) return pts;
    std::sort(pts.begin(), pts.end(), [&](const T& a, const T& b) { return score(a) > score(b); });
    std::vector<double> xs(pts.size()), ys(pts.size());
    for (std::size_t i = 0; i < pts.size(); ++i) xs[i] = pts[i].x, ys[i] = pts[i].y;
    CellList cl(xs, ys, sep, Geometry{});
    std::vector<char> dead(pts.size(), 0);
    std::vector<T> out;
    out.reserve(pts.size());
    for (std::size_t i = 0; i < pts.size(); ++i) {
        if (dead[i]) continue;
        out.push_back(pts[i]);
        cl.for_each_near(xs[i], ys[i], [&](std::size_t j, double, double, double) {
            if (j > i) dead[j] = 1;
        });
    }
    return out;
}

}  // namespace

std::vector<Candidate> find_candidates(const Gradients& g, const DetectParams& p) {
    p.validate();
    const int f = vote_factor(p);
    const int w = g.gx.cols, h = g.gx.rows;
    const int aw = (w + f - 1) / f, ah = (h + f - 1) / f;
    cv::Mat acc(ah, aw, CV_32F, cv::Scalar(0));
    const double r_lo = p.r_small() * (1 - p.radius_tolerance), r_hi = p.r_large() * (1 + p.radius_tolerance);
    const double step = 0.7 * f;
    std::vector<double> rs;
    for (double r = r_lo; r <= r_hi + 1e-9; r += step) rs.push_back(r);
    if (rs.back() < r_hi - 0.3 * step) rs.push_back(r_hi);
    const double t2 = p.edge_threshold * p.edge_threshold;
    const double inv_f = 1.0 / f;
    // Voting pixels are sampled every `st` px (≤ 2), not every `f`: for large radii (f ≫ 2) a
    // sparse sample would leave only a handful of edge pixels per disk and miss disks at random.
    // Each vote is weighted by st²/f² so scores keep the same scale whatever the stride.
    const int st = std::min(f, 2);
    const float vote_w = static_cast<float>(st * st) / static_cast<float>(f * f);
    for (int y = st / 2; y < h; y += st) {
        const float* gxr = g.gx.ptr<float>(y);
        const float* gyr = g.gy.ptr<float>(y);
        for (int x = st / 2; x < w; x += st) {
            const float gx = gxr[x], gy = gyr[x];
            const float g2 = gx * gx + gy * gy;
            const float c = g.contrast_at(x, y);
            if (g2 < t2 * c * c) continue;
            const float gm = std::sqrt(g2);
            const float wgt = vote_w * std::min(1.0f, gm / c);
            const double ux = gx / gm, uy = gy / gm;
            for (double r : rs) {
                const int ax = static_cast<int>(std::floor((x + r * ux + 0.5) * inv_f));
                const int ay = static_cast<int>(std::floor((y + r * uy + 0.5) * inv_f));
                if (ax < 0 || ay < 0 || ax >= aw || ay >= ah) continue;
                acc.at<float>(ay, ax) += wgt;
            }
        }
    }
    cv::GaussianBlur(acc, acc, cv::Size(5, 5), 1.0, 1.0, cv::BORDER_CONSTANT);
    const double norm = 2 * M_PI * p.r_small() / (static_cast<double>(f) * f);
    const int m = std::max(1, static_cast<int>(std::lround(p.min_separation * p.r_small() / f)));
    cv::Mat dil;
    cv::dilate(acc, dil, cv::getStructuringElement(cv::MORPH_RECT, cv::Size(2 * m + 1, 2 * m + 1)));
    std::vector<Candidate> c;
    const float floor_acc = static_cast<float>(0.05 * norm);
    for (int y = 0; y < ah; ++y) {
        const float* a = acc.ptr<float>(y);
        const float* d = dil.ptr<float>(y);
        for (int x = 0; x < aw; ++x)
            if (a[x] >= d[x] && a[x] > floor_acc)
                c.push_back({(x + 0.5) * f - 0.5, (y + 0.5) * f - 0.5, static_cast<float>(a[x] / norm)});
    }
    std::vector<float> sc;
    sc.reserve(c.size());
    for (const auto& k : c) sc.push_back(k.score);
    const float typical = quantile(sc, 0.75);
    std::erase_if(c, [&](const Candidate& k) { return k.score < p.min_score * typical; });
    return suppress(std::move(c), p.min_separation * p.r_small(), [](const Candidate& k) { return k.score; });
}

std::vector<Particle> locate(const cv::Mat& image, const DetectParams& p) {
    p.validate();
    const Gradients g = compute_gradients(image, p.invert, contrast_block(p));
    const auto cands = find_candidates(g, p);
    std::vector<Particle> parts(cands.size());
    for (std::size_t i = 0; i < cands.size(); ++i) parts[i].x = cands[i].x, parts[i].y = cands[i].y;
    // The radius is searched close to the nominal radii only (±15%), so inner features of a
    // look (the inner edge of a dark ring, a rim) cannot be taken for the outer edge.
    const double rt = std::min(p.radius_tolerance, 0.15);
    refine_particles(g, parts, p.r_small() * (1 - rt), p.r_large() * (1 + rt), p.refine);
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
                refine_particles(g, local, p.r_small() * (1 - rt), p.r_large() * (1 + rt), p.refine);
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
    for (auto& q : parts) {
        q.quality = med > 0 ? std::min(1.0f, q.strength / med) : 0.0f;
        const auto s = classify_radius(q.radius, p.radii, p.radius_sigma);
        q.species = s.species;
        q.species_confidence = s.confidence;
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
