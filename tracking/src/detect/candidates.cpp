// SPDX-License-Identifier: GPL-3.0-or-later
// Candidate centres: gradient-direction voting on a downsampled grid and non-maximum suppression
// (detect.hpp, steps 2–3).
//
// Speed (bench/bench_tracking prints it per stage): the voting loop works on four samples at a
// time with OpenCV's universal intrinsics (SSE2 / NEON …), reads the contrast grid once per block
// row, and computes both coordinates of a vote in one double pair; local maxima are found by
// a separable window maximum over a ring of 2m+1 rows instead of a dilated copy of the map
// (no second full-size buffer). The arithmetic of every vote and the order of the additions are those of the
// plain loop,
// so the vote map and the candidates are the same (bench_tracking checks this; where the compiler
// contracts a·b + c·d into fused multiply-adds — not on x86-64 by default — the plain loop could
// differ in the last bit).
#include <opencv2/core/hal/intrin.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "detail/detect_util.hpp"
#include "vibra/tracking/detect.hpp"

namespace vibra::tracking {

using detail::quantile;
using detail::suppress;
using detail::vote_factor;

namespace {

// The smallest float ≥ t: for a float g, g < t ⇔ g < ceil_float(t).
inline float ceil_float(double t) {
    float f = static_cast<float>(t);
    if (static_cast<double>(f) < t) f = std::nextafter(f, HUGE_VALF);
    return f;
}

// Local ring search for candidates of large disks. A vote cell of f px leaves a candidate up to
// ~f px from the centre (and the vote peak of a broad, ring-like edge is itself a few px off),
// while the centre refinement (refine.hpp) captures only ~1–2 px. For f > kPolishFactor each
// candidate is therefore moved, at full resolution, to the best ring (ring_score) within
// ±(f + 2) px: on a 3 px grid of centres, then on a 1 px grid about the best. The vote score is kept.
constexpr int kPolishFactor = 3;
constexpr std::size_t kSectors = 16;
// Polished candidates with a ring score below this × the frame's median are dropped.
constexpr float kMinRing = 0.4f;
// Pixels whose gradient is below this × local contrast (per px) are left out of the sums (they add
// almost nothing); the sector-bin means still divide by every pixel of the bin (count table).
constexpr float kRingMinGradient = 0.03f;

struct EdgePixel {
    float dx, dy, gx,
        gy;  // position relative to the candidate (px); gradient / local contrast, capped at 1.5
};

// Sector index (0 … 15) of a direction, from the "diamond angle" (a monotonic stand-in for atan2).
inline std::size_t sector16(double ex, double ey) {
    const double ax = std::abs(ex), ay = std::abs(ey), s = ax + ay;
    if (s <= 0) return 0;
    // d in [0, 4): quadrant + position within it
    const double d = ey >= 0 ? (ex >= 0 ? ey / s : 1 + ax / s) : (ex < 0 ? 2 + ay / s : 3 + ax / s);
    return static_cast<std::size_t>(std::min(15, static_cast<int>(d * 4)));
}

// Pixel count of each (radius bin, sector) of the annulus [r_lo, r_hi) about a centre at
// fractional offset (fx, fy) from the pixel grid — the same for every whole-pixel shift of that
// centre, and counting pixels outside the image (as zero gradient).
void ring_counts(double fx, double fy, double r_lo, double r_hi, std::vector<int>& cnt) {
    const auto nb = static_cast<std::size_t>(std::ceil(r_hi - r_lo)) + 1;
    cnt.assign(nb * kSectors, 0);
    const int m = static_cast<int>(std::ceil(r_hi)) + 1;
    const double lo2 = r_lo * r_lo, hi2 = r_hi * r_hi;
    for (int v = -m; v <= m; ++v)
        for (int u = -m; u <= m; ++u) {
            const double ex = u - fx, ey = v - fy, r2 = ex * ex + ey * ey;
            if (r2 < lo2 || r2 >= hi2) continue;
            ++cnt[static_cast<std::size_t>(std::sqrt(r2) - r_lo) * kSectors + sector16(ex, ey)];
        }
}

// Ring score of the circle about (ox, oy) (relative to the candidate): per angular sector (16) and
// radius bin (1 px in [r_lo, r_hi)) the mean inward gradient m_k(ρ); at radius r the sector scores
// m_k(r + flank) − m_k(r − flank) (inward gradient outside r, outward inside: a bright ridge at r,
// or a plain bright disk's edge at r + flank); the score is the peak over r of their median over
// the sectors, so an edge must run all around (a straight wall, or a neighbour's edge over a few
// sectors, does not make a circle).
double ring_score(const std::vector<EdgePixel>& px, double ox, double oy, double r_lo, double r_hi, int flank,
                  const std::vector<int>& cnt, std::vector<double>& sum) {
    const auto nb = static_cast<std::size_t>(std::ceil(r_hi - r_lo)) + 1;
    sum.assign(nb * kSectors, 0.0);
    const double lo2 = r_lo * r_lo, hi2 = r_hi * r_hi;
    for (const EdgePixel& e : px) {
        const double ex = e.dx - ox, ey = e.dy - oy, r2 = ex * ex + ey * ey;
        if (r2 < lo2 || r2 >= hi2) continue;
        const double rho = std::sqrt(r2);
        sum[static_cast<std::size_t>(rho - r_lo) * kSectors + sector16(ex, ey)] -=
            (e.gx * ex + e.gy * ey) / rho;
    }
    for (std::size_t b = 0; b < nb * kSectors; ++b) sum[b] = cnt[b] > 0 ? sum[b] / cnt[b] : 0.0;
    double best = -1e300;
    double v[kSectors];
    const auto d = static_cast<std::size_t>(flank);
    for (std::size_t b = 0; b + 2 * d < nb; ++b) {
        std::size_t m = 0;
        for (std::size_t k = 0; k < kSectors; ++k) {
            const std::size_t o = (b + 2 * d) * kSectors + k, i = b * kSectors + k;
            if (cnt[o] > 0 || cnt[i] > 0) v[m++] = sum[o] - sum[i];
        }
        if (2 * m < kSectors) continue;
        std::nth_element(v, v + m / 2, v + m);
        best = std::max(best, v[m / 2]);
    }
    return best;
}

// Moves each candidate to its best ring; returns the ring scores.
std::vector<float> polish_candidates(const Gradients& g, std::vector<Candidate>& cands, double r_lo,
                                     double r_hi, int f, int flank) {
    const int w = g.gx.cols, h = g.gx.rows;
    const double reach = f + 2.0;
    const double ro = r_hi + reach + 1, ri = std::max(0.0, r_lo - reach - 1);
    std::vector<EdgePixel> px;
    std::vector<double> sum;
    std::vector<int> cnt;
    std::vector<float> ring;
    ring.reserve(cands.size());
    const float t2 = kRingMinGradient * kRingMinGradient;
    for (auto& c : cands) {
        px.clear();
        const int y0 = std::max(0, static_cast<int>(std::floor(c.y - ro))),
                  y1 = std::min(h - 1, static_cast<int>(std::ceil(c.y + ro)));
        const int x0 = std::max(0, static_cast<int>(std::floor(c.x - ro))),
                  x1 = std::min(w - 1, static_cast<int>(std::ceil(c.x + ro)));
        for (int y = y0; y <= y1; ++y) {
            const float* gxr = g.gx.ptr<float>(y);
            const float* gyr = g.gy.ptr<float>(y);
            const double dy = y - c.y;
            for (int x = x0; x <= x1; ++x) {
                const double dx = x - c.x, r2 = dx * dx + dy * dy;
                if (r2 > ro * ro || r2 < ri * ri) continue;
                const float con = g.contrast_at(x, y);
                float gx = gxr[x] / con, gy = gyr[x] / con;
                const float gm2 = gx * gx + gy * gy;
                if (gm2 < t2) continue;
                if (gm2 > 2.25f) {
                    const float s = 1.5f / std::sqrt(gm2);
                    gx *= s, gy *= s;
                }
                px.push_back({static_cast<float>(dx), static_cast<float>(dy), gx, gy});
            }
        }
        ring_counts(c.x - std::floor(c.x), c.y - std::floor(c.y), r_lo, r_hi, cnt);
        // a 3 px grid of centres over ±reach, then the 8 neighbours (1 px) of the best
        double bx = 0, by = 0, bs = -1e300;
        const int n3 = static_cast<int>(std::floor(reach / 3));
        for (int j = -n3; j <= n3; ++j)
            for (int i = -n3; i <= n3; ++i) {
                const double s = ring_score(px, 3.0 * i, 3.0 * j, r_lo, r_hi, flank, cnt, sum);
                if (s > bs) bs = s, bx = 3.0 * i, by = 3.0 * j;
            }
        const double cx = bx, cy = by;
        for (int j = -1; j <= 1; ++j)
            for (int i = -1; i <= 1; ++i) {
                if (i == 0 && j == 0) continue;
                const double s = ring_score(px, cx + i, cy + j, r_lo, r_hi, flank, cnt, sum);
                if (s > bs) bs = s, bx = cx + i, by = cy + j;
            }
        ring.push_back(static_cast<float>(bs));
        c.x += bx, c.y += by;
    }
    return ring;
}

// The radii at which an edge pixel votes: [r_lo, r_hi] in steps of 0.7 vote cells; for large
// disks (vote cell > kPolishFactor px) also their negatives, so that pixels vote on both sides of
// the edge. A ring-like disk (bright rim on a dark interior) has two edges of opposite polarity,
// and where the gap around a disk is as bright as its rim only the inner edge is left; both point
// at the centre. The polished candidates are then checked for a ring or edge all around.
std::vector<double> vote_radii(double r_lo, double r_hi, int f) {
    const double step = 0.7 * f;
    std::vector<double> rs;
    for (double r = r_lo; r <= r_hi + 1e-9; r += step) rs.push_back(r);
    if (rs.back() < r_hi - 0.3 * step) rs.push_back(r_hi);
    if (f > kPolishFactor)
        for (std::size_t k = 0, n0 = rs.size(); k < n0; ++k) rs.push_back(-rs[k]);
    return rs;
}

// Adds every edge pixel's votes into `acc` (the vote grid, image / f): a pixel whose gradient is
// at least edge_threshold × local contrast votes at each radius of `rs` along its gradient,
// weighted by min(1, |∇I| / contrast).
void cast_votes(const Gradients& g, const DetectParams& p, int f, const std::vector<double>& rs,
                cv::Mat& acc) {
    const int w = g.gx.cols, h = g.gx.rows;
    const int aw = acc.cols, ah = acc.rows;
    const double t2 = p.edge_threshold * p.edge_threshold;
    const double inv_f = 1.0 / f;
    // Voting pixels are sampled every `st` px (≤ 2), not every `f`: for large radii (f ≫ 2) a
    // sparse sample would leave only a handful of edge pixels per disk and miss disks at random.
    // Each vote is weighted by st²/f² so scores keep the same scale whatever the stride.
    const int st = std::min(f, 2);
    const float vote_w = static_cast<float>(st * st) / static_cast<float>(f * f);
    // Per row of voting pixels (samples x = st/2 + k·st): four samples at a time (SIMD: |∇I|²,
    // the threshold test, |∇I|, weight, direction), the passing ones listed in order, then their
    // votes with the position (x, y) + r·u of both axes in one double pair. Every value is
    // computed as in the plain per-pixel loop (same operations, same rounding, same order of the
    // additions into the map); the threshold g2 < t²c² (double) is the exact float test
    // g2 < ceil_float(t²c²).
    const int ncx = g.contrast.cols, ncy = g.contrast.rows;
    const int ns = (w - st / 2 + st - 1) / st;  // samples per row
    const int nsp = (ns + 3) / 4 * 4;
    const int nfull = st == 1 ? w / 4 * 4 : w / 8 * 4;  // samples loadable straight from the row
    std::vector<float> sgx(static_cast<std::size_t>(nsp), 0.0f), sgy(static_cast<std::size_t>(nsp), 0.0f);
    std::vector<float> sthr(static_cast<std::size_t>(nsp), HUGE_VALF),
        scon(static_cast<std::size_t>(nsp), 1.0f);
    std::vector<float> swgt(static_cast<std::size_t>(nsp)), sux(static_cast<std::size_t>(nsp)),
        suy(static_cast<std::size_t>(nsp));
    std::vector<int> col(static_cast<std::size_t>(ns)), blk(static_cast<std::size_t>(ns)),
        voters(static_cast<std::size_t>(nsp));
    for (int k = 0; k < ns; ++k) {
        col[static_cast<std::size_t>(k)] = st / 2 + k * st;
        blk[static_cast<std::size_t>(k)] = std::min(ncx - 1, col[static_cast<std::size_t>(k)] / g.block);
    }
    const cv::v_float32x4 one = cv::v_setall_f32(1.0f), vw = cv::v_setall_f32(vote_w);
    const cv::v_float64x2 half = cv::v_setall_f64(0.5), vinv_f = cv::v_setall_f64(inv_f);
    float* const acc0 = acc.ptr<float>(0);
    const std::size_t astep = acc.step1();
    int cur_by = -1;
    for (int y = st / 2; y < h; y += st) {
        const int by = std::min(ncy - 1, y / g.block);
        if (by != cur_by) {
            cur_by = by;
            const float* crow = g.contrast.ptr<float>(by);
            for (int k = 0; k < ns; ++k) {
                const float c = crow[blk[static_cast<std::size_t>(k)]];
                scon[static_cast<std::size_t>(k)] = c;
                sthr[static_cast<std::size_t>(k)] = ceil_float(t2 * c * c);
            }
        }
        const float* gxr = g.gx.ptr<float>(y);
        const float* gyr = g.gy.ptr<float>(y);
        for (int k = nfull; k < ns; ++k) {
            sgx[static_cast<std::size_t>(k)] = gxr[col[static_cast<std::size_t>(k)]];
            sgy[static_cast<std::size_t>(k)] = gyr[col[static_cast<std::size_t>(k)]];
        }
        int n = 0;
        for (int k = 0; k < nsp; k += 4) {
            cv::v_float32x4 gx, gy, other;
            if (k < nfull && st == 2) {  // odd lanes = samples x = 2k+1, 2k+3, …
                cv::v_load_deinterleave(gxr + 2 * k, other, gx);
                cv::v_load_deinterleave(gyr + 2 * k, other, gy);
            } else if (k < nfull) {
                gx = cv::v_load(gxr + k);
                gy = cv::v_load(gyr + k);
            } else {
                gx = cv::v_load(&sgx[static_cast<std::size_t>(k)]);
                gy = cv::v_load(&sgy[static_cast<std::size_t>(k)]);
            }
            const cv::v_float32x4 g2 = gx * gx + gy * gy;
            const int pass = cv::v_signmask(g2 >= cv::v_load(&sthr[static_cast<std::size_t>(k)]));
            if (!pass) continue;
            const cv::v_float32x4 gm = cv::v_sqrt(g2);
            cv::v_store(&swgt[static_cast<std::size_t>(k)],
                        vw * cv::v_min(one, gm / cv::v_load(&scon[static_cast<std::size_t>(k)])));
            cv::v_store(&sux[static_cast<std::size_t>(k)], gx / gm);
            cv::v_store(&suy[static_cast<std::size_t>(k)], gy / gm);
            for (int j = 0; j < 4; ++j) {  // branch-free compaction of the passing lanes
                voters[static_cast<std::size_t>(n)] = k + j;
                n += (pass >> j) & 1;
            }
        }
        for (int i = 0; i < n; ++i) {
            const auto k = static_cast<std::size_t>(voters[static_cast<std::size_t>(i)]);
            const float wgt = swgt[k];
            const cv::v_float64x2 pos(static_cast<double>(col[k]), static_cast<double>(y));
            const cv::v_float64x2 u(static_cast<double>(sux[k]), static_cast<double>(suy[k]));
            for (const double r : rs) {
                int a[4];
                cv::v_store(a, cv::v_floor((pos + cv::v_setall_f64(r) * u + half) * vinv_f));
                if (static_cast<unsigned>(a[0]) >= static_cast<unsigned>(aw) ||
                    static_cast<unsigned>(a[1]) >= static_cast<unsigned>(ah))
                    continue;
                acc0[static_cast<std::size_t>(a[1]) * astep + static_cast<std::size_t>(a[0])] += wgt;
            }
        }
    }
}

// Local maxima of the smoothed vote map: a value above `floor_acc` and at least as large as every
// value of its (2m+1)² window clipped to the map (what comparing with a rectangular dilation
// gives), as the maximum over 2m+1 row maxima kept in a ring of rows. Centres in px, score = vote / norm.
std::vector<Candidate> vote_maxima(const cv::Mat& acc, int m, float floor_acc, double norm, int f) {
    const int aw = acc.cols, ah = acc.rows;
    std::vector<Candidate> c;
    const int win = 2 * m + 1;
    const auto uaw = static_cast<std::size_t>(aw);
    std::vector<float> padded(uaw + 2 * static_cast<std::size_t>(m) + 4, -HUGE_VALF);
    std::vector<float> ring(static_cast<std::size_t>(win) * uaw), colmax(uaw);
    const int nvec = aw / 4 * 4;
    const cv::v_float32x4 vfloor = cv::v_setall_f32(floor_acc);
    auto row_max = [&](int yy, float* out) {
        const float* a = acc.ptr<float>(yy);
        std::copy(a, a + aw, padded.begin() + m);
        int x = 0;
        for (; x < nvec; x += 4) {
            cv::v_float32x4 v = cv::v_load(&padded[static_cast<std::size_t>(x)]);
            for (int d = 1; d < win; ++d)
                v = cv::v_max(v, cv::v_load(&padded[static_cast<std::size_t>(x + d)]));
            cv::v_store(out + x, v);
        }
        for (; x < aw; ++x) {
            float v = padded[static_cast<std::size_t>(x)];
            for (int d = 1; d < win; ++d) v = std::max(v, padded[static_cast<std::size_t>(x + d)]);
            out[x] = v;
        }
    };
    auto ring_row = [&](int yy) { return ring.data() + static_cast<std::size_t>(yy % win) * uaw; };
    int next = 0;  // next row whose row maximum is due
    for (int y = 0; y < ah; ++y) {
        const int y0 = std::max(0, y - m), y1 = std::min(ah - 1, y + m);
        for (; next <= y1; ++next) row_max(next, ring_row(next));
        std::copy(ring_row(y0), ring_row(y0) + aw, colmax.begin());
        for (int yy = y0 + 1; yy <= y1; ++yy) {
            const float* r = ring_row(yy);
            int x = 0;
            for (; x < nvec; x += 4)
                cv::v_store(&colmax[static_cast<std::size_t>(x)],
                            cv::v_max(cv::v_load(&colmax[static_cast<std::size_t>(x)]), cv::v_load(r + x)));
            for (; x < aw; ++x)
                colmax[static_cast<std::size_t>(x)] = std::max(colmax[static_cast<std::size_t>(x)], r[x]);
        }
        const float* a = acc.ptr<float>(y);
        auto keep = [&](int x) {
            const float v = a[x];
            if (v > floor_acc && v >= colmax[static_cast<std::size_t>(x)])
                c.push_back({(x + 0.5) * f - 0.5, (y + 0.5) * f - 0.5, static_cast<float>(v / norm)});
        };
        int x = 0;
        for (; x < nvec; x += 4) {  // maxima are rare: test four at a time
            const cv::v_float32x4 v = cv::v_load(a + x);
            const int hit =
                cv::v_signmask((v > vfloor) & (v >= cv::v_load(&colmax[static_cast<std::size_t>(x)])));
            if (hit)
                for (int j = 0; j < 4; ++j)
                    if ((hit >> j) & 1) keep(x + j);
        }
        for (; x < aw; ++x) keep(x);
    }
    return c;
}

// Maxima kept: score ≥ min_score × the frame's 75th percentile, then non-maximum suppression;
// large disks (f > kPolishFactor) are moved to their best ring and those whose ring is weak
// (< kMinRing × the frame's median ring score: voids, contacts or texture) are dropped, so that
// they no longer mask real neighbours in the refinement.
std::vector<Candidate> select_candidates(std::vector<Candidate> c, const Gradients& g, const DetectParams& p,
                                         int f, double r_lo, double r_hi) {
    std::vector<float> sc;
    sc.reserve(c.size());
    for (const auto& k : c) sc.push_back(k.score);
    const float typical = quantile(sc, 0.75);
    std::erase_if(c, [&](const Candidate& k) { return k.score < p.min_score * typical; });
    c = suppress(std::move(c), p.min_separation * p.r_small(), [](const Candidate& k) { return k.score; });
    if (f > kPolishFactor) {
        const int flank = std::max(2, static_cast<int>(std::lround(p.r_small() / 8)));
        const double rt = std::min(p.ring_tolerance, p.radius_tolerance);
        const double ring_lo = std::max(r_lo, p.r_small() * (1 - rt)),
                     ring_hi = std::min(r_hi, p.r_large() * (1 + rt));
        const auto ring = polish_candidates(g, c, ring_lo - flank, ring_hi + flank, f, flank);
        const float med = quantile(ring, 0.5);
        std::vector<Candidate> kept;
        kept.reserve(c.size());
        for (std::size_t i = 0; i < c.size(); ++i)
            if (ring[i] >= kMinRing * med) kept.push_back(c[i]);
        c = std::move(kept);
        c = suppress(std::move(c), p.min_separation * p.r_small(),
                     [](const Candidate& k) { return k.score; });
    }
    return c;
}

}  // namespace

std::vector<Candidate> find_candidates(const Gradients& g, const DetectParams& p) {
    p.validate();
    const int f = vote_factor(p);
    const int w = g.gx.cols, h = g.gx.rows;
    const int aw = (w + f - 1) / f, ah = (h + f - 1) / f;
    cv::Mat acc = detail::large_mat(ah, aw, CV_32F);
    acc.setTo(cv::Scalar(0));
    const double r_lo = p.r_small() * (1 - p.radius_tolerance), r_hi = p.r_large() * (1 + p.radius_tolerance);
    cast_votes(g, p, f, vote_radii(r_lo, r_hi, f), acc);
    cv::GaussianBlur(acc, acc, cv::Size(5, 5), 1.0, 1.0, cv::BORDER_CONSTANT);
    const double norm = 2 * M_PI * p.r_small() / (static_cast<double>(f) * f);
    // (large disks: half the window — a void or contact maximum within min_separation of a disk's
    // weaker peak would hide it; the extra maxima are merged or dropped after the ring search)
    const bool two_sided = f > kPolishFactor;
    const int m = std::max(
        1, static_cast<int>(std::lround((two_sided ? 0.5 : 1.0) * p.min_separation * p.r_small() / f)));
    auto c = vote_maxima(acc, m, static_cast<float>(0.05 * norm), norm, f);
    return select_candidates(std::move(c), g, p, f, r_lo, r_hi);
}

}  // namespace vibra::tracking
