// SPDX-License-Identifier: GPL-3.0-or-later
// The packing's region (packing_region.hpp): contact groups by union-find over a cell list.
#include "vibra/tracking/packing_region.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <span>

#include "vibra/core/cell_list.hpp"
#include "vibra/core/error.hpp"

namespace vibra::tracking {

void PackingRegionParams::validate() const {
    auto bad = [](const char* f, double v, const char* rule) {
        throw ParameterError(std::string("packing region: ") + f + " must be " + rule + ", got " +
                             std::to_string(v));
    };
    if (!(contact >= 1)) bad("contact", contact, ">= 1");
    if (min_disks < 2) bad("min_disks", min_disks, ">= 2");
    if (!(min_fraction > 0 && min_fraction <= 1)) bad("min_fraction", min_fraction, "in (0, 1]");
    if (!(margin >= 1)) bad("margin", margin, ">= 1");
    if (!(wall_band > 0)) bad("wall_band", wall_band, "> 0");
    if (!(wall_cover > 0 && wall_cover <= 1)) bad("wall_cover", wall_cover, "in (0, 1]");
    if (max_beyond < 1) bad("max_beyond", max_beyond, ">= 1");
}

std::string PackingRegion::summary() const {
    const char* names[] = {"left", "top", "right", "bottom"};
    const auto sides = [&](const std::array<bool, 4>& which) {
        std::string list;
        for (int s = 0; s < 4; ++s)
            if (which[s]) list += std::string(list.empty() ? "" : ", ") + names[s];
        return list.empty() ? std::string("none") : list;
    };
    char buf[320];
    if (found)
        std::snprintf(
            buf, sizeof buf,
            "packing region: x %.0f-%.0f, y %.0f-%.0f px around %d of %d disks in contact, walls %s, "
            "cut beyond %s; %d detection%s outside in %d frame%s left out",
            std::max(0.0, kept.x0), kept.x1, std::max(0.0, kept.y0), kept.y1, in_packing, disks,
            sides(walls).c_str(), sides(cut).c_str(), outside, outside == 1 ? "" : "s", frames,
            frames == 1 ? "" : "s");
    else if (packing && room == std::array<bool, 4>{})
        std::snprintf(buf, sizeof buf,
                      "packing region: the whole image (%d of %d disks in contact; walls: %s; no room for a "
                      "disk beyond them)",
                      in_packing, disks, sides(walls).c_str());
    else if (packing)
        std::snprintf(buf, sizeof buf,
                      "packing region: the whole image (%d of %d disks in contact; walls: %s; nothing beyond "
                      "them to cut in %d frame%s)",
                      in_packing, disks, sides(walls).c_str(), frames, frames == 1 ? "" : "s");
    else
        std::snprintf(buf, sizeof buf,
                      "packing region: the whole image (no packing: at most %d of %d disks in contact)",
                      in_packing, disks);
    return buf;
}

namespace {

// Union-find over disk indices; a group is named by its smallest index (order-independent).
struct Groups {
    std::vector<int> parent;
    explicit Groups(int n) : parent(static_cast<std::size_t>(n)) {
        std::iota(parent.begin(), parent.end(), 0);
    }
    int find(int a) {
        while (parent[a] != a) a = parent[a] = parent[parent[a]];
        return a;
    }
    void join(int a, int b) {
        a = find(a), b = find(b);
        if (a != b) parent[std::max(a, b)] = std::min(a, b);
    }
};

// A disk's measured radius, or the large radius when it has none.
double disk_radius(const Particle& d, double r_large) { return d.radius > 0 ? double(d.radius) : r_large; }

// Members of the largest contact group (ties: the group with the smallest index).
std::vector<int> largest_contact_group(const std::vector<Particle>& disks, double r_large, double contact) {
    const int n = static_cast<int>(disks.size());
    std::vector<double> xs, ys;
    double r_max = 0;
    for (const auto& d : disks)
        xs.push_back(d.x), ys.push_back(d.y), r_max = std::max(r_max, disk_radius(d, r_large));
    // Pairs closer than the widest contact (a hair more: the contact test is ≤, the cell list's <).
    const CellList cells(xs, ys, 2 * contact * r_max * (1 + 1e-9), Geometry{});
    Groups g(n);
    cells.for_each_pair([&](std::size_t i, std::size_t j, double, double, double r2) {
        const double reach = contact * (disk_radius(disks[i], r_large) + disk_radius(disks[j], r_large));
        if (r2 <= reach * reach) g.join(static_cast<int>(i), static_cast<int>(j));
    });
    std::vector<int> size(static_cast<std::size_t>(n), 0);
    for (int i = 0; i < n; ++i) ++size[g.find(i)];
    const int best = static_cast<int>(std::max_element(size.begin(), size.end()) - size.begin());
    std::vector<int> members;
    for (int i = 0; i < n; ++i)
        if (g.find(i) == best) members.push_back(i);
    return members;
}

// Share of [lo, hi] covered by the intervals [t − r, t + r].
double covered_share(std::vector<std::pair<double, double>> spans, double lo, double hi) {
    if (!(hi > lo)) return 1;
    std::sort(spans.begin(), spans.end());
    double covered = 0, reached = lo;
    for (const auto& [a, b] : spans) {
        const double from = std::max(a, reached), to = std::min(b, hi);
        if (to > from) covered += to - from, reached = to;
    }
    return covered / (hi - lo);
}

// Which sides of the group's centre box (left, top, right, bottom) are walls: the disks whose
// centres are within `band` of the side cover at least `cover` of its length.
std::array<bool, 4> find_walls(const std::vector<Particle>& disks, const std::vector<int>& group,
                               const Geometry& box, double r_large, double band, double cover) {
    std::array<std::vector<std::pair<double, double>>, 4> spans;
    for (int i : group) {
        const auto& d = disks[i];
        const double r = disk_radius(d, r_large);
        if (d.x - box.x0 <= band) spans[0].emplace_back(d.y - r, d.y + r);
        if (d.y - box.y0 <= band) spans[1].emplace_back(d.x - r, d.x + r);
        if (box.x1 - d.x <= band) spans[2].emplace_back(d.y - r, d.y + r);
        if (box.y1 - d.y <= band) spans[3].emplace_back(d.x - r, d.x + r);
    }
    return {
        covered_share(spans[0], box.y0, box.y1) >= cover, covered_share(spans[1], box.x0, box.x1) >= cover,
        covered_share(spans[2], box.y0, box.y1) >= cover, covered_share(spans[3], box.x0, box.x1) >= cover};
}

// Detections beyond each candidate cut (left, top, right, bottom) in each frame: the total and
// the largest count in one frame.
struct Beyond {
    std::array<int, 4> total{}, most{};
};
Beyond count_beyond(std::span<const std::vector<Particle>> frames, const std::array<double, 4>& cut) {
    Beyond b;
    for (const auto& frame : frames) {
        std::array<int, 4> n{};
        for (const auto& d : frame) {
            if (d.x < cut[0]) ++n[0];
            if (d.y < cut[1]) ++n[1];
            if (d.x > cut[2]) ++n[2];
            if (d.y > cut[3]) ++n[3];
        }
        for (int s = 0; s < 4; ++s) b.total[s] += n[s], b.most[s] = std::max(b.most[s], n[s]);
    }
    return b;
}

}  // namespace

PackingRegion find_packing_region(std::span<const std::vector<Particle>> frames, double r_large, int width,
                                  int height, const PackingRegionParams& p) {
    p.validate();
    PackingRegion reg;
    reg.frames = static_cast<int>(frames.size());
    if (frames.empty() || frames.front().empty()) return reg;
    const auto& disks = frames.front();
    reg.disks = static_cast<int>(disks.size());
    const auto group = largest_contact_group(disks, r_large, p.contact);
    reg.in_packing = static_cast<int>(group.size());
    double x0 = disks[group[0]].x, x1 = x0, y0 = disks[group[0]].y, y1 = y0;
    for (int i : group) {
        x0 = std::min(x0, disks[i].x), x1 = std::max(x1, disks[i].x);
        y0 = std::min(y0, disks[i].y), y1 = std::max(y1, disks[i].y);
    }
    // A packing: enough disks, most of the frame's, spread over two large radii each way (a chain
    // of disks is not a packing).
    reg.packing = reg.in_packing >= p.min_disks && reg.in_packing >= p.min_fraction * reg.disks &&
                  x1 - x0 >= 2 * r_large && y1 - y0 >= 2 * r_large;
    if (!reg.packing) return reg;
    reg.centres = Geometry::rect(x0, y0, x1, y1);
    reg.walls = find_walls(disks, group, reg.centres, r_large, p.wall_band * r_large, p.wall_cover);
    // Candidate cuts at the margin beyond each wall, where the image holds at least a large
    // radius more (room for something of a disk's size); pixel edges of the image: (0,0) is the
    // centre of the top-left pixel.
    const double m = p.margin * r_large, W = width - 0.5, H = height - 0.5;
    const auto& w = reg.walls;
    const std::array<double, 4> cut{
        w[0] && x0 - m - r_large >= -0.5 ? x0 - m : -0.5, w[1] && y0 - m - r_large >= -0.5 ? y0 - m : -0.5,
        w[2] && x1 + m + r_large <= W ? x1 + m : W, w[3] && y1 + m + r_large <= H ? y1 + m : H};
    reg.room = {cut[0] > -0.5, cut[1] > -0.5, cut[2] < W, cut[3] < H};
    // Cut where the frames show something beyond, and only a few things in any frame: a free
    // surface with its gas, or disks the detector missed on the first frame, are not cut.
    const auto beyond = count_beyond(frames, cut);
    for (int s = 0; s < 4; ++s)
        reg.cut[s] = reg.room[s] && beyond.total[s] > 0 && beyond.most[s] <= p.max_beyond;
    const auto& c = reg.cut;
    reg.kept =
        Geometry::rect(c[0] ? cut[0] : -0.5, c[1] ? cut[1] : -0.5, c[2] ? cut[2] : W, c[3] ? cut[3] : H);
    reg.found = c[0] || c[1] || c[2] || c[3];
    for (const auto& frame : frames)
        for (const auto& d : frame) reg.outside += reg.kept.contains(d.x, d.y) ? 0 : 1;
    return reg;
}

PackingRegion find_packing_region(const std::vector<Particle>& disks, double r_large, int width, int height,
                                  const PackingRegionParams& p) {
    return find_packing_region(std::span<const std::vector<Particle>>(&disks, 1), r_large, width, height, p);
}

}  // namespace vibra::tracking
