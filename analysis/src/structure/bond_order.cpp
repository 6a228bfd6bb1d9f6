// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/analysis/bond_order.hpp"

#include "detail/numeric.hpp"
#include "detail/pair_grid.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "vibra/core/cell_list.hpp"
#include "vibra/core/error.hpp"
#include "vibra/core/periodic.hpp"

namespace vibra::analysis {

namespace {
using detail::kNaN;

double distance_to_edge(const Geometry& w, double x, double y) {
    switch (w.kind) {
        case GeometryKind::periodic_box:
            return std::numeric_limits<double>::infinity();
        case GeometryKind::window_circle:
            return w.r - std::hypot(x - w.cx, y - w.cy);
        default:
            return std::min(std::min(x - w.x0, w.x1 - x), std::min(y - w.y0, w.y1 - y));
    }
}
}  // namespace

BondNeighbours bond_neighbours_from_string(const std::string& s) {
    if (s == "voronoi") return BondNeighbours::voronoi;
    if (s == "cutoff") return BondNeighbours::cutoff;
    throw ParameterError("psi6: neighbours must be 'voronoi' or 'cutoff', got '" + s + "'");
}
const char* to_string(BondNeighbours b) { return b == BondNeighbours::voronoi ? "voronoi" : "cutoff"; }

void BondOrderParams::validate() const {
    if (order < 1 || order > 64)
        throw ParameterError("psi6: order must be in [1, 64], got " + std::to_string(order));
    if (neighbours == BondNeighbours::cutoff && (!(r_cut > 0) || !std::isfinite(r_cut)))
        throw ParameterError("psi6: r_cut must be > 0 with cut-off neighbours, got " + std::to_string(r_cut));
}

void BondOrderAccumulatorParams::validate() const {
    bond.validate();
    if (!(r_max > 0) || !std::isfinite(r_max))
        throw ParameterError("psi6: r_max must be > 0, got " + std::to_string(r_max));
    if (bins < 1) throw ParameterError("psi6: bins must be >= 1, got " + std::to_string(bins));
    if (hist_bins < 1) throw ParameterError("psi6: hist_bins must be >= 1, got " + std::to_string(hist_bins));
    if (!(crystalline >= 0 && crystalline <= 1))
        throw ParameterError("psi6: crystalline threshold must be in [0, 1], got " +
                             std::to_string(crystalline));
}

LocalBondOrder local_bond_order(const StructureFrame& fr, const BondOrderParams& p) {
    p.validate();
    const std::size_t n = fr.size();
    LocalBondOrder out;
    out.psi.assign(n, {0.0, 0.0});
    out.valid.assign(n, 1);
    out.n_neighbours.assign(n, 0);
    std::vector<double> wsum(n, 0.0);
    const double m = p.order;
    auto add = [&](std::size_t i, double dx, double dy, double w) {
        const double th = std::atan2(dy, dx);
        out.psi[i] += w * std::complex<double>(std::cos(m * th), std::sin(m * th));
        wsum[i] += w;
        ++out.n_neighbours[i];
    };
    if (p.neighbours == BondNeighbours::voronoi) {
        VoronoiParams vp;
        vp.radical = p.radical && fr.radius.size() == n &&
                     std::any_of(fr.radius.begin(), fr.radius.end(),
                                 [](double r) { return std::isfinite(r) && r > 0; });
        const auto v = radical_voronoi(fr, vp);
        const Geometry& w = fr.window;
        for (std::size_t i = 0; i < n; ++i) {
            if (v.boundary[i]) out.valid[i] = 0;
            for (auto k = v.offsets[i]; k < v.offsets[i + 1]; ++k) {
                const auto j = static_cast<std::size_t>(v.neighbour[static_cast<std::size_t>(k)]);
                double dx = fr.x[j] - fr.x[i], dy = fr.y[j] - fr.y[i];
                if (w.periodic()) {
                    dx = minimum_image(dx, w.lx());
                    dy = minimum_image(dy, w.ly());
                }
                add(i, dx, dy, p.weighted ? v.edge_length[static_cast<std::size_t>(k)] : 1.0);
            }
        }
    } else {
        if (n > 0) {
            const CellList cl(fr.x, fr.y, p.r_cut, fr.window);
            cl.for_each_pair([&](std::size_t i, std::size_t j, double dx, double dy, double) {
                add(i, dx, dy, 1.0);
                add(j, -dx, -dy, 1.0);
            });
        }
        for (std::size_t i = 0; i < n; ++i)
            if (distance_to_edge(fr.window, fr.x[i], fr.y[i]) < p.r_cut) out.valid[i] = 0;
    }
    for (std::size_t i = 0; i < n; ++i) {
        if (wsum[i] > 0 && out.valid[i]) {
            out.psi[i] /= wsum[i];
        } else {
            out.valid[i] = 0;
            out.psi[i] = {kNaN, kNaN};
        }
    }
    return out;
}

BondOrderAccumulator::BondOrderAccumulator(const BondOrderAccumulatorParams& p) : p_(p) {
    p_.validate();
    const auto nb = static_cast<std::size_t>(p_.bins);
    sum_.assign(nb, 0.0);
    cnt_.assign(nb, 0.0);
    for (auto& h : h_) h.assign(static_cast<std::size_t>(p_.hist_bins), 0.0);
}

void BondOrderAccumulator::accumulate(const StructureFrame& fr) {
    BondOrderFrame share;
    frame_share(fr, share);
    add(fr, share);
}

void BondOrderAccumulator::frame_share(const StructureFrame& fr, BondOrderFrame& out) const {
    out.local = local_bond_order(fr, p_.bond);
    const auto& loc = out.local;
    const auto nb = static_cast<std::size_t>(p_.bins);
    out.g6_sum.assign(nb, 0.0);
    out.g6_pairs.assign(nb, 0.0);
    // g6(r): pairs of valid particles, normalised by the pair count per bin
    if (fr.size() < 2) return;
    double rmax = p_.r_max;
    if (fr.window.periodic()) rmax = std::min(rmax, 0.5 * std::min(fr.window.lx(), fr.window.ly()));
    const double dr = p_.r_max / static_cast<double>(p_.bins);
    thread_local detail::PairGrid grid;  // buffers reused frame after frame on each thread
    grid.build(fr.x, fr.y, rmax, fr.window);
    auto& sum = out.g6_sum;
    auto& cnt = out.g6_pairs;
    grid.for_each_pair([&](std::size_t i, std::size_t j, double, double, double r2) {
        if (!loc.valid[i] || !loc.valid[j]) return;
        const auto bin = static_cast<std::size_t>(std::sqrt(r2) / dr);
        if (bin >= nb) return;
        sum[bin] += std::real(loc.psi[i] * std::conj(loc.psi[j]));
        cnt[bin] += 1;
    });
}

void BondOrderAccumulator::add(const StructureFrame& fr, const BondOrderFrame& share) {
    const auto& loc = share.local;
    const std::size_t n = fr.size();
    std::complex<double> mean[3] = {};
    std::int64_t cnt[3] = {0, 0, 0}, crys = 0;
    const auto hb = static_cast<std::size_t>(p_.hist_bins);
    for (std::size_t i = 0; i < n; ++i) {
        if (!loc.valid[i]) {
            ++r_.excluded;
            continue;
        }
        const double a = std::abs(loc.psi[i]);
        r_.mean_abs += a, r_.mean_abs2 += a * a;
        crys += a > p_.crystalline;
        const auto bin = std::min(hb - 1, static_cast<std::size_t>(a * static_cast<double>(hb)));
        mean[2] += loc.psi[i], ++cnt[2], h_[2][bin] += 1;
        const auto s = fr.species[i];
        if (s == kSpeciesSmall || s == kSpeciesLarge) mean[s] += loc.psi[i], ++cnt[s], h_[s][bin] += 1;
    }
    r_.valid += cnt[2];
    r_.n_small += cnt[0], r_.n_large += cnt[1];
    auto glob = [&](int k) { return cnt[k] > 0 ? std::abs(mean[k]) / static_cast<double>(cnt[k]) : kNaN; };
    r_.frame.push_back(fr.frame);
    r_.t.push_back(fr.time);
    r_.global.push_back(glob(2));
    r_.global_small.push_back(glob(0));
    r_.global_large.push_back(glob(1));
    r_.crystalline_fraction.push_back(cnt[2] > 0 ? static_cast<double>(crys) / static_cast<double>(cnt[2])
                                                 : kNaN);
    for (std::size_t k = 0; k < sum_.size() && k < share.g6_sum.size(); ++k) {
        sum_[k] += share.g6_sum[k];
        cnt_[k] += share.g6_pairs[k];
    }
}

BondOrderResult BondOrderAccumulator::result() const {
    BondOrderResult out = r_;
    const auto nb = static_cast<std::size_t>(p_.bins);
    const double dr = p_.r_max / static_cast<double>(p_.bins);
    out.r.resize(nb), out.g6.resize(nb), out.g6_pairs.resize(nb);
    for (std::size_t k = 0; k < nb; ++k) {
        out.r[k] = (static_cast<double>(k) + 0.5) * dr;
        out.g6[k] = cnt_[k] > 0 ? sum_[k] / cnt_[k] : kNaN;
        out.g6_pairs[k] = cnt_[k];
    }
    const auto hb = static_cast<std::size_t>(p_.hist_bins);
    out.hist_edges.resize(hb + 1);
    for (std::size_t k = 0; k <= hb; ++k)
        out.hist_edges[k] = static_cast<double>(k) / static_cast<double>(hb);
    const double tot[3] = {static_cast<double>(r_.n_small), static_cast<double>(r_.n_large),
                           static_cast<double>(r_.valid)};
    std::vector<double>* dst[3] = {&out.hist_small, &out.hist_large, &out.hist};
    for (int s = 0; s < 3; ++s) {
        dst[s]->resize(hb);
        for (std::size_t k = 0; k < hb; ++k)
            (*dst[s])[k] = tot[s] > 0 ? h_[s][k] / tot[s] * static_cast<double>(hb) : kNaN;
    }
    if (r_.valid > 0) {
        out.mean_abs /= static_cast<double>(r_.valid);
        out.mean_abs2 /= static_cast<double>(r_.valid);
    } else {
        out.mean_abs = out.mean_abs2 = kNaN;
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// The psi6 analysis

Psi6Result compute_psi6(const TrajectorySource& src, const Psi6Params& q) {
    Psi6Result res;
    res.acc = q.acc;
    auto& p = res.acc;
    const auto defaults = structure_defaults(src);  // also: a frame with two particles exists
    if (!(p.r_max > 0)) p.r_max = default_rmax(defaults);
    res.stride = q.stride;
    res.per_particle = q.per_particle;
    res.r_cut_source = q.r_cut_source;
    const auto stride = res.stride;
    const bool per_particle = res.per_particle;
    BondOrderAccumulator acc(p);
    // optional ragged per-particle table
    auto& lf = res.local_frame;
    auto& lp = res.local_particle;
    auto& offsets = res.local_offsets;
    offsets = {0};
    auto& lre = res.local_re;
    auto& lim = res.local_im;
    auto& lvalid = res.local_valid;
    std::vector<BondOrderFrame> shares(structure_batch(q.threads));  // one per slot of a batch
    for_each_structure_frame_batched(
        src, stride, q.threads,
        [&](const StructureFrame& f, std::size_t s) { acc.frame_share(f, shares[s]); },
        [&](const StructureFrame& f, std::size_t s) {
            const auto& share = shares[s];
            acc.add(f, share);
            if (!per_particle) return;
            const auto& loc = share.local;
            for (std::size_t i = 0; i < f.size(); ++i) {
                lf.push_back(f.frame), lp.push_back(f.particle[i]);
                lre.push_back(loc.psi[i].real()), lim.push_back(loc.psi[i].imag());
                lvalid.push_back(static_cast<std::int8_t>(loc.valid[i]));
            }
            offsets.push_back(static_cast<std::int64_t>(lf.size()));
        },
        q.progress, "psi6");
    res.r = acc.result();
    return res;
}

ResultGroup to_group(const Psi6Result& res, const Metadata& m) {
    constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
    const std::string L = m.length_unit, T = m.time_unit;
    const auto& r = res.r;
    const auto& p = res.acc;
    const auto stride = res.stride;
    const bool per_particle = res.per_particle;
    const auto& rcut_source = res.r_cut_source;
    const auto& lf = res.local_frame;
    const auto& lp = res.local_particle;
    const auto& offsets = res.local_offsets;
    const auto& lre = res.local_re;
    const auto& lim = res.local_im;
    const auto& lvalid = res.local_valid;
    ResultGroup g;
    g.name = "psi6";
    g.add("t", r.t, T);
    g.add_int("t_frames", r.frame, "frame");
    g.add("psi6_global", r.global, "1");
    g.add("crystalline_fraction", r.crystalline_fraction, "1");
    g.add("r", r.r, L);
    g.add("g6", r.g6, "1").attrs["normalisation"] = std::string("sum Re psi_i psi_j* / pair count per bin");
    g.add("g6_pairs", r.g6_pairs, "1");
    g.add("abs_psi6_edges", r.hist_edges, "1");
    g.add("abs_psi6_hist", r.hist, "1").attrs["meaning"] = std::string("probability density of |psi6(i)|");
    if (r.n_small > 0 && r.n_large > 0) {
        g.add("psi6_global_small", r.global_small, "1");
        g.add("psi6_global_large", r.global_large, "1");
        g.add("abs_psi6_hist_small", r.hist_small, "1");
        g.add("abs_psi6_hist_large", r.hist_large, "1");
    }
    g.attrs["order"] = static_cast<std::int64_t>(p.bond.order);
    g.attrs["neighbours"] = std::string(to_string(p.bond.neighbours));
    if (p.bond.neighbours == BondNeighbours::cutoff) {
        g.attrs["r_cut"] = p.bond.r_cut;
        g.attrs["r_cut_source"] = rcut_source;
    } else {
        g.attrs["voronoi"] =
            std::string(m.species_diameters.empty() ? "plain (or radical from the radius column)"
                                                    : "radical (species diameters)");
    }
    g.attrs["weighted"] = static_cast<std::int64_t>(p.bond.weighted);
    g.attrs["r_max"] = p.r_max;
    g.attrs["bins"] = p.bins;
    g.attrs["frame_stride"] = stride;
    g.attrs["crystalline_threshold"] = p.crystalline;
    g.attrs["mean_abs_psi6"] = r.mean_abs;
    g.attrs["mean_abs2_psi6"] = r.mean_abs2;
    g.attrs["particle_frames_valid"] = r.valid;
    g.attrs["particle_frames_excluded_at_boundary"] = r.excluded;
    g.attrs["psi6_global_mean"] = [&] {
        double s = 0;
        std::int64_t c = 0;
        for (double v : r.global)
            if (std::isfinite(v)) s += v, ++c;
        return c ? s / static_cast<double>(c) : kNaN;
    }();
    if (per_particle) {
        ResultGroup loc;
        loc.name = "local";
        loc.add_int("frame", lf, "frame");
        loc.add_int("particle", lp, "1");
        loc.add("psi6_re", lre, "1");
        loc.add("psi6_im", lim, "1");
        ResultArray v;
        v.name = "valid";
        v.units = "1";
        v.shape = {lvalid.size()};
        v.data = lvalid;
        loc.arrays.push_back(std::move(v));
        loc.add_int("frame_offsets", offsets, "rows");
        g.groups.push_back(std::move(loc));
    }
    return g;
}

}  // namespace vibra::analysis
