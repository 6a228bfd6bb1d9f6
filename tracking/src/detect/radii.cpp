// SPDX-License-Identifier: GPL-3.0-or-later
// Radius estimate (`vibra track --radii auto`, the default when no radius is given): a coarse
// scan over scales finds the size of the best circles, then locate() over ±50% of that scale
// measures the radii and the histogram of the measured radii decides between one and two sizes
// (detect.hpp, docs/tracking.md "Radii").
//
// Why a scan first: one detection over the whole range (3–80 px) let whatever is most numerous
// win — the texture inside the real discs (7 / 11 px for discs of 46–59 px), pairs and voids in
// bulk water (17 / 23 px for spots of ≈ 5 px). Circles that are edges all around are what disks
// have and texture, noise and voids lack, so the scan scores each vote maximum by the lower
// quartile of its signed radial gradient around the circle.
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "detail/detect_util.hpp"
#include "vibra/core/error.hpp"
#include "vibra/tracking/detect.hpp"

namespace vibra::tracking {

using detail::quantile;

void RadiusEstimateParams::validate() const {
    auto bad = [](const std::string& f, double v, const char* rule) {
        throw ParameterError("estimate_radii: " + f + " must be " + rule + ", got " + std::to_string(v));
    };
    if (!(r_min >= 1.5) || !std::isfinite(r_min)) bad("r_min", r_min, ">= 1.5 px");
    if (!(r_max > r_min) || !std::isfinite(r_max)) bad("r_max", r_max, "> r_min");
    if (enough_disks < 1) bad("enough_disks", static_cast<double>(enough_disks), ">= 1");
    if (!(max_valley > 0 && max_valley < 1)) bad("max_valley", max_valley, "in (0, 1)");
    if (!(ambiguous_valley >= max_valley && ambiguous_valley <= 1))
        bad("ambiguous_valley", ambiguous_valley, "in [max_valley, 1]");
}

std::string RadiusEstimate::summary() const {
    char buf[200];
    if (radii.size() == 2)
        std::snprintf(buf, sizeof buf, "radii: small %.1f px, large %.1f px", radii[0], radii[1]);
    else if (radii.size() == 1)
        std::snprintf(buf, sizeof buf, "radius: %.1f px (one size)", radii[0]);
    else
        return "radii: none";
    char tail[120];
    std::snprintf(tail, sizeof tail, " from %lld frame%s, %.0f disks per frame",
                  static_cast<long long>(frames), frames == 1 ? "" : "s", disks_per_frame);
    return std::string(buf) + tail;
}

namespace {

// Coarse scan constants (docs/tracking.md "Radii").
constexpr double kGridStep = 1.1;      // radii r_min · 1.1^k
constexpr double kMinLevelRadius = 4;  // a level is downsampled while r / d stays ≥ 4 px … 8 px
constexpr float kVoteEdge = 0.05f;     // pixels with |∇I| ≥ this × local contrast vote
constexpr float kMinPeak = 0.05f;      // vote maxima below this (× circumference) are not circles
constexpr double kCircleFloor = 0.15;  // circle score counted above this
constexpr int kAngles = 64;
constexpr int kLevelBlock = 48;   // contrast cells of a level (6 × its largest r / d)
constexpr double kMinSecond = 5;  // a second size needs this many radii in its peak (±2 bins)

struct EdgeSample {
    int x, y;
    float ux, uy, w;
};

// One level of the scan: the frame downsampled by d (area mean), its gradients and edge pixels.
struct Level {
    int d = 1;
    Gradients g;
    std::vector<EdgeSample> edges;
};

Level make_level(const cv::Mat& frame, bool invert, int d) {
    Level lv;
    lv.d = d;
    cv::Mat img;
    if (d == 1) {
        img = frame;
    } else {
        cv::Mat f16;
        if (frame.depth() == CV_8U)
            frame.convertTo(f16, CV_16U, 256.0);
        else
            f16 = frame;
        cv::resize(f16, img, cv::Size(frame.cols / d, frame.rows / d), 0, 0, cv::INTER_AREA);
    }
    lv.g = compute_gradients(img, invert, kLevelBlock);
    for (int y = 0; y < img.rows; ++y) {
        const float* gx = lv.g.gx.ptr<float>(y);
        const float* gy = lv.g.gy.ptr<float>(y);
        for (int x = 0; x < img.cols; ++x) {
            const float m = std::hypot(gx[x], gy[x]);
            const float rel = m / lv.g.contrast_at(x, y);
            if (!(rel >= kVoteEdge)) continue;
            lv.edges.push_back({x, y, gx[x] / m, gy[x] / m, std::min(1.0f, rel)});
        }
    }
    return lv;
}

// Σ over the vote maxima of (circle score − floor)₊ · r for one radius r (px of the frame).
double scale_score(const Level& lv, double r, const std::array<double, kAngles>& ca,
                   const std::array<double, kAngles>& sa) {
    const cv::Mat& gx = lv.g.gx;
    const cv::Mat& gy = lv.g.gy;
    const int w = gx.cols, h = gx.rows;
    const double rd = r / lv.d;
    cv::Mat votes(h, w, CV_32F, cv::Scalar(0));
    for (const auto& e : lv.edges)
        for (int sg = -1; sg <= 1; sg += 2) {
            const auto X = static_cast<int>(std::lround(e.x + sg * rd * e.ux));
            const auto Y = static_cast<int>(std::lround(e.y + sg * rd * e.uy));
            if (X >= 0 && Y >= 0 && X < w && Y < h) votes.at<float>(Y, X) += e.w;
        }
    cv::Mat v;
    cv::boxFilter(votes, v, -1, cv::Size(3, 3), cv::Point(-1, -1), false, cv::BORDER_CONSTANT);
    v *= 1.0 / (2 * M_PI * rd);
    const int win = std::max(3, static_cast<int>(1.6 * rd) | 1);
    cv::Mat mx;
    cv::dilate(v, mx, cv::getStructuringElement(cv::MORPH_RECT, cv::Size(win, win)));
    double score = 0;
    std::array<float, kAngles> best{};
    for (int y = 0; y < h; ++y) {
        const float* vr = v.ptr<float>(y);
        const float* mr = mx.ptr<float>(y);
        for (int x = 0; x < w; ++x) {
            if (!(vr[x] > kMinPeak) || vr[x] != mr[x]) continue;
            double c = -1e30;
            for (int sg = -1; sg <= 1; sg += 2) {
                best.fill(-1e30f);
                for (double dr = -1; dr <= 1.001; dr += 0.5)
                    for (int a = 0; a < kAngles; ++a) {
                        const auto ux = static_cast<std::size_t>(a);
                        const int X =
                            std::clamp(static_cast<int>(std::lround(x + (rd + dr) * ca[ux])), 0, w - 1);
                        const int Y =
                            std::clamp(static_cast<int>(std::lround(y + (rd + dr) * sa[ux])), 0, h - 1);
                        const float g = -static_cast<float>(sg) *
                                        (gx.at<float>(Y, X) * static_cast<float>(ca[ux]) +
                                         gy.at<float>(Y, X) * static_cast<float>(sa[ux])) /
                                        lv.g.contrast_at(X, Y);
                        best[ux] = std::max(best[ux], g);
                    }
                std::nth_element(best.begin(), best.begin() + kAngles / 4, best.end());
                c = std::max(c, static_cast<double>(best[kAngles / 4]));
            }
            score += std::max(0.0, c - kCircleFloor) * r * r;
        }
    }
    return score;
}

// The coarse scan of one frame, added to `score` (one entry per radius of `grid`).
void coarse_scan(const cv::Mat& frame, bool invert, const std::vector<double>& grid,
                 std::vector<double>& score) {
    std::array<double, kAngles> ca{}, sa{};
    for (int a = 0; a < kAngles; ++a)
        ca[static_cast<std::size_t>(a)] = std::cos(2 * M_PI * a / kAngles),
        sa[static_cast<std::size_t>(a)] = std::sin(2 * M_PI * a / kAngles);
    int d_now = 0;
    Level lv;
    for (std::size_t k = 0; k < grid.size(); ++k) {
        int d = 1;
        while (2.0 * d * kMinLevelRadius <= grid[k]) d *= 2;
        if (frame.cols / d < 16 || frame.rows / d < 16) break;
        if (d != d_now) lv = make_level(frame, invert, d), d_now = d;
        score[k] += scale_score(lv, grid[k], ca, sa);
    }
}

// Blob rule (docs/tracking.md "Radii"): the median radial profile (intensity, dark spots
// inverted) of the stronger half of `parts` about their centres, relative to the background ring
// (3a…4a), normalised by its centre depth. A disk's edge is narrow beside its radius: 1.5 a out,
// the profile is ≈ background (≤ 0.08 for r 4 px under a PSF of σ 1.5 px). A blurred blob (e.g.
// colloids in a microscope) has a tail as wide as its core (a Gaussian: 0.21; bulk water ≈ 0.22)
// and its steepest edge a lies near half depth, well inside the spot. Then the radius is the
// spot's extent: a Gaussian exp(−r²/2σ²) is fitted to the profile out to 3a (least squares in σ)
// and the radius is where it falls to kBlobTail of its depth (2.65 σ; 97% of the spot's integrated
// intensity inside). The fitted σ uses the whole core; where the raw profile itself crosses 3% is
// set by its faint tail and moved by 0.25 px between frames of bulk water (4.5–4.7 px), the fit by
// 0.05 σ. Returns 0 when the spots are disks (or too few to tell).
constexpr double kBlobShoulder = 0.15;  // profile at 1.5 a above this: a blob
constexpr double kBlobTail = 0.03;      // blob radius: the fitted Gaussian down to 3% of its depth

// σ of the Gaussian exp(−r²/2σ²) nearest (least squares) to the profile m (m[k] at r = k·step)
// for r ≤ r_fit: golden-section search over σ in [0.2 a, 4 a] (the sum is unimodal there).
double gaussian_sigma(const std::vector<double>& m, double step, double r_fit, double a) {
    auto sse = [&](double s) {
        double e = 0;
        for (std::size_t k = 0; k < m.size() && static_cast<double>(k) * step <= r_fit; ++k) {
            const double r = static_cast<double>(k) * step;
            const double d = m[k] - std::exp(-r * r / (2 * s * s));
            e += d * d;
        }
        return e;
    };
    const double g = (std::sqrt(5.0) - 1) / 2;
    double lo = 0.2 * a, hi = 4 * a;
    double x1 = hi - g * (hi - lo), x2 = lo + g * (hi - lo), f1 = sse(x1), f2 = sse(x2);
    for (int it = 0; it < 60; ++it) {
        if (f1 < f2)
            hi = x2, x2 = x1, f2 = f1, x1 = hi - g * (hi - lo), f1 = sse(x1);
        else
            lo = x1, x1 = x2, f1 = f2, x2 = lo + g * (hi - lo), f2 = sse(x2);
    }
    return 0.5 * (lo + hi);
}

double blob_radius(const cv::Mat& frame, bool invert, const std::vector<Particle>& parts, double a) {
    cv::Mat f;
    frame.convertTo(f, CV_32F);
    if (invert) f = -f;
    const double step = 0.25, rmax = 4 * a;
    const auto nr = static_cast<std::size_t>(rmax / step) + 1;
    std::vector<float> st;
    for (const auto& q : parts) st.push_back(q.strength);
    const float med = quantile(st, 0.5);
    std::vector<std::vector<float>> rings(nr);
    constexpr int kDirs = 32;
    std::size_t used = 0;
    for (const auto& q : parts) {
        if (q.strength < med) continue;
        if (q.x - rmax < 1 || q.y - rmax < 1 || q.x + rmax > f.cols - 2 || q.y + rmax > f.rows - 2) continue;
        std::vector<double> prof(nr);
        for (std::size_t k = 0; k < nr; ++k) {
            const double r = static_cast<double>(k) * step;
            double sum = 0;
            for (int d = 0; d < kDirs; ++d) {
                const double t = 2 * M_PI * d / kDirs;
                const double X = q.x + r * std::cos(t), Y = q.y + r * std::sin(t);
                const int x0 = static_cast<int>(std::floor(X)), y0 = static_cast<int>(std::floor(Y));
                const double fx = X - x0, fy = Y - y0;
                sum += (1 - fy) * ((1 - fx) * f.at<float>(y0, x0) + fx * f.at<float>(y0, x0 + 1)) +
                       fy * ((1 - fx) * f.at<float>(y0 + 1, x0) + fx * f.at<float>(y0 + 1, x0 + 1));
            }
            prof[k] = sum / kDirs;
        }
        double bg = 0;
        std::size_t nbg = 0;
        for (std::size_t k = static_cast<std::size_t>(3 * a / step); k < nr; ++k) bg += prof[k], ++nbg;
        bg /= static_cast<double>(std::max<std::size_t>(1, nbg));
        const double depth = prof[0] - bg;
        if (!(depth > 0)) continue;
        for (std::size_t k = 0; k < nr; ++k) rings[k].push_back(static_cast<float>((prof[k] - bg) / depth));
        ++used;
    }
    if (used < 10) return 0;
    std::vector<double> m(nr);
    for (std::size_t k = 0; k < nr; ++k) m[k] = quantile(rings[k], 0.5);
    auto at = [&](double r) {
        const double u = r / step;
        const auto k = std::min(nr - 2, static_cast<std::size_t>(u));
        return m[k] + (u - static_cast<double>(k)) * (m[k + 1] - m[k]);
    };
    // A blob peaks at its centre (a bright rim or a marker dot does not), its steepest edge is near
    // half depth, and it has a shoulder outside that edge.
    if (*std::max_element(m.begin(), m.end()) > 1.05 || !(at(a) > 0.2 && at(a) < 0.8)) return 0;
    if (!(at(1.5 * a) > kBlobShoulder)) return 0;
    return std::sqrt(2 * std::log(1 / kBlobTail)) * gaussian_sigma(m, step, 3 * a, a);
}

}  // namespace

RadiusEstimate estimate_radius_classes(const std::vector<cv::Mat>& frames, const RadiusEstimateParams& p) {
    p.validate();
    if (frames.empty()) throw ParameterError("estimate_radii: no frames");
    const std::string give = " (give --radius R, or --radius-small R1 --radius-large R2)";
    RadiusEstimate est;
    // 1. Coarse scan on the first three frames.
    std::vector<double> grid;
    for (double r = p.r_min; r <= p.r_max * 1.0001; r *= kGridStep) grid.push_back(r);
    std::vector<double> score(grid.size(), 0.0);
    for (std::size_t f = 0; f < std::min<std::size_t>(3, frames.size()); ++f)
        coarse_scan(frames[f], p.invert, grid, score);
    const auto kbest = static_cast<std::size_t>(std::max_element(score.begin(), score.end()) - score.begin());
    if (!(score[kbest] > 0))
        throw FormatError("estimate_radii: too few disks found to estimate their radii" + give);
    est.scale = grid[kbest];

    // 2. Fine stage: locate() over ±50% of the scale; the radii of the stronger half.
    DetectParams dp;
    dp.radii = {std::max(1.5, est.scale / 1.8), est.scale * 1.5};
    dp.radius_tolerance = 0;
    dp.invert = p.invert;
    dp.min_separation = 1.2;
    dp.joint = false;  // templates at the range's ends would describe nothing
    const double lo = dp.radii[0] * 1.02, hi = dp.radii[1] / 1.02;
    std::vector<float> radii, weight;  // measured radius, its edge strength / the frame's median (≤ 2)
    std::vector<float> per_frame;
    std::vector<Particle> first;  // the first frame's disks (blob rule)
    for (const auto& fr : frames) {
        if (radii.size() >= p.enough_disks) break;
        const auto parts = locate(fr, dp);
        if (est.frames == 0) first = parts;
        ++est.frames;
        std::vector<float> st;
        for (const auto& q : parts) st.push_back(q.strength);
        const float med = quantile(st, 0.5);
        std::size_t n = 0;
        for (const auto& q : parts) {
            if (q.radius > lo && q.radius < hi) ++n;
            if (q.strength >= 0.5f * med && q.radius > lo && q.radius < hi)
                radii.push_back(q.radius), weight.push_back(std::min(2.0f, q.strength / med));
        }
        per_frame.push_back(static_cast<float>(n));
    }
    est.measured = radii.size();
    est.disks_per_frame = quantile(per_frame, 0.5);
    if (radii.empty())
        throw FormatError("estimate_radii: too few disks found to estimate their radii" + give);

    // Modes of the radius histogram (bins of 2% of the scale, smoothed over ±2 bins): the highest
    // is one size; a second peak within a factor 1.6 of it, ≥ 10% away and ≥ 10% as high, separated
    // from it by a dip (valley ≤ max_valley × the lower peak), is the other. A second peak at
    // least a quarter as high whose dip is unclear (≤ ambiguous_valley) makes the estimate
    // ambiguous. Each size is the median of the radii within ±7% of its peak.
    const double bw = 0.02 * est.scale;
    const auto nb = static_cast<std::size_t>(std::ceil(dp.radii[1] / bw)) + 3;
    std::vector<double> hist(nb, 0.0), sm(nb, 0.0);
    for (std::size_t i = 0; i < radii.size(); ++i)
        hist[std::min(nb - 1, static_cast<std::size_t>(radii[i] / bw))] += weight[i];
    for (std::size_t k = 0; k < nb; ++k)
        for (std::size_t j = k >= 2 ? k - 2 : 0; j <= std::min(nb - 1, k + 2); ++j) sm[k] += hist[j];
    const auto k1 = static_cast<std::size_t>(std::max_element(sm.begin(), sm.end()) - sm.begin());
    const double m1 = (static_cast<double>(k1) + 0.5) * bw;
    std::size_t k2 = nb, k_amb = nb;
    for (std::size_t k = 1; k + 1 < nb; ++k) {
        const double r = (static_cast<double>(k) + 0.5) * bw;
        if (r < m1 / 1.6 || r > m1 * 1.6 || std::abs(r - m1) < 0.1 * m1) continue;
        if (sm[k] < sm[k - 1] || sm[k] < sm[k + 1] || sm[k] < 0.1 * sm[k1] || sm[k] < kMinSecond) continue;
        const auto a = std::min(k, k1), b = std::max(k, k1);
        const double valley = *std::min_element(sm.begin() + static_cast<std::ptrdiff_t>(a),
                                                sm.begin() + static_cast<std::ptrdiff_t>(b) + 1);
        if (valley <= p.max_valley * sm[k]) {
            if (k2 == nb || sm[k] > sm[k2]) k2 = k;
        } else if (valley <= p.ambiguous_valley * sm[k] && sm[k] >= 0.25 * sm[k1]) {
            if (k_amb == nb || sm[k] > sm[k_amb]) k_amb = k;
        }
    }
    auto near = [&](double m, float min_weight = 0) {
        std::vector<float> v;
        for (std::size_t i = 0; i < radii.size(); ++i)
            if (std::abs(radii[i] - m) <= 0.07 * m && weight[i] >= min_weight) v.push_back(radii[i]);
        return v;
    };
    auto median_near = [&](double m) {
        const auto v = near(m);
        return v.empty() ? m : static_cast<double>(quantile(v, 0.5));
    };
    // A second size is seen in most frames (on average one disk per frame at least, with an edge
    // as strong as the frame's median): scattered or faint false circles on a wall, a floor (the
    // falling ball's) or the halo of a ring (the Phantom sample's) are not a size class.
    const auto min_second =
        static_cast<std::size_t>(std::max<double>(kMinSecond, static_cast<double>(est.frames)));
    if (k2 != nb && near((static_cast<double>(k2) + 0.5) * bw, 1.0f).size() < min_second) k2 = nb;
    if (k_amb != nb && near((static_cast<double>(k_amb) + 0.5) * bw, 1.0f).size() < min_second) k_amb = nb;
    if (k2 == nb && k_amb != nb) {
        char buf[200];
        std::snprintf(buf, sizeof buf,
                      "estimate_radii: the measured radii are ambiguous: peaks at %.1f and %.1f px without a "
                      "clear dip between them (one size or two?)",
                      m1, (static_cast<double>(k_amb) + 0.5) * bw);
        throw FormatError(buf + give);
    }
    const double a = median_near(m1);
    if (k2 == nb) {
        const double b = blob_radius(frames.front(), p.invert, first, a);
        est.radii = {b > 0 ? b : a};
    } else {
        const double b = median_near((static_cast<double>(k2) + 0.5) * bw);
        est.radii = {std::min(a, b), std::max(a, b)};
    }
    return est;
}

std::string EdgeAdaptation::summary(const DetectParams& adapted) const {
    char buf[240];
    std::snprintf(
        buf, sizeof buf,
        "%s edges (median strength %.3f x local contrast over %zu disks): edge threshold %.3g, min edge %.3g",
        factor < 1 ? "weak" : "sharp", median_strength, disks, adapted.edge_threshold, adapted.min_edge);
    return buf;
}

namespace {

// The edge strengths of the disks locate() finds on the central crop of `frame` whose sides are
// `side(cols)` × `side(rows)`, leaving out the disks within a large radius of the crop's border
// (cut by it).
template <class Side>
std::vector<float> central_edge_strengths(const cv::Mat& frame, const DetectParams& m, Side side) {
    const double rl = m.r_large();
    const int cw = side(frame.cols), ch = side(frame.rows);
    const cv::Rect crop((frame.cols - cw) / 2, (frame.rows - ch) / 2, cw, ch);
    std::vector<float> st;
    for (const auto& q : locate(frame(crop), m)) {
        const bool inner = (crop.x == 0 || q.x >= rl) && (crop.x + cw == frame.cols || q.x <= cw - rl) &&
                           (crop.y == 0 || q.y >= rl) && (crop.y + ch == frame.rows || q.y <= ch - rl);
        if (inner) st.push_back(q.strength);
    }
    return st;
}

}  // namespace

EdgeAdaptation adapt_edge_thresholds(const cv::Mat& frame, DetectParams& p) {
    constexpr double kSharpEdge = 0.2;  // median strength from which the defaults apply unchanged
    DetectParams m = p;
    m.joint = false;
    m.min_edge = 0;
    // A central crop of at least half the frame's side (or 40 large radii) holds hundreds of disks,
    // enough for a median, at a quarter of a whole frame's locate(). A quarter of the side (or 20
    // large radii) is looked at first: when its disks (at least 50) are clearly sharp (median at
    // least 1.25 × the sharp level) the defaults stand and the larger crop is not needed; else the
    // larger crop decides alone (so weak edges are measured exactly as before).
    const double rl = p.r_large();
    const auto half = [&](int n) {
        return std::min(n, std::max((n + 1) / 2, static_cast<int>(std::ceil(40 * rl))));
    };
    const auto quarter = [&](int n) {
        return std::min(n, std::max((n + 3) / 4, static_cast<int>(std::ceil(20 * rl))));
    };
    std::vector<float> st;
    if (quarter(frame.cols) < half(frame.cols) || quarter(frame.rows) < half(frame.rows)) {
        st = central_edge_strengths(frame, m, quarter);
        if (st.size() < 50 || quantile(st, 0.5) < 1.25 * kSharpEdge)
            st = central_edge_strengths(frame, m, half);
    } else {
        st = central_edge_strengths(frame, m, half);
    }
    EdgeAdaptation a;
    a.disks = st.size();
    if (st.empty()) return a;
    a.median_strength = quantile(st, 0.5);
    a.factor = std::min(1.0, a.median_strength / kSharpEdge);
    if (a.factor < 1) p.edge_threshold *= a.factor, p.min_edge *= a.factor;
    return a;
}

std::vector<double> estimate_radii(const std::vector<cv::Mat>& frames, bool invert, double r_min,
                                   double r_max) {
    RadiusEstimateParams p;
    p.invert = invert;
    p.r_min = r_min;
    p.r_max = r_max;
    return estimate_radius_classes(frames, p).radii;
}

}  // namespace vibra::tracking
