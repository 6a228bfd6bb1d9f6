// SPDX-License-Identifier: GPL-3.0-or-later
// Sub-pixel centres and radii of disks, for any rotationally symmetric look (plain, ring,
// marker dot, bright rim) without an intensity model and without interpolating the image (so
// no pixel locking). Default method: on an annulus around the disk edge, the radial intensity
// profile P(ρ) is estimated from the pixels themselves (binned azimuthal mean about the current
// centre) and the centre is moved by Gauss–Newton steps that remove the azimuthal asymmetry of
// I(p) − P(|p − c|); the fixed point is the symmetry centre. A pixel closer to a neighbour's edge
// than to the disk's own edge (plus edge_margin) is masked, so touching neighbours do not pull the
// centre; the first iterations are coarse (wider annulus, coarser profile) to widen the capture
// range from the candidate centre. Alternative: the
// radial-symmetry centre (Parthasarathy, Nat. Methods 9 (2012) 724), the least-squares
// intersection of the gradient lines on the annulus (needs wider masks: the gradient operator
// spreads a neighbour's edge by one more pixel). The radius is the peak of the azimuthally
// averaged inward edge gradient (parabolic interpolation).
#pragma once

#include <opencv2/core.hpp>

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace vibra::tracking {

/// Image gradients of a frame with the "bright particle" polarity (negated for --invert),
/// in intensity units per px, plus the local contrast used to normalise thresholds.
struct Gradients {
    cv::Mat image;     ///< the frame itself (shared, CV_8U or CV_16U)
    cv::Mat gx, gy;    ///< CV_32FC1, full resolution, Scharr / 32
    cv::Mat contrast;  ///< CV_32FC1 coarse grid: robust local intensity range (97th − 3rd percentile)
    int block = 32;    ///< px per contrast cell
    float contrast_at(int x, int y) const {
        const int bx = std::min(contrast.cols - 1, x / block), by = std::min(contrast.rows - 1, y / block);
        return contrast.at<float>(by, bx);
    }
};

/// Full-resolution gradients and contrast grid of a grey 8/16-bit frame; `invert` for dark
/// particles; `block` = contrast cell size (px).
Gradients compute_gradients(const cv::Mat& image, bool invert, int block);

enum class RefineMethod {
    profile_fit,      ///< intensity fit of a self-consistent radial profile (default)
    radial_symmetry,  ///< least-squares intersection of gradient lines (faster, more neighbour bias)
};

struct RefineParams {
    RefineMethod method = RefineMethod::profile_fit;
    double annulus_half_width = 2.5;  ///< px: centre fit uses pixels with |ρ − R| ≤ this
    /// px: radial_symmetry and radius: pixels closer than R_j + margin to neighbour j are masked
    double neighbour_margin = 2.0;
    /// px: profile_fit masks a pixel whose distance to a neighbour's edge is < its distance to the own edge +
    /// this
    double edge_margin = 1.0;
    int iterations = 5;  ///< centre iterations (annulus re-centred each time); ≥ 1
    /// profile_fit: first iterations with annulus + 1 px and 2× profile bins (capture range); ≤ iterations
    int coarse_iterations = 3;
    double profile_bin = 0.2;  ///< px: radial bin of the profile (profile_fit)
    /// px, profile_fit: a disk whose centre step is below this is settled (its radius measured at once) and
    /// sits out the later iterations; 0 = every disk takes every iteration
    double settle = 0;
    double radius_bin = 0.5;  ///< px: bin width of the radial edge profile
    void validate() const;    ///< throws ParameterError naming the field
};

/// A disk in one frame: position and size in px (image convention: x = column, y = row,
/// (0,0) = centre of the top-left pixel).
struct Particle {
    double x = 0, y = 0;
    float radius = 0;    ///< measured outer radius, px
    float strength = 0;  ///< mean inward edge gradient at the radius / local contrast (≈ 1/edge width)
    float quality = 0;   ///< in [0,1]: strength relative to the frame's median strength (capped)
    std::int8_t species = -1;
    float species_confidence = 0;
    /// joint fit: brightness relative to its species' template (1 ≈ typical; 0 = not fitted)
    float amplitude = 0;
    float background = 0;  ///< joint fit: local background level (image intensity units)
};

/// Refines `parts` in place (x, y start at the candidate centres). `radius_range` = [min, max]
/// px searched for the radius. Masking uses all other parts as neighbours.
void refine_particles(const Gradients& g, std::vector<Particle>& parts, double radius_min, double radius_max,
                      const RefineParams& p = {});

}  // namespace vibra::tracking
