// SPDX-License-Identifier: GPL-3.0-or-later
#include "detail/fit_kernels.hpp"

#include <algorithm>
#include <cstdint>
#include <cmath>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define VIBRA_FIT_AVX2 1
#endif

namespace vibra::tracking::detail {

namespace {

inline float lookup(const TemplateView& t, float q, float& slope) {
    const float u = q * t.inv_hq;
    const int k = std::min(static_cast<int>(u), t.kmax);
    const float dk = t.d[k];
    slope = dk * t.inv_hq;
    return t.v[k] + (u - static_cast<float>(k)) * dk;
}

// The pixels of a disk's band that enter its equations: over `rows`, those with
// q = (x − cx)² + dy² in [qi, qo] and residual r = im − b − m within ±clip; f(x, dx, dy, q, r).
// The one pixel rule of every band kernel (normal, centre, residual, cross terms).
template <class P, class F>
inline void for_band_pixels(const P* im0, const float* m0, std::ptrdiff_t stride, const RowSpan* rows,
                            int n_rows, float cx, float qi, float qo, float b, float clip, F&& f) {
    for (int ri = 0; ri < n_rows; ++ri) {
        const RowSpan& row = rows[ri];
        const P* im = im0 + static_cast<std::ptrdiff_t>(row.y) * stride;
        const float* m = m0 + static_cast<std::ptrdiff_t>(row.y) * stride;
        const float dy = row.dy, dy2 = dy * dy;
        for (int x = row.x0; x <= row.x1; ++x) {
            const float dx = static_cast<float>(x) - cx, q = dx * dx + dy2;
            if (q < qi || q > qo) continue;
            const float r = static_cast<float>(im[x]) - b - m[x];
            if (std::abs(r) > clip) continue;
            f(x, dx, dy, q, r);
        }
    }
}

}  // namespace

void splat_row_portable(float* m, int x0, int x1, float cx, float dy2, float amp, float kappa,
                        const TemplateView& t) {
    for (int x = x0; x <= x1; ++x) {
        const float dx = static_cast<float>(x) - cx;
        float sl;
        m[x] += amp * lookup(t, kappa * (dx * dx + dy2), sl);
    }
}

template <class P>
void normal_row_portable(const P* im, const float* m, int x0, int x1, float cx, float dy, float dy2, float qi,
                         float qo, float b, float clip, float amp, float kappa, const TemplateView& t,
                         NormalSums& acc) {
    (void)dy2;  // = dy²
    float* s = acc.s;
    const float m2k = -2 * kappa;
    const RowSpan row{0, x0, x1, dy};
    for_band_pixels(im, m, 0, &row, 1, cx, qi, qo, b, clip, [&](int, float dx, float dy_, float q, float r) {
        float sl;
        const float S = lookup(t, kappa * q, sl);
        const float G = amp * sl;
        const float j0 = m2k * G * dx, j1 = m2k * G * dy_, j2 = G * q, j4 = S;
        s[0] += j0 * j0, s[1] += j0 * j1, s[2] += j0 * j2, s[3] += j0, s[4] += j0 * j4;
        s[5] += j1 * j1, s[6] += j1 * j2, s[7] += j1, s[8] += j1 * j4;
        s[9] += j2 * j2, s[10] += j2, s[11] += j2 * j4;
        s[12] += 1, s[13] += j4, s[14] += j4 * j4;
        s[15] += j0 * r, s[16] += j1 * r, s[17] += j2 * r, s[18] += r, s[19] += j4 * r;
        s[20] += r * r;
    });
}

template <class P>
void centre_rows_portable(const P* im0, const float* m0, std::ptrdiff_t stride, const RowSpan* rows,
                          int n_rows, float cx, float qi, float qo, float b, float clip, float amp,
                          float kappa, const TemplateView& t, CentreSums& acc) {
    float* s = acc.s;
    const float m2k = -2 * kappa;
    for_band_pixels(im0, m0, stride, rows, n_rows, cx, qi, qo, b, clip,
                    [&](int, float dx, float dy, float q, float r) {
                        float sl;
                        (void)lookup(t, kappa * q, sl);
                        const float G = amp * sl;
                        const float j0 = m2k * G * dx, j1 = m2k * G * dy;
                        s[0] += j0 * j0, s[1] += j0 * j1, s[2] += j1 * j1, s[3] += j0 * r, s[4] += j1 * r,
                            s[5] += 1, s[6] += r * r;
                    });
}

template <class P>
void residual_rows_portable(const P* im0, const float* m0, std::ptrdiff_t stride, const RowSpan* rows,
                            int n_rows, float cx, float qi, float qo, float b, float clip, float amp,
                            float kappa, const TemplateView& t, ResidualSums& acc) {
    float* s = acc.s;
    const float m2k = -2 * kappa;
    for_band_pixels(im0, m0, stride, rows, n_rows, cx, qi, qo, b, clip,
                    [&](int, float dx, float dy, float q, float r) {
                        float sl;
                        const float S = lookup(t, kappa * q, sl);
                        const float G = amp * sl;
                        s[0] += m2k * G * dx * r, s[1] += m2k * G * dy * r, s[2] += G * q * r, s[3] += r,
                            s[4] += S * r, s[5] += 1, s[6] += r * r;
                    });
}

template <class P>
void light_sums_rows_portable(const P* im0, const float* m0, std::ptrdiff_t stride, const RowSpan* rows,
                              int n_rows, float cx, float qi, float qo, const TemplateView& t,
                              LightSums& acc) {
    double* s = acc.s;
    for (int ri = 0; ri < n_rows; ++ri) {
        const RowSpan& row = rows[ri];
        const P* im = im0 + static_cast<std::ptrdiff_t>(row.y) * stride;
        const float* m = m0 + static_cast<std::ptrdiff_t>(row.y) * stride;
        const float dy2 = row.dy * row.dy;
        for (int x = row.x0; x <= row.x1; ++x) {
            const float dx = static_cast<float>(x) - cx, q = dx * dx + dy2;
            if (q < qi || q > qo) continue;
            float sl;
            const float S = lookup(t, q, sl), y = static_cast<float>(im[x]) - m[x];
            s[0] += 1, s[1] += S, s[2] += S * S, s[3] += y, s[4] += S * y, s[5] += y * y;
        }
    }
}

void move_rows_portable(float* m, std::ptrdiff_t stride, const MoveRowSpan* rows, int n_rows, float cx_old,
                        float amp_old, float kappa_old, const TemplateView& t_old, float cx_new,
                        float amp_new, float kappa_new, const TemplateView& t_new) {
    for (int ri = 0; ri < n_rows; ++ri) {
        const MoveRowSpan& r = rows[ri];
        float* row = m + static_cast<std::ptrdiff_t>(r.y) * stride;
        const float dy0 = r.dy_old * r.dy_old, dy1 = r.dy_new * r.dy_new;
        for (int x = r.x0; x <= r.x1; ++x) {
            const float d0 = static_cast<float>(x) - cx_old, d1 = static_cast<float>(x) - cx_new;
            float sl;
            row[x] += amp_new * lookup(t_new, kappa_new * (d1 * d1 + dy1), sl) -
                      amp_old * lookup(t_old, kappa_old * (d0 * d0 + dy0), sl);
        }
    }
}

template <class P>
void cross_rows_portable(const P* im0, const float* m0, std::ptrdiff_t stride, const RowSpan* rows,
                         int n_rows, float cx_i, float qi, float qo, float b_i, float clip, float amp_i,
                         float kappa_i, const TemplateView& t_i, float cx_j, float dcy, float amp_j,
                         float kappa_j, const TemplateView& t_j, CrossSums& acc) {
    float* s = acc.s;
    for_band_pixels(
        im0, m0, stride, rows, n_rows, cx_i, qi, qo, b_i, clip,
        [&](int x, float dxi, float dyi, float qi_, float) {
            const float dyj = dyi + dcy;
            float sli, slj;
            const float Si = lookup(t_i, kappa_i * qi_, sli);
            const float dxj = static_cast<float>(x) - cx_j, qj = dxj * dxj + dyj * dyj;
            const float Sj = lookup(t_j, kappa_j * qj, slj);
            const float Gi = amp_i * sli, Gj = amp_j * slj;
            const float ji[5] = {-2 * kappa_i * Gi * dxi, -2 * kappa_i * Gi * dyi, Gi * qi_, 1.0f, Si};
            const float jj[4] = {-2 * kappa_j * Gj * dxj, -2 * kappa_j * Gj * dyj, Gj * qj, Sj};
            for (int a = 0; a < 5; ++a)
                for (int c = 0; c < 4; ++c) s[a * 4 + c] += ji[a] * jj[c];
        });
}

// The rows a span builder visits and its widened bounds, shared by the portable and the
// vectorised builders (so that both give the same spans).
struct AnnulusRows {
    float cx, cy, qo, qi;
    int y0, y1;  // rows y0, y0 + row_step, … ≤ y1 (none when y0 > y1)
};
inline AnnulusRows annulus_rows(int h, double cx, double cy, float q_in, float q_out, int row_step) {
    AnnulusRows a{static_cast<float>(cx),
                  static_cast<float>(cy),
                  q_out * (1 + 1e-5f) + 1e-4f,
                  q_in * (1 - 1e-5f) - 1e-4f,
                  0,
                  0};
    const float r_out = std::sqrt(q_out) + 1e-3f;
    a.y0 = std::max(0, ceil_int(a.cy - r_out));
    a.y1 = std::min(h - 1, floor_int(a.cy + r_out));
    if (row_step > 1) a.y0 += (row_step - a.y0 % row_step) % row_step;
    return a;
}
struct MoveRows {
    float cx0, cy0, cx1, cy1, q0, q1;
    int y0, y1;
};
inline MoveRows move_rows_of(int h, double cx0, double cy0, float q0, double cx1, double cy1, float q1,
                             int row_step) {
    MoveRows m{static_cast<float>(cx0),
               static_cast<float>(cy0),
               static_cast<float>(cx1),
               static_cast<float>(cy1),
               q0 * (1 + 1e-5f) + 1e-4f,
               q1 * (1 + 1e-5f) + 1e-4f,
               0,
               0};
    const float r0 = std::sqrt(q0) + 1e-3f, r1 = std::sqrt(q1) + 1e-3f;
    m.y0 = std::max(0, ceil_int(std::min(m.cy0 - r0, m.cy1 - r1)));
    m.y1 = std::min(h - 1, floor_int(std::max(m.cy0 + r0, m.cy1 + r1)));
    if (row_step > 1) m.y0 += (row_step - m.y0 % row_step) % row_step;
    return m;
}

void annulus_spans_portable(int w, int h, double cx_, double cy_, float q_in, float q_out, int row_step,
                            std::vector<RowSpan>& rows) {
    rows.clear();
    const AnnulusRows a = annulus_rows(h, cx_, cy_, q_in, q_out, row_step);
    const float cx = a.cx, cy = a.cy, qo = a.qo, qi = a.qi;
    for (int py = a.y0; py <= a.y1; py += row_step) {
        const float dy = static_cast<float>(py) - cy, dy2 = dy * dy;
        const float half = std::sqrt(std::max(0.0f, qo - dy2));
        const int x0 = std::max(0, ceil_int(cx - half)), x1 = std::min(w - 1, floor_int(cx + half));
        if (x0 > x1) continue;
        if (dy2 < qi) {
            const float hw = std::sqrt(qi - dy2);
            const int h0 = floor_int(cx - hw) + 1,
                      h1 = ceil_int(cx + hw) - 1;  // pixels h0..h1 lie inside the hole
            if (h0 <= h1) {
                if (x0 < h0) rows.push_back({py, x0, std::min(x1, h0 - 1), dy});
                if (h1 < x1) rows.push_back({py, std::max(x0, h1 + 1), x1, dy});
                continue;
            }
        }
        rows.push_back({py, x0, x1, dy});
    }
}

void move_spans_portable(int w, int h, double cx0_, double cy0_, float q0_, double cx1_, double cy1_,
                         float q1_, int row_step, std::vector<MoveRowSpan>& rows) {
    rows.clear();
    const MoveRows m = move_rows_of(h, cx0_, cy0_, q0_, cx1_, cy1_, q1_, row_step);
    const float cx0 = m.cx0, cy0 = m.cy0, cx1 = m.cx1, cy1 = m.cy1, q0 = m.q0, q1 = m.q1;
    for (int py = m.y0; py <= m.y1; py += row_step) {
        const float e0 = static_cast<float>(py) - cy0, e1 = static_cast<float>(py) - cy1;
        int xa = w, xb = -1;
        if (e0 * e0 <= q0) {
            const float hw = std::sqrt(q0 - e0 * e0);
            xa = ceil_int(cx0 - hw), xb = floor_int(cx0 + hw);
        }
        if (e1 * e1 <= q1) {
            const float hw = std::sqrt(q1 - e1 * e1);
            xa = std::min(xa, ceil_int(cx1 - hw)), xb = std::max(xb, floor_int(cx1 + hw));
        }
        xa = std::max(xa, 0), xb = std::min(xb, w - 1);
        if (xa <= xb) rows.push_back({py, xa, xb, e0, e1});
    }
}

namespace {

#ifdef VIBRA_FIT_AVX2

__attribute__((target("avx2,fma"))) inline __m256 lane_index() {
    return _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7);
}

// Lanes [0, n) of 8.
__attribute__((target("avx2,fma"))) inline __m256i first_lanes(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// The band pixel rule of the AVX2 kernels (for_band_pixels' 8 lanes at a time): constants, and
// for pixels x..x+7 of a row their offsets dx, q = dx² + dy², residual r = im − b − m and the
// lanes that count (inside the row, q in [qi, qo], |r| ≤ clip).
struct BandRule8 {
    __m256 lanes, qi, qo, b, clip, absmask;
};
struct BandPixels8 {
    __m256 dx, q, r, ok;
};
__attribute__((target("avx2,fma"))) inline BandRule8 band_rule8(float qi, float qo, float b, float clip) {
    return {lane_index(),      _mm256_set1_ps(qi),   _mm256_set1_ps(qo),
            _mm256_set1_ps(b), _mm256_set1_ps(clip), _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff))};
}
// Pixels x..x+7 of an image row as floats. 8- and 16-bit rows are read whole (8 or 16 bytes, also
// past the row's end: the caller guarantees that those bytes can be read; the band rule masks
// the lanes beyond x1).
__attribute__((target("avx2,fma"))) inline __m256 load_pixels8(const std::uint8_t* im, int x) {
    return _mm256_cvtepi32_ps(
        _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(im + x))));
}
__attribute__((target("avx2,fma"))) inline __m256 load_pixels8(const std::uint16_t* im, int x) {
    return _mm256_cvtepi32_ps(
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(im + x))));
}
template <class P>
__attribute__((target("avx2,fma"))) inline BandPixels8 band_pixels8(const BandRule8& c, const P* im,
                                                                    const float* m, int x, int x1, float cx,
                                                                    __m256 vdy2) {
    const int n = std::min(8, x1 - x + 1);
    const __m256i lm = first_lanes(n);
    BandPixels8 p;
    p.dx = _mm256_add_ps(_mm256_set1_ps(static_cast<float>(x) - cx), c.lanes);
    p.q = _mm256_fmadd_ps(p.dx, p.dx, vdy2);
    const __m256 imv = load_pixels8(im, x);
    const __m256 mv = n == 8 ? _mm256_loadu_ps(m + x) : _mm256_maskload_ps(m + x, lm);
    p.r = _mm256_sub_ps(_mm256_sub_ps(imv, c.b), mv);
    const __m256 inside =
        _mm256_and_ps(_mm256_cmp_ps(p.q, c.qi, _CMP_GE_OQ), _mm256_cmp_ps(p.q, c.qo, _CMP_LE_OQ));
    p.ok = _mm256_and_ps(_mm256_and_ps(_mm256_castsi256_ps(lm), inside),
                         _mm256_cmp_ps(_mm256_and_ps(p.r, c.absmask), c.clip, _CMP_LE_OQ));
    return p;
}

// The (v, d) pairs of table entries k (eight 64-bit loads; t.vd needed): v and d in lane order.
// On the AMD cores measured a hardware gather of 8 floats takes ≈ 3.8 ns, eight scalar loads
// ≈ 1.7 ns (docs/performance.md). The indices leave the vector register as four 64-bit pairs
// (vmovq / vpextrq): a store of the vector and eight 32-bit reloads waited for the store to
// forward (−15% per lookup).
__attribute__((target("avx2,fma"))) inline void pairs8(const TemplateView& t, __m256i k, __m256& v,
                                                       __m256& d) {
    const __m128i klo = _mm256_castsi256_si128(k), khi = _mm256_extracti128_si256(k, 1);
    const auto k01 = static_cast<std::uint64_t>(_mm_cvtsi128_si64(klo)),
               k23 = static_cast<std::uint64_t>(_mm_extract_epi64(klo, 1));
    const auto k45 = static_cast<std::uint64_t>(_mm_cvtsi128_si64(khi)),
               k67 = static_cast<std::uint64_t>(_mm_extract_epi64(khi, 1));
    const auto* base = reinterpret_cast<const double*>(t.vd);
    auto lo32 = [](std::uint64_t x) { return static_cast<std::uint32_t>(x); };
    const __m128d p01 = _mm_loadh_pd(_mm_load_sd(base + lo32(k01)), base + (k01 >> 32));
    const __m128d p23 = _mm_loadh_pd(_mm_load_sd(base + lo32(k23)), base + (k23 >> 32));
    const __m128d p45 = _mm_loadh_pd(_mm_load_sd(base + lo32(k45)), base + (k45 >> 32));
    const __m128d p67 = _mm_loadh_pd(_mm_load_sd(base + lo32(k67)), base + (k67 >> 32));
    // a = [v0 d0 v1 d1 | v4 d4 v5 d5], b = [v2 d2 v3 d3 | v6 d6 v7 d7]: the shuffles give lanes in order
    const __m256 a = _mm256_castpd_ps(_mm256_insertf128_pd(_mm256_castpd128_pd256(p01), p45, 1));
    const __m256 b = _mm256_castpd_ps(_mm256_insertf128_pd(_mm256_castpd128_pd256(p23), p67, 1));
    v = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
    d = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
}

__attribute__((target("avx2,fma"))) inline __m256 lookup8(const TemplateView& t, __m256 q, __m256 kmaxf,
                                                          __m256 invh, __m256& slope) {
    const __m256 u = _mm256_mul_ps(q, invh);
    const __m256 uk = _mm256_min_ps(_mm256_floor_ps(u), kmaxf);  // q ≥ 0
    const __m256i k = _mm256_cvttps_epi32(uk);
    __m256 v, d;
    if (t.vd) {
        pairs8(t, k, v, d);
    } else {
        v = _mm256_i32gather_ps(t.v, k, 4);
        d = _mm256_i32gather_ps(t.d, k, 4);
    }
    slope = _mm256_mul_ps(d, invh);
    return _mm256_fmadd_ps(_mm256_sub_ps(u, uk), d, v);
}

// The slopes d of table entries k.
__attribute__((target("avx2,fma"))) inline __m256 slopes8(const TemplateView& t, __m256i k) {
    if (!t.vd) return _mm256_i32gather_ps(t.d, k, 4);
    __m256 v, d;
    pairs8(t, k, v, d);
    return d;
}

// The render of one row: m[x] += a · S(κ((x − cx)² + dy²)), x in [x0, x1] (constants from the caller).
__attribute__((target("avx2,fma"), always_inline)) inline void splat_row8(float* m, int x0, int x1, float cx,
                                                                          __m256 vdy2, __m256 va, __m256 vk,
                                                                          __m256 kmaxf, __m256 invh,
                                                                          __m256 lanes,
                                                                          const TemplateView& t) {
    for (int x = x0; x <= x1; x += 8) {
        const int n = std::min(8, x1 - x + 1);
        const __m256 dx = _mm256_add_ps(_mm256_set1_ps(static_cast<float>(x) - cx), lanes);
        const __m256 q = _mm256_mul_ps(vk, _mm256_fmadd_ps(dx, dx, vdy2));
        __m256 sl;
        const __m256 S = lookup8(t, q, kmaxf, invh, sl);
        if (n == 8) {
            _mm256_storeu_ps(m + x, _mm256_fmadd_ps(va, S, _mm256_loadu_ps(m + x)));
        } else {
            const __m256i mask = first_lanes(n);
            _mm256_maskstore_ps(m + x, mask, _mm256_fmadd_ps(va, S, _mm256_maskload_ps(m + x, mask)));
        }
    }
}

__attribute__((target("avx2,fma"))) void splat_row_avx2(float* m, int x0, int x1, float cx, float dy2,
                                                        float amp, float kappa, const TemplateView& t) {
    splat_row8(m, x0, x1, cx, _mm256_set1_ps(dy2), _mm256_set1_ps(amp), _mm256_set1_ps(kappa),
               _mm256_set1_ps(static_cast<float>(t.kmax)), _mm256_set1_ps(t.inv_hq), lane_index(), t);
}

__attribute__((target("avx2,fma"))) void move_rows_avx2(float* m0, std::ptrdiff_t stride,
                                                        const MoveRowSpan* rows, int n_rows, float cx_old,
                                                        float amp_old, float kappa_old,
                                                        const TemplateView& t_old, float cx_new,
                                                        float amp_new, float kappa_new,
                                                        const TemplateView& t_new) {
    const __m256 lanes = lane_index(), va0 = _mm256_set1_ps(amp_old), vk0 = _mm256_set1_ps(kappa_old),
                 va1 = _mm256_set1_ps(amp_new), vk1 = _mm256_set1_ps(kappa_new);
    const __m256 kmax0 = _mm256_set1_ps(static_cast<float>(t_old.kmax)), invh0 = _mm256_set1_ps(t_old.inv_hq);
    const __m256 kmax1 = _mm256_set1_ps(static_cast<float>(t_new.kmax)), invh1 = _mm256_set1_ps(t_new.inv_hq);
    for (int ri = 0; ri < n_rows; ++ri) {
        const MoveRowSpan& r = rows[ri];
        float* m = m0 + static_cast<std::ptrdiff_t>(r.y) * stride;
        const __m256 dy0 = _mm256_set1_ps(r.dy_old * r.dy_old), dy1 = _mm256_set1_ps(r.dy_new * r.dy_new);
        for (int x = r.x0; x <= r.x1; x += 8) {
            const int n = std::min(8, r.x1 - x + 1);
            const __m256 xs = _mm256_add_ps(_mm256_set1_ps(static_cast<float>(x)), lanes);
            const __m256 d0 = _mm256_sub_ps(xs, _mm256_set1_ps(cx_old)),
                         d1 = _mm256_sub_ps(xs, _mm256_set1_ps(cx_new));
            __m256 sl;
            const __m256 S0 =
                lookup8(t_old, _mm256_mul_ps(vk0, _mm256_fmadd_ps(d0, d0, dy0)), kmax0, invh0, sl);
            const __m256 S1 =
                lookup8(t_new, _mm256_mul_ps(vk1, _mm256_fmadd_ps(d1, d1, dy1)), kmax1, invh1, sl);
            const __m256 delta = _mm256_fmsub_ps(va1, S1, _mm256_mul_ps(va0, S0));
            if (n == 8) {
                _mm256_storeu_ps(m + x, _mm256_add_ps(_mm256_loadu_ps(m + x), delta));
            } else {
                const __m256i mask = first_lanes(n);
                _mm256_maskstore_ps(m + x, mask, _mm256_add_ps(_mm256_maskload_ps(m + x, mask), delta));
            }
        }
    }
}

__attribute__((target("avx2,fma"))) void splat_rows_avx2(float* m0, std::ptrdiff_t stride,
                                                         const RowSpan* rows, int n_rows, float cx, float amp,
                                                         float kappa, const TemplateView& t) {
    // the rows in one function: the constants set once per disk, not once per row
    const __m256 lanes = lane_index(), va = _mm256_set1_ps(amp), vk = _mm256_set1_ps(kappa);
    const __m256 kmaxf = _mm256_set1_ps(static_cast<float>(t.kmax)), invh = _mm256_set1_ps(t.inv_hq);
    for (int ri = 0; ri < n_rows; ++ri)
        splat_row8(m0 + static_cast<std::ptrdiff_t>(rows[ri].y) * stride, rows[ri].x0, rows[ri].x1, cx,
                   _mm256_set1_ps(rows[ri].dy * rows[ri].dy), va, vk, kmaxf, invh, lanes, t);
}

__attribute__((target("avx2,fma"))) inline float hsum8(__m256 x) {
    const __m128 a = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    const __m128 b = _mm_add_ps(a, _mm_movehl_ps(a, a));
    return _mm_cvtss_f32(_mm_add_ss(b, _mm_shuffle_ps(b, b, 1)));
}

template <class P>
__attribute__((target("avx2,fma"))) void normal_rows_avx2(const P* im0, const float* m0,
                                                          std::ptrdiff_t stride, const RowSpan* rows,
                                                          int n_rows, float cx, float qi, float qo, float b,
                                                          float clip, float amp, float kappa,
                                                          const TemplateView& t, NormalSums& acc) {
    const BandRule8 rule = band_rule8(qi, qo, b, clip);
    const __m256 va = _mm256_set1_ps(amp), vk = _mm256_set1_ps(kappa);
    const __m256 kmaxf = _mm256_set1_ps(static_cast<float>(t.kmax)), invh = _mm256_set1_ps(t.inv_hq);
    const __m256 m2k = _mm256_set1_ps(-2 * kappa), one = _mm256_set1_ps(1.0f);
    __m256 S00 = _mm256_setzero_ps(), S01 = S00, S02 = S00, S03 = S00, S04 = S00, S11 = S00, S12 = S00,
           S13 = S00, S14 = S00, S22 = S00, S23 = S00, S24 = S00, S33 = S00, S34 = S00, S44 = S00, V0 = S00,
           V1 = S00, V2 = S00, V3 = S00, V4 = S00, RR = S00;
    for (int ri = 0; ri < n_rows; ++ri) {
        const RowSpan& row = rows[ri];
        const P* im = im0 + static_cast<std::ptrdiff_t>(row.y) * stride;
        const float* m = m0 + static_cast<std::ptrdiff_t>(row.y) * stride;
        const __m256 vdy2 = _mm256_set1_ps(row.dy * row.dy), m2kdy = _mm256_set1_ps(-2 * kappa * row.dy);
        for (int x = row.x0; x <= row.x1; x += 8) {
            const BandPixels8 px = band_pixels8(rule, im, m, x, row.x1, cx, vdy2);
            const __m256 dx = px.dx, q = px.q, ok = px.ok;
            __m256 r = px.r;
            __m256 sl;
            __m256 S = lookup8(t, _mm256_mul_ps(vk, q), kmaxf, invh, sl);
            const __m256 G = _mm256_and_ps(_mm256_mul_ps(va, sl), ok);
            S = _mm256_and_ps(S, ok);
            r = _mm256_and_ps(r, ok);
            const __m256 w = _mm256_and_ps(one, ok);
            const __m256 j0 = _mm256_mul_ps(_mm256_mul_ps(m2k, G), dx), j1 = _mm256_mul_ps(m2kdy, G),
                         j2 = _mm256_mul_ps(G, q);
            S00 = _mm256_fmadd_ps(j0, j0, S00), S01 = _mm256_fmadd_ps(j0, j1, S01),
            S02 = _mm256_fmadd_ps(j0, j2, S02);
            S03 = _mm256_add_ps(j0, S03), S04 = _mm256_fmadd_ps(j0, S, S04);
            S11 = _mm256_fmadd_ps(j1, j1, S11), S12 = _mm256_fmadd_ps(j1, j2, S12),
            S13 = _mm256_add_ps(j1, S13);
            S14 = _mm256_fmadd_ps(j1, S, S14);
            S22 = _mm256_fmadd_ps(j2, j2, S22), S23 = _mm256_add_ps(j2, S23),
            S24 = _mm256_fmadd_ps(j2, S, S24);
            S33 = _mm256_add_ps(w, S33), S34 = _mm256_add_ps(S, S34), S44 = _mm256_fmadd_ps(S, S, S44);
            V0 = _mm256_fmadd_ps(j0, r, V0), V1 = _mm256_fmadd_ps(j1, r, V1), V2 = _mm256_fmadd_ps(j2, r, V2);
            V3 = _mm256_add_ps(r, V3), V4 = _mm256_fmadd_ps(S, r, V4), RR = _mm256_fmadd_ps(r, r, RR);
        }
    }
    const __m256 all[21] = {S00, S01, S02, S03, S04, S11, S12, S13, S14, S22, S23,
                            S24, S33, S34, S44, V0,  V1,  V2,  V3,  V4,  RR};
    for (int k = 0; k < 21; ++k) acc.s[k] += hsum8(all[k]);
}

template <class P>
__attribute__((target("avx2,fma"))) void centre_rows_avx2(const P* im0, const float* m0,
                                                          std::ptrdiff_t stride, const RowSpan* rows,
                                                          int n_rows, float cx, float qi, float qo, float b,
                                                          float clip, float amp, float kappa,
                                                          const TemplateView& t, CentreSums& acc) {
    const BandRule8 rule = band_rule8(qi, qo, b, clip);
    const __m256 vk = _mm256_set1_ps(kappa);
    const __m256 kmaxf = _mm256_set1_ps(static_cast<float>(t.kmax)), invh = _mm256_set1_ps(t.inv_hq);
    // slope · amp · (−2κ) in one factor: J0 = g·dx, J1 = g·dy
    const __m256 gscale = _mm256_set1_ps(-2 * kappa * amp * t.inv_hq), one = _mm256_set1_ps(1.0f);
    __m256 A00 = _mm256_setzero_ps(), A01 = A00, A11 = A00, V0 = A00, V1 = A00, N = A00, RR = A00;
    for (int ri = 0; ri < n_rows; ++ri) {
        const RowSpan& row = rows[ri];
        const P* im = im0 + static_cast<std::ptrdiff_t>(row.y) * stride;
        const float* m = m0 + static_cast<std::ptrdiff_t>(row.y) * stride;
        const __m256 vdy2 = _mm256_set1_ps(row.dy * row.dy), vdy = _mm256_set1_ps(row.dy);
        for (int x = row.x0; x <= row.x1; x += 8) {
            const BandPixels8 px = band_pixels8(rule, im, m, x, row.x1, cx, vdy2);
            const __m256 dx = px.dx, q = px.q, ok = px.ok;
            __m256 r = px.r;
            const __m256 u = _mm256_mul_ps(_mm256_mul_ps(vk, q), invh);
            const __m256i k = _mm256_cvttps_epi32(_mm256_min_ps(_mm256_floor_ps(u), kmaxf));
            const __m256 d = slopes8(t, k);
            const __m256 g = _mm256_and_ps(_mm256_mul_ps(gscale, d), ok);
            r = _mm256_and_ps(r, ok);
            const __m256 j0 = _mm256_mul_ps(g, dx), j1 = _mm256_mul_ps(g, vdy);
            A00 = _mm256_fmadd_ps(j0, j0, A00), A01 = _mm256_fmadd_ps(j0, j1, A01),
            A11 = _mm256_fmadd_ps(j1, j1, A11);
            V0 = _mm256_fmadd_ps(j0, r, V0), V1 = _mm256_fmadd_ps(j1, r, V1);
            N = _mm256_add_ps(_mm256_and_ps(one, ok), N), RR = _mm256_fmadd_ps(r, r, RR);
        }
    }
    const __m256 all[7] = {A00, A01, A11, V0, V1, N, RR};
    for (int k = 0; k < 7; ++k) acc.s[k] += hsum8(all[k]);
}

template <class P>
__attribute__((target("avx2,fma"))) void residual_rows_avx2(const P* im0, const float* m0,
                                                            std::ptrdiff_t stride, const RowSpan* rows,
                                                            int n_rows, float cx, float qi, float qo, float b,
                                                            float clip, float amp, float kappa,
                                                            const TemplateView& t, ResidualSums& acc) {
    const BandRule8 rule = band_rule8(qi, qo, b, clip);
    const __m256 va = _mm256_set1_ps(amp), vk = _mm256_set1_ps(kappa);
    const __m256 kmaxf = _mm256_set1_ps(static_cast<float>(t.kmax)), invh = _mm256_set1_ps(t.inv_hq);
    const __m256 m2k = _mm256_set1_ps(-2 * kappa), one = _mm256_set1_ps(1.0f);
    __m256 V0 = _mm256_setzero_ps(), V1 = V0, V2 = V0, V3 = V0, V4 = V0, N = V0, RR = V0;
    for (int ri = 0; ri < n_rows; ++ri) {
        const RowSpan& row = rows[ri];
        const P* im = im0 + static_cast<std::ptrdiff_t>(row.y) * stride;
        const float* m = m0 + static_cast<std::ptrdiff_t>(row.y) * stride;
        const __m256 vdy2 = _mm256_set1_ps(row.dy * row.dy), vdy = _mm256_set1_ps(row.dy);
        for (int x = row.x0; x <= row.x1; x += 8) {
            const BandPixels8 px = band_pixels8(rule, im, m, x, row.x1, cx, vdy2);
            const __m256 dx = px.dx, q = px.q, ok = px.ok;
            __m256 r = px.r;
            __m256 sl;
            const __m256 S = lookup8(t, _mm256_mul_ps(vk, q), kmaxf, invh, sl);
            r = _mm256_and_ps(r, ok);
            const __m256 G = _mm256_mul_ps(va, sl);
            const __m256 gr = _mm256_mul_ps(G, r);  // r is 0 outside the band: no mask needed on G
            const __m256 kgr = _mm256_mul_ps(m2k, gr);
            V0 = _mm256_fmadd_ps(kgr, dx, V0), V1 = _mm256_fmadd_ps(kgr, vdy, V1),
            V2 = _mm256_fmadd_ps(gr, q, V2);
            V3 = _mm256_add_ps(r, V3), V4 = _mm256_fmadd_ps(S, r, V4);
            N = _mm256_add_ps(_mm256_and_ps(one, ok), N), RR = _mm256_fmadd_ps(r, r, RR);
        }
    }
    const __m256 all[7] = {V0, V1, V2, V3, V4, N, RR};
    for (int k = 0; k < 7; ++k) acc.s[k] += hsum8(all[k]);
}

template <class P>
__attribute__((target("avx2,fma"))) void cross_rows_avx2(const P* im0, const float* m0, std::ptrdiff_t stride,
                                                         const RowSpan* rows, int n_rows, float cx_i,
                                                         float qi, float qo, float b_i, float clip,
                                                         float amp_i, float kappa_i, const TemplateView& t_i,
                                                         float cx_j, float dcy, float amp_j, float kappa_j,
                                                         const TemplateView& t_j, CrossSums& acc) {
    const BandRule8 rule = band_rule8(qi, qo, b_i, clip);
    const __m256 vai = _mm256_set1_ps(amp_i), vki = _mm256_set1_ps(kappa_i), vaj = _mm256_set1_ps(amp_j),
                 vkj = _mm256_set1_ps(kappa_j);
    const __m256 kmi = _mm256_set1_ps(static_cast<float>(t_i.kmax)), ihi = _mm256_set1_ps(t_i.inv_hq);
    const __m256 kmj = _mm256_set1_ps(static_cast<float>(t_j.kmax)), ihj = _mm256_set1_ps(t_j.inv_hq);
    const __m256 m2ki = _mm256_set1_ps(-2 * kappa_i), m2kj = _mm256_set1_ps(-2 * kappa_j);
    __m256 S[20];
    for (auto& x : S) x = _mm256_setzero_ps();
    for (int ri = 0; ri < n_rows; ++ri) {
        const RowSpan& row = rows[ri];
        const P* im = im0 + static_cast<std::ptrdiff_t>(row.y) * stride;
        const float* m = m0 + static_cast<std::ptrdiff_t>(row.y) * stride;
        const float dyj = row.dy + dcy;
        const __m256 dyi2 = _mm256_set1_ps(row.dy * row.dy), dyj2 = _mm256_set1_ps(dyj * dyj);
        const __m256 m2kdyi = _mm256_set1_ps(-2 * kappa_i * row.dy),
                     m2kdyj = _mm256_set1_ps(-2 * kappa_j * dyj);
        for (int x = row.x0; x <= row.x1; x += 8) {
            const BandPixels8 px = band_pixels8(rule, im, m, x, row.x1, cx_i, dyi2);
            const __m256 dxi = px.dx, q_i = px.q, ok = px.ok;
            const __m256 dxj = _mm256_sub_ps(_mm256_add_ps(_mm256_set1_ps(static_cast<float>(x)), rule.lanes),
                                             _mm256_set1_ps(cx_j));
            const __m256 q_j = _mm256_fmadd_ps(dxj, dxj, dyj2);
            __m256 sli, slj;
            const __m256 Si = _mm256_and_ps(lookup8(t_i, _mm256_mul_ps(vki, q_i), kmi, ihi, sli), ok);
            const __m256 Sj = lookup8(t_j, _mm256_mul_ps(vkj, q_j), kmj, ihj, slj);
            const __m256 Gi = _mm256_and_ps(_mm256_mul_ps(vai, sli), ok), Gj = _mm256_mul_ps(vaj, slj);
            const __m256 one = _mm256_and_ps(_mm256_set1_ps(1.0f), ok);
            const __m256 ji[5] = {_mm256_mul_ps(_mm256_mul_ps(m2ki, Gi), dxi), _mm256_mul_ps(m2kdyi, Gi),
                                  _mm256_mul_ps(Gi, q_i), one, Si};
            const __m256 jj[4] = {_mm256_mul_ps(_mm256_mul_ps(m2kj, Gj), dxj), _mm256_mul_ps(m2kdyj, Gj),
                                  _mm256_mul_ps(Gj, q_j), Sj};
            for (int a = 0; a < 5; ++a)
                for (int c = 0; c < 4; ++c) S[a * 4 + c] = _mm256_fmadd_ps(ji[a], jj[c], S[a * 4 + c]);
        }
    }
    for (int k = 0; k < 20; ++k) acc.s[k] += hsum8(S[k]);
}

template <class P>
__attribute__((target("avx2,fma"))) void light_sums_rows_avx2(const P* im0, const float* m0,
                                                              std::ptrdiff_t stride, const RowSpan* rows,
                                                              int n_rows, float cx, float qi, float qo,
                                                              const TemplateView& t, LightSums& acc) {
    // the band rule without a residual clip (an infinite clip)
    const BandRule8 rule = band_rule8(qi, qo, 0.0f, __builtin_inff());
    const __m256 kmaxf = _mm256_set1_ps(static_cast<float>(t.kmax)), invh = _mm256_set1_ps(t.inv_hq),
                 one = _mm256_set1_ps(1.0f);
    __m256 N = _mm256_setzero_ps(), SS = N, S2 = N, Y = N, SY = N, YY = N;
    for (int ri = 0; ri < n_rows; ++ri) {
        const RowSpan& row = rows[ri];
        const P* im = im0 + static_cast<std::ptrdiff_t>(row.y) * stride;
        const float* m = m0 + static_cast<std::ptrdiff_t>(row.y) * stride;
        const __m256 vdy2 = _mm256_set1_ps(row.dy * row.dy);
        for (int x = row.x0; x <= row.x1; x += 8) {
            const BandPixels8 px = band_pixels8(rule, im, m, x, row.x1, cx, vdy2);
            __m256 sl;
            const __m256 S = _mm256_and_ps(lookup8(t, px.q, kmaxf, invh, sl), px.ok);
            const __m256 y = _mm256_and_ps(px.r, px.ok);
            N = _mm256_add_ps(N, _mm256_and_ps(one, px.ok));
            SS = _mm256_add_ps(SS, S), S2 = _mm256_fmadd_ps(S, S, S2);
            Y = _mm256_add_ps(Y, y), SY = _mm256_fmadd_ps(S, y, SY), YY = _mm256_fmadd_ps(y, y, YY);
        }
    }
    const __m256 all[6] = {N, SS, S2, Y, SY, YY};
    for (int k = 0; k < 6; ++k) acc.s[k] += hsum8(all[k]);
}

__attribute__((target("avx2,fma"))) void annulus_spans_avx2(int w, int h, double cx_, double cy_, float q_in,
                                                            float q_out, int row_step,
                                                            std::vector<RowSpan>& rows) {
    rows.clear();
    const AnnulusRows a = annulus_rows(h, cx_, cy_, q_in, q_out, row_step);
    const float cx = a.cx, cy = a.cy, qo = a.qo, qi = a.qi;
    const int y0 = a.y0, y1 = a.y1;
    if (y0 > y1) return;
    const int n = (y1 - y0) / row_step + 1;
    // The portable version's float operations, eight rows at a time (exact: a rounded float is an
    // integer that converts without change).
    const __m256 vcx = _mm256_set1_ps(cx), vcy = _mm256_set1_ps(cy), vqo = _mm256_set1_ps(qo),
                 vqi = _mm256_set1_ps(qi), zero = _mm256_setzero_ps();
    const __m256i one = _mm256_set1_epi32(1), vzero = _mm256_setzero_si256(), wmax = _mm256_set1_epi32(w - 1);
    const __m256i step =
        _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(row_step));
    alignas(32) int X0[8], X1[8], H0[8], H1[8], HOLE[8];
    alignas(32) float DY[8];
    for (int b = 0; b < n; b += 8) {
        const __m256i py = _mm256_add_epi32(_mm256_set1_epi32(y0 + b * row_step), step);
        const __m256 dy = _mm256_sub_ps(_mm256_cvtepi32_ps(py), vcy), dy2 = _mm256_mul_ps(dy, dy);
        const __m256 half = _mm256_sqrt_ps(_mm256_max_ps(zero, _mm256_sub_ps(vqo, dy2)));
        const __m256i x0 =
            _mm256_max_epi32(vzero, _mm256_cvttps_epi32(_mm256_ceil_ps(_mm256_sub_ps(vcx, half))));
        const __m256i x1 =
            _mm256_min_epi32(wmax, _mm256_cvttps_epi32(_mm256_floor_ps(_mm256_add_ps(vcx, half))));
        const __m256 hole = _mm256_cmp_ps(dy2, vqi, _CMP_LT_OQ);
        const __m256 hw = _mm256_sqrt_ps(_mm256_max_ps(zero, _mm256_sub_ps(vqi, dy2)));
        const __m256i h0 =
            _mm256_add_epi32(_mm256_cvttps_epi32(_mm256_floor_ps(_mm256_sub_ps(vcx, hw))), one);
        const __m256i h1 = _mm256_sub_epi32(_mm256_cvttps_epi32(_mm256_ceil_ps(_mm256_add_ps(vcx, hw))), one);
        _mm256_store_si256(reinterpret_cast<__m256i*>(X0), x0);
        _mm256_store_si256(reinterpret_cast<__m256i*>(X1), x1);
        _mm256_store_si256(reinterpret_cast<__m256i*>(H0), h0);
        _mm256_store_si256(reinterpret_cast<__m256i*>(H1), h1);
        _mm256_store_si256(reinterpret_cast<__m256i*>(HOLE), _mm256_castps_si256(hole));
        _mm256_store_ps(DY, dy);
        const int m = std::min(8, n - b);
        for (int l = 0; l < m; ++l) {
            const int y = y0 + (b + l) * row_step, a0 = X0[l], a1 = X1[l];
            if (a0 > a1) continue;
            if (HOLE[l] && H0[l] <= H1[l]) {
                if (a0 < H0[l]) rows.push_back({y, a0, std::min(a1, H0[l] - 1), DY[l]});
                if (H1[l] < a1) rows.push_back({y, std::max(a0, H1[l] + 1), a1, DY[l]});
                continue;
            }
            rows.push_back({y, a0, a1, DY[l]});
        }
    }
}

__attribute__((target("avx2,fma"))) void move_spans_avx2(int w, int h, double cx0_, double cy0_, float q0_,
                                                         double cx1_, double cy1_, float q1_, int row_step,
                                                         std::vector<MoveRowSpan>& rows) {
    rows.clear();
    const MoveRows m = move_rows_of(h, cx0_, cy0_, q0_, cx1_, cy1_, q1_, row_step);
    const float cx0 = m.cx0, cy0 = m.cy0, cx1 = m.cx1, cy1 = m.cy1, q0 = m.q0, q1 = m.q1;
    const int y0 = m.y0, y1 = m.y1;
    if (y0 > y1) return;
    const int n = (y1 - y0) / row_step + 1;
    const __m256 vcx0 = _mm256_set1_ps(cx0), vcy0 = _mm256_set1_ps(cy0), vcx1 = _mm256_set1_ps(cx1),
                 vcy1 = _mm256_set1_ps(cy1);
    const __m256 vq0 = _mm256_set1_ps(q0), vq1 = _mm256_set1_ps(q1), zero = _mm256_setzero_ps();
    const __m256i vw = _mm256_set1_epi32(w), vm1 = _mm256_set1_epi32(-1), vzero = _mm256_setzero_si256(),
                  wmax = _mm256_set1_epi32(w - 1);
    const __m256i step =
        _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(row_step));
    alignas(32) int XA[8], XB[8];
    alignas(32) float E0[8], E1[8];
    for (int b = 0; b < n; b += 8) {
        const __m256 py = _mm256_cvtepi32_ps(_mm256_add_epi32(_mm256_set1_epi32(y0 + b * row_step), step));
        const __m256 e0 = _mm256_sub_ps(py, vcy0), e1 = _mm256_sub_ps(py, vcy1);
        const __m256 s0 = _mm256_mul_ps(e0, e0), s1 = _mm256_mul_ps(e1, e1);
        const __m256 in0 = _mm256_cmp_ps(s0, vq0, _CMP_LE_OQ), in1 = _mm256_cmp_ps(s1, vq1, _CMP_LE_OQ);
        const __m256 hw0 = _mm256_sqrt_ps(_mm256_max_ps(zero, _mm256_sub_ps(vq0, s0)));
        const __m256 hw1 = _mm256_sqrt_ps(_mm256_max_ps(zero, _mm256_sub_ps(vq1, s1)));
        const __m256i a0 = _mm256_blendv_epi8(
            vw, _mm256_cvttps_epi32(_mm256_ceil_ps(_mm256_sub_ps(vcx0, hw0))), _mm256_castps_si256(in0));
        const __m256i b0 = _mm256_blendv_epi8(
            vm1, _mm256_cvttps_epi32(_mm256_floor_ps(_mm256_add_ps(vcx0, hw0))), _mm256_castps_si256(in0));
        const __m256i a1 = _mm256_blendv_epi8(
            vw, _mm256_cvttps_epi32(_mm256_ceil_ps(_mm256_sub_ps(vcx1, hw1))), _mm256_castps_si256(in1));
        const __m256i b1 = _mm256_blendv_epi8(
            vm1, _mm256_cvttps_epi32(_mm256_floor_ps(_mm256_add_ps(vcx1, hw1))), _mm256_castps_si256(in1));
        _mm256_store_si256(reinterpret_cast<__m256i*>(XA), _mm256_max_epi32(vzero, _mm256_min_epi32(a0, a1)));
        _mm256_store_si256(reinterpret_cast<__m256i*>(XB), _mm256_min_epi32(wmax, _mm256_max_epi32(b0, b1)));
        _mm256_store_ps(E0, e0);
        _mm256_store_ps(E1, e1);
        const int m = std::min(8, n - b);
        for (int l = 0; l < m; ++l)
            if (XA[l] <= XB[l]) rows.push_back({y0 + (b + l) * row_step, XA[l], XB[l], E0[l], E1[l]});
    }
}

bool cpu_has_avx2() {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

#endif

// Decided once: what the CPU can do does not change while the program runs.
bool use_avx2() {
#ifdef VIBRA_FIT_AVX2
    static const bool yes = cpu_has_avx2();
    return yes;
#else
    return false;
#endif
}

// The portable versions of the multi-row kernels that have one only for a row.
void splat_rows_portable(float* m, std::ptrdiff_t stride, const RowSpan* rows, int n_rows, float cx,
                         float amp, float kappa, const TemplateView& t) {
    for (int ri = 0; ri < n_rows; ++ri)
        splat_row_portable(m + static_cast<std::ptrdiff_t>(rows[ri].y) * stride, rows[ri].x0, rows[ri].x1, cx,
                           rows[ri].dy * rows[ri].dy, amp, kappa, t);
}

template <class P>
void normal_rows_portable(const P* im, const float* m, std::ptrdiff_t stride, const RowSpan* rows, int n_rows,
                          float cx, float qi, float qo, float b, float clip, float amp, float kappa,
                          const TemplateView& t, NormalSums& acc) {
    for (int ri = 0; ri < n_rows; ++ri) {
        const auto& r = rows[ri];
        const auto off = static_cast<std::ptrdiff_t>(r.y) * stride;
        normal_row_portable(im + off, m + off, r.x0, r.x1, cx, r.dy, r.dy * r.dy, qi, qo, b, clip, amp, kappa,
                            t, acc);
    }
}

}  // namespace

// Every kernel below is `name_avx2` when the CPU has AVX2 and FMA (decided once), else
// `name_portable`: the same arguments, and the same results to the last bit where the tests
// compare them (test_joint_fit).
#ifdef VIBRA_FIT_AVX2
#define VIBRA_DISPATCH(name, ...) (use_avx2() ? name##_avx2(__VA_ARGS__) : name##_portable(__VA_ARGS__))
#else
#define VIBRA_DISPATCH(name, ...) name##_portable(__VA_ARGS__)
#endif

void splat_row(float* m, int x0, int x1, float cx, float dy2, float amp, float kappa, const TemplateView& t) {
    VIBRA_DISPATCH(splat_row, m, x0, x1, cx, dy2, amp, kappa, t);
}

void move_rows(float* m, std::ptrdiff_t stride, const MoveRowSpan* rows, int n_rows, float cx_old,
               float amp_old, float kappa_old, const TemplateView& t_old, float cx_new, float amp_new,
               float kappa_new, const TemplateView& t_new) {
    VIBRA_DISPATCH(move_rows, m, stride, rows, n_rows, cx_old, amp_old, kappa_old, t_old, cx_new, amp_new,
                   kappa_new, t_new);
}

void splat_rows(float* m, std::ptrdiff_t stride, const RowSpan* rows, int n_rows, float cx, float amp,
                float kappa, const TemplateView& t) {
    VIBRA_DISPATCH(splat_rows, m, stride, rows, n_rows, cx, amp, kappa, t);
}

template <class P>
void normal_row(const P* im, const float* m, int x0, int x1, float cx, float dy, float dy2, float qi,
                float qo, float b, float clip, float amp, float kappa, const TemplateView& t,
                NormalSums& acc) {
    (void)dy2;  // = dy² (kept in the signature for the portable version)
    const RowSpan row{0, x0, x1, dy};
    normal_rows(im, m, 0, &row, 1, cx, qi, qo, b, clip, amp, kappa, t, acc);
}

template <class P>
void normal_rows(const P* im, const float* m, std::ptrdiff_t stride, const RowSpan* rows, int n_rows,
                 float cx, float qi, float qo, float b, float clip, float amp, float kappa,
                 const TemplateView& t, NormalSums& acc) {
    VIBRA_DISPATCH(normal_rows, im, m, stride, rows, n_rows, cx, qi, qo, b, clip, amp, kappa, t, acc);
}

template <class P>
void centre_rows(const P* im, const float* m, std::ptrdiff_t stride, const RowSpan* rows, int n_rows,
                 float cx, float qi, float qo, float b, float clip, float amp, float kappa,
                 const TemplateView& t, CentreSums& acc) {
    VIBRA_DISPATCH(centre_rows, im, m, stride, rows, n_rows, cx, qi, qo, b, clip, amp, kappa, t, acc);
}

template <class P>
void residual_rows(const P* im, const float* m, std::ptrdiff_t stride, const RowSpan* rows, int n_rows,
                   float cx, float qi, float qo, float b, float clip, float amp, float kappa,
                   const TemplateView& t, ResidualSums& acc) {
    VIBRA_DISPATCH(residual_rows, im, m, stride, rows, n_rows, cx, qi, qo, b, clip, amp, kappa, t, acc);
}

template <class P>
void cross_rows(const P* im, const float* m, std::ptrdiff_t stride, const RowSpan* rows, int n_rows,
                float cx_i, float qi, float qo, float b_i, float clip, float amp_i, float kappa_i,
                const TemplateView& t_i, float cx_j, float dcy, float amp_j, float kappa_j,
                const TemplateView& t_j, CrossSums& acc) {
    VIBRA_DISPATCH(cross_rows, im, m, stride, rows, n_rows, cx_i, qi, qo, b_i, clip, amp_i, kappa_i, t_i,
                   cx_j, dcy, amp_j, kappa_j, t_j, acc);
}

template <class P>
void light_sums_rows(const P* im, const float* m, std::ptrdiff_t stride, const RowSpan* rows, int n_rows,
                     float cx, float qi, float qo, const TemplateView& t, LightSums& acc) {
    VIBRA_DISPATCH(light_sums_rows, im, m, stride, rows, n_rows, cx, qi, qo, t, acc);
}

void annulus_spans(int w, int h, double cx, double cy, float q_in, float q_out, int row_step,
                   std::vector<RowSpan>& rows) {
    VIBRA_DISPATCH(annulus_spans, w, h, cx, cy, q_in, q_out, row_step, rows);
}

void move_spans(int w, int h, double cx0, double cy0, float q0, double cx1, double cy1, float q1,
                int row_step, std::vector<MoveRowSpan>& rows) {
    VIBRA_DISPATCH(move_spans, w, h, cx0, cy0, q0, cx1, cy1, q1, row_step, rows);
}

#undef VIBRA_DISPATCH

// The band kernels for the two pixel types of a frame (8- and 16-bit).
#define VIBRA_BAND_KERNELS(P)                                                                                \
    template void normal_row<P>(const P*, const float*, int, int, float, float, float, float, float, float,  \
                                float, float, float, const TemplateView&, NormalSums&);                      \
    template void normal_row_portable<P>(const P*, const float*, int, int, float, float, float, float,       \
                                         float, float, float, float, float, const TemplateView&,             \
                                         NormalSums&);                                                       \
    template void normal_rows<P>(const P*, const float*, std::ptrdiff_t, const RowSpan*, int, float, float,  \
                                 float, float, float, float, float, const TemplateView&, NormalSums&);       \
    template void centre_rows<P>(const P*, const float*, std::ptrdiff_t, const RowSpan*, int, float, float,  \
                                 float, float, float, float, float, const TemplateView&, CentreSums&);       \
    template void centre_rows_portable<P>(const P*, const float*, std::ptrdiff_t, const RowSpan*, int,       \
                                          float, float, float, float, float, float, float,                   \
                                          const TemplateView&, CentreSums&);                                 \
    template void residual_rows<P>(const P*, const float*, std::ptrdiff_t, const RowSpan*, int, float,       \
                                   float, float, float, float, float, float, const TemplateView&,            \
                                   ResidualSums&);                                                           \
    template void residual_rows_portable<P>(const P*, const float*, std::ptrdiff_t, const RowSpan*, int,     \
                                            float, float, float, float, float, float, float,                 \
                                            const TemplateView&, ResidualSums&);                             \
    template void cross_rows<P>(const P*, const float*, std::ptrdiff_t, const RowSpan*, int, float, float,   \
                                float, float, float, float, float, const TemplateView&, float, float, float, \
                                float, const TemplateView&, CrossSums&);                                     \
    template void cross_rows_portable<P>(const P*, const float*, std::ptrdiff_t, const RowSpan*, int, float, \
                                         float, float, float, float, float, float, const TemplateView&,      \
                                         float, float, float, float, const TemplateView&, CrossSums&);       \
    template void light_sums_rows<P>(const P*, const float*, std::ptrdiff_t, const RowSpan*, int, float,     \
                                     float, float, const TemplateView&, LightSums&);                         \
    template void light_sums_rows_portable<P>(const P*, const float*, std::ptrdiff_t, const RowSpan*, int,   \
                                              float, float, float, const TemplateView&, LightSums&);
VIBRA_BAND_KERNELS(std::uint8_t)
VIBRA_BAND_KERNELS(std::uint16_t)
#undef VIBRA_BAND_KERNELS

bool fit_kernels_vectorised() { return use_avx2(); }

}  // namespace vibra::tracking::detail
