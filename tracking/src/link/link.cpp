// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/tracking/link.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "vibra/core/assignment.hpp"
#include "vibra/core/cell_list.hpp"
#include "vibra/core/error.hpp"

namespace vibra::tracking {

void LinkParams::validate() const {
    if (!(max_step > 0) || !std::isfinite(max_step))
        throw ParameterError("link: max_step must be > 0 px, got " + std::to_string(max_step));
    if (memory < 0) throw ParameterError("link: memory must be >= 0 frames, got " + std::to_string(memory));
    if (max_subnet < 2)
        throw ParameterError("link: max_subnet must be >= 2, got " + std::to_string(max_subnet));
}

Linker::Linker(const LinkParams& p) : p_(p) { p_.validate(); }

namespace {

struct Edge {
    std::uint32_t t, d;  // track index, detection index
    double cost;         // squared distance, px²
};

std::uint32_t find(std::vector<std::uint32_t>& parent, std::uint32_t a) {
    while (parent[a] != a) {
        parent[a] = parent[parent[a]];
        a = parent[a];
    }
    return a;
}

// Solves the assignment on `edges` (all of one or several components) and writes the matches
// into det_to_track. Components larger than max_subnet are retried with a smaller radius².
void solve_edges(std::vector<Edge>& edges, std::size_t n_tracks, std::size_t n_dets, double r2,
                 double unmatched, std::int64_t max_subnet, std::vector<std::int64_t>& det_to_track,
                 std::int64_t& largest) {
    if (edges.empty()) return;
    // Union-find over tracks 0..T-1 and detections T+d (only the nodes touched are initialised).
    std::vector<std::uint32_t> parent(n_tracks + n_dets);
    for (const auto& e : edges) {
        parent[e.t] = e.t;
        parent[n_tracks + e.d] = static_cast<std::uint32_t>(n_tracks + e.d);
    }
    for (const auto& e : edges) {
        const auto a = find(parent, e.t), b = find(parent, static_cast<std::uint32_t>(n_tracks + e.d));
        if (a != b) parent[a] = b;
    }
    // Group edges by component root.
    std::vector<std::uint32_t> root(edges.size());
    for (std::size_t k = 0; k < edges.size(); ++k) root[k] = find(parent, edges[k].t);
    std::vector<std::size_t> order(edges.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return root[a] < root[b]; });

    std::vector<std::uint32_t> tr, de;
    std::vector<double> cost;
    std::vector<Edge> sub;
    for (std::size_t s = 0; s < order.size();) {
        std::size_t e = s;
        while (e < order.size() && root[order[e]] == root[order[s]]) ++e;
        if (e - s == 1) {  // one candidate: no conflict
            const auto& ed1 = edges[order[s]];
            det_to_track[ed1.d] = ed1.t;
            largest = std::max<std::int64_t>(largest, 2);
            s = e;
            continue;
        }
        tr.clear();
        de.clear();
        for (std::size_t k = s; k < e; ++k) {
            tr.push_back(edges[order[k]].t);
            de.push_back(edges[order[k]].d);
        }
        std::sort(tr.begin(), tr.end());
        tr.erase(std::unique(tr.begin(), tr.end()), tr.end());
        std::sort(de.begin(), de.end());
        de.erase(std::unique(de.begin(), de.end()), de.end());
        const auto size = static_cast<std::int64_t>(tr.size() + de.size());
        if (size > max_subnet) {  // shrink the search radius of this subnetwork and retry
            const double r2s = r2 * 0.81;
            sub.clear();
            for (std::size_t k = s; k < e; ++k)
                if (edges[order[k]].cost < r2s) sub.push_back(edges[order[k]]);
            solve_edges(sub, n_tracks, n_dets, r2s, unmatched, max_subnet, det_to_track, largest);
            s = e;
            continue;
        }
        largest = std::max(largest, size);
        cost.assign(tr.size() * de.size(), kForbidden);
        for (std::size_t k = s; k < e; ++k) {
            const auto& ek = edges[order[k]];
            const auto i =
                static_cast<std::size_t>(std::lower_bound(tr.begin(), tr.end(), ek.t) - tr.begin());
            const auto j =
                static_cast<std::size_t>(std::lower_bound(de.begin(), de.end(), ek.d) - de.begin());
            cost[i * de.size() + j] = ek.cost;
        }
        const auto a = solve_assignment_with_unmatched(cost, tr.size(), de.size(), unmatched);
        for (std::size_t i = 0; i < tr.size(); ++i) {
            const auto j = a.row_to_col[i];
            if (j >= 0 && cost[i * de.size() + static_cast<std::size_t>(j)] < kForbidden)
                det_to_track[de[static_cast<std::size_t>(j)]] = tr[i];
        }
        s = e;
    }
}

}  // namespace

std::vector<std::int64_t> Linker::link(std::span<const double> x, std::span<const double> y,
                                       std::span<const std::int8_t> species) {
    if (x.size() != y.size() || (!species.empty() && species.size() != x.size()))
        throw ParameterError("link: x, y and species differ in length");
    stats_ = {};
    const std::size_t nd = x.size();
    const std::size_t nt = active_.size();
    std::vector<std::int64_t> det_to_track(nd, -1);

    if (nd > 0 && nt > 0) {
        const double r2 = p_.max_step * p_.max_step;
        CellList cells(x, y, p_.max_step, Geometry{});
        std::vector<Edge> edges, mismatched;
        edges.reserve(nt * 2);
        for (std::size_t t = 0; t < nt; ++t) {
            const auto& tk = active_[t];
            double qx = tk.x, qy = tk.y;
            if (p_.predict && tk.has_velocity) {
                const auto gap = static_cast<double>(frame_ - tk.last_frame);
                qx += tk.vx * gap;
                qy += tk.vy * gap;
            }
            cells.for_each_near(qx, qy, [&](std::size_t j, double, double, double d2) {
                if (!(d2 < r2)) return;
                if (p_.species_must_match && !species.empty() && tk.species >= 0 && species[j] >= 0 &&
                    species[j] != tk.species) {
                    mismatched.push_back({static_cast<std::uint32_t>(t), static_cast<std::uint32_t>(j), d2});
                    return;
                }
                edges.push_back({static_cast<std::uint32_t>(t), static_cast<std::uint32_t>(j), d2});
            });
        }
        // A track and a detection of different known species may still link when neither has
        // any candidate of its own species: on real video a disk whose size call flips (a
        // wall, a perspective edge) would otherwise break its track, and the trajectory vote
        // could not fix its species.
        if (!mismatched.empty()) {
            std::vector<char> t_has(nt, 0), d_has(nd, 0);
            for (const auto& e : edges) t_has[e.t] = 1, d_has[e.d] = 1;
            for (const auto& e : mismatched)
                if (!t_has[e.t] && !d_has[e.d]) edges.push_back(e);
        }
        // Unmatched cost: any candidate (d² < max_step²) is cheaper than leaving both ends unmatched.
        const double unmatched = 0.5 * r2 * 1.0000001;
        solve_edges(edges, nt, nd, r2, unmatched, p_.max_subnet, det_to_track, stats_.largest_subnet);
    }

    // Update matched tracks, start new ones.
    std::vector<char> matched(nt, 0);
    std::vector<std::int64_t> ids(nd);
    std::vector<Track> born;
    for (std::size_t j = 0; j < nd; ++j) {
        const auto t = det_to_track[j];
        const std::int8_t sp = species.empty() ? std::int8_t{-1} : species[j];
        if (t >= 0) {
            auto& tk = active_[static_cast<std::size_t>(t)];
            matched[static_cast<std::size_t>(t)] = 1;
            const auto gap = static_cast<double>(frame_ - tk.last_frame);
            tk.vx = (x[j] - tk.x) / gap;
            tk.vy = (y[j] - tk.y) / gap;
            tk.has_velocity = true;
            tk.x = x[j];
            tk.y = y[j];
            tk.last_frame = frame_;
            if (tk.species < 0) tk.species = sp;
            ids[j] = tk.id;
            ++stats_.links;
        } else {
            born.push_back({next_id_, x[j], y[j], 0, 0, false, frame_, sp});
            ids[j] = next_id_++;
            ++stats_.new_tracks;
        }
    }
    // Drop tracks that missed more than `memory` frames.
    std::vector<Track> keep;
    keep.reserve(nt + born.size());
    for (std::size_t t = 0; t < nt; ++t) {
        if (matched[t] || frame_ - active_[t].last_frame <= p_.memory)
            keep.push_back(active_[t]);
        else
            ++stats_.lost_tracks;
    }
    keep.insert(keep.end(), born.begin(), born.end());
    active_ = std::move(keep);
    ++frame_;
    return ids;
}

}  // namespace vibra::tracking
