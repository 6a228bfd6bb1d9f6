// SPDX-License-Identifier: GPL-3.0-or-later
// Joint sub-pixel fit of all disks of a frame to one image model, so that touching neighbours
// do not bias each other's centres. The frame is modelled as
//
//     I(p) ≈ b_i + Σ_j a_j · S_{s_j}( |p − c_j| · R_{s_j} / R_j )        (p near disk i)
//
// a local background b_i plus one radial profile ("template") S_s per species s, scaled by a
// per-disk amplitude a_j (illumination gain, flicker) and stretched to the disk's own radius R_j.
// The templates are measured from the frame itself (pooled over all disks of a species, so their
// noise is negligible), which makes the fit independent of what a disk looks like inside (plain,
// dark ring, marker dot, bright rim). Neighbours add: a pixel between two touching disks is
// explained by both profiles, none is masked. This is exact for light that adds (images of
// non-overlapping disks blurred by the optics, as rendered by `vibra synth`).
//
// Algorithm (Jacobi sweeps): render the model image M = Σ_j a_j S_j from the current parameters;
// for every disk one Gauss–Newton step in (c_x, c_y, R_i, b, a) on the residual I − b − M over its
// band ρ ∈ [R − inner, R + outer]; the templates are re-measured after the first sweep by
// subtracting the neighbours' modelled light; then extra (Gauss–Seidel) sweeps over the disks
// that still move, each move patching M at once. The first `coarse_sweeps` full sweeps may use
// every other image row (a start ~1 px off needs no more; the later sweeps use every row).
// The disk size enters as a scale of the template (S_s(ρ · R_s / R_i)), so rings and dots scale
// with the disk. Pixels whose residual exceeds `outlier_sigma` × the frame's residual RMS
// (hot/dead pixels) are ignored after the first sweep. Start: centres within ≈ 1 px (refine.hpp)
// and a species per disk; a disk whose radius strays towards the other species' is tried with
// the other template and keeps the one with the smaller residual.
#pragma once

#include <opencv2/core.hpp>

#include <span>
#include <vector>

#include "vibra/tracking/refine.hpp"

namespace vibra::tracking {

namespace detail {
/// JᵀJ (upper triangle, NormalSums order) of a disk's last five-parameter step, the amplitude it
/// was taken at (a = 0: none) and its Cholesky factor (lower triangle, row-major packed; l[0] = 0:
/// none). Internal to the joint fit; kept in JointFitWorkspace between frames.
struct DiskHessian {
    float h[15] = {};
    float a = 0;
    float l[15] = {};
};
}  // namespace detail

struct JointFitParams {
    int sweeps = 3;  ///< full sweeps (one Gauss–Newton step per disk); ≥ 1
    /// of the full sweeps, the first this many use every other image row (half the pixels; enough for the
    /// first steps from a start ~1 px off)
    int coarse_sweeps = 0;
    /// with templates carried over (warm start), the coarse sweeps step the centres alone (κ, b and a as the
    /// last frame left them; the full sweeps then fit all five)
    bool coarse_centre_only = true;
    /// with templates carried over (warm start): re-measure them before the last full sweep, as a fit from
    /// scratch does
    bool remeasure_templates = false;
    /// joint Newton steps after the full sweeps: every disk's step solved with its neighbours' (cross terms
    /// of touching disks)
    int newton_steps = 0;
    int newton_inner = 4;      ///< block Gauss–Seidel iterations of each joint Newton step's linear system
    double newton_gap = 1.5;   ///< px: a joint Newton step couples disks whose surfaces are closer than this
    int max_extra_sweeps = 8;  ///< further sweeps over the disks that still move (and their neighbours)
    double tolerance = 0.01;   ///< px: a disk whose last step was larger is still moving
    /// × tolerance: a disk whose last step was larger also wakes the neighbours whose footprints overlap its
    /// own
    double wake = 3.0;
    double inner = 3.5;        ///< px: fit pixels with ρ ≥ R − inner (≥ 0.5)
    double outer = 2.5;        ///< px: fit pixels with ρ ≤ R + outer; template support (≥ 0.5)
    double edge_scale = 0.08;  ///< inner and outer grow to at least this × R for large disks (blurrier edges)
    double template_bin = 0.1;  ///< px: radial resolution of the measured templates
    /// re-measured templates use the disks whose residual is up to this quantile
    double template_quantile = 0.5;
    /// lookup table of each template in ρ² (interpolated from the radial profile)
    int template_nodes = 2048;
    /// ignore pixels with |residual| > this × frame residual RMS (after sweep 1); 0 = keep all
    double outlier_sigma = 5.0;
    /// add disks whose light is left unexplained (residual search); appended to the list
    bool find_missing = true;
    /// more candidates than this × n (+2): the model does not fit, none added
    double max_missing_fraction = 0.03;
    /// a disk whose mean squared residual exceeds this × the median is searched afresh; 0 = never
    double rescue_mse = 4.0;
    /// fresh searches after the first full sweep too, not only in the extra sweeps (DiskLocator turns it off:
    /// after a warm first sweep the residuals mostly show the motion since the previous frame)
    bool early_rescue = true;
    /// px: that search covers centres within ± this (1 px grid, both templates, then ½ px about the best)
    double rescue_reach = 2.0;
    /// median disk residual RMS / template contrast above which the fit is not applied (synthetic 0.05–0.3,
    /// real discs ≈ 2.5)
    double max_relative_residual = 0.8;
    /// a template whose edge is farther than this × nominal from the nominal radius: fit not applied
    double template_radius_tolerance = 0.15;
    double max_radius_offset = 0.2;  ///< a disk's radius stays within (1 ± this) × its template's
    void validate() const;           ///< throws ParameterError naming the field
};

/// The radial templates of a joint fit, kept to start the next frame of a video with (warm
/// start: the first-template pass is skipped, the templates are re-measured once per frame).
struct DiskTemplates {
    double bin = 0;                           ///< px: radial spacing of the profiles
    std::vector<std::vector<float>> profile;  ///< per species: S(k·bin), intensity above the background
    std::vector<double> radius;               ///< nominal radius of each species (px)
    /// True when these templates fit a fit with `radii`, `bin` and profiles of the given lengths.
    bool usable_for(std::span<const double> radii, double bin_, std::size_t n_small,
                    std::size_t n_large) const {
        if (profile.size() != radii.size() || radius.size() != radii.size() || bin != bin_) return false;
        for (std::size_t s = 0; s < radii.size(); ++s)
            if (radius[s] != radii[s] || profile[s].size() != (s == 0 ? n_small : n_large)) return false;
        return true;
    }
};

/// Frame-sized buffers of a joint fit, kept by the caller to re-use for the next frame of the same
/// size (a video): fresh buffers cost page faults and zeroing in the kernel on every frame
/// (docs/performance.md). Contents between calls are meaningless; one workspace per thread.
struct JointFitWorkspace {
    /// The frame-sized buffers, side by side in one mapping (one slot per row), so that a fit
    /// touches whole 2 MiB pages only for the buffers it uses, with no partly used page per
    /// buffer (fresh pages cost ≈ 3 ms each on a virtual machine, docs/performance.md).
    cv::Mat slab;
    int slab_w = 0, slab_h = 0;
    /// Per disk, in the order of the parts: JᵀJ of its last five-parameter step (detail::DiskHessian).
    /// A warm fit may start from these; the caller keeps them aligned with the parts it passes next
    /// (DiskLocator does).
    std::vector<detail::DiskHessian> hessians;
    JointFitWorkspace() = default;
    // A copy starts empty: copies of a cv::Mat share its pixels, and two fits (two threads'
    // locators) must never share buffers.
    JointFitWorkspace(const JointFitWorkspace&) {}
    JointFitWorkspace& operator=(const JointFitWorkspace&) {
        slab = cv::Mat();
        slab_w = slab_h = 0;
        hessians.clear();
        return *this;
    }
    JointFitWorkspace(JointFitWorkspace&&) noexcept = default;
    JointFitWorkspace& operator=(JointFitWorkspace&&) noexcept = default;
};

struct JointFitResult {
    bool applied = false;                 ///< false: the templates did not look like disks; parts unchanged
    std::vector<double> template_radius;  ///< px: measured edge radius of each species' template
    std::size_t added = 0;                ///< disks found in the residual and appended to parts
    std::size_t rescued = 0;              ///< fresh searches for badly fitting disks
    double relative_residual = 0;  ///< median disk residual RMS / template contrast after the full sweeps
    std::size_t extra_sweeps = 0, extra_steps = 0;  ///< sweeps over moving disks, and disk steps in them
    std::size_t newton_steps = 0;                   ///< joint Newton steps taken
    /// five-parameter steps that took JᵀJ carried over from the workspace
    std::size_t reused_hessian_steps = 0;
    /// the templates were measured in this fit (always from scratch; warm: remeasure_templates)
    bool templates_remeasured = false;
    /// CPU s of this thread in: first templates, full sweeps, repair (missing disks, fresh
    /// searches), extra sweeps and the rest — for benchmarks.
    double seconds[4] = {0, 0, 0, 0};
};

/// Joint refinement of `parts` (x, y, species set; radius as measured, used only to start) in
/// the grey 8/16-bit `image`; `radii` = the nominal radii {r} or {r_small, r_large} (px). The
/// templates carry their own sign, so bright and dark disks need no flag. Updates x, y, radius (= template
/// edge radius × R_i / R_s) and species. Disks whose
/// fit fails keep their last good state.
/// `templates` (optional, in/out): when it holds usable templates (from the previous frame)
/// they are the start; on success it receives this frame's templates.
/// `workspace` (optional): buffers re-used from the previous call.
JointFitResult joint_fit(const cv::Mat& image, std::vector<Particle>& parts, std::span<const double> radii,
                         const JointFitParams& p = {}, DiskTemplates* templates = nullptr,
                         JointFitWorkspace* workspace = nullptr);

}  // namespace vibra::tracking
