// SPDX-License-Identifier: GPL-3.0-or-later
// Synthetic video with exact ground truth: bi-disperse disks moved by the core soft-disk
// simulator (active-Brownian driving, damping, walls) and rendered sub-pixel exact. Used by the
// tests, the benchmarks, the README demo and by users tuning detection on a new setup
// (`vibra synth`). Rendering model (see docs/tracking.md, "Synthetic video"):
//
//   I(p) = Q[ gain(p) · flicker_t · ( bg + t(p)·(1 − O(p)) + (fg − bg) · Σ_disks ∫_pixel p (PSF ⊗ look) ) + noise ]
//
// gain = linear gradient × vignetting × light blobs; t = static plate texture, hidden where
// the disks cover the plate (O = PSF-blurred coverage of the disks' outlines).
// where look is the disk's profile (concentric layers), convolved with a Gaussian PSF and
// integrated exactly over the pixel square p (exact area of circle ∩ square without PSF;
// semi-analytic with it), averaged over the exposure sub-frames (motion blur), with Poisson (shot) and Gaussian (read)
// noise, fixed hot/dead pixels and quantisation Q to 8 or 16 bits. Coordinates: image
// convention, x = column, y = row, (0,0) = centre of the top-left pixel, so pixel (i,j) covers
// [i−½, i+½] × [j−½, j+½]. Everything is deterministic given the seeds.
#pragma once

#include <opencv2/core.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "vibra/core/trajectory.hpp"

namespace vibra::tracking {

/// How a disk looks (intensity profile as a function of the distance ρ from its centre, in
/// units of the level contrast fg − bg; 1 = "foreground").
enum class DiskLook {
    plain,       ///< uniform disk: 1 for ρ < r
    dark_ring,   ///< uniform disk with a dark annulus ρ ∈ [0.62 r, 0.80 r] at level 1 − ring_depth
    marker_dot,  ///< uniform disk with a central dot ρ < dot_fraction·r at level 1 − dot_depth
    bright_rim,  ///< bright rim ρ ∈ [rim_inner·r, r] at 1, darker interior at interior_level with texture
};
const char* to_string(DiskLook look);
/// "plain", "dark-ring" (or "ring"), "marker-dot" (or "dot"), "bright-rim" (or "rim"); throws ParameterError.
DiskLook disk_look_from_string(const std::string& s);

/// One disk to draw, image coordinates in px.
struct Disk {
    double x = 0, y = 0;             ///< centre (px)
    double radius = 1;               ///< outer radius (px)
    std::int8_t species = 0;         ///< 0 small, 1 large (only informative for rendering)
    std::uint32_t texture_seed = 0;  ///< texture pattern of the bright_rim look (per disk, moves with it)
    double angle = 0;                ///< texture orientation (rad)
};

/// Image formation. Intensities are fractions of full scale (0 = black, 1 = 255 or 65535).
struct RenderParams {
    int width = 256;              ///< px
    int height = 256;             ///< px
    int bit_depth = 8;            ///< 8 → CV_8UC1, 16 → CV_16UC1
    double background = 0.15;     ///< bg level (fraction of full scale) for bright-on-dark
    double foreground = 0.75;     ///< disk level (fraction of full scale) for bright-on-dark
    bool dark_on_bright = false;  ///< swap the two levels: dark disks on a bright background
    DiskLook look = DiskLook::plain;
    double ring_depth = 0.6;          ///< dark_ring: ring level = 1 − ring_depth (contrast units)
    double ring_inner = 0.62;         ///< dark_ring: inner radius of the ring / r
    double ring_outer = 0.80;         ///< dark_ring: outer radius of the ring / r
    double dot_fraction = 0.25;       ///< marker_dot: dot radius / r
    double dot_depth = 0.8;           ///< marker_dot: dot level = 1 − dot_depth
    double rim_inner = 0.80;          ///< bright_rim: inner radius of the rim / r
    double interior_level = 0.45;     ///< bright_rim: mean interior level (contrast units)
    double texture_amplitude = 0.15;  ///< bright_rim: texture amplitude (contrast units)
    /// Pixel integration: 0 = exact area of circle ∩ pixel (default, sub-pixel exact); n ≥ 1 =
    /// n×n point samples per pixel (for comparison; converges to the exact result as n grows).
    int supersample = 0;
    /// Gaussian PSF σ (px) applied to the continuous scene BEFORE pixel integration (so the
    /// pixel-sampled centroid of a disk is its exact centre); 0 = none (then the sharp disk is
    /// box-integrated: exact area, but its pixel centroid carries the ≤ 0.009 px sampling bias
    /// of a sharp edge — physics, not a rendering error). Default 0.7: a typical camera.
    double blur_sigma = 0.7;
    double noise_sigma = 0;         ///< Gaussian read noise σ in units of the contrast |fg − bg|
    double photons_full_scale = 0;  ///< Poisson shot noise: photons at full scale; 0 = none
    double gradient = 0;          ///< illumination gain goes linearly 1 − g/2 … 1 + g/2 across the frame
    double gradient_angle = 0.5;  ///< direction of the gradient (rad from +x)
    double flicker = 0;           ///< relative RMS of the per-frame global gain (Gaussian)
    /// Vignetting: the gain falls as 1 − v·(d/d_corner)² with the distance d from the image
    /// centre (d_corner = half the diagonal); 0.4 = corners at 60%.
    double vignetting = 0;
    /// Illumination blobs (light spots of the lamps): `light_blobs` Gaussian spots of σ
    /// `light_blob_radius` px at random places (render seed) multiply the gain by
    /// 1 + light_blob_amplitude · Σ exp(−d²/2σ²).
    int light_blobs = 0;
    double light_blob_amplitude = 0.5;
    double light_blob_radius = 60;  ///< px
    /// Static plate texture: the background (not the disks, which hide it) carries a fixed random
    /// pattern of this RMS, in units of the contrast |fg − bg| (0.02 of a 153-level contrast
    /// ≈ 3 grey levels), smooth over `plate_texture_scale` px (two octaves: σ and 4σ), lit like
    /// the rest. Same in every frame (render seed).
    double plate_texture = 0;
    double plate_texture_scale = 2;  ///< px
    double hot_pixel_fraction = 0;   ///< fraction of pixels stuck at full scale (same in every frame)
    double dead_pixel_fraction = 0;  ///< fraction of pixels stuck at 0
    std::uint64_t seed = 1;          ///< noise, flicker, hot/dead pixel pattern
    int threads =
        0;  ///< rendering threads, 0 = hardware concurrency (≤ 8); same image for any value up to rounding
    void validate() const;  ///< throws ParameterError naming the field
};

/// Noise-free scene in float: CV_64FC1, values = Σ look coverage in contrast units (0 = background,
/// 1 = a full plain disk pixel), PSF-blurred (blur_sigma) and pixel-integrated, averaged over
/// `subframes` (each a list of disks; one entry = no motion blur). Only look, ring/dot/rim/texture,
/// supersample, blur_sigma, width and height are used. With blur_sigma > 0 the layers are
/// rendered semi-analytically (Gauss–Legendre over the disk × closed-form erf integrals), and
/// supersample is ignored except for the bright-rim texture.
cv::Mat render_coverage(std::span<const std::vector<Disk>> subframes, const RenderParams& p);
cv::Mat render_coverage(std::span<const Disk> disks, const RenderParams& p);

/// A full frame (CV_8UC1 or CV_16UC1): coverage (incl. PSF) → levels → illumination, flicker →
/// noise → hot/dead pixels → quantisation. `frame` selects the noise/flicker realisation
/// (deterministic in (seed, frame)).
cv::Mat render_frame(std::span<const Disk> disks, const RenderParams& p, std::int64_t frame = 0);
/// Same with motion blur: the exposure averaged over sub-frame positions.
cv::Mat render_frame(std::span<const std::vector<Disk>> subframes, const RenderParams& p,
                     std::int64_t frame = 0);

/// Exact area (px²) of the disk of radius r centred at (cx, cy) inside the rectangle
/// [x0,x1]×[y0,y1]. Public because tests and the detector's edge model can use it.
double circle_rect_area(double cx, double cy, double r, double x0, double y0, double x1, double y1);

/// Whole synthetic experiment: dynamics + rendering.
struct SynthParams {
    RenderParams render;            ///< image size, look, noise, … (render.seed is offset per run)
    double radius_small = 6;        ///< px
    double radius_large = 8;        ///< px (equal to radius_small or n_large = 0 → one size)
    std::int64_t n_small = -1;      ///< −1 = from packing_fraction (half the disks of each size)
    std::int64_t n_large = -1;      ///< −1 = from packing_fraction
    double packing_fraction = 0.5;  ///< area fraction inside the box when counts are −1
    double margin = 4;              ///< px between the image border and the walls of the box
    std::int64_t frames = 100;
    std::uint64_t seed = 1;  ///< dynamics seed (render noise uses render.seed)
    /// Dynamics in px and frames. The soft-disk simulator runs in px with time unit = 1 frame.
    double step_rms = 0.3;              ///< target per-axis RMS displacement per frame of a free disk (px)
    double active_speed = 0.0;          ///< self-propulsion speed (px/frame), 0 = none
    double rotational_diffusion = 0.5;  ///< propulsion direction diffusion (rad²/frame)
    /// Friction rate γ (1/frame); step_rms sets the temperature. The default 0.2 makes motion
    /// ballistic from frame to frame (velocities persist ~5 frames, as in high-speed video of a
    /// vibrated layer) and lets the lattice start melt into a liquid within `equilibrate` frames.
    double damping = 0.2;
    double stiffness =
        0;  ///< contact spring (force/px, small-disk mass 1); 0 = automatic (overlaps ≲ 0.1 px)
    std::int64_t substeps = 0;  ///< integration steps per frame; 0 = automatic
    std::int64_t equilibrate =
        100;  ///< frames simulated before the first recorded frame (melts the lattice start)
    int exposure_subframes = 1;  ///< sub-frame positions averaged into one frame (1 = no motion blur)
    double exposure = 1.0;       ///< exposure / frame interval, in (0, 1]
    void validate() const;       ///< throws ParameterError naming the field
};

/// The synthetic acceptance cases of the tracking (docs/tracking.md section 10), radii
/// 6 and 8 px (hard: 6 and 7.7), one place for the tests and benchmarks that measure them:
///   moderate — dark-ring look, φ 0.6, noise 5% of the contrast, 10% illumination gradient;
///   dense    — marker-dot look, φ 0.8, noise 5%;
///   noisy    — plain look, φ 0.3, noise 7%, light 0.57…1.43 (2.5×) across the frame, flicker 3%,
///              0.025% hot + 0.025% dead pixels, self-propulsion 2 px/frame averaged over 5
///              sub-frames (≈ 2 px of motion blur);
///   hard     — radii 6 and 7.7 px, plain look, φ 0.3, a dim contrast (levels 0.3 / 0.55: 64
///              grey levels), PSF σ 1.1 px (defocus), static plate texture 6% of the contrast
///              (≈ ±4 grey levels), 2.6× light gradient with
///              vignetting 0.3 and 4 light blobs, noise 8%, 1-frame exposure motion blur
///              (active 1.5 px/frame, 4 sub-frames), 0.03% hot + 0.03% dead pixels.
enum class ReferenceCase { moderate, dense, noisy, hard };
SynthParams reference_case(ReferenceCase c, int size, std::int64_t frames, std::uint64_t seed);

/// Produces frames one at a time with their exact truth (the centre averaged over the
/// exposure, radius = true radius, species, particle = disk id, vx/vy in px/frame).
class SynthGenerator {
public:
    explicit SynthGenerator(const SynthParams& p);
    ~SynthGenerator();
    SynthGenerator(const SynthGenerator&) = delete;
    SynthGenerator& operator=(const SynthGenerator&) = delete;

    /// Renders frame frames_done() into `image` and appends its truth rows (frame, particle, x,
    /// y, species, vx, vy, radius) to `truth`. Returns false (and does nothing) after the last frame.
    bool next(cv::Mat& image, TrajectoryTable& truth);
    std::int64_t frames_done() const;
    /// Metadata of the truth: units px / frame, window_rect geometry = the box, image size,
    /// species diameters (2 × radius, px).
    Metadata metadata() const;
    /// Largest disk–disk overlap (px) seen so far at the recorded sub-frames.
    double max_overlap() const;
    const SynthParams& params() const;
    std::int64_t n_disks() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace vibra::tracking
