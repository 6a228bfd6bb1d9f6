// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/analysis/clusters.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "vibra/core/cell_list.hpp"
#include "vibra/core/error.hpp"

namespace vibra::analysis {

namespace {
std::size_t find_root(std::vector<std::size_t>& parent, std::size_t i) {
    while (parent[i] != i) {
        parent[i] = parent[parent[i]];  // path halving
        i = parent[i];
    }
    return i;
}
}  // namespace

void ClusterParams::validate() const {
    if (!(lambda > 0) || !std::isfinite(lambda))
        throw ParameterError("clusters: lambda must be > 0, got " + std::to_string(lambda));
    if (!(r_cut >= 0) || !std::isfinite(r_cut))
        throw ParameterError("clusters: r_cut must be >= 0 (0 = contact criterion), got " +
                             std::to_string(r_cut));
}

ClusterFrame find_clusters(const StructureFrame& fr, const ClusterParams& p) {
    p.validate();
    const std::size_t n = fr.size();
    ClusterFrame out;
    out.label.assign(n, -1);
    if (n == 0) return out;
    std::vector<double> rad(n, 0.0);
    double cutoff = p.r_cut;
    if (p.r_cut <= 0) {
        double sum = 0, rmax = 0;
        std::int64_t cnt = 0;
        if (fr.radius.size() == n)
            for (double r : fr.radius)
                if (std::isfinite(r) && r > 0) sum += r, ++cnt, rmax = std::max(rmax, r);
        if (cnt == 0)
            throw ParameterError(
                "clusters: frame " + std::to_string(fr.frame) +
                ": the contact criterion needs particle sizes (metadata species_diameters or a "
                "radius column); give a distance cut-off (--clusters-rcut) instead");
        const double mean = sum / static_cast<double>(cnt);
        for (std::size_t i = 0; i < n; ++i)
            rad[i] = (std::isfinite(fr.radius[i]) && fr.radius[i] > 0) ? fr.radius[i] : mean;
        cutoff = 2 * p.lambda * rmax;
    }
    const Geometry& w = fr.window;
    double cl_cut = cutoff;
    if (w.periodic()) cl_cut = std::min(cl_cut, 0.5 * std::min(w.lx(), w.ly()));
    std::vector<std::size_t> parent(n);
    std::iota(parent.begin(), parent.end(), std::size_t{0});
    const CellList cl(fr.x, fr.y, cl_cut, w);
    struct Bond {
        std::size_t i, j;
        double dx, dy;
    };
    std::vector<Bond> bonds;
    cl.for_each_pair([&](std::size_t i, std::size_t j, double dx, double dy, double r2) {
        const double lim = p.r_cut > 0 ? p.r_cut : p.lambda * (rad[i] + rad[j]);
        if (r2 >= lim * lim) return;
        bonds.push_back({i, j, dx, dy});
        const auto a = find_root(parent, i), b = find_root(parent, j);
        if (a != b) parent[std::max(a, b)] = std::min(a, b);  // root = smallest member index
    });
    // roots → provisional ids in order of smallest member, then sort by size (desc), ties by that order
    std::vector<std::int64_t> rid(n, -1);
    std::vector<std::int64_t> sizes;
    for (std::size_t i = 0; i < n; ++i) {
        const auto r = find_root(parent, i);
        if (rid[r] < 0) {
            rid[r] = static_cast<std::int64_t>(sizes.size());
            sizes.push_back(0);
        }
        ++sizes[static_cast<std::size_t>(rid[r])];
    }
    std::vector<std::size_t> order(sizes.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return sizes[a] > sizes[b]; });
    std::vector<std::int64_t> rank(sizes.size());
    for (std::size_t k = 0; k < order.size(); ++k) rank[order[k]] = static_cast<std::int64_t>(k);
    out.size.resize(sizes.size());
    out.boundary.assign(sizes.size(), 0);
    for (std::size_t k = 0; k < order.size(); ++k) out.size[k] = sizes[order[k]];
    // Unwrapped positions by breadth-first search over the bonds (minimum-image bond vectors): a bond
    // whose ends disagree by a box length closes a loop around the periodic box (spanning cluster).
    std::vector<std::int64_t> adj_off(n + 1, 0), adj;
    std::vector<double> adx, ady;
    for (const auto& b : bonds) ++adj_off[b.i + 1], ++adj_off[b.j + 1];
    for (std::size_t i = 0; i < n; ++i) adj_off[i + 1] += adj_off[i];
    adj.resize(static_cast<std::size_t>(adj_off[n]));
    adx.resize(adj.size()), ady.resize(adj.size());
    {
        std::vector<std::int64_t> fill(adj_off.begin(), adj_off.end() - 1);
        for (const auto& b : bonds) {
            auto k = static_cast<std::size_t>(fill[b.i]++);
            adj[k] = static_cast<std::int64_t>(b.j), adx[k] = b.dx, ady[k] = b.dy;
            k = static_cast<std::size_t>(fill[b.j]++);
            adj[k] = static_cast<std::int64_t>(b.i), adx[k] = -b.dx, ady[k] = -b.dy;
        }
    }
    std::vector<double> ux(n, 0.0), uy(n, 0.0);
    std::vector<std::uint8_t> seen(n, 0);
    out.spanning.assign(sizes.size(), 0);
    out.radius_of_gyration.assign(sizes.size(), 0.0);
    std::vector<double> sx(sizes.size(), 0.0), sy(sizes.size(), 0.0), sxx(sizes.size(), 0.0);
    std::vector<std::uint8_t> edge_lo_x(sizes.size(), 0), edge_hi_x(sizes.size(), 0),
        edge_lo_y(sizes.size(), 0), edge_hi_y(sizes.size(), 0);
    std::vector<std::size_t> queue;
    for (std::size_t s0 = 0; s0 < n; ++s0) {
        if (seen[s0]) continue;
        const auto cid = static_cast<std::size_t>(rank[static_cast<std::size_t>(rid[find_root(parent, s0)])]);
        seen[s0] = 1;
        ux[s0] = fr.x[s0], uy[s0] = fr.y[s0];
        queue.assign(1, s0);
        for (std::size_t q = 0; q < queue.size(); ++q) {
            const auto a = queue[q];
            for (auto k = adj_off[a]; k < adj_off[a + 1]; ++k) {
                const auto b = static_cast<std::size_t>(adj[static_cast<std::size_t>(k)]);
                const double bx = ux[a] + adx[static_cast<std::size_t>(k)],
                             by = uy[a] + ady[static_cast<std::size_t>(k)];
                if (!seen[b]) {
                    seen[b] = 1;
                    ux[b] = bx, uy[b] = by;
                    queue.push_back(b);
                } else if (w.periodic() &&
                           (std::abs(ux[b] - bx) > 0.5 * w.lx() || std::abs(uy[b] - by) > 0.5 * w.ly())) {
                    out.spanning[cid] = 1;
                }
            }
        }
    }
    for (std::size_t i = 0; i < n; ++i) {
        const auto c = rank[static_cast<std::size_t>(rid[find_root(parent, i)])];
        const auto cu = static_cast<std::size_t>(c);
        sx[cu] += ux[i], sy[cu] += uy[i], sxx[cu] += ux[i] * ux[i] + uy[i] * uy[i];
        if (w.kind == GeometryKind::window_rect) {
            edge_lo_x[cu] |= fr.x[i] - w.x0 < cutoff;
            edge_hi_x[cu] |= w.x1 - fr.x[i] < cutoff;
            edge_lo_y[cu] |= fr.y[i] - w.y0 < cutoff;
            edge_hi_y[cu] |= w.y1 - fr.y[i] < cutoff;
        }
    }
    for (std::size_t k = 0; k < out.size.size(); ++k) {
        const double m = static_cast<double>(out.size[k]);
        const double mx = sx[k] / m, my = sy[k] / m;
        out.radius_of_gyration[k] = std::sqrt(std::max(0.0, sxx[k] / m - mx * mx - my * my));
        if (w.kind == GeometryKind::window_rect &&
            ((edge_lo_x[k] && edge_hi_x[k]) || (edge_lo_y[k] && edge_hi_y[k])))
            out.spanning[k] = 1;
    }
    for (std::size_t i = 0; i < n; ++i) {
        const auto c = rank[static_cast<std::size_t>(rid[find_root(parent, i)])];
        out.label[i] = c;
        if (!w.periodic()) {
            double d = 0;
            if (w.kind == GeometryKind::window_circle)
                d = w.r - std::hypot(fr.x[i] - w.cx, fr.y[i] - w.cy);
            else
                d = std::min(std::min(fr.x[i] - w.x0, w.x1 - fr.x[i]),
                             std::min(fr.y[i] - w.y0, w.y1 - fr.y[i]));
            if (d < cutoff) out.boundary[static_cast<std::size_t>(c)] = 1;
        }
    }
    return out;
}

ClusterAccumulator::ClusterAccumulator(const ClusterParams& p) : p_(p) { p_.validate(); }

void ClusterAccumulator::accumulate(const StructureFrame& fr) { add(fr, find_clusters(fr, p_)); }

void ClusterAccumulator::add(const StructureFrame& fr, const ClusterFrame& c) {
    double s1 = 0, s2 = 0;
    for (std::size_t k = 0; k < c.size.size(); ++k) {
        const auto s = static_cast<std::size_t>(c.size[k]);
        if (r_.count.size() < s) r_.count.resize(s, 0.0), r_.count_interior.resize(s, 0.0);
        r_.count[s - 1] += 1;
        if (!c.boundary[k]) r_.count_interior[s - 1] += 1;
        s1 += static_cast<double>(s), s2 += static_cast<double>(s) * static_cast<double>(s);
    }
    const double nan = std::numeric_limits<double>::quiet_NaN();
    r_.frame.push_back(fr.frame);
    r_.t.push_back(fr.time);
    const double largest = c.size.empty() ? 0.0 : static_cast<double>(c.size[0]);
    r_.largest.push_back(largest);
    r_.largest_fraction.push_back(fr.size() > 0 ? largest / static_cast<double>(fr.size()) : nan);
    r_.n_clusters.push_back(static_cast<double>(c.size.size()));
    r_.weight_average.push_back(s1 > 0 ? s2 / s1 : nan);
    double span = 0;
    for (auto s : c.spanning) span = std::max(span, static_cast<double>(s));
    r_.spanning.push_back(span);
    r_.largest_rg.push_back(c.radius_of_gyration.empty() ? nan : c.radius_of_gyration[0]);
}

ClusterResult ClusterAccumulator::result() const {
    ClusterResult out = r_;
    out.size.resize(out.count.size());
    std::iota(out.size.begin(), out.size.end(), std::int64_t{1});
    const double tot = std::accumulate(out.count.begin(), out.count.end(), 0.0);
    out.probability.resize(out.count.size());
    double ms = 0;
    for (std::size_t k = 0; k < out.count.size(); ++k) {
        out.probability[k] = tot > 0 ? out.count[k] / tot : 0.0;
        ms += out.probability[k] * static_cast<double>(k + 1);
    }
    out.mean_size = tot > 0 ? ms : std::numeric_limits<double>::quiet_NaN();
    return out;
}

// ---------------------------------------------------------------------------------------------
// The clusters analysis

ClustersResult compute_clusters(const TrajectorySource& src, const ClustersParams& q) {
    ClustersResult res;
    res.clusters = q.clusters;
    res.stride = q.stride;
    res.r_cut_source = q.r_cut_source;
    ClusterAccumulator acc(q.clusters);
    std::vector<ClusterFrame> found(structure_batch(q.threads));  // one per slot of a batch
    for_each_structure_frame_batched(
        src, q.stride, q.threads,
        [&](const StructureFrame& f, std::size_t s) { found[s] = find_clusters(f, acc.params()); },
        [&](const StructureFrame& f, std::size_t s) { acc.add(f, found[s]); }, q.progress, "clusters");
    res.r = acc.result();
    return res;
}

ResultGroup to_group(const ClustersResult& res, const Metadata& m) {
    const std::string T = m.time_unit;
    const auto& r = res.r;
    const auto& p = res.clusters;
    const auto stride = res.stride;
    const auto& rcut_source = res.r_cut_source;
    ResultGroup g;
    g.name = "clusters";
    g.add_int("size", r.size, "1");
    g.add("count", r.count, "1");
    g.add("count_interior", r.count_interior, "1").attrs["meaning"] =
        std::string("clusters not reaching the window boundary (all of them in a periodic box)");
    g.add("probability", r.probability, "1");
    g.add("t", r.t, T);
    g.add_int("t_frames", r.frame, "frame");
    g.add("largest", r.largest, "1");
    g.add("largest_fraction", r.largest_fraction, "1");
    g.add("n_clusters", r.n_clusters, "1");
    g.add("weight_average_size", r.weight_average, "1");
    g.add("spanning", r.spanning, "1").attrs["meaning"] =
        std::string("1 when a cluster wraps around the periodic box / reaches opposite window edges");
    g.add("largest_rg", r.largest_rg, m.length_unit);
    g.attrs["criterion"] = std::string(p.r_cut > 0 ? "r_ij < r_cut" : "r_ij < lambda (d_i + d_j)/2");
    g.attrs["lambda"] = p.lambda;
    g.attrs["r_cut"] = p.r_cut;
    if (!rcut_source.empty()) g.attrs["r_cut_source"] = rcut_source;
    g.attrs["frame_stride"] = stride;
    g.attrs["mean_size"] = r.mean_size;
    return g;
}

}  // namespace vibra::analysis
