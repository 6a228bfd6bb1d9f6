// SPDX-License-Identifier: GPL-3.0-or-later
// The joint template fit (vibra/tracking/joint_fit.hpp) as a class whose named steps can be run
// and tested one at a time. joint_fit() runs them in this order:
//
//   1. templates       measure_first_templates (from scratch) or use_carried_templates (warm)
//   2. light           start_light: b and a of disks that bring none (warm)
//   3. full sweeps     full_sweep → jacobi_sweep / seidel_sweep, each rendering the model first
//                      (render_model, or render-ahead: JointFitSwitches); after the first one repair: add_missing
//                      and rescue; later ones may rebuild_templates and reconsider_species
//   4. check           residual_ok: the model explains the image, or the fit is not applied
//   5. Newton          newton: joint steps of touching disks (JointFitParams::newton_steps)
//   6. extra sweeps    extra_sweeps: Gauss–Seidel steps of the disks that still move
//   7. finish          keep_fitting_added, write_back into the particles (and templates, workspace)
//
// The steps share the frame's state (model image M, disk states, templates) as members. Internal:
// tests use it through this private header.
#pragma once

#include <opencv2/core.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "fit_kernels.hpp"
#include "vibra/tracking/joint_fit.hpp"

namespace vibra::tracking::detail {

/// Performance switches of the joint fit, internal (the CLI leaves them on; tests and benches turn
/// them off to check that each reaches the same fixed point). Each acts on a warm start only
/// (templates carried over from the previous frame).
struct JointFitSwitches {
    /// The last full sweep is Gauss–Seidel (each step patches the model at once, no render after
    /// it), which leaves the extra sweeps little to do.
    bool seidel_last_sweep = true;
    /// With a workspace holding the disks' JᵀJ: a five-parameter step of a disk whose band lies
    /// inside the image accumulates Jᵀr alone (7 sums, not 21) and takes JᵀJ from its last full
    /// step (rescaled to its amplitude); same fixed point.
    bool reuse_hessian = true;
    /// A sweep renders the model just ahead of itself, in image order, instead of the whole model
    /// first (the rows it reads are then in the core's cache; the same model image).
    bool render_ahead = true;
};

/// joint_fit() with its performance switches (DiskLocator decides reuse_hessian per frame).
JointFitResult joint_fit(const cv::Mat& image, std::vector<Particle>& parts, std::span<const double> radii,
                         const JointFitParams& p, const JointFitSwitches& switches,
                         DiskTemplates* templates = nullptr, JointFitWorkspace* workspace = nullptr);

}  // namespace vibra::tracking::detail

namespace vibra::tracking::detail::joint {

// Radial profile of one species: measured on ρ nodes (spacing hr, smooth), looked up through a
// fine table in q = κρ² (no square root per pixel), linear between nodes, 0 beyond.
struct Template {
    float hr = 0.1f;          // px: spacing of the measured profile
    std::vector<float> prof;  // S(k·hr)
    float hq = 1, inv_hq = 1;
    double r_nominal = 0;         // px: the given radius
    double r_edge = 0;            // px: steepest outer edge of the measured profile
    double inner = 0, outer = 0;  // px: fit band about r_nominal
    float q_in = 0, q_out = 0;    // fit band in q; q_out = footprint
    std::vector<float> v, d;      // S(q_k) (intensity relative to the background) and v[k+1] − v[k]
    std::vector<float> vd;        // (v[k], d[k]) interleaved, for the vectorised kernels
    int kmax = 0;                 // v.size() − 1
    detail::TemplateView view() const { return {v.data(), d.data(), kmax, inv_hq, vd.data()}; }
    inline float at(float q) const {  // q ≥ 0
        const float t = q * inv_hq;
        const int k = std::min(static_cast<int>(t), kmax);
        return v[static_cast<std::size_t>(k)] + (t - static_cast<float>(k)) * d[static_cast<std::size_t>(k)];
    }
    inline float at(float q, float& slope) const {
        const float t = q * inv_hq;
        const int k = std::min(static_cast<int>(t), kmax);
        const float dk = d[static_cast<std::size_t>(k)];
        slope = dk * inv_hq;
        return v[static_cast<std::size_t>(k)] + (t - static_cast<float>(k)) * dk;
    }
    void finish() {  // q table from the ρ profile
        prof.back() = 0.0f;
        for (std::size_t k = 0; k < v.size(); ++k) {
            const float t = std::sqrt(static_cast<float>(k) * hq) / hr;
            const auto j = std::min(static_cast<std::size_t>(t), prof.size() - 2);
            const float f = std::min(1.0f, t - static_cast<float>(j));
            v[k] = prof[j] + f * (prof[j + 1] - prof[j]);
        }
        v.back() = 0.0f;
        kmax = static_cast<int>(v.size()) - 1;
        d.assign(v.size(), 0.0f);
        for (std::size_t k = 0; k + 1 < v.size(); ++k) d[k] = v[k + 1] - v[k];
        vd.resize(2 * v.size());
        for (std::size_t k = 0; k < v.size(); ++k) vd[2 * k] = v[k], vd[2 * k + 1] = d[k];
    }
    // Mean of the measured profile over the outermost 0.5 px of the support.
    double tail_level() const {
        const double r0 = std::sqrt(double(q_out)) - 0.5;
        const auto k0 = std::min(prof.size() - 2, static_cast<std::size_t>(r0 / hr));
        double sum = 0;
        for (std::size_t k = k0; k + 1 < prof.size(); ++k) sum += prof[k];
        return sum / double(std::max<std::size_t>(1, prof.size() - 1 - k0));
    }
    // Largest |S| inside the edge (the template's contrast).
    float peak_level() const {
        float peak = 0;
        for (double r = 0; r < r_edge; r += 0.25)
            peak = std::max(peak, std::abs(at(static_cast<float>(r * r))));
        return peak;
    }
    // Steepest |dS/dρ| for ρ in [0.75 R, R + outer − 0.3] (parabolic peak on a 0.02 px grid).
    void measure_edge() {
        const double lo = 0.75 * r_nominal, hi = r_nominal + outer - 0.3, st = 0.02;
        auto slope = [&](double r) {
            const double e = 0.25;
            return std::abs(double(at(static_cast<float>((r + e) * (r + e)))) -
                            at(static_cast<float>((r - e) * (r - e))));
        };
        double best = r_nominal, bv = -1;
        for (double r = lo; r <= hi; r += st)
            if (const double s = slope(r); s > bv) bv = s, best = r;
        const double a = slope(best - st), c = slope(best + st), den = a - 2 * bv + c;
        r_edge = best + (den < 0 ? std::clamp(0.5 * (a - c) / den, -0.5, 0.5) * st : 0.0);
    }
};

// Samples (q, y) accumulated on template nodes (linear splitting between the two nearest).
struct TemplateSum {
    std::vector<double> s, n;
    void reset(std::size_t k) { s.assign(k, 0.0), n.assign(k, 0.0); }
    inline void add(float t, float y) {
        const auto k = static_cast<std::size_t>(t);
        if (k + 1 >= s.size()) return;
        const double f = t - static_cast<float>(k);
        s[k] += (1 - f) * y, n[k] += 1 - f;
        s[k + 1] += f * y, n[k + 1] += f;
    }
    // Node means; nodes without samples interpolate between filled neighbours (or copy the
    // nearest one at the ends). Returns false when no node has samples.
    bool into(std::vector<float>& v) const {
        const std::size_t m = v.size();
        std::vector<std::ptrdiff_t> filled;
        for (std::size_t k = 0; k < m; ++k)
            if (n[k] > 0.25) filled.push_back(static_cast<std::ptrdiff_t>(k));
        if (filled.empty()) return false;
        for (std::size_t k = 0; k < m; ++k) {
            const auto it = std::lower_bound(filled.begin(), filled.end(), static_cast<std::ptrdiff_t>(k));
            if (it != filled.end() && *it == static_cast<std::ptrdiff_t>(k)) {
                v[k] = static_cast<float>(s[k] / n[k]);
            } else if (it == filled.begin()) {
                v[k] =
                    static_cast<float>(s[static_cast<std::size_t>(*it)] / n[static_cast<std::size_t>(*it)]);
            } else if (it == filled.end()) {
                const auto j = static_cast<std::size_t>(filled.back());
                v[k] = static_cast<float>(s[j] / n[j]);
            } else {
                const auto j0 = static_cast<std::size_t>(*(it - 1)), j1 = static_cast<std::size_t>(*it);
                const double f = double(k - j0) / double(j1 - j0);
                v[k] = static_cast<float>((1 - f) * s[j0] / n[j0] + f * s[j1] / n[j1]);
            }
        }
        return true;
    }
};

struct DiskState {
    double x = 0, y = 0;
    double kappa = 1;  // (R_s / R_i)²: template scale
    double b = 0, a = 1;
    int s = 0;
    bool ok = true;
    float mse = 0;     // mean squared residual over the band at the last step
    float H[15] = {};  // JᵀJ of the last full five-parameter step (NormalSums order) ...
    float H_a = 0;     // ... and the amplitude it was taken at (0: none)
    float L[15] = {};  // ... and its Cholesky factor (lower, row-major packed: (r, c ≤ r) at r(r+1)/2 + c)
    bool L_ok = false;
};

/// One joint fit of one frame. Construct (buffers, templates' bands and the disks' start from
/// `parts`), then run() — or, in tests, the steps one by one. `params` must be valid and `parts`
/// non-empty; the referenced objects must outlive the fitter.
class JointFitter {
public:
    JointFitter(const cv::Mat& image, std::vector<Particle>& parts, std::span<const double> radii,
                const JointFitParams& params, DiskTemplates* templates, JointFitWorkspace* workspace,
                const JointFitSwitches& switches = {});
    JointFitter(const JointFitter&) = delete;
    JointFitter& operator=(const JointFitter&) = delete;

    /// The whole fit (steps 1–7); `t_start` = cpu_seconds() at the call of joint_fit.
    JointFitResult run(double t_start);

    // 1. Templates.
    /// Whether templates carried over (JointFitter's `templates`) are usable: then a warm fit.
    bool is_warm() const { return warm; }
    /// First templates from the pixels clearly nearer to one disk's edge than to any other's;
    /// the background from the pixels outside every footprint (a fit from scratch).
    void measure_first_templates();
    /// The carried templates (warm start), the disks' sizes from the particles' radii.
    void use_carried_templates();
    /// Template of species s from a radial profile (spacing template_bin, length as the band needs).
    void use_template(int s, const std::vector<float>& profile);
    /// Re-measured templates: all footprint pixels, neighbours' modelled light subtracted.
    void rebuild_templates();
    /// The templates look like disks (edge near the nominal radius, a clear step).
    bool templates_ok() const;

    // Model image.
    /// M = Σ_j a_j S_j over every `row_step`-th row.
    void render_model(int row_step = 1);
    /// M += sign · a S of disk d.
    void splat(const DiskState& d, float sign, int row_step = 1);
    /// M patched for disk d0 moved to d1 (one pass over the union of both footprints).
    void move(const DiskState& d0, const DiskState& d1, int row_step = 1);

    // 2.–3. Light and sweeps.
    void start_light();
    /// Full sweep number `sweep` (of JointFitParams::sweeps); false: the fit is not applied.
    bool full_sweep(int sweep);
    /// One Jacobi sweep over all disks against the model (rendered, or rendered ahead).
    void jacobi_sweep(int row_step, bool centre_only, bool ahead);
    /// One Gauss–Seidel sweep over all disks, each step patching the model at once.
    void seidel_sweep(bool ahead);
    /// One Gauss–Newton step of disk d in (cx, cy, κ, b, a) (light_only: b and a) against M.
    DiskState step_disk(const DiskState& d, float clip, bool light_only = false, int row_step = 1);
    /// One Gauss–Newton step of the centre alone.
    DiskState step_centre(const DiskState& d, float clip, int row_step);
    /// Missing disks added and badly fitting ones searched afresh (after the first sweep).
    void repair();
    /// Disks whose light is left unexplained in I − b − M appended (not yet in M).
    void add_missing();
    /// Badly fitting disks searched afresh on a grid of centres and both templates.
    void rescue(std::size_t n_in_model, std::size_t first = 0, std::vector<std::size_t>* changed = nullptr);
    /// A disk whose radius strays towards the other species' tried with the other template.
    void reconsider_species(float clip);

    // 4.–7.
    bool residual_ok();
    void newton();
    void extra_sweeps();
    void keep_fitting_added();
    void write_back();

    // State, for tests.
    std::vector<DiskState>& disks() { return st; }
    const cv::Mat& model() const { return M; }
    const Template& templ(int s) const { return T(s); }
    float clip_level() const { return clip; }
    /// The outlier clip from the residual RMS of the steps since the last call (statistics reset).
    void finish_stats();
    const JointFitResult& fit_result() const { return result; }

private:
    enum Slot { kImage, kModel, kEdge1, kEdge2, kLabel, kClass, kSlots };
    static constexpr int kResidual = kEdge1, kTaken = kClass;
    static constexpr std::size_t pf_ahead = 2;
    // A row of I as floats (the scalar loops).
    struct PixelRow {
        const std::uint8_t* p8;
        const std::uint16_t* p16;
        float operator[](int x) const { return p8 ? static_cast<float>(p8[x]) : static_cast<float>(p16[x]); }
    };
    // Equations of one disk in a joint Newton step.
    struct Equations {
        double A[5][5], L[5][5], v[5], dx[5];
        bool factored;
        float cnt, mse;
        std::vector<std::array<float, 20>> C;  // per neighbour (nbr order): 5 × 4
    };
    // Disks by cells of the largest footprint diameter (extra sweeps' neighbour search).
    struct DiskGrid {
        double cell = 1;
        int gw = 1, gh = 1;
        std::vector<std::uint32_t> start, items, cell_index;
        std::pair<int, int> cell_of(double x, double y) const {
            const int cx = std::clamp(static_cast<int>(x / cell), 0, gw - 1),
                      cy = std::clamp(static_cast<int>(y / cell), 0, gh - 1);
            return std::pair<int, int>{cx, cy};
        }
    };

    cv::Mat buffer(int type, int slot) { return cv::Mat(h, w, type, ws.slab.ptr(slot)); }
    PixelRow pixel_row(int y) const;
    template <class F>
    void with_pixels(F&& f) const;
    const Template& T(int s) const { return tpl[static_cast<std::size_t>(s)]; }
    double q_foot(const DiskState& d) const { return static_cast<double>(T(d.s).q_out) / d.kappa; }
    double radius_of(const DiskState& d) const { return T(d.s).r_edge / std::sqrt(d.kappa); }
    void prefetch_footprint(const DiskState& d, int row_step, bool image_too);
    void ahead_begin(int row_step);
    void ahead_zero_to(int row_end);
    void ahead_until(double row);
    void ahead_finish();
    void need_rows(const DiskState& d, bool ahead);
    void band_rows(const DiskState& d, float qi, float qo, int row_step,
                   std::vector<detail::RowSpan>& rows) const;
    void carry_hessians();
    float band_equations(const DiskState& d, float clip, int row_step, double A[5][5], double v[5],
                         float& mse, float* H_out = nullptr, float* H_a_out = nullptr,
                         double (*Lf)[5] = nullptr, bool* factored = nullptr);
    DiskState apply_step(const DiskState& d, const double x[5]) const;
    double own_sse(const DiskState& d, const DiskState& alt, float clip) const;
    void rescue_and_wake(std::size_t n_in_model, std::size_t first = 0);
    std::vector<std::vector<std::uint32_t>> newton_pairs() const;
    void newton_equations(const std::vector<std::vector<std::uint32_t>>& nbr, std::vector<Equations>& eq);
    void newton_move(const std::vector<std::vector<std::uint32_t>>& nbr, std::vector<Equations>& eq);
    DiskGrid disk_grid() const;
    void mark_active(const DiskGrid& g, std::vector<char>& active, std::vector<double>& foot) const;
    std::size_t extra_sweep(const std::vector<char>& active);

    // The frame's state, shared by the steps (named as in the equations of joint_fit.hpp).
    const JointFitParams& p;
    JointFitSwitches sw;
    std::vector<Particle>& parts;
    std::span<const double> radii;
    DiskTemplates* templates;
    JointFitWorkspace* workspace;
    JointFitResult result;
    std::size_t n;  // disks (grows with add_missing, shrinks in keep_fitting_added)
    int w = 0, h = 0, ns = 0;
    JointFitWorkspace local_ws;
    JointFitWorkspace& ws;
    cv::Mat I;  // the frame (in place, or a copy in the image slot)
    bool pixels8 = true;
    std::ptrdiff_t I_stride = 0;
    std::vector<Template> tpl;
    double kmin = 1, kmax = 1;  // range of κ
    std::vector<DiskState> st, next;
    std::vector<double> moved;  // px: each disk's last step
    cv::Mat M;                  // the model image
    std::vector<detail::RowSpan> splat_rows, row_buf, rescue_rows, lens;
    std::vector<detail::MoveRowSpan> move_buf;
    // rendering ahead of a sweep (ahead_begin)
    std::vector<std::uint32_t> ahead_order;
    std::vector<float> ahead_first;
    std::size_t ahead_next = 0;
    int ahead_zeroed = 0, ahead_step = 1;
    bool warm = false, reuse_H = false, last_gs = false;
    double r2sum = 0, r2n = 0;  // residual statistics of the steps since finish_stats
    float clip = 1e30f;         // residuals clipped at this (outlier_sigma × the frame's RMS)
};

}  // namespace vibra::tracking::detail::joint
