// SPDX-License-Identifier: GPL-3.0-or-later
// Frame strips: how `vibra track` shares one frame among its workers. Each strip is a band of
// rows fitted by its own DiskLocator on a slightly taller band (its own rows plus a margin of
// ~4 large radii on each inner side), so that every locator sees every frame and starts it from
// the frame just before (the smallest displacement, the cheapest warm fit), and no two workers
// ever touch the same model image. A disk near a seam is fitted by both neighbours;
// merge_strips keeps one of the two. The strips depend on the image alone (auto_strip_count),
// never on the number of workers: the output is the same for any thread count. Pure functions
// over plain data. Internal (namespace detail): tests and bench_tracking include this private header.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include <opencv2/core.hpp>

#include "vibra/tracking/detect.hpp"
#include "vibra/tracking/refine.hpp"

namespace vibra::tracking::detail {

/// Rows [own_begin, own_end) belong to the strip; rows [fit_begin, fit_end) are what its locator
/// sees (own rows plus the margin, clipped to the frame).
struct FrameStrip {
    int own_begin = 0, own_end = 0;
    int fit_begin = 0, fit_end = 0;
};

/// Margin (px) fitted beyond a strip's own rows: a disk whose centre lies in the own rows sees
/// all its touching neighbours whole, and the disks cut by the fitted band's edge lie ≥ 2 large
/// radii away from every own-row disk's footprint.
int strip_margin(double r_large);

/// How many strips `vibra track` cuts a frame `height` rows high into (disks up to `r_large`):
/// as many as have own rows at least 12 margins high (the margins then add at most 1/6 to the
/// rows a strip fits; two strips for the 1024² moderate case), at least 1. A function of the
/// image alone, so that the output does not depend on the thread count.
int auto_strip_count(int height, double r_large);

/// Up to `n` strips of equal height covering rows [0, height); fewer (down to 1) when a strip
/// would be lower than max(8 r_large, 2 margins), where the margins would cost more than the
/// parallelism gains.
std::vector<FrameStrip> plan_strips(int height, int n, double r_large);

/// The disks `locator` finds in strip k of `frame` (it sees rows [fit_begin, fit_end) of every
/// frame), in frame coordinates: those of the strip's own rows and of the seam zones (`seam_zone`
/// px) beside them, ready for merge_strips.
std::vector<Particle> locate_in_strip(DiskLocator& locator, const cv::Mat& frame,
                                      std::span<const FrameStrip> strips, std::size_t k, double seam_zone);

/// The disks of a whole frame from its strips' disks (frame coordinates; strip k may report disks
/// up to `seam_zone` px beyond its own rows). A disk reported by both strips of a seam (centres
/// closer than `same_disk`) is kept once, from the strip whose own rows hold it; a disk reported
/// by one strip only is kept if it lies in that strip's own rows or in the seam zone (the other
/// strip missed it). Sorted by (y, x), like locate().
std::vector<Particle> merge_strips(std::span<const std::vector<Particle>> per_strip,
                                   std::span<const FrameStrip> strips, double seam_zone, double same_disk);

}  // namespace vibra::tracking::detail
