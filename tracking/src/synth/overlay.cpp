// SPDX-License-Identifier: GPL-3.0-or-later
// Overlay drawing: circles by species, ids, trails, extra markers (see overlay.hpp).
#include "vibra/tracking/overlay.hpp"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "vibra/core/error.hpp"
#include "vibra/core/progress.hpp"
#include "vibra/tracking/video.hpp"

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

cv::Mat to_display(const cv::Mat& grey, bool stretch) {
    if (grey.depth() != CV_8U && grey.depth() != CV_16U)
        throw FormatError("overlay: frames must be 8- or 16-bit");
    if (grey.depth() == CV_16U && grey.channels() != 1)
        throw FormatError("overlay: 16-bit frames must be grey");
    cv::Mat g8;
    if (!stretch) {
        if (grey.depth() == CV_8U)
            g8 = grey;
        else
            grey.convertTo(g8, CV_8U, 255.0 / 65535.0);
    } else {
        // Percentile stretch (0.1–99.9 %) from a histogram of every level (of the grey of a
        // colour frame: its channels stretched alike).
        cv::Mat g = grey;
        if (g.channels() == 3) cv::cvtColor(grey, g, cv::COLOR_BGR2GRAY);
        const bool wide = g.depth() == CV_16U;
        std::vector<std::int64_t> hist(wide ? 65536 : 256, 0);
        for (int j = 0; j < g.rows; ++j) {
            if (wide) {
                const auto* r = g.ptr<std::uint16_t>(j);
                for (int i = 0; i < g.cols; ++i) ++hist[r[i]];
            } else {
                const auto* r = g.ptr<std::uint8_t>(j);
                for (int i = 0; i < g.cols; ++i) ++hist[r[i]];
            }
        }
        const auto n = static_cast<std::int64_t>(g.total());
        std::int64_t acc = 0;
        int lo = 0, hi = static_cast<int>(hist.size()) - 1;
        for (int v = 0; v < static_cast<int>(hist.size()); ++v) {
            acc += hist[static_cast<std::size_t>(v)];
            if (acc * 1000 <= n) lo = v;
            if (acc * 1000 >= n * 999) {
                hi = v;
                break;
            }
        }
        if (hi <= lo) hi = lo + 1;
        grey.convertTo(g8, CV_8U, 255.0 / (hi - lo), -255.0 * lo / (hi - lo));
    }
    cv::Mat bgr;
    if (g8.channels() == 1)
        cv::cvtColor(g8, bgr, cv::COLOR_GRAY2BGR);
    else
        bgr = g8.clone();
    return bgr;
}

namespace {

// The colour legend: a dark box in the top-left corner, one line per species (a circle in its
// colour and its name), "unknown" when such a disk is drawn.
void draw_legend(cv::Mat& img, bool any_unknown, const OverlayParams& p) {
    std::vector<std::pair<std::string, cv::Scalar>> lines;
    for (std::size_t k = 0; k < p.species_names.size() && k < 2; ++k)
        lines.emplace_back(p.species_names[k], k == 0 ? p.colour_small : p.colour_large);
    if (any_unknown) lines.emplace_back("unknown", p.colour_unknown);
    if (lines.empty()) return;
    const double fs = std::max(0.4, p.font_scale * 1.3);
    int base = 0, w = 0;
    const int line_h = cv::getTextSize("Mg", cv::FONT_HERSHEY_SIMPLEX, fs, 1, &base).height + 8;
    for (const auto& [name, c] : lines)
        w = std::max(w, cv::getTextSize(name, cv::FONT_HERSHEY_SIMPLEX, fs, 1, &base).width);
    const int r = line_h / 3, pad = 4;
    const cv::Rect box(0, 0, std::min(img.cols, 3 * pad + 2 * r + w + pad),
                       std::min(img.rows, pad + line_h * static_cast<int>(lines.size())));
    img(box) *= 0.3;
    for (std::size_t k = 0; k < lines.size(); ++k) {
        const int cy = pad + line_h * static_cast<int>(k) + line_h / 2;
        cv::circle(img, {pad + r, cy}, r, lines[k].second, 2, cv::LINE_AA);
        cv::putText(img, lines[k].first, {2 * pad + 2 * r, cy + line_h / 4}, cv::FONT_HERSHEY_SIMPLEX, fs,
                    lines[k].second, 1, cv::LINE_AA);
    }
}

}  // namespace

cv::Mat draw_overlay(const cv::Mat& frame, std::span<const OverlayDisk> disks,
                     const std::map<std::int64_t, std::deque<cv::Point2d>>& trails,
                     std::span<const OverlayMarker> markers, const OverlayParams& p) {
    p.validate();
    cv::Mat img = to_display(frame, p.stretch);
    const int s = p.upscale;
    if (s > 1) cv::resize(img, img, cv::Size(), s, s, cv::INTER_NEAREST);
    auto colour_of = [&](std::int8_t sp) {
        return sp == 0 ? p.colour_small : sp == 1 ? p.colour_large : p.colour_unknown;
    };
    // The legend and the trails first (underneath the circles).
    if (p.legend)
        draw_legend(
            img, std::any_of(disks.begin(), disks.end(), [](const OverlayDisk& d) { return d.species < 0; }),
            p);
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

void OverlayRunParams::validate() const {
    overlay.validate();
    if (first < 0) throw ParameterError("render: first frame must be >= 0, got " + std::to_string(first));
    if (last >= 0 && last <= first)
        throw ParameterError("render: the frame range " + std::to_string(first) + ":" + std::to_string(last) +
                             " is empty");
    if (offset < -1) throw ParameterError("render: offset must be >= 0, got " + std::to_string(offset));
    if (!(radius > 0)) throw ParameterError("render: radius must be > 0, got " + std::to_string(radius));
    if (!(fps > 0)) throw ParameterError("render: fps must be > 0, got " + std::to_string(fps));
}

namespace {

std::int64_t recorded_int(const Metadata& m, const char* key, std::int64_t fallback) {
    const auto it = m.user.find(key);
    if (it == m.user.end()) return fallback;
    try {
        return std::stoll(it->second);
    } catch (const std::exception&) {
        return fallback;
    }
}

// The video against what the trajectory file records of the video it was tracked from.
void check_video(const VideoInfo& vi, const Metadata& meta, std::int64_t n_traj, std::int64_t offset,
                 const std::string& traj_name, const std::string& video) {
    if (meta.image_width > 0 && meta.image_height > 0 &&
        (meta.image_width != vi.width || meta.image_height != vi.height))
        throw FormatError(video + ": video is " + std::to_string(vi.width) + "x" + std::to_string(vi.height) +
                          " px but " + traj_name + " was tracked on " + std::to_string(meta.image_width) +
                          "x" + std::to_string(meta.image_height) + " px");
    if (vi.n_frames < 0) return;  // unknown (a stream): checked while reading
    const std::int64_t recorded = recorded_int(meta, "video_frames", -1);
    if (recorded >= 0 && recorded != vi.n_frames)
        throw FormatError(video + ": video has " + std::to_string(vi.n_frames) + " frames but " + traj_name +
                          " was tracked from a video of " + std::to_string(recorded) + " frames");
    if (vi.n_frames < offset + n_traj)
        throw FormatError(video + ": video has " + std::to_string(vi.n_frames) + " frames but " + traj_name +
                          " holds " + std::to_string(n_traj) + " frames from video frame " +
                          std::to_string(offset));
}

}  // namespace

OverlaySummary render_overlays(const TrajectorySource& traj, const std::string& traj_name,
                               const std::string& video, const std::string& output, VideoFormat format,
                               const OverlayRunParams& p,
                               const std::map<std::int64_t, std::vector<OverlayMarker>>& markers) {
    p.validate();
    const Metadata& meta = traj.meta();
    const std::int64_t first = p.first,
                       last = p.last < 0 ? traj.n_frames() : std::min(p.last, traj.n_frames());
    if (first >= last)
        throw ParameterError(traj_name + ": no frames to draw (" + std::to_string(first) + ":" +
                             std::to_string(last) + "; the file has " + std::to_string(traj.n_frames()) +
                             " frames)");
    OverlaySummary sum;
    sum.offset = p.offset >= 0 ? p.offset : recorded_int(meta, "first_video_frame", 0);
    ReaderParams rp;
    rp.channel = p.channel;
    rp.first = first + sum.offset;
    rp.last = last + sum.offset;
    auto src = open_video(video, rp);  // errors here leave no output
    check_video(src->info(), meta, traj.n_frames(), sum.offset, traj_name, video);
    OverlayParams op = p.overlay;
    if (!meta.species_names.empty()) op.species_names = meta.species_names;

    auto radius_of = [&](const TrajectoryTable& t, std::size_t r) {
        if (!t.radius.empty() && std::isfinite(t.radius[r]) && t.radius[r] > 0) return double(t.radius[r]);
        const auto sp = t.species[r];
        if (sp >= 0 && static_cast<std::size_t>(sp) < meta.species_diameters.size() &&
            meta.species_diameters[static_cast<std::size_t>(sp)] > 0)
            return 0.5 * meta.species_diameters[static_cast<std::size_t>(sp)];
        return p.radius;
    };
    FrameSink sink(output, format, p.fps);  // a temporary, renamed into place by close()
    OverlayRenderer ren(op);
    Progress prog("render", last - first, p.progress);
    const std::int64_t block = 64;
    Trajectory chunk;
    std::int64_t chunk_first = -1;
    std::vector<std::vector<std::size_t>> rows_of;  // rows of each frame of the chunk
    Frame fr;
    std::vector<OverlayDisk> disks;
    for (;;) {
        const auto st = src->next(fr);
        if (st == ReadStatus::corrupt) {
            ++sum.skipped;
            continue;
        }
        if (st != ReadStatus::ok) break;
        const std::int64_t f = fr.index - sum.offset;
        if (f < first || f >= last) continue;
        if (chunk_first < 0 || f >= chunk_first + block || f < chunk_first) {
            chunk_first = f;
            chunk = traj.read_frames(f, std::min(block, last - f));
            rows_of.assign(static_cast<std::size_t>(block), {});
            for (std::size_t r = 0; r < chunk.rows.size(); ++r) {
                const auto k = chunk.rows.frame[r] - chunk_first;
                if (k >= 0 && k < block) rows_of[static_cast<std::size_t>(k)].push_back(r);
            }
        }
        disks.clear();
        for (const auto r : rows_of[static_cast<std::size_t>(f - chunk_first)]) {
            OverlayDisk d;
            d.x = chunk.rows.x[r];
            d.y = chunk.rows.y[r];
            d.radius = radius_of(chunk.rows, r);
            d.species = chunk.rows.species[r];
            d.id = chunk.rows.particle[r];
            disks.push_back(d);
        }
        const auto mk = markers.find(f);
        sink.write(
            mk == markers.end() ? ren.render(fr.image, f, disks) : ren.render(fr.image, f, disks, mk->second),
            f);
        ++sum.written;
        if (p.on_frame) p.on_frame(sum.written);
        prog.update(sum.written);
    }
    if (sum.written == 0) throw FormatError(video + ": no frame of the range could be read");
    sink.close();
    prog.finish();
    return sum;
}

}  // namespace vibra::tracking
