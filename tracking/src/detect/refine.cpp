// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/tracking/refine.hpp"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define VIBRA_REFINE_AVX2 1
#endif

#include "vibra/core/cell_list.hpp"
#include "vibra/core/error.hpp"
#include "detail/fit_kernels.hpp"  // fit_kernels_vectorised(): the CPU check of the AVX2 paths

namespace vibra::tracking {

void RefineParams::validate() const {
    auto bad = [](const char* f, double v, const char* rule) {
        throw ParameterError(std::string("refine: ") + f + " must be " + rule + ", got " + std::to_string(v));
    };
    if (!(annulus_half_width >= 0.5)) bad("annulus_half_width", annulus_half_width, ">= 0.5 px");
    if (!(neighbour_margin >= 0)) bad("neighbour_margin", neighbour_margin, ">= 0 px");
    if (iterations < 1) bad("iterations", iterations, ">= 1");
    if (coarse_iterations < 0 || coarse_iterations > iterations)
        bad("coarse_iterations", coarse_iterations, "in [0, iterations]");
    if (!(edge_margin >= 0 && edge_margin <= 5)) bad("edge_margin", edge_margin, "in [0, 5] px");
    if (!(radius_bin > 0.05 && radius_bin <= 2)) bad("radius_bin", radius_bin, "in (0.05, 2] px");
    if (!(profile_bin >= 0.05 && profile_bin <= 1)) bad("profile_bin", profile_bin, "in [0.05, 1] px");
    if (!(settle >= 0 && settle < 1)) bad("settle", settle, "in [0, 1) px");
}

namespace {

struct Profile {
    std::vector<double> sum;
    std::vector<int> count;
    double lo = 0, bin = 0.5, inv_bin = 2;
    void reset(double lo_, double hi_, double bin_) {
        lo = lo_;
        bin = bin_;
        inv_bin = 1.0 / bin_;
        const auto n = static_cast<std::size_t>(std::ceil((hi_ - lo_) / bin_)) + 1;
        sum.assign(n, 0.0);
        count.assign(n, 0);
    }
    void add(double rho, double gr) {
        const auto k = static_cast<std::ptrdiff_t>((rho - lo) * inv_bin);
        if (k < 0 || k >= static_cast<std::ptrdiff_t>(sum.size())) return;
        sum[static_cast<std::size_t>(k)] += gr;
        ++count[static_cast<std::size_t>(k)];
    }
    // Peak radius and mean gradient there; false when no bin has data.
    bool peak(double& radius, double& value) const {
        std::ptrdiff_t best = -1;
        double bv = -1e300;
        const auto n = static_cast<std::ptrdiff_t>(sum.size());
        auto mean = [&](std::ptrdiff_t k) {
            const auto c = count[static_cast<std::size_t>(k)];
            return c >= 2 ? sum[static_cast<std::size_t>(k)] / c : -1e300;
        };
        for (std::ptrdiff_t k = 0; k < n; ++k)
            if (mean(k) > bv) bv = mean(k), best = k;
        if (best < 0 || bv <= -1e299) return false;
        double d = 0;
        if (best > 0 && best + 1 < n && mean(best - 1) > -1e299 && mean(best + 1) > -1e299) {
            const double a = mean(best - 1), c = mean(best + 1), den = a - 2 * bv + c;
            if (den < 0) d = std::clamp(0.5 * (a - c) / den, -0.5, 0.5);
        }
        radius = lo + (static_cast<double>(best) + 0.5 + d) * bin;
        value = bv;
        return true;
    }
};

// One image row py of the annulus ρ² ∈ [ri2, ro2] about (cx, cy) in an image w px wide: columns
// [x0, x1] less the hole [ix0, ix1] (empty when ix1 < ix0); the callers test ρ² per pixel too.
struct AnnulusRow {
    double dy, dy2;
    int x0, x1, ix0, ix1;
    AnnulusRow(int w, double cx, double cy, int py, double ro2, double ri2) : dy(py - cy), dy2(dy * dy) {
        const double half = std::sqrt(std::max(0.0, ro2 - dy2));
        x0 = std::max(0, static_cast<int>(std::ceil(cx - half)));
        x1 = std::min(w - 1, static_cast<int>(std::floor(cx + half)));
        ix0 = x1 + 1, ix1 = x1;
        if (ri2 > dy2) {
            const double hi = std::sqrt(ri2 - dy2);
            ix0 = static_cast<int>(std::ceil(cx - hi));
            ix1 = static_cast<int>(std::floor(cx + hi));
        }
    }
};

// The annulus pixels of one row: f(px, dx, ρ²) for every column of `ar` outside the hole with
// ρ² in [ri2, ro2]. Inlined with f into the callers' loops (a per-pixel call that reloaded its
// captures, with the pixels pushed into a vector one by one, cost ≈ 10% of detection's time).
template <class F>
[[gnu::always_inline]] inline void for_row_pixels(const AnnulusRow& ar, double cx, double ro2, double ri2,
                                                  F&& f) {
    for (int px = ar.x0; px <= ar.x1; ++px) {
        if (px == ar.ix0 && ar.ix1 >= ar.ix0) {
            px = ar.ix1;
            continue;
        }
        const double dx = px - cx;
        const double r2 = dx * dx + ar.dy2;
        if (r2 > ro2 || r2 < ri2) continue;
        f(px, dx, r2);
    }
}

// Pixels of the annulus ρ ∈ [r_in, r_out] around (cx, cy), clipped to the image: f(px, py, dx, dy, ρ²).
template <class F>
void for_annulus(int w, int h, double cx, double cy, double r_in, double r_out, F&& f) {
    const double ro2 = r_out * r_out, ri2 = r_in > 0 ? r_in * r_in : -1.0;
    const int y0 = std::max(0, static_cast<int>(std::ceil(cy - r_out))),
              y1 = std::min(h - 1, static_cast<int>(std::floor(cy + r_out)));
    for (int py = y0; py <= y1; ++py) {
        const AnnulusRow ar(w, cx, cy, py, ro2, ri2);
        for_row_pixels(
            ar, cx, ro2, ri2, [&](int px, double dx, double r2) __attribute__((always_inline)) {
                f(px, py, dx, ar.dy, r2);
            });
    }
}

// Radial profile of the inward gradient −∇I·ρ̂ over the annulus ρ ∈ [r_in, r_out] about (cx, cy)
// into `prof` (reset by the caller), the pixels within √mr2[k] of neighbour k masked.
void gradient_profile(const Gradients& g, double cx, double cy, double r_in, double r_out, const double* mx,
                      const double* my, const double* mr2, int nm, Profile& prof) {
    const int w = g.gx.cols, h = g.gx.rows;
    const double ro2 = r_out * r_out, ri2 = r_in > 0 ? r_in * r_in : -1.0;
    const int y0 = std::max(0, static_cast<int>(std::ceil(cy - r_out))),
              y1 = std::min(h - 1, static_cast<int>(std::floor(cy + r_out)));
    double* sum = prof.sum.data();
    int* count = prof.count.data();
    const auto nbin = static_cast<std::ptrdiff_t>(prof.sum.size());
    const double lo = prof.lo, inv_bin = prof.inv_bin;
    int act[32];
    for (int py = y0; py <= y1; ++py) {
        const AnnulusRow ar(w, cx, cy, py, ro2, ri2);
        const double dy = ar.dy;
        int n_act = 0;  // neighbours whose masked disk reaches the row
        for (int k = 0; k < nm; ++k)
            if ((py - my[k]) * (py - my[k]) < mr2[k]) act[n_act++] = k;
        const float* gxr = g.gx.ptr<float>(py);
        const float* gyr = g.gy.ptr<float>(py);
        for_row_pixels(
            ar, cx, ro2, ri2, [&](int px, double dx, double r2) __attribute__((always_inline)) {
                for (int b = 0; b < n_act; ++b) {
                    const int k = act[b];
                    const double ex = px - mx[k], ey = py - my[k];
                    if (ex * ex + ey * ey < mr2[k]) return;  // masked
                }
                if (r2 < 1e-9) return;
                const double rho = std::sqrt(r2);
                const double gr = -(gxr[px] * dx + gyr[px] * dy) / rho;
                const auto k = static_cast<std::ptrdiff_t>((rho - lo) * inv_bin);
                if (k < 0 || k >= nbin) return;
                sum[k] += gr;
                ++count[k];
            });
    }
}

#ifdef VIBRA_REFINE_AVX2
// The AVX2 helpers below (profile_step's pixels) compute four pixels at a time in double precision
// with the scalar code's operations in its order (no fused multiply-add: target "avx2" only) and
// hand the pixels on in column order, so they give exactly the scalar results (bit for bit). The
// same for gradient_profile was slower than its scalar loop (the division and the write-out of
// every kept pixel dominate there), docs/performance.md.

// The lanes px .. px+3 of row `ar` that are in the annulus and outside its hole; `pxv` = their columns.
__attribute__((target("avx2"))) inline __m256d annulus_lanes4(const AnnulusRow& ar, int px, double ro2,
                                                              double ri2, __m256d pxv, __m256d r2) {
    const __m256d in_row = _mm256_cmp_pd(pxv, _mm256_set1_pd(static_cast<double>(ar.x1)), _CMP_LE_OQ);
    __m256d ok = _mm256_and_pd(in_row, _mm256_and_pd(_mm256_cmp_pd(r2, _mm256_set1_pd(ro2), _CMP_LE_OQ),
                                                     _mm256_cmp_pd(r2, _mm256_set1_pd(ri2), _CMP_GE_OQ)));
    if (ar.ix1 >= ar.ix0 && px + 3 >= ar.ix0 && px <= ar.ix1) {
        const __m256d hole =
            _mm256_and_pd(_mm256_cmp_pd(pxv, _mm256_set1_pd(static_cast<double>(ar.ix0)), _CMP_GE_OQ),
                          _mm256_cmp_pd(pxv, _mm256_set1_pd(static_cast<double>(ar.ix1)), _CMP_LE_OQ));
        ok = _mm256_andnot_pd(hole, ok);
    }
    return ok;
}

// profile_step's pixels of one row, four at a time: (dx, dy, ρ, value) of the pixels kept, in
// column order, appended to out at np; returns the new count.
template <class T>
__attribute__((target("avx2"))) std::size_t annulus_row_avx2(const AnnulusRow& ar, int py, const T* row,
                                                             double cx, double ro2, double ri2, double r_own,
                                                             double em, const double* mx, const double* my,
                                                             const double* mrad, const int* act, int n_act,
                                                             float* out, std::size_t np) {
    const __m256d lanes = _mm256_setr_pd(0, 1, 2, 3), vcx = _mm256_set1_pd(cx), vdy2 = _mm256_set1_pd(ar.dy2);
    const __m256d zero = _mm256_setzero_pd(), vown = _mm256_set1_pd(r_own), vem = _mm256_set1_pd(em);
    const auto fdy = static_cast<float>(ar.dy);
    alignas(32) double DX[4], RHO[4];
    for (int px = ar.x0; px <= ar.x1; px += 4) {
        const __m256d pxv = _mm256_add_pd(_mm256_set1_pd(static_cast<double>(px)), lanes);
        const __m256d dx = _mm256_sub_pd(pxv, vcx);
        const __m256d r2 = _mm256_add_pd(_mm256_mul_pd(dx, dx), vdy2);
        __m256d ok = annulus_lanes4(ar, px, ro2, ri2, pxv, r2);
        if (!_mm256_movemask_pd(ok)) continue;
        const __m256d rho = _mm256_sqrt_pd(r2);
        // masked: closer to a neighbour's edge than to the own one (+ em): |p − c_j|² < lim², lim > 0
        const __m256d lim0 = _mm256_add_pd(_mm256_sub_pd(rho, vown), vem);
        for (int b = 0; b < n_act; ++b) {
            const int k = act[b];
            const __m256d lim = _mm256_add_pd(lim0, _mm256_set1_pd(mrad[k]));
            const __m256d ex = _mm256_sub_pd(pxv, _mm256_set1_pd(mx[k]));
            const double ey = py - my[k];
            const __m256d d2 = _mm256_add_pd(_mm256_mul_pd(ex, ex), _mm256_set1_pd(ey * ey));
            const __m256d masked = _mm256_and_pd(_mm256_cmp_pd(lim, zero, _CMP_GT_OQ),
                                                 _mm256_cmp_pd(d2, _mm256_mul_pd(lim, lim), _CMP_LT_OQ));
            ok = _mm256_andnot_pd(masked, ok);
        }
        int bits = _mm256_movemask_pd(ok);
        if (!bits) continue;
        _mm256_store_pd(DX, dx);
        _mm256_store_pd(RHO, rho);
        for (; bits; bits &= bits - 1) {
            const int l = __builtin_ctz(static_cast<unsigned>(bits));
            float* o = out + 4 * np++;
            o[0] = static_cast<float>(DX[l]), o[1] = fdy, o[2] = static_cast<float>(RHO[l]),
            o[3] = static_cast<float>(row[px + l]);
        }
    }
    return np;
}
#endif

// One Gauss–Newton centre update of the self-consistent radial-profile fit. Returns false when
// too few pixels remain.
template <class T>
bool profile_step(const cv::Mat& img, double cx, double cy, double r_in, double r_out, double bw,
                  double r_own, double em, const double* mx, const double* my, const double* mrad, int nm,
                  double& dcx, double& dcy, std::vector<float>& buf, std::vector<double>& bsum,
                  std::vector<int>& bcnt, std::vector<double>& prof) {
    // The annulus' pixels, written straight into `buf` (dx, dy, ρ, value), which is grown once
    // to the annulus' bound instead of pixel by pixel.
    const int w = img.cols, h = img.rows;
    const double ro2 = r_out * r_out, ri2 = r_in > 0 ? r_in * r_in : -1.0;
    const int y0 = std::max(0, static_cast<int>(std::ceil(cy - r_out))),
              y1 = std::min(h - 1, static_cast<int>(std::floor(cy + r_out)));
    if (y1 < y0) return false;
    const auto cap = static_cast<std::size_t>(y1 - y0 + 1) * static_cast<std::size_t>(2 * r_out + 3);
    if (buf.size() < 4 * cap) buf.resize(4 * cap);
    float* out = buf.data();
    std::size_t np = 0;
    // Neighbours that can mask a pixel of the current row: at most r_out − r_own + em + R_j
    // from the pixel, so none whose centre is farther from the row (the same pixels are masked;
    // the annulus' other rows skip them).
    int act[32];
    const double reach0 = r_out - r_own + em + 1e-9;
#ifdef VIBRA_REFINE_AVX2
    const bool avx2 = detail::fit_kernels_vectorised();
#endif
    for (int py = y0; py <= y1; ++py) {
        const AnnulusRow ar(w, cx, cy, py, ro2, ri2);
        int n_act = 0;
        for (int k = 0; k < nm; ++k) {
            const double reach = reach0 + mrad[k], ey = py - my[k];
            if (reach > 0 && ey * ey < reach * reach) act[n_act++] = k;
        }
        const T* row = img.ptr<T>(py);
        const auto fdy = static_cast<float>(ar.dy);
#ifdef VIBRA_REFINE_AVX2
        if (avx2) {
            np = annulus_row_avx2(ar, py, row, cx, ro2, ri2, r_own, em, mx, my, mrad, act, n_act, out, np);
            continue;
        }
#endif
        for_row_pixels(
            ar, cx, ro2, ri2, [&](int px, double dx, double r2) __attribute__((always_inline)) {
                // Edge-distance mask: a pixel goes when it is closer to a neighbour's edge than to this
                // disk's own edge (plus `em` px), i.e. when the neighbour's profile dominates it.
                // (squared form: masked when |p − c_j| < own + em + R_j, never when that is ≤ 0)
                const double rho = std::sqrt(r2), lim0 = rho - r_own + em;
                for (int a = 0; a < n_act; ++a) {
                    const int k = act[a];
                    const double lim = lim0 + mrad[k];
                    if (lim <= 0) continue;
                    const double ex = px - mx[k], ey = py - my[k];
                    if (ex * ex + ey * ey < lim * lim) return;  // masked
                }
                float* o = out + 4 * np++;
                o[0] = static_cast<float>(dx), o[1] = fdy, o[2] = static_cast<float>(rho),
                o[3] = static_cast<float>(row[px]);
            });
    }
    if (np < 12) return false;
    const auto nb = static_cast<std::size_t>(std::ceil((r_out - r_in) / bw)) + 1;
    bsum.assign(nb, 0.0);
    bcnt.assign(nb, 0);
    const double inv_bw = 1.0 / bw;  // multiplications in the per-pixel loops, not divisions
    for (std::size_t k = 0; k < np; ++k) {
        const auto b =
            std::min(nb - 1, static_cast<std::size_t>(std::max(0.0, (buf[4 * k + 2] - r_in) * inv_bw)));
        bsum[b] += buf[4 * k + 3];
        ++bcnt[b];
    }
    // Profile at bin centres; empty bins take the value of the nearest filled one.
    prof.assign(nb, 0.0);
    double last = 0;
    bool seen = false;
    for (std::size_t b = 0; b < nb; ++b)
        if (bcnt[b] > 0) {
            last = bsum[b] / bcnt[b];
            if (!seen)
                for (std::size_t c = 0; c < b; ++c) prof[c] = last;
            seen = true;
            prof[b] = last;
        } else {
            prof[b] = last;
        }
    double a00 = 0, a01 = 0, a11 = 0, v0 = 0, v1 = 0;
    for (std::size_t k = 0; k < np; ++k) {
        const double rho = buf[4 * k + 2];
        const double t = (rho - r_in) * inv_bw - 0.5;
        auto b = static_cast<std::ptrdiff_t>(std::floor(t));
        b = std::clamp<std::ptrdiff_t>(b, 0, static_cast<std::ptrdiff_t>(nb) - 2);
        const double fr = t - static_cast<double>(b);
        const double p0 = prof[static_cast<std::size_t>(b)], p1 = prof[static_cast<std::size_t>(b) + 1];
        const double model = p0 + fr * (p1 - p0);
        if (rho < 1e-6) continue;
        const double g = -(p1 - p0) * inv_bw / rho;  // −dP/dρ / ρ
        const double jx = g * buf[4 * k], jy = g * buf[4 * k + 1];
        const double res = buf[4 * k + 3] - model;
        a00 += jx * jx, a01 += jx * jy, a11 += jy * jy;
        v0 += jx * res, v1 += jy * res;
    }
    const double det = a00 * a11 - a01 * a01;
    if (!(det > 1e-12 * (a00 + a11) * (a00 + a11)) || det <= 0) return false;
    dcx = (a11 * v0 - a01 * v1) / det;
    dcy = (a00 * v1 - a01 * v0) / det;
    return true;
}

// Neighbours whose edge band reaches a disk's annulus (at most 32): their centres, squared band
// radii (radius + neighbour_margin) and radii. Their pixels are masked out of the disk's fit.
struct NeighbourMask {
    double mx[32], my[32], mr2[32], mrad[32];
    int nm = 0;
};

// The centre refinement of refine_particles (step 2), one disk and iteration at a time, with the
// scratch buffers of profile_step and the profile re-used from disk to disk.
class CentreRefiner {
public:
    CentreRefiner(const Gradients& g, const RefineParams& p) : g_(g), p_(p), w_(g.gx.cols), h_(g.gx.rows) {}

    /// Neighbours j of `nb_i` (xs, ys: the centres of this iteration) whose band reaches the
    /// annulus of q; those much closer than touching are duplicates or spurious candidates.
    NeighbourMask mask_of(const Particle& q, const std::vector<std::uint32_t>& nb_i,
                          const std::vector<Particle>& parts, const std::vector<double>& xs,
                          const std::vector<double>& ys) const {
        const double R = q.radius, a = p_.annulus_half_width;
        NeighbourMask m;
        for (auto j : nb_i) {
            const double djx = xs[j] - q.x, djy = ys[j] - q.y;
            const double rj = parts[j].radius + p_.neighbour_margin;
            const double dij = std::hypot(djx, djy);
            // much closer than touching: a duplicate or spurious candidate, not a neighbour
            if (dij < 0.75 * (R + parts[j].radius)) continue;
            if (dij < R + a + rj && m.nm < 32) {
                m.mx[m.nm] = xs[j], m.my[m.nm] = ys[j], m.mr2[m.nm] = rj * rj, m.mrad[m.nm] = parts[j].radius;
                ++m.nm;
            }
        }
        return m;
    }

    /// The gradient cap of q (hot pixels cannot dominate): 1.5 × the local contrast.
    double cap_of(const Particle& q) const {
        return 1.5 * g_.contrast_at(std::clamp(static_cast<int>(q.x), 0, w_ - 1),
                                    std::clamp(static_cast<int>(q.y), 0, h_ - 1));
    }

    /// profile_fit: one Gauss–Newton step of the radial-profile fit (at most 1 px) to (nx, ny).
    /// Coarse-to-fine: the first iterations use a wider annulus and coarser profile bins, which
    /// widens the capture range of the steps (≈ 1 px). In the last iteration, or after a step
    /// below `settle`, the radius and edge strength are measured; returns true when the disk
    /// settled before the last iteration.
    bool profile_fit_step(Particle& q, const NeighbourMask& m, int it, bool last_iteration, double& nx,
                          double& ny) {
        const double R = q.radius, a = p_.annulus_half_width;
        const double cap = cap_of(q);
        const double EM = p_.edge_margin;
        const bool coarse = it < p_.coarse_iterations;
        const double aa = coarse ? a + 1.0 : a, bwp = coarse ? 2 * p_.profile_bin : p_.profile_bin;
        double dcx = 0, dcy = 0;
        const bool ok =
            g_.image.depth() == CV_8U
                ? profile_step<std::uint8_t>(g_.image, q.x, q.y, std::max(0.0, R - aa), R + aa, bwp, R, EM,
                                             m.mx, m.my, m.mrad, m.nm, dcx, dcy, pbuf_, bsum_, bcnt_, pvals_)
                : profile_step<std::uint16_t>(g_.image, q.x, q.y, std::max(0.0, R - aa), R + aa, bwp, R, EM,
                                              m.mx, m.my, m.mrad, m.nm, dcx, dcy, pbuf_, bsum_, bcnt_,
                                              pvals_);
        const double dd = std::hypot(dcx, dcy);
        if (ok && dd > 1.0) dcx /= dd, dcy /= dd;  // at most 1 px per iteration
        nx = q.x + (ok ? dcx : 0.0), ny = q.y + (ok ? dcy : 0.0);
        // a small step settles the disk: its radius now, no further iterations
        const bool last = last_iteration || (ok && dd < p_.settle);
        if (last) {  // radius and edge strength from the masked gradient profile
            prof_.reset(std::max(0.0, R - a), R + a, p_.radius_bin);
            gradient_profile(g_, nx, ny, std::max(0.0, R - a), R + a, m.mx, m.my, m.mr2, m.nm, prof_);
            double r = R, v = 0;
            if (ok && prof_.peak(r, v)) {
                q.radius = static_cast<float>(r);
                q.strength = static_cast<float>(v / cap * 1.5);
            } else {
                q.strength = 0;
            }
        }
        return last && !last_iteration;
    }

    /// radial_symmetry: the weighted least-squares intersection of the gradient lines on the
    /// annulus (at most 1 px from q) to (cx, cy); in the last iteration also the radius and edge
    /// strength from the same pixels' radial profile.
    void gradient_lines_step(Particle& q, const NeighbourMask& m, bool last, double& nx, double& ny) {
        const double R = q.radius, a = p_.annulus_half_width;
        const double cap = cap_of(q);
        const double cap2 = cap * cap;
        const int w = w_, h = h_;
        const int nm = m.nm;
        const double *mx = m.mx, *my = m.my, *mr2 = m.mr2;
        const Gradients& g = g_;
        Profile& prof = prof_;
        double m00 = 0, m01 = 0, m11 = 0, b0 = 0, b1 = 0;
        if (last) prof.reset(std::max(0.0, R - a), R + a, p_.radius_bin);
        for_annulus(w, h, q.x, q.y, std::max(0.0, R - a), R + a,
                    [&](int px, int py, double dx, double dy, double r2) {
                        // Mask symmetrically: a pixel goes when it or its mirror image through the
                        // centre lies in a neighbour's band, so the kept set stays centrally symmetric
                        // and the (small, odd) direction errors of the discrete gradient still cancel.
                        const double mxp = q.x - dx,
                                     myp = q.y - dy;  // mirror image (also kept inside the frame)
                        if (mxp < 0 || myp < 0 || mxp > w - 1 || myp > h - 1) return;
                        for (int k = 0; k < nm; ++k) {
                            const double ex = px - mx[k], ey = py - my[k];
                            if (ex * ex + ey * ey < mr2[k]) return;
                            const double fx = mxp - mx[k], fy = myp - my[k];
                            if (fx * fx + fy * fy < mr2[k]) return;
                        }
                        const double gx = g.gx.at<float>(py, px), gy = g.gy.at<float>(py, px);
                        const double g2 = gx * gx + gy * gy;
                        if (g2 <= 0) return;
                        const double s = g2 > cap2 ? cap2 / g2 : 1.0;  // hot pixels cannot dominate
                        const double a00 = s * gy * gy, a01 = -s * gx * gy, a11 = s * gx * gx;
                        m00 += a00, m01 += a01, m11 += a11;
                        b0 += a00 * px + a01 * py;
                        b1 += a01 * px + a11 * py;
                        if (last && r2 > 1e-9) {
                            const double rho = std::sqrt(r2);
                            prof.add(rho, -(gx * dx + gy * dy) / rho);
                        }
                    });
        const double det = m00 * m11 - m01 * m01;
        double cx = q.x, cy = q.y;
        if (det > 1e-12 * (m00 + m11) * (m00 + m11) && det > 0) {
            cx = (m11 * b0 - m01 * b1) / det;
            cy = (m00 * b1 - m01 * b0) / det;
            // a centre moves at most 1 px per iteration (guards against degenerate fits)
            const double ddx = cx - q.x, ddy = cy - q.y, dd = std::hypot(ddx, ddy);
            if (dd > 1.0) cx = q.x + ddx / dd, cy = q.y + ddy / dd;
        }
        nx = cx, ny = cy;
        if (last) {
            double r = R, v = 0;
            if (prof.peak(r, v)) {
                q.radius = static_cast<float>(r);
                q.strength = static_cast<float>(v / cap * 1.5);
            } else {
                q.strength = 0;
            }
        }
    }

private:
    const Gradients& g_;
    const RefineParams& p_;
    int w_, h_;
    Profile prof_;
    std::vector<float> pbuf_;
    std::vector<double> bsum_, pvals_;
    std::vector<int> bcnt_;
};

// Step 1: each radius from the radial edge profile around the candidate centre.
void measure_start_radii(const Gradients& g, std::vector<Particle>& parts, double radius_min,
                         double radius_max, const RefineParams& p) {
    Profile prof;
    for (auto& q : parts) {
        prof.reset(std::max(0.0, radius_min - 0.25), radius_max + 0.5, p.radius_bin);
        gradient_profile(g, q.x, q.y, prof.lo, radius_max + 0.5, nullptr, nullptr, nullptr, 0, prof);
        double r = 0.5 * (radius_min + radius_max), v = 0;
        if (prof.peak(r, v))
            q.radius = static_cast<float>(std::clamp(r, radius_min, radius_max));
        else
            q.radius = static_cast<float>(r);
    }
}

// Neighbours within `reach` of each other (both directions), by index.
std::vector<std::vector<std::uint32_t>> neighbour_lists(const std::vector<double>& xs,
                                                        const std::vector<double>& ys, double reach) {
    std::vector<std::vector<std::uint32_t>> nb(xs.size());
    CellList cl(xs, ys, reach, Geometry{});
    cl.for_each_pair([&](std::size_t i, std::size_t j, double, double, double) {
        nb[i].push_back(static_cast<std::uint32_t>(j));
        nb[j].push_back(static_cast<std::uint32_t>(i));
    });
    return nb;
}

}  // namespace

void refine_particles(const Gradients& g, std::vector<Particle>& parts, double radius_min, double radius_max,
                      const RefineParams& p) {
    p.validate();
    if (parts.empty()) return;
    const double a = p.annulus_half_width;
    const std::size_t n = parts.size();
    measure_start_radii(g, parts, radius_min, radius_max, p);
    // Neighbours within reach of each other's annulus.
    std::vector<double> xs(n), ys(n);
    for (std::size_t i = 0; i < n; ++i) xs[i] = parts[i].x, ys[i] = parts[i].y;
    const auto nb = neighbour_lists(xs, ys, 2 * radius_max + a + p.neighbour_margin + 2);
    // 2. Centre, with pixels in a neighbour's edge band masked; re-centred `iterations` times
    //    (all disks of an iteration from the same centres). profile_fit starts directly from
    //    the candidate centre (no radial-symmetry pre-steps: those are biased next to touching
    //    neighbours, and the fit then stalled near their bias).
    CentreRefiner refiner(g, p);
    std::vector<double> nx(n), ny(n);
    const int n_it = p.iterations;
    const bool use_profile = p.method == RefineMethod::profile_fit;
    std::vector<char> settled(n, 0);  // profile_fit with `settle`: done, radius measured
    for (int it = 0; it < n_it; ++it) {
        const bool last_iteration = it + 1 == n_it;
        for (std::size_t i = 0; i < n; ++i) {
            auto& q = parts[i];
            if (settled[i]) {
                nx[i] = q.x, ny[i] = q.y;
                continue;
            }
            const NeighbourMask m = refiner.mask_of(q, nb[i], parts, xs, ys);
            if (use_profile)
                settled[i] = refiner.profile_fit_step(q, m, it, last_iteration, nx[i], ny[i]) ? 1 : 0;
            else
                refiner.gradient_lines_step(q, m, last_iteration, nx[i], ny[i]);
        }
        for (std::size_t i = 0; i < n; ++i) {
            parts[i].x = nx[i], parts[i].y = ny[i];
            xs[i] = nx[i], ys[i] = ny[i];
        }
    }
}

}  // namespace vibra::tracking
