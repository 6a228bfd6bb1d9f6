// SPDX-License-Identifier: GPL-3.0-or-later
// Overlay drawing: circles by species, ids, trails, extra markers (see overlay.hpp).
#include "vibra/tracking/overlay.hpp"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "vibra/core/error.hpp"

namespace vibra::tracking {

namespace {

constexpr int kShift = 4;  // fixed-point fraction bits for sub-pixel drawing
constexpr double kOne = 1 << kShift;

// Image coordinates (pixel centres at integers) → fixed-point point in the upscaled output,
// whose pixel (i, j) centre is at ((i + ½)/s − ½) in input coordinates.
cv::Point fp(double x, double y, int s) {
    return {static_cast<int>(std::lround(((x + 0.5) * s - 0.5) * kOne)),
            static_cast<int>(std::lround(((y + 0.5) * s - 0.5) * kOne))};
}

void draw_marker(cv::Mat& img, const OverlayMarker& m, const OverlayParams& p) {
    const int s = p.upscale;
    const cv::Point c = fp(m.x, m.y, s);
    const int h = static_cast<int>(std::lround(m.size * s * kOne));
    const int t = p.thickness;
    switch (m.shape) {
        case MarkerShape::circle:
            cv::circle(img, c, h, m.colour, t, cv::LINE_AA, kShift);
            break;
        case MarkerShape::cross:
            cv::line(img, c + cv::Point(-h, -h), c + cv::Point(h, h), m.colour, t, cv::LINE_AA, kShift);
            cv::line(img, c + cv::Point(-h, h), c + cv::Point(h, -h), m.colour, t, cv::LINE_AA, kShift);
            break;
        case MarkerShape::plus:
            cv::line(img, c + cv::Point(-h, 0), c + cv::Point(h, 0), m.colour, t, cv::LINE_AA, kShift);
            cv::line(img, c + cv::Point(0, -h), c + cv::Point(0, h), m.colour, t, cv::LINE_AA, kShift);
            break;
        case MarkerShape::square:
            cv::rectangle(img, c + cv::Point(-h, -h), c + cv::Point(h, h), m.colour, t, cv::LINE_AA, kShift);
            break;
        case MarkerShape::triangle: {
            const std::vector<cv::Point> tri{c + cv::Point(0, -h), c + cv::Point(h, h), c + cv::Point(-h, h)};
            cv::polylines(img, tri, true, m.colour, t, cv::LINE_AA, kShift);
            break;
        }
    }
    if (!m.label.empty()) {
        const cv::Point at(c.x / int(kOne) + int(m.size * s) + 2, c.y / int(kOne));
        cv::putText(img, m.label, at, cv::FONT_HERSHEY_SIMPLEX, p.font_scale * std::max(1, s / 2), m.colour,
                    1, cv::LINE_AA);
    }
}

}  // namespace

void OverlayParams::validate() const {
    if (thickness < 1 || thickness > 20)
        throw ParameterError("overlay: thickness must be in [1, 20], got " + std::to_string(thickness));
    if (trails < 0 || trails > 100000)
        throw ParameterError("overlay: trails must be in [0, 100000], got " + std::to_string(trails));
    if (upscale < 1 || upscale > 16)
        throw ParameterError("overlay: upscale must be in [1, 16], got " + std::to_string(upscale));
    if (!(font_scale > 0))
        throw ParameterError("overlay: font_scale must be > 0, got " + std::to_string(font_scale));
}

cv::Mat to_display(const cv::Mat& grey) {
    cv::Mat g8;
    if (grey.depth() == CV_8U) {
        g8 = grey;
    } else if (grey.depth() == CV_16U) {
        // Percentile stretch from a 65536-bin histogram.
        std::vector<std::int64_t> hist(65536, 0);
        const cv::Mat g = grey.channels() == 1 ? grey : cv::Mat();
        if (g.empty()) throw FormatError("overlay: 16-bit frames must be grey");
        for (int j = 0; j < g.rows; ++j) {
            const auto* r = g.ptr<std::uint16_t>(j);
            for (int i = 0; i < g.cols; ++i) ++hist[r[i]];
        }
        const auto n = static_cast<std::int64_t>(g.total());
        std::int64_t acc = 0;
        int lo = 0, hi = 65535;
        for (int v = 0; v < 65536; ++v) {
            acc += hist[static_cast<std::size_t>(v)];
            if (acc * 1000 <= n) lo = v;
            if (acc * 1000 >= n * 999) {
                hi = v;
                break;
            }
        }
        if (hi <= lo) hi = lo + 1;
        g.convertTo(g8, CV_8U, 255.0 / (hi - lo), -255.0 * lo / (hi - lo));
    } else {
        throw FormatError("overlay: frames must be 8- or 16-bit");
    }
    cv::Mat bgr;
    if (g8.channels() == 1)
        cv::cvtColor(g8, bgr, cv::COLOR_GRAY2BGR);
    else
        bgr = g8.clone();
    return bgr;
}

cv::Mat draw_overlay(const cv::Mat& frame, std::span<const OverlayDisk> disks,
                     const std::map<std::int64_t, std::deque<cv::Point2d>>& trails,
                     std::span<const OverlayMarker> markers, const OverlayParams& p) {
    p.validate();
    cv::Mat img = to_display(frame);
    const int s = p.upscale;
    if (s > 1) cv::resize(img, img, cv::Size(), s, s, cv::INTER_NEAREST);
    auto colour_of = [&](std::int8_t sp) {
        return sp == 0 ? p.colour_small : sp == 1 ? p.colour_large : p.colour_unknown;
    };
    // Trails first (underneath).
    if (p.trails > 0) {
        std::map<std::int64_t, std::int8_t> species_of;
        for (const auto& d : disks) species_of[d.id] = d.species;
        for (const auto& [id, pts] : trails) {
            if (pts.size() < 2) continue;
            const auto it = species_of.find(id);
            const cv::Scalar c = colour_of(it == species_of.end() ? std::int8_t(-1) : it->second) * 0.7;
            for (std::size_t k = 1; k < pts.size(); ++k)
                cv::line(img, fp(pts[k - 1].x, pts[k - 1].y, s), fp(pts[k].x, pts[k].y, s), c, 1, cv::LINE_AA,
                         kShift);
        }
    }
    for (const auto& d : disks) {
        const cv::Scalar c = colour_of(d.species);
        cv::circle(img, fp(d.x, d.y, s), static_cast<int>(std::lround(d.radius * s * kOne)), c, p.thickness,
                   cv::LINE_AA, kShift);
        if (p.ids && d.id >= 0) {
            const std::string t = std::to_string(d.id);
            int base = 0;
            const double fs = p.font_scale * std::max(1, s / 2);
            const cv::Size ts = cv::getTextSize(t, cv::FONT_HERSHEY_SIMPLEX, fs, 1, &base);
            const cv::Point at(static_cast<int>(std::lround((d.x + 0.5) * s)) - ts.width / 2,
                               static_cast<int>(std::lround((d.y + 0.5) * s)) + ts.height / 2);
            cv::putText(img, t, at, cv::FONT_HERSHEY_SIMPLEX, fs, c, 1, cv::LINE_AA);
        }
    }
    for (const auto& m : markers) draw_marker(img, m, p);
    return img;
}

OverlayRenderer::OverlayRenderer(const OverlayParams& p) : p_(p) { p_.validate(); }

cv::Mat OverlayRenderer::render(const cv::Mat& frame, std::int64_t frame_number,
                                std::span<const OverlayDisk> disks, std::span<const OverlayMarker> markers) {
    if (p_.trails > 0) {
        for (const auto& d : disks) {
            if (d.id < 0) continue;
            trails_[d.id].emplace_back(d.x, d.y);
            trail_frames_[d.id].push_back(frame_number);
        }
        // Drop points older than `trails` frames, and trajectories with none left.
        for (auto it = trail_frames_.begin(); it != trail_frames_.end();) {
            auto& fr = it->second;
            auto& pts = trails_[it->first];
            while (!fr.empty() && fr.front() <= frame_number - p_.trails - 1) fr.pop_front(), pts.pop_front();
            if (fr.empty()) {
                trails_.erase(it->first);
                it = trail_frames_.erase(it);
            } else {
                ++it;
            }
        }
    }
    return draw_overlay(frame, disks, trails_, markers, p_);
}

}  // namespace vibra::tracking
