// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/core/trajectory.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "vibra/core/error.hpp"

namespace vibra {

namespace {

template <class V>
void append_col(V& dst, const V& src) {
    dst.insert(dst.end(), src.begin(), src.end());
}
template <class V>
V slice_col(const V& v, std::size_t b, std::size_t e) {
    if (v.empty()) return {};
    return V(v.begin() + static_cast<std::ptrdiff_t>(b), v.begin() + static_cast<std::ptrdiff_t>(e));
}
// Reorder rows [b, b+order.size()) so that new row b+i is old row order[i].
template <class V>
void permute_col(V& v, const std::vector<std::size_t>& order, std::size_t b) {
    if (v.empty()) return;
    V tmp(order.size());
    for (std::size_t i = 0; i < order.size(); ++i) tmp[i] = v[order[i]];
    std::copy(tmp.begin(), tmp.end(), v.begin() + static_cast<std::ptrdiff_t>(b));
}
template <class V>
void check_optional(const V& v, std::size_t n, const char* name, const std::string& source) {
    if (!v.empty() && v.size() != n)
        throw FormatError(at_field(
            source, name, "has " + std::to_string(v.size()) + " rows, expected " + std::to_string(n)));
}

}  // namespace

void TrajectoryTable::append(const TrajectoryTable& o) {
    auto opt = [&](auto& dst, const auto& src, const char* name) {
        if (dst.empty() && src.empty()) return;
        if ((dst.empty() && !empty()) || (src.empty() && !o.empty()))
            throw ParameterError(std::string("TrajectoryTable::append: optional column '") + name +
                                 "' present in one table only");
        append_col(dst, src);
    };
    // Optional columns first (checks), then the required ones.
    opt(vx, o.vx, "vx");
    opt(vy, o.vy, "vy");
    opt(radius, o.radius, "radius");
    opt(brightness, o.brightness, "brightness");
    opt(quality, o.quality, "quality");
    opt(species_confidence, o.species_confidence, "species_confidence");
    opt(edge, o.edge, "edge");
    append_col(frame, o.frame);
    append_col(particle, o.particle);
    append_col(x, o.x);
    append_col(y, o.y);
    append_col(species, o.species);
}

TrajectoryTable TrajectoryTable::slice(std::size_t b, std::size_t e) const {
    TrajectoryTable t;
    t.frame = slice_col(frame, b, e);
    t.particle = slice_col(particle, b, e);
    t.x = slice_col(x, b, e);
    t.y = slice_col(y, b, e);
    t.species = slice_col(species, b, e);
    t.vx = slice_col(vx, b, e);
    t.vy = slice_col(vy, b, e);
    t.radius = slice_col(radius, b, e);
    t.brightness = slice_col(brightness, b, e);
    t.quality = slice_col(quality, b, e);
    t.species_confidence = slice_col(species_confidence, b, e);
    t.edge = slice_col(edge, b, e);
    return t;
}

void TrajectoryTable::clear() { *this = TrajectoryTable{}; }

void TrajectoryTable::reserve(std::size_t n) {
    frame.reserve(n);
    particle.reserve(n);
    x.reserve(n);
    y.reserve(n);
    species.reserve(n);
}

void TrajectoryTable::check_lengths(const std::string& source) const {
    const std::size_t n = frame.size();
    auto req = [&](std::size_t m, const char* name) {
        if (m != n)
            throw FormatError(
                at_field(source, name, "has " + std::to_string(m) + " rows, expected " + std::to_string(n)));
    };
    req(particle.size(), "particle");
    req(x.size(), "x");
    req(y.size(), "y");
    req(species.size(), "species");
    check_optional(vx, n, "vx", source);
    check_optional(vy, n, "vy", source);
    if (vx.empty() != vy.empty())
        throw FormatError(at_field(source, vx.empty() ? "vx" : "vy", "missing while its partner is present"));
    check_optional(radius, n, "radius", source);
    check_optional(brightness, n, "brightness", source);
    check_optional(quality, n, "quality", source);
    check_optional(species_confidence, n, "species_confidence", source);
    check_optional(edge, n, "edge", source);
}

void TrajectoryTable::validate(const std::string& source) const {
    check_lengths(source);
    for (std::size_t i = 0; i < size(); ++i) {
        if (frame[i] < 0)
            throw FormatError(
                at_field(source, "frame",
                         "negative frame " + std::to_string(frame[i]) + " at row " + std::to_string(i)));
        if (species[i] < -1 || species[i] > 1)
            throw FormatError(at_frame(source, frame[i],
                                       "species code " + std::to_string(int(species[i])) + " of particle " +
                                           std::to_string(particle[i]) + " is not -1, 0 or 1"));
        if (particle[i] < -1)
            throw FormatError(at_frame(source, frame[i],
                                       "particle id " + std::to_string(particle[i]) +
                                           " is negative (only -1 = unlinked is allowed)"));
        if (i == 0) continue;
        if (frame[i] < frame[i - 1])
            throw FormatError(at_field(source, "frame",
                                       "rows not sorted by frame: frame " + std::to_string(frame[i]) +
                                           " after frame " + std::to_string(frame[i - 1]) + " at row " +
                                           std::to_string(i)));
        if (frame[i] == frame[i - 1]) {
            if (particle[i] < particle[i - 1])
                throw FormatError(at_frame(source, frame[i],
                                           "rows not sorted by particle (" + std::to_string(particle[i]) +
                                               " after " + std::to_string(particle[i - 1]) + ")"));
            if (particle[i] == particle[i - 1] && particle[i] >= 0)
                throw FormatError(
                    at_frame(source, frame[i], "duplicate particle " + std::to_string(particle[i])));
        }
    }
}

void TrajectoryTable::sort_rows(std::size_t b, std::size_t e) {
    e = std::min(e, size());
    if (b >= e) return;
    std::vector<std::size_t> order(e - b);
    std::iota(order.begin(), order.end(), b);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        if (frame[a] != frame[b]) return frame[a] < frame[b];
        return particle[a] < particle[b];
    });
    if (std::is_sorted(order.begin(), order.end())) return;
    permute_col(frame, order, b);
    permute_col(particle, order, b);
    permute_col(x, order, b);
    permute_col(y, order, b);
    permute_col(species, order, b);
    permute_col(vx, order, b);
    permute_col(vy, order, b);
    permute_col(radius, order, b);
    permute_col(brightness, order, b);
    permute_col(quality, order, b);
    permute_col(species_confidence, order, b);
    permute_col(edge, order, b);
}

FrameIndex build_frame_index(const TrajectoryTable& t, std::int64_t first_frame, std::int64_t n_frames,
                             const std::string& source) {
    FrameIndex idx;
    idx.first_frame = first_frame;
    idx.offsets.assign(static_cast<std::size_t>(n_frames) + 1, 0);
    std::int64_t prev = first_frame;
    for (std::size_t i = 0; i < t.size(); ++i) {
        const std::int64_t f = t.frame[i];
        if (f < first_frame || f >= first_frame + n_frames)
            throw FormatError(at_frame(source, f,
                                       "outside the frame range [" + std::to_string(first_frame) + ", " +
                                           std::to_string(first_frame + n_frames) + ")"));
        if (f < prev) throw FormatError(at_frame(source, f, "rows not sorted by frame"));
        prev = f;
        ++idx.offsets[static_cast<std::size_t>(f - first_frame) + 1];
    }
    std::partial_sum(idx.offsets.begin(), idx.offsets.end(), idx.offsets.begin());
    return idx;
}

const char* to_string(GeometryKind k) {
    switch (k) {
        case GeometryKind::unbounded:
            return "unbounded";
        case GeometryKind::periodic_box:
            return "periodic_box";
        case GeometryKind::window_rect:
            return "window_rect";
        case GeometryKind::window_circle:
            return "window_circle";
    }
    return "unbounded";
}

GeometryKind geometry_kind_from_string(const std::string& s) {
    for (auto k : {GeometryKind::unbounded, GeometryKind::periodic_box, GeometryKind::window_rect,
                   GeometryKind::window_circle})
        if (s == to_string(k)) return k;
    throw ParameterError("unknown geometry kind '" + s +
                         "' (expected unbounded, periodic_box, window_rect or window_circle)");
}

Geometry Geometry::periodic(double x0, double y0, double x1, double y1) {
    if (!(x1 > x0) || !(y1 > y0)) throw ParameterError("periodic box must have x1 > x0 and y1 > y0");
    Geometry g;
    g.kind = GeometryKind::periodic_box;
    g.x0 = x0, g.y0 = y0, g.x1 = x1, g.y1 = y1;
    return g;
}
Geometry Geometry::rect(double x0, double y0, double x1, double y1) {
    if (!(x1 > x0) || !(y1 > y0)) throw ParameterError("rectangular window must have x1 > x0 and y1 > y0");
    Geometry g;
    g.kind = GeometryKind::window_rect;
    g.x0 = x0, g.y0 = y0, g.x1 = x1, g.y1 = y1;
    return g;
}
Geometry Geometry::circle(double cx, double cy, double r) {
    if (!(r > 0)) throw ParameterError("circular window must have radius > 0");
    Geometry g;
    g.kind = GeometryKind::window_circle;
    g.cx = cx, g.cy = cy, g.r = r;
    return g;
}

double Geometry::area() const {
    switch (kind) {
        case GeometryKind::periodic_box:
        case GeometryKind::window_rect:
            return lx() * ly();
        case GeometryKind::window_circle:
            return M_PI * r * r;
        default:
            return 0.0;
    }
}

bool Geometry::contains(double x, double y) const {
    switch (kind) {
        case GeometryKind::periodic_box:
            return x >= x0 && x < x1 && y >= y0 && y < y1;
        case GeometryKind::window_rect:
            return x >= x0 && x <= x1 && y >= y0 && y <= y1;
        case GeometryKind::window_circle:
            return (x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r;
        default:
            return true;
    }
}

std::vector<std::int64_t> particle_ids(const TrajectoryTable& t) {
    std::vector<std::int64_t> ids;
    ids.reserve(t.size());
    for (auto p : t.particle)
        if (p >= 0) ids.push_back(p);
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    return ids;
}

double frame_time(const Metadata& m, const FrameColumns& fc, std::int64_t first_frame, std::int64_t f) {
    const auto i = f - first_frame;
    if (m.time_unit == "s" && i >= 0 && static_cast<std::size_t>(i) < fc.time_s.size())
        return fc.time_s[static_cast<std::size_t>(i)];
    return static_cast<double>(f) * m.frame_interval;
}

}  // namespace vibra
