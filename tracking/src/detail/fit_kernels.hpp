// SPDX-License-Identifier: GPL-3.0-or-later
// Row kernels of the joint template fit (joint_fit.cpp): render a disk's light into the model
// image, and accumulate one disk's Gauss–Newton normal equations, over one image row. Each has
// a portable scalar version and an AVX2/FMA version (8 pixels at a time, template lookups by
// gather), chosen once at run time from what the CPU supports; both give the same sums up to
// float rounding. Internal.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace vibra::tracking::detail {

/// A radial template tabulated in q = κρ²: S(q) = v[k] + (q/hq − k)·d[k], k = min(⌊q/hq⌋, kmax).
/// `vd` (optional) holds the pairs (v[k], d[k]) interleaved: the vectorised kernels then fetch
/// both with one 64-bit gather per lane instead of two 32-bit ones.
struct TemplateView {
    const float* v = nullptr;
    const float* d = nullptr;
    int kmax = 0;
    float inv_hq = 1;
    const float* vd = nullptr;
};

/// The band kernels (normal, centre, residual, cross, light sums) read the frame's own pixels:
/// P = std::uint8_t or std::uint16_t (instantiated for both), `im` and `m` with the same stride
/// (elements). The vectorised versions read each 8 pixels whole, also up to 7 pixels past a
/// row's last one: those bytes must be readable (the next row, or slack after the image;
/// joint_fit makes sure). No float copy of the frame is made (it cost ≈ 5% of a warm frame).

/// Sums of JᵀJ (upper triangle of 5×5, row-major: 00 01 02 03 04 11 12 13 14 22 23 24 33 34 44),
/// Jᵀr (5) and r² of one disk's band; J = ∂model/∂(cx, cy, κ, b, a).
struct NormalSums {
    float s[21] = {};
};

/// One row of a disk's band: image row y, columns [x0, x1], dy = y − cy.
struct RowSpan {
    int y, x0, x1;
    float dy;
};

/// m[x] += amp · S(κ((x − cx)² + dy²)) for x in [x0, x1].
void splat_row(float* m, int x0, int x1, float cx, float dy2, float amp, float kappa, const TemplateView& t);

/// Adds the pixels x in [x0, x1] with q = (x − cx)² + dy² in [qi, qo] and |r| ≤ clip, where
/// r = im[x] − b − m[x], to the normal equations of the model b + amp · S(κ q).
template <class P>
void normal_row(const P* im, const float* m, int x0, int x1, float cx, float dy, float dy2, float qi,
                float qo, float b, float clip, float amp, float kappa, const TemplateView& t,
                NormalSums& acc);

/// splat_row over several rows (dy² from each row's dy); `m` points at row 0 of an image with
/// `stride` floats per row.
void splat_rows(float* m, std::ptrdiff_t stride, const RowSpan* rows, int n_rows, float cx, float amp,
                float kappa, const TemplateView& t);

/// One row of the union of a disk's footprints before and after a move: image row y, columns
/// [x0, x1], dy_old = y − cy_old, dy_new = y − cy_new.
struct MoveRowSpan {
    int y, x0, x1;
    float dy_old, dy_new;
};

/// Rows of the union of two footprints q ≤ q_old about (cx_old, cy_old) and q ≤ q_new about
/// (cx_new, cy_new) in the w × h image, rows that are multiples of row_step (widened by a hair,
/// as annulus_spans; dy as annulus_spans computes it, so a move cancels a splat's own rounding).
/// The AVX2 version computes eight rows at once and gives the same spans as the portable one.
void move_spans(int w, int h, double cx_old, double cy_old, float q_old, double cx_new, double cy_new,
                float q_new, int row_step, std::vector<MoveRowSpan>& rows);
void move_spans_portable(int w, int h, double cx_old, double cy_old, float q_old, double cx_new,
                         double cy_new, float q_new, int row_step, std::vector<MoveRowSpan>& rows);

/// A disk moved: m[x] += amp_new · S_new(κ_new ρ_new²) − amp_old · S_old(κ_old ρ_old²) over the
/// rows (one pass instead of a removal and an addition; outside a footprint S is 0).
void move_rows(float* m, std::ptrdiff_t stride, const MoveRowSpan* rows, int n_rows, float cx_old,
               float amp_old, float kappa_old, const TemplateView& t_old, float cx_new, float amp_new,
               float kappa_new, const TemplateView& t_new);
/// The portable version, for tests that compare.
void move_rows_portable(float* m, std::ptrdiff_t stride, const MoveRowSpan* rows, int n_rows, float cx_old,
                        float amp_old, float kappa_old, const TemplateView& t_old, float cx_new,
                        float amp_new, float kappa_new, const TemplateView& t_new);

/// normal_row over several rows of one disk (the sums are reduced once, not per row); `im` and
/// `m` point at row 0 of images with `stride` floats per row.
template <class P>
void normal_rows(const P* im, const float* m, std::ptrdiff_t stride, const RowSpan* rows, int n_rows,
                 float cx, float qi, float qo, float b, float clip, float amp, float kappa,
                 const TemplateView& t, NormalSums& acc);

/// Sums of a centre-only Gauss–Newton step (κ, b, a held): JᵀJ of (cx, cy) (00 01 11), Jᵀr
/// (0, 1), pixel count and r² of one disk's band. Over a full band the centre decouples from κ,
/// b and a (odd against even functions of the offset), so the centre step is nearly the 5×5
/// one's, at a third of the accumulators and with slopes only. Same pixel rules as normal_rows.
struct CentreSums {
    float s[7] = {};
};
template <class P>
void centre_rows(const P* im, const float* m, std::ptrdiff_t stride, const RowSpan* rows, int n_rows,
                 float cx, float qi, float qo, float b, float clip, float amp, float kappa,
                 const TemplateView& t, CentreSums& acc);
template <class P>
void centre_rows_portable(const P* im, const float* m, std::ptrdiff_t stride, const RowSpan* rows, int n_rows,
                          float cx, float qi, float qo, float b, float clip, float amp, float kappa,
                          const TemplateView& t, CentreSums& acc);

/// The right-hand side of one disk's normal equations alone: Jᵀr (5, in the order of
/// NormalSums: cx, cy, κ, b, a), pixel count and r², with the pixel rules of normal_rows. With a
/// JᵀJ carried over from an earlier step (it changes little from frame to frame) a Gauss–Newton
/// step needs only these: 7 sums instead of 21. The fixed point (Jᵀr = 0) is the same.
struct ResidualSums {
    float s[7] = {};
};
template <class P>
void residual_rows(const P* im, const float* m, std::ptrdiff_t stride, const RowSpan* rows, int n_rows,
                   float cx, float qi, float qo, float b, float clip, float amp, float kappa,
                   const TemplateView& t, ResidualSums& acc);
template <class P>
void residual_rows_portable(const P* im, const float* m, std::ptrdiff_t stride, const RowSpan* rows,
                            int n_rows, float cx, float qi, float qo, float b, float clip, float amp,
                            float kappa, const TemplateView& t, ResidualSums& acc);

/// Cross terms of the joint Newton step: how disk i's band residual changes with a neighbour
/// j's light. Over the rows (i's band, dy = y − cy_i), pixels with q_i in [qi, qo] and
/// |r| ≤ clip, accumulates (J_i, in the order of NormalSums) ⊗ (J_j without b: cx, cy, κ, a) into
/// s[5 × 4] (row-major); dcy = cy_i − cy_j. J_j is 0 outside j's template support.
struct CrossSums {
    float s[20] = {};
};
template <class P>
void cross_rows(const P* im, const float* m, std::ptrdiff_t stride, const RowSpan* rows, int n_rows,
                float cx_i, float qi, float qo, float b_i, float clip, float amp_i, float kappa_i,
                const TemplateView& t_i, float cx_j, float dcy, float amp_j, float kappa_j,
                const TemplateView& t_j, CrossSums& acc);
template <class P>
void cross_rows_portable(const P* im, const float* m, std::ptrdiff_t stride, const RowSpan* rows, int n_rows,
                         float cx_i, float qi, float qo, float b_i, float clip, float amp_i, float kappa_i,
                         const TemplateView& t_i, float cx_j, float dcy, float amp_j, float kappa_j,
                         const TemplateView& t_j, CrossSums& acc);

/// Sums of a fresh search (joint_fit's rescue): how well a template's light, placed at a trial
/// centre, explains y = im − m. Over the rows, pixels with q = (x − cx)² + dy² in [qi, qo] (no
/// residual clip): count, ΣS, ΣS², Σy, ΣSy, Σy² with S = S(q) (κ = 1), in that order. The
/// amplitude and background follow by linear least squares. The AVX2 version sums 8 lanes in
/// float (a disk's few hundred pixels) and adds them into the doubles.
struct LightSums {
    double s[6] = {};
};
template <class P>
void light_sums_rows(const P* im, const float* m, std::ptrdiff_t stride, const RowSpan* rows, int n_rows,
                     float cx, float qi, float qo, const TemplateView& t, LightSums& acc);
template <class P>
void light_sums_rows_portable(const P* im, const float* m, std::ptrdiff_t stride, const RowSpan* rows,
                              int n_rows, float cx, float qi, float qo, const TemplateView& t,
                              LightSums& acc);

/// The portable versions (what the two above do without AVX2), for tests that compare.
void splat_row_portable(float* m, int x0, int x1, float cx, float dy2, float amp, float kappa,
                        const TemplateView& t);
template <class P>
void normal_row_portable(const P* im, const float* m, int x0, int x1, float cx, float dy, float dy2, float qi,
                         float qo, float b, float clip, float amp, float kappa, const TemplateView& t,
                         NormalSums& acc);

/// ⌊x⌋ and ⌈x⌉ for |x| < 2³¹ without a libm call (the build targets baseline x86-64, where
/// std::floor is a function call; the span builders below run ~20 times per disk step).
inline int floor_int(float x) {
    const int i = static_cast<int>(x);
    return x < static_cast<float>(i) ? i - 1 : i;
}
inline int ceil_int(float x) {
    const int i = static_cast<int>(x);
    return x > static_cast<float>(i) ? i + 1 : i;
}

/// Spans of the annulus q = (x − cx)² + (y − cy)² ∈ [q_in, q_out] (q_in = 0: the whole disk) in
/// the w × h image, rows that are multiples of row_step: a row crossing the hole is two spans.
/// The spans may hold a pixel more than the annulus at either end (float rounding; they are
/// widened by a hair so as never to hold one less): the kernels test q themselves, and a
/// template is 0 beyond its support. The hot paths' version of for_rows; the AVX2 version
/// computes eight rows' bounds at once (square roots, floors and ceilings) and gives the same
/// spans as the portable one.
void annulus_spans(int w, int h, double cx, double cy, float q_in, float q_out, int row_step,
                   std::vector<RowSpan>& rows);
void annulus_spans_portable(int w, int h, double cx, double cy, float q_in, float q_out, int row_step,
                            std::vector<RowSpan>& rows);

/// True when the AVX2 kernels are used (for benchmarks' reports).
bool fit_kernels_vectorised();

}  // namespace vibra::tracking::detail
