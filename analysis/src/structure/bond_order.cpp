// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/analysis/bond_order.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "vibra/core/cell_list.hpp"
#include "vibra/core/error.hpp"
#include "vibra/core/periodic.hpp"

namespace vibra::analysis {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

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
    const auto loc = local_bond_order(fr, p_.bond);
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

    // g6(r): pairs of valid particles, normalised by the pair count per bin
    if (n >= 2) {
        double rmax = p_.r_max;
        if (fr.window.periodic()) rmax = std::min(rmax, 0.5 * std::min(fr.window.lx(), fr.window.ly()));
        const double dr = p_.r_max / static_cast<double>(p_.bins);
        const CellList cl(fr.x, fr.y, rmax, fr.window);
        cl.for_each_pair([&](std::size_t i, std::size_t j, double, double, double r2) {
            if (!loc.valid[i] || !loc.valid[j]) return;
            const auto bin = static_cast<std::size_t>(std::sqrt(r2) / dr);
            if (bin >= sum_.size()) return;
            sum_[bin] += std::real(loc.psi[i] * std::conj(loc.psi[j]));
            cnt_[bin] += 1;
        });
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

}  // namespace vibra::analysis
