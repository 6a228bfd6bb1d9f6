// SPDX-License-Identifier: GPL-3.0-or-later
// Joint template fit (joint_fit.hpp). Implementation notes:
// - Templates are tabulated in q = ρ² (no square root per pixel); a disk's size enters as a scale
//   of q: S_s(κ_i ρ²) with κ_i = (R_s / R_i)², so interior features (rings, dots) scale with the
//   disk, and ∂/∂c, ∂/∂κ need no ρ either.
// - Model image M = Σ_j a_j S_j is rendered once per full sweep (Jacobi); in the extra sweeps
//   only the disks that still move are stepped and M is patched for each of them.
// - The first templates use only the pixels clearly nearer to one disk's edge than to any other
//   (an edge-distance label image), so neighbours' light hardly enters them; from the second
//   sweep on they are re-measured from all pixels with the neighbours' modelled light subtracted.
// - Row kernels (model render, normal equations) are in fit_kernels.cpp.
// - The steps (templates, render, sweeps, repair, Newton, extra sweeps) are the methods of
//   detail::joint::JointFitter (detail/joint_fitter.hpp), which holds the frame's shared state.
#include "vibra/tracking/joint_fit.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>

#include <opencv2/imgproc.hpp>

#include "detail/detect_util.hpp"
#include "detail/fit_kernels.hpp"
#include "vibra/core/cell_list.hpp"
#include "detail/joint_fitter.hpp"
#include "vibra/core/error.hpp"

namespace vibra::tracking {

using detail::cpu_seconds;
using detail::median_of;

void JointFitParams::validate() const {
    auto bad = [](const char* f, double v, const char* rule) {
        throw ParameterError(std::string("joint fit: ") + f + " must be " + rule + ", got " +
                             std::to_string(v));
    };
    if (sweeps < 1) bad("sweeps", sweeps, ">= 1");
    if (max_extra_sweeps < 0) bad("max_extra_sweeps", max_extra_sweeps, ">= 0");
    if (coarse_sweeps < 0) bad("coarse_sweeps", coarse_sweeps, ">= 0");
    if (newton_steps < 0) bad("newton_steps", newton_steps, ">= 0");
    if (newton_inner < 1) bad("newton_inner", newton_inner, ">= 1");
    if (!(newton_gap >= 0)) bad("newton_gap", newton_gap, ">= 0 px");
    if (!(tolerance > 0)) bad("tolerance", tolerance, "> 0 px");
    if (!(wake >= 1)) bad("wake", wake, ">= 1");
    if (!(inner >= 0.5)) bad("inner", inner, ">= 0.5 px");
    if (!(outer >= 0.5)) bad("outer", outer, ">= 0.5 px");
    if (!(edge_scale >= 0 && edge_scale <= 0.3)) bad("edge_scale", edge_scale, "in [0, 0.3]");
    if (template_nodes < 64 || template_nodes > 65536)
        bad("template_nodes", template_nodes, "in [64, 65536]");
    if (!(template_bin >= 0.02 && template_bin <= 0.5))
        bad("template_bin", template_bin, "in [0.02, 0.5] px");
    if (!(outlier_sigma == 0 || outlier_sigma >= 2)) bad("outlier_sigma", outlier_sigma, "0 (off) or >= 2");
    if (!(template_quantile > 0 && template_quantile <= 1))
        bad("template_quantile", template_quantile, "in (0, 1]");
    if (!(max_missing_fraction >= 0 && max_missing_fraction <= 1))
        bad("max_missing_fraction", max_missing_fraction, "in [0, 1]");
    if (!(template_radius_tolerance > 0 && template_radius_tolerance < 0.5))
        bad("template_radius_tolerance", template_radius_tolerance, "in (0, 0.5)");
    if (!(max_relative_residual > 0)) bad("max_relative_residual", max_relative_residual, "> 0");
    if (!(rescue_mse == 0 || rescue_mse >= 1)) bad("rescue_mse", rescue_mse, "0 (off) or >= 1");
    if (!(rescue_reach >= 0.5 && rescue_reach <= 10)) bad("rescue_reach", rescue_reach, "in [0.5, 10] px");
    if (!(max_radius_offset > 0 && max_radius_offset < 0.5))
        bad("max_radius_offset", max_radius_offset, "in (0, 0.5)");
}

namespace detail::joint {

namespace {

// Rows of the disk footprint q ∈ [q_in, q_out] about (cx, cy): f(row, x0, x1, dy², dy) per row, the
// caller iterates x in [x0, x1] and tests q itself (inner hole and corners).
// row_step > 1: only the image rows that are multiples of it (coarse sweeps).
template <class F>
inline void for_rows(int w, int h, double cx, double cy, double q_out, F&& f, int row_step = 1) {
    const double r_out = std::sqrt(q_out);
    int y0 = std::max(0, static_cast<int>(std::ceil(cy - r_out)));
    const int y1 = std::min(h - 1, static_cast<int>(std::floor(cy + r_out)));
    if (row_step > 1) y0 += (row_step - y0 % row_step) % row_step;
    for (int py = y0; py <= y1; py += row_step) {
        const double dy = py - cy, dy2 = dy * dy;
        const double half = std::sqrt(std::max(0.0, q_out - dy2));
        const int x0 = std::max(0, static_cast<int>(std::ceil(cx - half))),
                  x1 = std::min(w - 1, static_cast<int>(std::floor(cx + half)));
        if (x0 <= x1) f(py, x0, x1, static_cast<float>(dy2), static_cast<float>(dy));
    }
}

// Cholesky factor L (lower) of the 5×5 symmetric positive definite A; false when singular.
bool cholesky5(const double A[5][5], double L[5][5]) {
    for (int i = 0; i < 5; ++i)
        for (int j = 0; j < 5; ++j) L[i][j] = 0;
    for (int i = 0; i < 5; ++i)
        for (int j = 0; j <= i; ++j) {
            double s = A[i][j];
            for (int k = 0; k < j; ++k) s -= L[i][k] * L[j][k];
            if (i == j) {
                if (!(s > 1e-9 * std::max(1e-30, std::abs(A[i][i])))) return false;
                L[i][i] = std::sqrt(s);
            } else {
                L[i][j] = s / L[j][j];
            }
        }
    return true;
}

// x = A⁻¹ b from the Cholesky factor of A.
void cholesky5_solve(const double L[5][5], const double b[5], double x[5]) {
    double y[5];
    for (int i = 0; i < 5; ++i) {
        double s = b[i];
        for (int k = 0; k < i; ++k) s -= L[i][k] * y[k];
        y[i] = s / L[i][i];
    }
    for (int i = 4; i >= 0; --i) {
        double s = y[i];
        for (int k = i + 1; k < 5; ++k) s -= L[k][i] * x[k];
        x[i] = s / L[i][i];
    }
}

// Length of a step (px): std::hypot guards against overflow at a cost (≈ 1% of a frame's time
// in the extra sweeps), which steps of a few px do not need.
inline double step_length(double dx, double dy) { return std::sqrt(dx * dx + dy * dy); }

// JᵀJ (5×5) from its upper triangle in NormalSums order.
constexpr int upper[5][5] = {
    {0, 1, 2, 3, 4}, {1, 5, 6, 7, 8}, {2, 6, 9, 10, 11}, {3, 7, 10, 12, 13}, {4, 8, 11, 13, 14}};

}  // namespace

JointFitter::JointFitter(const cv::Mat& image, std::vector<Particle>& parts_in,
                         std::span<const double> radii_in, const JointFitParams& params,
                         DiskTemplates* templates_in, JointFitWorkspace* workspace_in,
                         const JointFitSwitches& switches)
    : p(params),
      sw(switches),
      parts(parts_in),
      radii(radii_in),
      templates(templates_in),
      workspace(workspace_in),
      n(parts_in.size()),
      w(image.cols),
      h(image.rows),
      ws(workspace_in ? *workspace_in : local_ws) {
    // Frame-sized buffers come from large (2 MiB) pages: a fresh 4 KiB page costs ~10 µs to
    // fault in on the machines measured (docs/performance.md), ~250 of them per MiB.
    // With a workspace, buffer k of this call is the workspace's k-th (re-used when its size and
    // type match).
    // Frame-sized buffers are slots of the workspace's slab (4-byte images, one mapping, pages
    // touched only by the slots used), by role: the image and the model, then the first
    // templates' edge distances, labels and classes (a fit from scratch only), whose slots the
    // residual search re-uses (it comes after them), so a fit from scratch touches six slots and
    // a warm fit two, or four when it searches.
    const std::size_t slot_bytes =
        (static_cast<std::size_t>(h) * static_cast<std::size_t>(w) * 4 + 63) / 64 * 64;
    if (ws.slab.empty() || ws.slab_w != w || ws.slab_h != h || ws.slab.rows != kSlots) {
        ws.slab = detail::large_mat(kSlots, static_cast<int>(slot_bytes), CV_8U);
        ws.slab_w = w, ws.slab_h = h;
    }
    // The frame's own pixels (8 or 16 bit): the row kernels read them in place (no float copy,
    // ≈ 5% of a warm frame) when the rows are w pixels apart, like the model's, and the kernels'
    // whole 8-pixel reads past the last row's end stay in readable memory (the parent frame's
    // next rows, the slack after every large buffer such as a decoded frame's, or the same 4 KiB
    // page); otherwise a copy in the image slot, which has the room.
    {
        const auto* end = image.ptr<std::uint8_t>(h - 1) + static_cast<std::size_t>(w) * image.elemSize();
        const std::size_t over = 8 * image.elemSize();  // bytes a vector read may pass the row's end by
        const auto page = [](const std::uint8_t* p) { return reinterpret_cast<std::uintptr_t>(p) >> 12; };
#if defined(__SANITIZE_ADDRESS__)
        const bool same_page = false;  // an address sanitizer would flag the read past the allocation
#else
        const bool same_page = page(end - 1) == page(end + over - 1);
#endif
        const bool readable = detail::readable_after(image, end, over) || same_page;
        if (image.step1() == static_cast<std::size_t>(w) && readable) {
            I = image;
        } else {
            I = buffer(image.type(), kImage);
            image.copyTo(I);
        }
    }
    pixels8 = I.depth() == CV_8U;
    I_stride = static_cast<std::ptrdiff_t>(I.step1());
    ns = static_cast<int>(radii.size());

    // Templates: fit band [R − inner, R + outer] (both grow with R by edge_scale), nodes up to
    // the footprint of the largest allowed radius.
    tpl.resize(static_cast<std::size_t>(ns));
    kmin = 1.0 / ((1 + p.max_radius_offset) * (1 + p.max_radius_offset));
    kmax = 1.0 / ((1 - p.max_radius_offset) * (1 - p.max_radius_offset));
    for (int s = 0; s < ns; ++s) {
        auto& t = tpl[static_cast<std::size_t>(s)];
        t.r_nominal = radii[static_cast<std::size_t>(s)];
        t.inner = std::max(p.inner, p.edge_scale * t.r_nominal);
        t.outer = std::max(p.outer, p.edge_scale * t.r_nominal);
        const double rin = std::max(0.0, t.r_nominal - t.inner), rout = t.r_nominal + t.outer;
        t.q_in = static_cast<float>(rin * rin), t.q_out = static_cast<float>(rout * rout);
        t.hq = static_cast<float>(rout * rout / (p.template_nodes - 2));
        t.inv_hq = 1.0f / t.hq;
        t.v.assign(static_cast<std::size_t>(p.template_nodes), 0.0f);
        t.hr = static_cast<float>(p.template_bin);
        t.prof.assign(static_cast<std::size_t>(std::ceil(rout / p.template_bin)) + 2, 0.0f);
        t.finish();
    }

    st.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
        st[i].x = parts[i].x, st[i].y = parts[i].y;
        st[i].s = ns == 2 && parts[i].species == 1 ? 1 : 0;
        if (parts[i].amplitude > 0) st[i].a = parts[i].amplitude, st[i].b = parts[i].background;
    }

    next.resize(n);
    moved.assign(n, 1.0);

    M = buffer(CV_32F, kModel);
    // Templates carried over from the previous frame of a video (warm start)?
    warm = templates != nullptr &&
           templates->usable_for(radii, p.template_bin, tpl[0].prof.size(), tpl.back().prof.size());
}

JointFitter::PixelRow JointFitter::pixel_row(int y) const {
    return pixels8 ? PixelRow{I.ptr<std::uint8_t>(y), nullptr} : PixelRow{nullptr, I.ptr<std::uint16_t>(y)};
}

// The kernels called with I's pixel type.
template <class F>
void JointFitter::with_pixels(F&& f) const {
    if (pixels8)
        f(I.ptr<std::uint8_t>(0));
    else
        f(I.ptr<std::uint16_t>(0));
}

void JointFitter::splat(const DiskState& d, float sign, int row_step) {
    const auto a = static_cast<float>(d.a) * sign, k = static_cast<float>(d.kappa);
    detail::annulus_spans(w, h, d.x, d.y, 0.0f, static_cast<float>(q_foot(d)), row_step, splat_rows);
    detail::splat_rows(M.ptr<float>(0), static_cast<std::ptrdiff_t>(M.step1()), splat_rows.data(),
                       static_cast<int>(splat_rows.size()), static_cast<float>(d.x), a, k, T(d.s).view());
}

// A disk moved from d0 to d1: M patched in one pass over the union of both footprints.
void JointFitter::move(const DiskState& d0, const DiskState& d1, int row_step) {
    detail::move_spans(w, h, d0.x, d0.y, static_cast<float>(q_foot(d0)), d1.x, d1.y,
                       static_cast<float>(q_foot(d1)), row_step, move_buf);
    detail::move_rows(M.ptr<float>(0), static_cast<std::ptrdiff_t>(M.step1()), move_buf.data(),
                      static_cast<int>(move_buf.size()), static_cast<float>(d0.x), static_cast<float>(d0.a),
                      static_cast<float>(d0.kappa), T(d0.s).view(), static_cast<float>(d1.x),
                      static_cast<float>(d1.a), static_cast<float>(d1.kappa), T(d1.s).view());
}

// The rows of disk d's footprint in M (and I) requested from memory two disks ahead of its
// step: the kernels walk a disk's rows one by one, 4 KiB apart, which the hardware
// prefetchers do not foresee, and the frame-sized buffers do not fit the core's own cache
// (measured: 8–10% less CPU for vibra track, docs/performance.md).
void JointFitter::prefetch_footprint(const DiskState& d, int row_step, bool image_too) {
    const double r = std::sqrt(q_foot(d));
    int y0 = std::max(0, static_cast<int>(d.y - r));
    const int y1 = std::min(h - 1, static_cast<int>(d.y + r) + 1);
    if (row_step > 1) y0 += (row_step - y0 % row_step) % row_step;
    const int x0 = std::max(0, static_cast<int>(d.x - r)),
              x1 = std::min(w - 1, static_cast<int>(d.x + r) + 1);
    for (int y = y0; y <= y1; y += row_step) {
        const float* m = M.ptr<float>(y);
        for (int x = x0; x <= x1 + 15; x += 16)
            __builtin_prefetch(m + std::min(x, x1), 1, 3);  // a 64-byte line: 16 floats
        if (image_too) {                                    // the frame's row: 32 or 64 pixels per line
            const std::uint8_t* im = I.ptr<std::uint8_t>(y);
            const std::size_t px_bytes = I.elemSize(), first = static_cast<std::size_t>(x0) * px_bytes,
                              last = static_cast<std::size_t>(x1) * px_bytes;
            for (std::size_t b = first; b <= last + 63; b += 64)
                __builtin_prefetch(im + std::min(b, last), 0, 3);
        }
    }
}

void JointFitter::render_model(int row_step) {
    if (row_step == 1) {
        M.setTo(0);
    } else {  // coarse: only the rows that are read
        for (int y = 0; y < h; y += row_step) std::fill_n(M.ptr<float>(y), w, 0.0f);
    }
    for (std::size_t i = 0; i < st.size(); ++i) {
        if (i + pf_ahead < st.size()) prefetch_footprint(st[i + pf_ahead], row_step, false);
        if (st[i].ok) splat(st[i], 1.0f, row_step);
    }
}

// Rendering ahead of a sweep in image order: M is zeroed and the disks rendered in the order
// of their footprints' first rows, each just before the sweep reaches a disk whose band could
// see it, so the sweep finds the rows it reads freshly written (in the core's cache) instead
// of re-reading a whole frame-sized model from memory. Same image as render_model.
void JointFitter::ahead_begin(int row_step) {
    const std::size_t m = st.size();
    ahead_first.resize(m);
    ahead_order.resize(m);
    for (std::size_t i = 0; i < m; ++i) {
        ahead_first[i] = static_cast<float>(st[i].y - std::sqrt(q_foot(st[i])));
        ahead_order[i] = static_cast<std::uint32_t>(i);
    }
    // nearly sorted already (the disks come in image order): insertion sort
    for (std::size_t i = 1; i < m; ++i) {
        const std::uint32_t v = ahead_order[i];
        std::size_t j = i;
        for (; j > 0 && ahead_first[ahead_order[j - 1]] > ahead_first[v]; --j)
            ahead_order[j] = ahead_order[j - 1];
        ahead_order[j] = v;
    }
    ahead_next = 0, ahead_zeroed = 0, ahead_step = row_step;
}

// rows < row_end zeroed (those the sweep reads)
void JointFitter::ahead_zero_to(int row_end) {
    row_end = std::min(row_end, h);
    for (int y = ahead_zeroed; y < row_end; ++y)
        if (y % ahead_step == 0) std::fill_n(M.ptr<float>(y), w, 0.0f);
    ahead_zeroed = std::max(ahead_zeroed, row_end);
}

// every disk whose footprint starts at or above `row` rendered
void JointFitter::ahead_until(double row) {
    while (ahead_next < ahead_order.size()) {
        const std::uint32_t j = ahead_order[ahead_next];
        if (ahead_first[j] > row) break;
        const DiskState& d = st[j];
        ahead_zero_to(static_cast<int>(d.y + std::sqrt(q_foot(d))) + 2);
        if (d.ok) splat(d, 1.0f, ahead_step);
        ++ahead_next;
    }
}

void JointFitter::ahead_finish() {
    ahead_until(1e300);
    ahead_zero_to(h);
}

// 1. First templates from the pixels that are clearly nearer to one disk's edge than to any
//    other's (edge distance |ρ − R|; the nearest by more than 1 px), so neighbours' light
//    hardly enters them; the background from pixels outside every footprint.
//    With templates from the previous frame of a video (warm start) this is skipped.
void JointFitter::use_carried_templates() {
    for (int s = 0; s < ns; ++s) use_template(s, templates->profile[static_cast<std::size_t>(s)]);
    // starting radii from the particles (κ = (R_s/R_i)²); b and a are solved below
    for (std::size_t i = 0; i < n; ++i) {
        auto& d = st[i];
        if (parts[i].radius > 0) {
            const double ratio = T(d.s).r_edge / parts[i].radius;
            d.kappa = std::clamp(ratio * ratio, kmin, kmax);
        }
    }
}

void JointFitter::use_template(int s, const std::vector<float>& profile) {
    auto& t = tpl[static_cast<std::size_t>(s)];
    t.prof = profile;
    t.finish();
    t.measure_edge();
}

void JointFitter::measure_first_templates() {
    cv::Mat D1 = buffer(CV_32F, kEdge1), D2 = buffer(CV_32F, kEdge2), L = buffer(CV_32S, kLabel);
    D1.setTo(1e9f), D2.setTo(1e9f), L.setTo(-1);
    for (std::size_t i = 0; i < n; ++i) {
        const auto& d = st[i];
        const auto R = static_cast<float>(T(d.s).r_nominal);
        for_rows(w, h, d.x, d.y, q_foot(d), [&](int py, int x0, int x1, float dy2, float) {
            auto* d1 = D1.ptr<float>(py);
            auto* d2 = D2.ptr<float>(py);
            auto* l = L.ptr<std::int32_t>(py);
            for (int px = x0; px <= x1; ++px) {
                const auto dx = static_cast<float>(px - d.x);
                const float e = std::abs(std::sqrt(dx * dx + dy2) - R);
                if (e < d1[px]) {
                    d2[px] = d1[px], d1[px] = e, l[px] = static_cast<std::int32_t>(i);
                } else if (e < d2[px]) {
                    d2[px] = e;
                }
            }
        });
    }
    cv::Mat C = buffer(CV_8U, kClass);
    for (int py = 0; py < h; ++py) {
        const auto* d1 = D1.ptr<float>(py);
        const auto* d2 = D2.ptr<float>(py);
        auto* c = C.ptr<std::uint8_t>(py);
        for (int px = 0; px < w; ++px) c[px] = d1[px] > 1e8f ? 0 : (d2[px] - d1[px] > 1.0f ? 1 : 2);
    }
    std::vector<TemplateSum> acc(static_cast<std::size_t>(ns));
    for (int s = 0; s < ns; ++s) acc[static_cast<std::size_t>(s)].reset(T(s).prof.size());
    double bg_sum = 0, bg_n = 0;
    for (int py = 0; py < h; py += 2) {  // background: uncovered pixels (every other row is plenty)
        const auto* c = C.ptr<std::uint8_t>(py);
        const PixelRow im = pixel_row(py);
        for (int px = 0; px < w; ++px)
            if (c[px] == 0) bg_sum += im[px], bg_n += 1;
    }
    for (std::size_t i = 0; i < n; ++i) {
        const auto& d = st[i];
        const auto& t = T(d.s);
        auto& ac = acc[static_cast<std::size_t>(d.s)];
        for_rows(w, h, d.x, d.y, q_foot(d), [&](int py, int x0, int x1, float dy2, float) {
            const auto* c = C.ptr<std::uint8_t>(py);
            const auto* l = L.ptr<std::int32_t>(py);
            const PixelRow im = pixel_row(py);
            for (int px = x0; px <= x1; ++px) {
                if (c[px] != 1 || l[px] != static_cast<std::int32_t>(i)) continue;
                const double dx = px - d.x;
                ac.add(std::sqrt(static_cast<float>(dx * dx + dy2)) / t.hr, im[px]);
            }
        });
    }
    for (int s = 0; s < ns; ++s) {
        auto& t = tpl[static_cast<std::size_t>(s)];
        if (!acc[static_cast<std::size_t>(s)].into(t.prof)) continue;
        // background: the template's outermost 0.5 px when no pixel is uncovered
        double bg = 0;
        if (bg_n > 50) {
            bg = bg_sum / bg_n;
        } else {
            bg = t.tail_level();
        }
        for (auto& x : t.prof) x = static_cast<float>(x - bg);
        t.finish();
        t.measure_edge();
        for (auto& d : st)
            if (d.s == s) d.b = bg;
    }
}

// 2. Re-measured templates: all footprint pixels, neighbours' modelled light subtracted.
//    Only the better-fitting half of the disks (mean squared residual up to the median of
//    their species) contributes: a disk still off by a fraction of a pixel would blur it.
void JointFitter::rebuild_templates() {
    std::vector<TemplateSum> acc(static_cast<std::size_t>(ns));
    for (int s = 0; s < ns; ++s) acc[static_cast<std::size_t>(s)].reset(T(s).prof.size());
    std::vector<float> mse_cut(static_cast<std::size_t>(ns), 1e30f);
    for (int s = 0; s < ns; ++s) {
        std::vector<float> v;
        for (const auto& d : st)
            if (d.ok && d.s == s && d.mse > 0) v.push_back(d.mse);
        if (v.size() >= 8) {
            const auto k =
                static_cast<std::ptrdiff_t>(p.template_quantile * static_cast<double>(v.size() - 1));
            std::nth_element(v.begin(), v.begin() + k, v.end());
            mse_cut[static_cast<std::size_t>(s)] = v[static_cast<std::size_t>(k)];
        }
    }
    for (const auto& d : st) {
        if (!d.ok || d.mse > mse_cut[static_cast<std::size_t>(d.s)]) continue;
        const auto& t = T(d.s);
        auto& ac = acc[static_cast<std::size_t>(d.s)];
        const auto a = static_cast<float>(d.a), inv_a = 1.0f / a, b = static_cast<float>(d.b),
                   k = static_cast<float>(d.kappa);
        for_rows(w, h, d.x, d.y, q_foot(d), [&](int py, int x0, int x1, float dy2, float) {
            const PixelRow im = pixel_row(py);
            const auto* m = M.ptr<float>(py);
            const auto cx = static_cast<float>(d.x);
            for (int px = x0; px <= x1; ++px) {
                const float dx = static_cast<float>(px) - cx;
                const float u = k * (dx * dx + dy2);
                const float own = a * t.at(u);
                ac.add(std::sqrt(u) / t.hr, (im[px] - b - (m[px] - own)) * inv_a);
            }
        });
    }
    for (int s = 0; s < ns; ++s) {
        auto& t = tpl[static_cast<std::size_t>(s)];
        if (acc[static_cast<std::size_t>(s)].into(t.prof)) {
            // the outermost 0.5 px is background by definition: there the template is 0
            // (otherwise its tail and the disks' b trade off where disks touch all round)
            const double tail = t.tail_level();
            for (auto& x : t.prof) x = static_cast<float>(x - tail);
            t.finish();
            t.measure_edge();
        }
    }
}

// JᵀJ carried over from the previous frame's fit (the workspace keeps it aligned with parts)
void JointFitter::carry_hessians() {
    reuse_H = warm && sw.reuse_hessian && workspace != nullptr;
    if (reuse_H)
        for (std::size_t i = 0; i < std::min(n, ws.hessians.size()); ++i)
            if (ws.hessians[i].a > 0) {
                std::copy(ws.hessians[i].h, ws.hessians[i].h + 15, st[i].H), st[i].H_a = ws.hessians[i].a;
                std::copy(ws.hessians[i].l, ws.hessians[i].l + 15, st[i].L),
                    st[i].L_ok = ws.hessians[i].l[0] > 0;
            }
}

// Rows of disk d's band into `rows`: a row that crosses the inner hole (q < qi) is two spans
// (the kernels mask q < qi anyway; the hole is skipped to save the work).
void JointFitter::band_rows(const DiskState& d, float qi, float qo, int row_step,
                            std::vector<detail::RowSpan>& rows) const {
    detail::annulus_spans(w, h, d.x, d.y, qi, qo, row_step, rows);
}

// Disk d's normal equations over its band against M: A (5×5), v (5); returns the pixel count
// and sets mse; accumulates the frame's residual statistics.
// With a JᵀJ carried over (reuse_H, the band inside the image, every row), only Jᵀr is
// accumulated (residual_rows) and JᵀJ is the carried one, rescaled to the amplitude
// (∂/∂cx, cy, κ ∝ a); otherwise the full sums, and `H_out` (when given) receives JᵀJ.
// With `Lf` given and the carried JᵀJ's Cholesky factor L known, Lf = E·L, the factor of the
// rescaled A = E·JᵀJ·E (E = diag(a/a_H, a/a_H, a/a_H, 1, 1)), and *factored is set: the
// step needs no factorisation of its own.
float JointFitter::band_equations(const DiskState& d, float clip, int row_step, double A[5][5], double v[5],
                                  float& mse, float* H_out, float* H_a_out, double (*Lf)[5], bool* factored) {
    const auto& t = T(d.s);
    const auto a = static_cast<float>(d.a), b = static_cast<float>(d.b), k = static_cast<float>(d.kappa);
    const float qi = t.q_in / k, qo = t.q_out / k;
    band_rows(d, qi, qo, row_step, row_buf);
    const double r_out = std::sqrt(static_cast<double>(qo));
    if (reuse_H && row_step == 1 && d.H_a > 0 && d.x - r_out >= 0 && d.y - r_out >= 0 &&
        d.x + r_out <= w - 1 && d.y + r_out <= h - 1) {
        detail::ResidualSums rs;
        with_pixels([&](const auto* im) {
            detail::residual_rows(im, M.ptr<float>(0), I_stride, row_buf.data(),
                                  static_cast<int>(row_buf.size()), static_cast<float>(d.x), qi, qo, b, clip,
                                  a, k, t.view(), rs);
        });
        const double sc = d.a / d.H_a, e[5] = {sc, sc, sc, 1, 1};
        for (int r = 0; r < 5; ++r) {
            for (int c = 0; c < 5; ++c) A[r][c] = d.H[upper[r][c]] * e[r] * e[c];
            v[r] = rs.s[r];
        }
        if (Lf && d.L_ok) {
            for (int r = 0; r < 5; ++r)
                for (int c = 0; c < 5; ++c) Lf[r][c] = c <= r ? d.L[r * (r + 1) / 2 + c] * e[r] : 0.0;
            *factored = true;
        }
        ++result.reused_hessian_steps;
        const float cnt = rs.s[5], rr = rs.s[6];
        r2sum += rr, r2n += cnt;
        mse = cnt > 0 ? rr / cnt : 0.0f;
        return cnt;
    }
    detail::NormalSums ns_;
    with_pixels([&](const auto* im) {
        detail::normal_rows(im, M.ptr<float>(0), I_stride, row_buf.data(), static_cast<int>(row_buf.size()),
                            static_cast<float>(d.x), qi, qo, b, clip, a, k, t.view(), ns_);
    });
    const float* z = ns_.s;
    if (H_out && row_step == 1) std::copy(z, z + 15, H_out), *H_a_out = a;
    for (int r = 0; r < 5; ++r) {
        for (int c = 0; c < 5; ++c) A[r][c] = z[upper[r][c]];
        v[r] = z[15 + r];
    }
    const float cnt = z[12], rr = z[20];  // pixels used, residual sum of squares
    r2sum += rr, r2n += cnt;
    mse = cnt > 0 ? rr / cnt : 0.0f;
    return cnt;
}

// Disk d moved by the Gauss–Newton solution x (cx, cy, κ, b, a), with the limits of a step:
// ≤ 1 px, κ within ±20% and its range; ok = false when the brightness collapses.
DiskState JointFitter::apply_step(const DiskState& d, const double x[5]) const {
    DiskState nd = d;
    double sx = x[0], sy = x[1];
    const double step = step_length(sx, sy);
    if (step > 1.0) sx /= step, sy /= step;  // at most 1 px per step
    nd.x = d.x + sx, nd.y = d.y + sy;
    nd.kappa = std::clamp(d.kappa + std::clamp(x[2], -0.2 * d.kappa, 0.2 * d.kappa), kmin, kmax);
    nd.b = d.b + x[3];
    nd.a = d.a + x[4];
    if (!(nd.a > 0.2)) nd.ok = false;
    return nd;
}

DiskState JointFitter::step_disk(const DiskState& d, float clip, bool light_only, int row_step) {
    DiskState nd = d;
    if (!d.ok) return nd;
    double A[5][5], v[5], x[5], Lf[5][5];
    float Hn[15], Hn_a = 0;
    const bool keep_H = row_step == 1 && !light_only;
    bool factored = false;
    const float cnt = band_equations(d, clip, row_step, A, v, nd.mse, keep_H ? Hn : nullptr, &Hn_a,
                                     light_only ? nullptr : Lf, &factored);
    if (light_only) {  // b and a only (centre and size kept): the 2×2 sub-system
        const double det = A[3][3] * A[4][4] - A[3][4] * A[3][4];
        if (cnt < 12 || !(det > 0)) return nd;
        nd.b = d.b + (A[4][4] * v[3] - A[3][4] * v[4]) / det;
        nd.a = d.a + (A[3][3] * v[4] - A[3][4] * v[3]) / det;
        if (!(nd.a > 0.2)) nd = d;
        return nd;
    }
    // a fresh JᵀJ (band_equations gives one only when it accumulated it): kept with its factor
    const bool fresh_H = keep_H && Hn_a > 0;
    if (cnt * static_cast<float>(row_step) < 12 || !(factored || cholesky5(A, Lf))) {
        nd.ok = false;
        return nd;
    }
    cholesky5_solve(Lf, v, x);
    const float mse = nd.mse;
    nd = apply_step(d, x);
    nd.mse = mse;
    if (fresh_H) {
        std::copy(Hn, Hn + 15, nd.H), nd.H_a = Hn_a;
        for (int r = 0; r < 5; ++r)
            for (int c = 0; c <= r; ++c) nd.L[r * (r + 1) / 2 + c] = static_cast<float>(Lf[r][c]);
        nd.L_ok = nd.L[0] > 0;
    }
    return nd;
}

// One Gauss–Newton step of the centre alone, κ, b and a held (row kernel centre_rows).
DiskState JointFitter::step_centre(const DiskState& d, float clip, int row_step) {
    DiskState nd = d;
    if (!d.ok) return nd;
    const auto& t = T(d.s);
    const auto k = static_cast<float>(d.kappa);
    const float qi = t.q_in / k, qo = t.q_out / k;
    detail::CentreSums cs;
    band_rows(d, qi, qo, row_step, row_buf);
    with_pixels([&](const auto* im) {
        detail::centre_rows(im, M.ptr<float>(0), I_stride, row_buf.data(), static_cast<int>(row_buf.size()),
                            static_cast<float>(d.x), qi, qo, static_cast<float>(d.b), clip,
                            static_cast<float>(d.a), k, t.view(), cs);
    });
    const double a00 = cs.s[0], a01 = cs.s[1], a11 = cs.s[2], det = a00 * a11 - a01 * a01;
    const float cnt = cs.s[5];
    r2sum += cs.s[6], r2n += cnt;
    nd.mse = cnt > 0 ? cs.s[6] / cnt : 0.0f;
    if (cnt * static_cast<float>(row_step) < 12 || !(det > 1e-9 * a00 * a11)) {
        nd.ok = false;
        return nd;
    }
    double sx = (a11 * cs.s[3] - a01 * cs.s[4]) / det, sy = (a00 * cs.s[4] - a01 * cs.s[3]) / det;
    const double step = step_length(sx, sy);
    if (step > 1.0) sx /= step, sy /= step;  // at most 1 px per step
    nd.x = d.x + sx, nd.y = d.y + sy;
    return nd;
}

// Residual sum of squares over the union of both footprints if disk i's light were `alt`.
double JointFitter::own_sse(const DiskState& d, const DiskState& alt, float clip) const {
    const auto& t = T(d.s);
    const auto& at = T(alt.s);
    const double qf = std::max(q_foot(d), q_foot(alt));
    const auto a = static_cast<float>(d.a), k = static_cast<float>(d.kappa);
    const auto aa = static_cast<float>(alt.a), ak = static_cast<float>(alt.kappa),
               ab = static_cast<float>(alt.b);
    double sse = 0;
    for_rows(w, h, d.x, d.y, qf, [&](int py, int x0, int x1, float dy2, float) {
        const PixelRow im = pixel_row(py);
        const auto* m = M.ptr<float>(py);
        for (int px = x0; px <= x1; ++px) {
            const auto dx = static_cast<float>(px - d.x);
            const float q = dx * dx + dy2;
            const float others = m[px] - a * t.at(k * q);
            const auto ex = static_cast<float>(px - alt.x), ey = static_cast<float>(py - alt.y);
            const float r = im[px] - ab - others - aa * at.at(ak * (ex * ex + ey * ey));
            sse += std::min(r * r, clip * clip);
        }
    });
    return sse;
}

// A disk whose radius left its template's edge by more than a quarter of the size gap is
// tried with the other template (centre and light kept) and keeps the better one.
void JointFitter::reconsider_species(float clip) {
    if (ns != 2) return;
    const double gap = std::abs(tpl[1].r_edge - tpl[0].r_edge);
    for (auto& d : st) {
        if (!d.ok || std::abs(radius_of(d) - T(d.s).r_edge) < 0.25 * gap) continue;
        DiskState alt = d;
        alt.s = 1 - d.s;
        alt.H_a = 0;  // another template: the carried JᵀJ no longer applies
        const double ratio = T(alt.s).r_edge / radius_of(d);
        alt.kappa = std::clamp(ratio * ratio, kmin, kmax);
        if (std::abs(radius_of(alt) - T(alt.s).r_edge) > 0.5 * gap) alt.kappa = 1;
        if (own_sse(d, alt, clip) < own_sse(d, d, clip)) {
            splat(d, -1.0f);
            splat(alt, 1.0f);
            d = alt;
        }
    }
}

// Disks that fit much worse than the frame's typical residual (started on a neighbour's
// edge, or with the wrong template) are searched afresh: own light removed from M, the
// residual of each template evaluated on a grid of centres within ±rescue_reach px (b and a
// solved linearly at each), the best taken; the extra sweeps then polish them. Disks from
// index n_in_model on are not in M yet (just added); only disks from index `first` on are
// searched.
void JointFitter::rescue(std::size_t n_in_model, std::size_t first, std::vector<std::size_t>* changed) {
    if (!(p.rescue_mse > 0)) return;
    std::vector<float> ms;
    for (const auto& d : st)
        if (d.ok) ms.push_back(d.mse);
    if (ms.size() < 8) return;
    const float med = median_of(ms);
    const double reachg = std::floor(p.rescue_reach);
    for (std::size_t i = first; i < n; ++i) {
        DiskState& d = st[i];
        if (!d.ok || !(d.mse > p.rescue_mse * med)) continue;
        if (i < n_in_model) splat(d, -1.0f);
        DiskState best = d;
        double best_sse = 1e300;
        // residual (b and a solved linearly) of template s2 centred at (cx, cy)
        // (over one region for all templates — the union of their bands — so the residuals compare)
        auto try_at = [&](int s2, double cx, double cy) {
            const auto& t = T(s2);
            const float qi = std::min(T(0).q_in, T(ns - 1).q_in), qo = std::max(T(0).q_out, T(ns - 1).q_out);
            detail::annulus_spans(w, h, cx, cy, qi, qo, 1, rescue_rows);
            detail::LightSums ls;
            with_pixels([&](const auto* im) {
                detail::light_sums_rows(im, M.ptr<float>(0), I_stride, rescue_rows.data(),
                                        static_cast<int>(rescue_rows.size()), static_cast<float>(cx), qi, qo,
                                        t.view(), ls);
            });
            const double s1 = ls.s[0], sS = ls.s[1], sSS = ls.s[2], sy = ls.s[3], sSy = ls.s[4],
                         syy = ls.s[5];
            const double det = s1 * sSS - sS * sS;
            if (!(s1 > 12) || !(det > 0)) return;
            const double a = (s1 * sSy - sS * sy) / det, b = (sy - a * sS) / s1;
            if (!(a > 0.2)) return;
            const double sse =
                (syy - 2 * a * sSy - 2 * b * sy + a * a * sSS + 2 * a * b * sS + b * b * s1) / s1;
            if (sse < best_sse) {
                best_sse = sse;
                best = d;
                best.x = cx, best.y = cy, best.s = s2, best.kappa = 1, best.a = a, best.b = b;
                best.H_a = 0;  // a fresh start: no carried JᵀJ
            }
        };
        // Near search first (both templates at the centre, the own one at ±1 px); the whole
        // grid (1 px over ±reach, both templates) only when that does not fit like the rest.
        // Then the 8 half-pixel neighbours of the best.
        for (int s2 = 0; s2 < ns; ++s2) try_at(s2, d.x, d.y);
        for (int jy = -1; jy <= 1; ++jy)
            for (int jx = -1; jx <= 1; ++jx)
                if (jx || jy) try_at(d.s, d.x + jx, d.y + jy);
        if (!(best_sse <= p.rescue_mse * med))
            for (int s2 = 0; s2 < ns; ++s2)
                for (double oy = -reachg; oy <= reachg + 1e-9; oy += 1.0)
                    for (double ox = -reachg; ox <= reachg + 1e-9; ox += 1.0)
                        if (std::abs(ox) > 1.5 || std::abs(oy) > 1.5 || s2 != d.s)
                            try_at(s2, d.x + ox, d.y + oy);
        {
            const DiskState c = best;
            for (int jy = -1; jy <= 1; ++jy)
                for (int jx = -1; jx <= 1; ++jx)
                    if (jx || jy) try_at(c.s, c.x + 0.5 * jx, c.y + 0.5 * jy);
        }
        ++result.rescued;
        best.mse = static_cast<float>(best_sse);
        if (changed && (best.x != d.x || best.y != d.y || best.s != d.s)) changed->push_back(i);
        d = best;
        splat(d, 1.0f);
    }
}

// Disks missing from the start list leave their light unexplained, and neighbours drift into
// it. Their light is found in the residual I − b − M, box-averaged over (1.4 r_small)²: a peak
// above half the level a missing small disk would give, farther than 0.8 r_small from every
// disk, becomes a new disk (template and centre by the rescue search).
void JointFitter::add_missing() {
    if (!p.find_missing) return;
    std::vector<float> as;
    for (const auto& d : st)
        if (d.ok) as.push_back(static_cast<float>(d.a));
    if (as.size() < 8) return;
    const double a_med = median_of(as);
    const auto& t0 = T(0);
    const double rb = 0.7 * t0.r_nominal;
    // mean template level inside the box's inscribed disk of radius rb
    double sm = 0, sn = 0;
    for (double r = 0.05; r < rb; r += 0.1) sm += t0.at(static_cast<float>(r * r)) * r, sn += r;
    const double level = a_med * sm / sn;
    if (!(std::abs(level) > 0)) return;
    // background map: mean b of the disks in cells of 4 r_large
    const double cb = 4 * T(ns - 1).r_nominal;
    const int gw = std::max(1, static_cast<int>(std::ceil(w / cb))),
              gh = std::max(1, static_cast<int>(std::ceil(h / cb)));
    std::vector<double> bsum(static_cast<std::size_t>(gw * gh), 0.0),
        bn(static_cast<std::size_t>(gw * gh), 0.0);
    double b_all = 0;
    for (const auto& d : st) {
        if (!d.ok) continue;
        const int cx = std::clamp(static_cast<int>(d.x / cb), 0, gw - 1),
                  cy = std::clamp(static_cast<int>(d.y / cb), 0, gh - 1);
        bsum[static_cast<std::size_t>(cy * gw + cx)] += d.b, bn[static_cast<std::size_t>(cy * gw + cx)] += 1,
            b_all += d.b;
    }
    b_all /= static_cast<double>(as.size());
    // the background of each column of each cell row, then r = (I − b − M) / level, row by row
    std::vector<float> b_col(static_cast<std::size_t>(w));
    const auto inv_level = static_cast<float>(1.0 / level);
    cv::Mat R = buffer(CV_32F, kResidual);
    for (int py = 0; py < h; ++py) {
        const int cy = std::min(gh - 1, static_cast<int>(py / cb));
        if (py == 0 || cy != std::min(gh - 1, static_cast<int>((py - 1) / cb)))
            for (int px = 0; px < w; ++px) {
                const auto k =
                    static_cast<std::size_t>(cy * gw + std::min(gw - 1, static_cast<int>(px / cb)));
                b_col[static_cast<std::size_t>(px)] = static_cast<float>(bn[k] > 0 ? bsum[k] / bn[k] : b_all);
            }
        const PixelRow im = pixel_row(py);
        const auto* m = M.ptr<float>(py);
        auto* r = R.ptr<float>(py);
        for (int px = 0; px < w; ++px)
            r[px] = (im[px] - b_col[static_cast<std::size_t>(px)] - m[px]) * inv_level;
    }
    const int box = std::max(3, static_cast<int>(std::lround(2 * rb)) | 1);
    cv::blur(R, R, cv::Size(box, box), cv::Point(-1, -1), cv::BORDER_REPLICATE);
    // existing disks block their surroundings
    const double excl = 0.8 * t0.r_nominal;
    cv::Mat taken = buffer(CV_8U, kTaken);
    taken.setTo(0);
    for (const auto& d : st)
        if (d.ok)
            cv::circle(taken,
                       cv::Point(static_cast<int>(std::lround(d.x)), static_cast<int>(std::lround(d.y))),
                       static_cast<int>(std::ceil(excl)), cv::Scalar(1), cv::FILLED);
    std::vector<std::pair<float, cv::Point>> peaks;
    for (int py = 1; py + 1 < h; ++py) {
        const auto* r0 = R.ptr<float>(py - 1);
        const auto* r1 = R.ptr<float>(py);
        const auto* r2 = R.ptr<float>(py + 1);
        const auto* tk = taken.ptr<std::uint8_t>(py);
        for (int px = 1; px + 1 < w; ++px) {
            const float v = r1[px];
            if (v < 0.5f || tk[px]) continue;
            if (v < r1[px - 1] || v < r1[px + 1] || v < r0[px - 1] || v < r0[px] || v < r0[px + 1] ||
                v < r2[px - 1] || v < r2[px] || v < r2[px + 1])
                continue;
            peaks.push_back({v, cv::Point(px, py)});
        }
    }
    std::sort(peaks.begin(), peaks.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    // Many unexplained blobs mean the model does not describe this image (not a few missed
    // disks): add none.
    if (static_cast<double>(peaks.size()) > p.max_missing_fraction * static_cast<double>(n) + 2) return;
    for (const auto& [v, pt] : peaks) {
        if (taken.at<std::uint8_t>(pt.y, pt.x)) continue;  // claimed by a disk added just now
        DiskState d;
        d.x = pt.x, d.y = pt.y, d.s = 0, d.kappa = 1, d.b = b_all, d.a = a_med;
        d.mse = 1e30f;
        st.push_back(d);
        moved.push_back(1.0);
        cv::circle(taken, pt, static_cast<int>(std::ceil(excl)), cv::Scalar(1), cv::FILLED);
    }
}

// A template is usable when its steepest edge lies within ±template_radius_tolerance of the
// nominal radius and is a clear step (the level just inside differs from the background by
// at least a third of the template's largest level). Otherwise the image does not follow the model (e.g. disks seen
// in perspective, strong texture) and the joint fit is not applied.
bool JointFitter::templates_ok() const {
    for (const auto& t : tpl) {
        if (!(t.r_edge >= (1 - p.template_radius_tolerance) * t.r_nominal &&
              t.r_edge <= (1 + p.template_radius_tolerance) * t.r_nominal))
            return false;
        const float peak = t.peak_level();
        const double ri = t.r_edge - 1.0;
        if (!(std::abs(t.at(static_cast<float>(ri * ri))) >= 0.33 * peak) || !(peak > 0)) return false;
    }
    return true;
}

void JointFitter::finish_stats() {
    const double rms = r2n > 0 ? std::sqrt(r2sum / r2n) : 0.0;
    r2sum = r2n = 0;
    if (p.outlier_sigma > 0 && rms > 0) clip = static_cast<float>(p.outlier_sigma * rms);
}

// A fresh search; the disks it moved or re-classified count as moving (extra sweeps).
void JointFitter::rescue_and_wake(std::size_t n_in_model, std::size_t first) {
    std::vector<std::size_t> changed;
    rescue(n_in_model, first, &changed);
    for (const std::size_t i : changed)
        if (i < n) moved[i] = 1.0;
}

// After the first sweep: missing disks added and badly fitting ones searched afresh (both
// need a model of everybody else); after the second: templates re-measured.
void JointFitter::repair() {
    render_model();
    const std::size_t n_old = n;
    add_missing();
    n = st.size();
    next.resize(n);
    // Added disks get their template and centre by the fresh search whether or not the
    // others are searched now (it also puts their light into M).
    if (p.early_rescue)
        rescue_and_wake(n_old);
    else if (n > n_old)
        rescue_and_wake(n_old, n_old);
}

// Disks carried over from the previous frame bring their light (b, a); the others start
// from the median of those. Without any, one light-only pass first.
void JointFitter::start_light() {
    std::vector<float> lit_a, lit_b;
    for (const auto& q : parts)
        if (q.amplitude > 0) lit_a.push_back(q.amplitude), lit_b.push_back(q.background);
    if (warm && lit_a.size() >= 8 && lit_a.size() < n) {  // medians only when some disk has no light yet
        const float a_med = median_of(lit_a), b_med = median_of(lit_b);
        for (std::size_t i = 0; i < n; ++i)
            if (!(parts[i].amplitude > 0)) st[i].a = a_med, st[i].b = b_med;
    }
    if (warm && lit_a.size() < 8) {  // the light (b, a) of every disk first, centres kept: one quick pass
        render_model();
        for (std::size_t i = 0; i < n; ++i) next[i] = step_disk(st[i], clip, true);
        st.swap(next);
        r2sum = r2n = 0;
    }
}

bool JointFitter::full_sweep(int sweep) {
    double t0 = cpu_seconds();
    const bool repairing = sweep == 1 && (p.find_missing || (p.early_rescue && p.rescue_mse > 0));
    if (repairing) repair();  // renders M (all rows)
    result.seconds[2] += cpu_seconds() - t0;
    t0 = cpu_seconds();
    // coarse sweeps: every other row (the first steps of a start ~1 px off need not every pixel)
    const int row_step = sweep < p.coarse_sweeps ? 2 : 1;
    const bool centre_only = row_step > 1 && p.coarse_centre_only && warm;
    const bool remeasure_now = (!warm && (sweep >= 2 || (sweep == 1 && p.sweeps == 2))) ||
                               (warm && p.remeasure_templates && sweep == p.sweeps - 1 && row_step == 1);
    // warm sweeps render ahead of themselves (a whole model first where templates are measured from it)
    const bool ahead = warm && sw.render_ahead && !repairing && !remeasure_now;
    if (ahead)
        ahead_begin(row_step);
    else if (!repairing)
        render_model(row_step);
    // warm: the templates carried over are kept, or re-measured before the last full sweep
    if (remeasure_now) {
        rebuild_templates();
        result.templates_remeasured = true;
        if (!templates_ok()) return false;
        render_model();
        reconsider_species(clip);
    }
    // With carried templates the last full sweep is Gauss–Seidel: each step patches M at once
    // (one pass over the union of the old and new footprints), so the next disk sees it and
    // no render follows.
    if (sw.seidel_last_sweep && warm && row_step == 1 && sweep == p.sweeps - 1) {
        seidel_sweep(ahead);
        last_gs = true;
    } else {
        jacobi_sweep(row_step, centre_only, ahead);
    }
    result.seconds[1] += cpu_seconds() - t0;
    return true;
}

// the disk's band rows (and a move's) rendered before its step
void JointFitter::need_rows(const DiskState& d, bool ahead) {
    if (ahead) ahead_until(d.y + std::sqrt(q_foot(d)) + 2);
}

void JointFitter::seidel_sweep(bool ahead) {
    for (std::size_t i = 0; i < n; ++i) {
        if (i + pf_ahead < n) prefetch_footprint(st[i + pf_ahead], 1, true);
        need_rows(st[i], ahead);
        const DiskState nd = step_disk(st[i], clip, false, 1);
        moved[i] = 0;
        if (!nd.ok || !st[i].ok) continue;
        moved[i] = step_length(nd.x - st[i].x, nd.y - st[i].y);
        move(st[i], nd);
        st[i] = nd;
    }
    if (ahead) ahead_finish();
    finish_stats();
}

void JointFitter::jacobi_sweep(int row_step, bool centre_only, bool ahead) {
    for (std::size_t i = 0; i < n; ++i) {
        if (i + pf_ahead < n) prefetch_footprint(st[i + pf_ahead], row_step, true);
        need_rows(st[i], ahead);
        next[i] = centre_only ? step_centre(st[i], clip, row_step) : step_disk(st[i], clip, false, row_step);
        if (!next[i].ok) next[i] = st[i];  // a failed step keeps the last state
        moved[i] = step_length(next[i].x - st[i].x, next[i].y - st[i].y);
    }
    if (ahead) ahead_finish();
    st.swap(next);
    finish_stats();
}

// The model must explain the image: the typical disk's residual RMS relative to its
// template's contrast. Synthetic frames with 5–7% noise give ≈ 0.05–0.08; textured real
// disks seen in perspective (the particletracker discs) more; then the fit is not applied.
bool JointFitter::residual_ok() {
    std::vector<float> ms;
    for (const auto& d : st)
        if (d.ok && d.mse > 0) ms.push_back(d.mse);
    float peak = 0;
    for (const auto& t : tpl) peak = std::max(peak, t.peak_level());
    if (!ms.empty() && peak > 0) {
        result.relative_residual = std::sqrt(median_of(ms)) / peak;
        if (result.relative_residual > p.max_relative_residual) return false;
    }
    return true;
}

// Joint Newton steps: every disk's own band equations (A_i Δ_i = v_i) gain the cross terms of
// the neighbours whose light reaches its band, C_ij Δ_j (C_ij = Σ over i's band of
// (J_i) (J_j)ᵀ, J_j without b), and all are solved together by block Gauss–Seidel; then all
// disks move at once and M is re-rendered. Touching disks no longer settle one another step
// by step (each sweep of separate steps removes only ~75% of what is left).
void JointFitter::newton() {
    const auto nbr = newton_pairs();
    std::vector<Equations> eq(n);
    for (int it = 0; it < p.newton_steps; ++it) {
        newton_equations(nbr, eq);
        finish_stats();
        newton_move(nbr, eq);
        render_model();
        ++result.newton_steps;
    }
}

// Coupled pairs: surface gap below newton_gap (positions of the first step); the others' light
// stays in M, their coupling is left to the sweeps.
std::vector<std::vector<std::uint32_t>> JointFitter::newton_pairs() const {
    const double rmax = std::sqrt(static_cast<double>(std::max(tpl.front().q_out, tpl.back().q_out)) /
                                  kmin);  // largest footprint
    std::vector<double> nx(n), ny(n);
    for (std::size_t i = 0; i < n; ++i) nx[i] = st[i].x, ny[i] = st[i].y;
    std::vector<std::vector<std::uint32_t>> nbr(n);
    {
        const CellList cl(nx, ny, 2 * rmax, Geometry{});
        for (std::size_t i = 0; i < n; ++i) {
            if (!st[i].ok) continue;
            const double ri = radius_of(st[i]);
            cl.for_each_near(nx[i], ny[i], [&](std::size_t j, double, double, double r2) {
                if (j == i || !st[j].ok) return;
                const double reach = ri + radius_of(st[j]) + p.newton_gap;
                if (r2 < reach * reach) nbr[i].push_back(static_cast<std::uint32_t>(j));
            });
        }
    }
    return nbr;
}

// Each disk's band equations and its cross terms with its coupled neighbours.
void JointFitter::newton_equations(const std::vector<std::vector<std::uint32_t>>& nbr,
                                   std::vector<Equations>& eq) {
    std::vector<double> foot_r(n);
    for (std::size_t i = 0; i < n; ++i) foot_r[i] = std::sqrt(q_foot(st[i]));
    for (std::size_t i = 0; i < n; ++i) {
        auto& e = eq[i];
        e.C.assign(nbr[i].size(), {});
        for (auto& x : e.dx) x = 0;
        e.factored = false;
        if (!st[i].ok) {
            e.cnt = 0;
            continue;
        }
        const DiskState& d = st[i];
        e.cnt = band_equations(d, clip, 1, e.A, e.v, e.mse);
        e.factored = e.cnt >= 12 && cholesky5(e.A, e.L);
        const auto& t = T(d.s);
        const auto k = static_cast<float>(d.kappa);
        const float qi = t.q_in / k, qo = t.q_out / k;
        for (std::size_t m = 0; m < nbr[i].size(); ++m) {
            const DiskState& o = st[nbr[i][m]];
            // i's band rows ∩ the box about o's footprint (outside the footprint J_o is 0)
            const double rf = foot_r[nbr[i][m]];
            const int bx0 = static_cast<int>(std::ceil(o.x - rf)),
                      bx1 = static_cast<int>(std::floor(o.x + rf));
            const double by0 = o.y - rf, by1 = o.y + rf;
            lens.clear();
            for (const auto& r : row_buf) {
                if (r.y < by0 || r.y > by1) continue;
                const int x0 = std::max(r.x0, bx0), x1 = std::min(r.x1, bx1);
                if (x0 <= x1) lens.push_back({r.y, x0, x1, r.dy});
            }
            if (lens.empty()) continue;
            detail::CrossSums cs;
            with_pixels([&](const auto* im) {
                detail::cross_rows(im, M.ptr<float>(0), I_stride, lens.data(), static_cast<int>(lens.size()),
                                   static_cast<float>(d.x), qi, qo, static_cast<float>(d.b), clip,
                                   static_cast<float>(d.a), k, t.view(), static_cast<float>(o.x),
                                   static_cast<float>(d.y - o.y), static_cast<float>(o.a),
                                   static_cast<float>(o.kappa), T(o.s).view(), cs);
            });
            std::copy(std::begin(cs.s), std::end(cs.s), e.C[m].begin());
        }
    }
}

// Block Gauss–Seidel on the joint system, then every solved disk moved at once.
void JointFitter::newton_move(const std::vector<std::vector<std::uint32_t>>& nbr,
                              std::vector<Equations>& eq) {
    // block Gauss–Seidel on A_i Δ_i + Σ_j C_ij (Δ_j: cx, cy, κ, a) = v_i
    std::vector<char> solved(n, 0);
    for (int gs = 0; gs < p.newton_inner; ++gs)
        for (std::size_t i = 0; i < n; ++i) {
            auto& e = eq[i];
            if (!e.factored) continue;
            double rhs[5];
            for (int r = 0; r < 5; ++r) rhs[r] = e.v[r];
            for (std::size_t m = 0; m < nbr[i].size(); ++m) {
                const auto& dj = eq[nbr[i][m]].dx;
                const double lj[4] = {dj[0], dj[1], dj[2], dj[4]};
                const auto& C = e.C[m];
                for (int r = 0; r < 5; ++r)
                    for (int c = 0; c < 4; ++c) rhs[r] -= C[static_cast<std::size_t>(r * 4 + c)] * lj[c];
            }
            cholesky5_solve(e.L, rhs, e.dx);
            solved[i] = 1;
        }
    for (std::size_t i = 0; i < n; ++i) {
        moved[i] = 0;
        if (!solved[i]) continue;
        DiskState nd = apply_step(st[i], eq[i].dx);
        nd.mse = eq[i].mse;
        if (!nd.ok) continue;  // keeps its last good state
        moved[i] = step_length(nd.x - st[i].x, nd.y - st[i].y);
        st[i] = nd;
    }
}

// Sweeps over the disks that still move (and their neighbours), Gauss–Seidel: each step patches
// M at once. The species check follows the first, a fresh search of disks still fitting badly
// the second.
void JointFitter::extra_sweeps() {
    const DiskGrid g = disk_grid();
    std::vector<char> active(n);
    std::vector<double> foot(n);  // footprint radii (px)
    for (int extra = 0; extra < p.max_extra_sweeps; ++extra) {
        mark_active(g, active, foot);
        const std::size_t n_active = extra_sweep(active);
        r2sum = r2n = 0;
        if (n_active > 0) ++result.extra_sweeps;
        // the species check and the fresh search of badly fitting disks run even when no
        // disk is left moving (a loose tolerance, or a Gauss–Seidel last sweep, can leave
        // none); what they move is polished by the next sweep
        if (extra == 0) reconsider_species(clip);
        if (extra == 1) rescue_and_wake(n);  // disks still fitting badly get one more fresh search
        if (extra >= 1 && std::none_of(moved.begin(), moved.begin() + static_cast<std::ptrdiff_t>(n),
                                       [&](double m) { return m > p.tolerance; }))
            break;
    }
}

// Neighbour lists on a grid of cells of the largest footprint diameter.
JointFitter::DiskGrid JointFitter::disk_grid() const {
    DiskGrid g;
    g.cell = 2 * (std::sqrt(static_cast<double>(std::max(tpl.front().q_out, tpl.back().q_out)) / kmin)) + 1;
    g.gw = std::max(1, static_cast<int>(std::ceil(w / g.cell))),
    g.gh = std::max(1, static_cast<int>(std::ceil(h / g.cell)));
    // the disks of cell c are items[start[c], start[c + 1]) (a counting sort, two flat arrays: no
    // allocation per cell)
    const std::size_t n_cells = static_cast<std::size_t>(g.gw) * static_cast<std::size_t>(g.gh);
    g.start.assign(n_cells + 1, 0), g.items.resize(n), g.cell_index.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
        const auto [cx, cy] = g.cell_of(st[i].x, st[i].y);
        g.cell_index[i] = static_cast<std::uint32_t>(cy * g.gw + cx);
        ++g.start[g.cell_index[i] + 1];
    }
    for (std::size_t c = 0; c < n_cells; ++c) g.start[c + 1] += g.start[c];
    {
        std::vector<std::uint32_t> fill(g.start.begin(), g.start.end() - 1);
        for (std::size_t i = 0; i < n; ++i) g.items[fill[g.cell_index[i]]++] = static_cast<std::uint32_t>(i);
    }
    return g;
}

// The disks whose last step exceeded the tolerance, and the neighbours of those that moved clearly.
void JointFitter::mark_active(const DiskGrid& g, std::vector<char>& active, std::vector<double>& foot) const {
    std::fill(active.begin(), active.end(), 0);
    for (std::size_t i = 0; i < n; ++i) foot[i] = std::sqrt(q_foot(st[i]));
    for (std::size_t i = 0; i < n; ++i) {
        if (!(moved[i] > p.tolerance)) continue;
        active[i] = 1;
        // a disk that moved clearly wakes the neighbours whose footprints overlap its own
        if (!(moved[i] > p.wake * p.tolerance)) continue;
        const auto [cx, cy] = g.cell_of(st[i].x, st[i].y);
        const double fi = foot[i];
        for (int yy = std::max(0, cy - 1); yy <= std::min(g.gh - 1, cy + 1); ++yy)
            for (int xx = std::max(0, cx - 1); xx <= std::min(g.gw - 1, cx + 1); ++xx)
                for (std::uint32_t k = g.start[static_cast<std::size_t>(yy * g.gw + xx)];
                     k < g.start[static_cast<std::size_t>(yy * g.gw + xx) + 1]; ++k) {
                    const std::uint32_t j = g.items[k];
                    const double dx = st[j].x - st[i].x, dy = st[j].y - st[i].y, reach_ij = fi + foot[j];
                    if (dx * dx + dy * dy < reach_ij * reach_ij) active[j] = 1;
                }
    }
}

// One extra sweep over the active disks; returns how many were stepped.
std::size_t JointFitter::extra_sweep(const std::vector<char>& active) {
    std::size_t n_active = 0;
    // From scratch the disks come in image order (for the cache: the full sweeps are Jacobi,
    // order-free); the extra sweeps, Gauss–Seidel, go through them in a scattered order
    // (a fixed permutation), as in raster order a fit far from converged — a dense packing's
    // first frame — keeps a sweep-direction error (bin bias 0.0019 → 0.0051 px, dense case).
    // Frame to frame (small steps, tolerance 0.1 px) the image order is kept.
    const bool scatter = !warm;
    std::uint64_t mult =
        2654435761u % std::max<std::size_t>(n, 1);  // i0 → i0·mult mod n: a permutation when coprime
    while (n > 1 && std::gcd(mult, static_cast<std::uint64_t>(n)) != 1) ++mult;
    for (std::size_t i0 = 0; i0 < n; ++i0) {
        const std::size_t i =
            scatter ? static_cast<std::size_t>((static_cast<std::uint64_t>(i0) * mult) % n) : i0;
        moved[i] = 0;
        if (!active[i]) continue;
        ++n_active;
        ++result.extra_steps;
        const DiskState nd = step_disk(st[i], clip);
        if (!nd.ok) continue;  // keeps its last good state
        moved[i] = step_length(nd.x - st[i].x, nd.y - st[i].y);
        // a negligible step is not applied (the model image stays as it is)
        if (moved[i] < 0.2 * p.tolerance && std::abs(nd.a - st[i].a) < 1e-3 * st[i].a &&
            std::abs(nd.kappa - st[i].kappa) < 1e-4 * st[i].kappa &&
            std::abs(nd.b - st[i].b) < 0.01 * (1 + std::abs(st[i].b)))
            continue;
        move(st[i], nd);
        st[i] = nd;
    }
    return n_active;
}

// Added disks are kept only when they fit like the others: amplitude ≥ half the median,
// mean squared residual ≤ 2 × the median.
void JointFitter::keep_fitting_added() {
    if (n <= parts.size()) return;
    std::vector<float> as, ms;
    for (std::size_t i = 0; i < parts.size(); ++i)
        if (st[i].ok) as.push_back(static_cast<float>(st[i].a)), ms.push_back(st[i].mse);
    if (!as.empty()) {
        const float a_med = median_of(as), m_med = median_of(ms);
        std::vector<DiskState> keep(st.begin(), st.begin() + static_cast<std::ptrdiff_t>(parts.size()));
        for (std::size_t i = parts.size(); i < n; ++i)
            if (st[i].ok && st[i].a >= 0.5 * a_med && st[i].mse <= 2 * m_med) keep.push_back(st[i]);
        st.swap(keep);
        n = st.size();
    }
}

// The result into the particles, the templates and the workspace (the fit is applied).
void JointFitter::write_back() {
    result.applied = true;
    if (templates) {
        templates->bin = p.template_bin;
        templates->profile.clear();
        templates->radius.clear();
        for (const auto& t : tpl)
            templates->profile.push_back(t.prof), templates->radius.push_back(t.r_nominal);
    }
    result.added = n - parts.size();
    if (workspace) {  // each disk's JᵀJ for the next frame, in the order of the parts returned
        ws.hessians.resize(n);
        for (std::size_t i = 0; i < n; ++i) {
            std::copy(st[i].H, st[i].H + 15, ws.hessians[i].h), ws.hessians[i].a = st[i].H_a;
            if (st[i].L_ok)
                std::copy(st[i].L, st[i].L + 15, ws.hessians[i].l);
            else
                std::fill(ws.hessians[i].l, ws.hessians[i].l + 15, 0.0f);
        }
    }
    for (const auto& t : tpl) result.template_radius.push_back(t.r_edge);
    if (n > parts.size()) {
        std::vector<float> strengths;
        for (const auto& q : parts) strengths.push_back(q.strength);
        Particle q;
        q.strength = median_of(strengths);
        parts.resize(n, q);
    }
    for (std::size_t i = 0; i < n; ++i) {
        const auto& d = st[i];
        auto& q = parts[i];
        q.x = d.x, q.y = d.y;
        q.species = static_cast<std::int8_t>(d.s);
        q.radius = static_cast<float>(radius_of(d));
        q.amplitude = static_cast<float>(d.a), q.background = static_cast<float>(d.b);
    }
}

JointFitResult JointFitter::run(double t_start) {
    if (warm)
        use_carried_templates();
    else
        measure_first_templates();
    carry_hessians();
    if (!templates_ok()) return result;
    result.seconds[0] = cpu_seconds() - t_start;
    // 3. Full Jacobi sweeps, then sweeps over the disks that still move (and their neighbours).
    start_light();
    for (int sweep = 0; sweep < p.sweeps; ++sweep)
        if (!full_sweep(sweep)) return result;
    const double t_extra = cpu_seconds();
    if (p.sweeps == 1 && (p.find_missing || (p.early_rescue && p.rescue_mse > 0))) repair();
    if (!last_gs) render_model();  // M consistent with the last full sweep
    if (!residual_ok()) return result;
    if (p.newton_steps > 0) newton();
    if (p.max_extra_sweeps > 0) extra_sweeps();
    keep_fitting_added();
    result.seconds[3] = cpu_seconds() - t_extra;
    write_back();
    return result;
}

}  // namespace detail::joint

JointFitResult detail::joint_fit(const cv::Mat& image, std::vector<Particle>& parts,
                                 std::span<const double> radii, const JointFitParams& p,
                                 const JointFitSwitches& switches, DiskTemplates* templates,
                                 JointFitWorkspace* workspace) {
    JointFitResult result;
    const double t_start = cpu_seconds();
    p.validate();
    if (image.empty() || image.channels() != 1 || (image.depth() != CV_8U && image.depth() != CV_16U))
        throw ParameterError("joint_fit: need a non-empty grey 8- or 16-bit image");
    if (radii.empty() || radii.size() > 2) throw ParameterError("joint_fit: need 1 or 2 radii");
    if (parts.empty()) return result;
    detail::joint::JointFitter fit(image, parts, radii, p, templates, workspace, switches);
    return fit.run(t_start);
}

JointFitResult joint_fit(const cv::Mat& image, std::vector<Particle>& parts, std::span<const double> radii,
                         const JointFitParams& p, DiskTemplates* templates, JointFitWorkspace* workspace) {
    return detail::joint_fit(image, parts, radii, p, detail::JointFitSwitches{}, templates, workspace);
}

}  // namespace vibra::tracking
