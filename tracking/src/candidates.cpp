// SPDX-License-Identifier: GPL-3.0-or-later
// Candidate centres: gradient-direction voting on a downsampled grid and non-maximum suppression
// (detect.hpp, steps 2–3).
//
// Speed (bench/bench_tracking prints it per stage): the voting loop works on four samples at a
// time with OpenCV's universal intrinsics (SSE2 / NEON …), reads the contrast grid once per block
// row, and computes both coordinates of a vote in one double pair; local maxima are found by
// a separable window maximum over a ring of 2m+1 rows instead of a dilated copy of the map
// (no second full-size buffer). The arithmetic of every vote and the order of the additions are those of the plain loop,
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

}  // namespace

std::vector<Candidate> find_candidates(const Gradients& g, const DetectParams& p) {
    p.validate();
    const int f = vote_factor(p);
    const int w = g.gx.cols, h = g.gx.rows;
    const int aw = (w + f - 1) / f, ah = (h + f - 1) / f;
    cv::Mat acc = detail::large_mat(ah, aw, CV_32F);
    acc.setTo(cv::Scalar(0));
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
    std::vector<float> sthr(static_cast<std::size_t>(nsp), HUGE_VALF), scon(static_cast<std::size_t>(nsp), 1.0f);
    std::vector<float> swgt(static_cast<std::size_t>(nsp)), sux(static_cast<std::size_t>(nsp)), suy(static_cast<std::size_t>(nsp));
    std::vector<int> col(static_cast<std::size_t>(ns)), blk(static_cast<std::size_t>(ns)), voters(static_cast<std::size_t>(nsp));
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
            cv::v_store(&swgt[static_cast<std::size_t>(k)], vw * cv::v_min(one, gm / cv::v_load(&scon[static_cast<std::size_t>(k)])));
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
                if (static_cast<unsigned>(a[0]) >= static_cast<unsigned>(aw) || static_cast<unsigned>(a[1]) >= static_cast<unsigned>(ah))
                    continue;
                acc0[static_cast<std::size_t>(a[1]) * astep + static_cast<std::size_t>(a[0])] += wgt;
            }
        }
    }
    cv::GaussianBlur(acc, acc, cv::Size(5, 5), 1.0, 1.0, cv::BORDER_CONSTANT);
    const double norm = 2 * M_PI * p.r_small() / (static_cast<double>(f) * f);
    const int m = std::max(1, static_cast<int>(std::lround(p.min_separation * p.r_small() / f)));
    // Local maxima: a value above the floor and at least as large as every value of its
    // (2m+1)² window clipped to the map (what comparing with a rectangular dilation gives),
    // as the maximum over 2m+1 row maxima kept in a ring of rows.
    std::vector<Candidate> c;
    const float floor_acc = static_cast<float>(0.05 * norm);
    {
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
                for (int d = 1; d < win; ++d) v = cv::v_max(v, cv::v_load(&padded[static_cast<std::size_t>(x + d)]));
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
                for (; x < aw; ++x) colmax[static_cast<std::size_t>(x)] = std::max(colmax[static_cast<std::size_t>(x)], r[x]);
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
                const int hit = cv::v_signmask((v > vfloor) & (v >= cv::v_load(&colmax[static_cast<std::size_t>(x)])));
                if (hit)
                    for (int j = 0; j < 4; ++j)
                        if ((hit >> j) & 1) keep(x + j);
            }
            for (; x < aw; ++x) keep(x);
        }
    }
    std::vector<float> sc;
    sc.reserve(c.size());
    for (const auto& k : c) sc.push_back(k.score);
    const float typical = quantile(sc, 0.75);
    std::erase_if(c, [&](const Candidate& k) { return k.score < p.min_score * typical; });
    return suppress(std::move(c), p.min_separation * p.r_small(), [](const Candidate& k) { return k.score; });
}

}  // namespace vibra::tracking
