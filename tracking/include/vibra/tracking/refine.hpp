// SPDX-License-Identifier: GPL-3.0-or-later
// Sub-pixel centres and radii of disks. The centre is the point closest (weighted least squares)
// to the lines through every edge pixel along its intensity gradient — the radial-symmetry
// centre (Parthasarathy, Nat. Methods 9 (2012) 724, here on an annulus around the disk edge).
// It holds for any rotationally symmetric look (plain, ring, marker dot, bright rim), needs no
// intensity model and no interpolation (so no pixel locking), and stays unbiased next to
// touching neighbours because pixels within a neighbour's edge band are masked. The radius is
// the peak of the azimuthally averaged inward edge gradient (parabolic interpolation).
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
    cv::Mat gx, gy;        ///< CV_32FC1, full resolution, Scharr / 32
    cv::Mat contrast;      ///< CV_32FC1 coarse grid: robust local intensity range (97th − 3rd percentile)
    int block = 32;        ///< px per contrast cell
    float contrast_at(int x, int y) const {
        const int bx = std::min(contrast.cols - 1, x / block), by = std::min(contrast.rows - 1, y / block);
        return contrast.at<float>(by, bx);
    }
};

/// Full-resolution gradients and contrast grid of a grey 8/16-bit frame; `invert` for dark
/// particles; `block` = contrast cell size (px).
Gradients compute_gradients(const cv::Mat& image, bool invert, int block);

struct RefineParams {
    double annulus_half_width = 2.0;  ///< px: centre fit uses pixels with |ρ − R| ≤ this
    double neighbour_margin = 2.0;    ///< px: pixels closer than R_j + margin to neighbour j are masked
    int iterations = 2;               ///< centre iterations (annulus re-centred each time); ≥ 1
    double radius_bin = 0.5;          ///< px: bin width of the radial edge profile
    void validate() const;            ///< throws ParameterError naming the field
};

/// A disk in one frame: position and size in px (image convention: x = column, y = row,
/// (0,0) = centre of the top-left pixel).
struct Particle {
    double x = 0, y = 0;
    float radius = 0;          ///< measured outer radius, px
    float strength = 0;        ///< mean inward edge gradient at the radius / local contrast (≈ 1/edge width)
    float quality = 0;         ///< in [0,1]: strength relative to the frame's median strength (capped)
    std::int8_t species = -1;
    float species_confidence = 0;
};

/// Refines `parts` in place (x, y start at the candidate centres). `radius_range` = [min, max]
/// px searched for the radius. Masking uses all other parts as neighbours.
void refine_particles(const Gradients& g, std::vector<Particle>& parts, double radius_min, double radius_max,
                      const RefineParams& p = {});

}  // namespace vibra::tracking
