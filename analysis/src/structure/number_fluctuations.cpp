// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/analysis/number_fluctuations.hpp"

#include "detail/numeric.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "vibra/core/error.hpp"

namespace vibra::analysis {

namespace {
using detail::kNaN;

/// The rectangle boxes are placed in: the box/rect itself, or the square inscribed in a circle.
void region_of(const Geometry& w, double& x0, double& y0, double& x1, double& y1) {
    if (w.kind == GeometryKind::window_circle) {
        const double h = w.r / std::sqrt(2.0);
        x0 = w.cx - h, x1 = w.cx + h, y0 = w.cy - h, y1 = w.cy + h;
    } else {
        x0 = w.x0, y0 = w.y0, x1 = w.x1, y1 = w.y1;
    }
}
}  // namespace

void NumberFluctuationParams::validate() const {
    for (double s : sizes)
        if (!(s > 0) || !std::isfinite(s))
            throw ParameterError("number_fluctuations: sizes must be > 0, got " + std::to_string(s));
    if (sizes.empty() && (n_sizes < 2 || n_sizes > 1000))
        throw ParameterError("number_fluctuations: n_sizes must be in [2, 1000], got " +
                             std::to_string(n_sizes));
}

double log_log_slope(const std::vector<double>& mean, const std::vector<double>& var, double min_mean) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int n = 0;
    for (std::size_t k = 0; k < mean.size() && k < var.size(); ++k) {
        if (!(mean[k] >= min_mean) || !(var[k] > 0)) continue;
        const double x = std::log(mean[k]), y = std::log(var[k]);
        sx += x, sy += y, sxx += x * x, sxy += x * y, ++n;
    }
    if (n < 2) return kNaN;
    const double den = n * sxx - sx * sx;
    return den > 0 ? (n * sxy - sx * sy) / den : kNaN;
}

NumberFluctuationAccumulator::NumberFluctuationAccumulator(const NumberFluctuationParams& p) : p_(p) {
    p_.validate();
}

void NumberFluctuationAccumulator::choose_sizes(const StructureFrame& fr) {
    double x0, y0, x1, y1;
    region_of(fr.window, x0, y0, x1, y1);
    const double lx = x1 - x0, ly = y1 - y0;
    if (!p_.sizes.empty()) {
        ell_ = p_.sizes;
        std::sort(ell_.begin(), ell_.end());
    } else {
        std::size_t nin = 0;
        for (std::size_t i = 0; i < fr.size(); ++i)
            nin += fr.x[i] >= x0 && fr.x[i] < x1 && fr.y[i] >= y0 && fr.y[i] < y1;
        const double spacing = std::sqrt(lx * ly / static_cast<double>(std::max<std::size_t>(nin, 1)));
        const double lmax = 0.5 * std::min(lx, ly), lmin = std::min(spacing, 0.5 * lmax);
        const auto m = static_cast<std::size_t>(p_.n_sizes);
        for (std::size_t k = 0; k < m; ++k)
            ell_.push_back(lmin * std::pow(lmax / lmin, static_cast<double>(k) / static_cast<double>(m - 1)));
    }
    n_.assign(ell_.size(), 0.0);
    for (auto& v : s1_) v.assign(ell_.size(), 0.0);
    for (auto& v : s2_) v.assign(ell_.size(), 0.0);
}

bool NumberFluctuationAccumulator::box_counts(const StructureFrame& fr, BoxCounts& out) const {
    if (fr.size() < 2 || ell_.empty()) return false;
    double x0, y0, x1, y1;
    region_of(fr.window, x0, y0, x1, y1);
    const double lx = x1 - x0, ly = y1 - y0;
    for (int s = 0; s < 3; ++s) out.sum[s].assign(ell_.size(), 0.0), out.sum2[s].assign(ell_.size(), 0.0);
    out.tiles.assign(ell_.size(), 0);
    for (std::size_t k = 0; k < ell_.size(); ++k) {
        const double l = ell_[k];
        const auto nx = static_cast<std::size_t>(std::floor(lx / l)),
                   ny = static_cast<std::size_t>(std::floor(ly / l));
        if (nx == 0 || ny == 0) continue;
        out.tiles[k] = nx * ny;
        // tiles centred in the region
        const double ox = x0 + 0.5 * (lx - static_cast<double>(nx) * l),
                     oy = y0 + 0.5 * (ly - static_cast<double>(ny) * l);
        auto& cnt = out.scratch;
        cnt.assign(3 * nx * ny, 0);  // [tile][species]
        for (std::size_t i = 0; i < fr.size(); ++i) {
            const double fx = (fr.x[i] - ox) / l, fy = (fr.y[i] - oy) / l;
            if (!(fx >= 0 && fy >= 0)) continue;
            const auto ix = static_cast<std::size_t>(fx), iy = static_cast<std::size_t>(fy);
            if (ix >= nx || iy >= ny) continue;
            const std::size_t b = 3 * (iy * nx + ix);
            cnt[b + 2] += 1;
            if (fr.species[i] == kSpeciesSmall)
                cnt[b] += 1;
            else if (fr.species[i] == kSpeciesLarge)
                cnt[b + 1] += 1;
        }
        // Integer counts: these sums are exact, so adding them per frame gives the same bits as
        // adding every tile's count to the run's totals.
        for (std::size_t b = 0; b < nx * ny; ++b)
            for (int s = 0; s < 3; ++s) {
                const auto c = static_cast<double>(cnt[3 * b + static_cast<std::size_t>(s)]);
                out.sum[s][k] += c, out.sum2[s][k] += c * c;
            }
    }
    return true;
}

void NumberFluctuationAccumulator::add(const BoxCounts& c) {
    for (std::size_t k = 0; k < ell_.size(); ++k) {
        if (c.tiles[k] == 0) continue;
        n_[k] += static_cast<double>(c.tiles[k]);
        for (int s = 0; s < 3; ++s) s1_[s][k] += c.sum[s][k], s2_[s][k] += c.sum2[s][k];
    }
    ++frames_;
}

void NumberFluctuationAccumulator::accumulate(const StructureFrame& fr) {
    if (fr.size() < 2) return;  // empty frames (tracker drop-outs; unbounded data has no window then)
    if (ell_.empty()) choose_sizes(fr);
    BoxCounts c;
    box_counts(fr, c);
    add(c);
}

NumberFluctuationResult NumberFluctuationAccumulator::result() const {
    NumberFluctuationResult r;
    r.ell = ell_;
    r.boxes = n_;
    r.frames = frames_;
    std::vector<double>* mean[3] = {&r.mean_small, &r.mean_large, &r.mean};
    std::vector<double>* var[3] = {&r.var_small, &r.var_large, &r.var};
    for (int s = 0; s < 3; ++s) {
        mean[s]->resize(ell_.size());
        var[s]->resize(ell_.size());
        for (std::size_t k = 0; k < ell_.size(); ++k) {
            if (n_[k] < 2) {
                (*mean[s])[k] = (*var[s])[k] = kNaN;
                continue;
            }
            const double m = s1_[s][k] / n_[k];
            (*mean[s])[k] = m;
            (*var[s])[k] = std::max(0.0, (s2_[s][k] - n_[k] * m * m) / (n_[k] - 1));
        }
    }
    r.exponent = log_log_slope(r.mean, r.var);
    r.exponent_small = log_log_slope(r.mean_small, r.var_small);
    r.exponent_large = log_log_slope(r.mean_large, r.var_large);
    return r;
}

// ---------------------------------------------------------------------------------------------
// The number_fluctuations analysis

NumberFluctuationsResult compute_number_fluctuations(const TrajectorySource& src,
                                                     const NumberFluctuationsParams& q) {
    NumberFluctuationsResult res;
    res.window = structure_defaults(src).window;
    res.stride = q.stride;
    NumberFluctuationAccumulator acc(q.boxes);
    // Counted on `threads` threads, added in frame order; frames counted before the first
    // frame fixed the sizes (the first batch) are counted again, in order, by accumulate.
    std::vector<NumberFluctuationAccumulator::BoxCounts> counts(structure_batch(q.threads));
    std::vector<char> counted(counts.size(), 0);
    for_each_structure_frame_batched(
        src, q.stride, q.threads,
        [&](const StructureFrame& f, std::size_t s) { counted[s] = acc.box_counts(f, counts[s]); },
        [&](const StructureFrame& f, std::size_t s) {
            if (counted[s])
                acc.add(counts[s]);
            else
                acc.accumulate(f);
        },
        q.progress, "number_fluctuations");
    res.r = acc.result();
    return res;
}

ResultGroup to_group(const NumberFluctuationsResult& res, const Metadata& m) {
    const std::string L = m.length_unit;
    const auto& r = res.r;
    const auto stride = res.stride;
    ResultGroup g;
    g.name = "number_fluctuations";
    g.add("ell", r.ell, L);
    g.add("boxes", r.boxes, "1");
    g.add("mean_n", r.mean, "1");
    g.add("var_n", r.var, "1");
    const bool partials =
        std::any_of(r.mean_small.begin(), r.mean_small.end(), [](double v) { return v > 0; }) &&
        std::any_of(r.mean_large.begin(), r.mean_large.end(), [](double v) { return v > 0; });
    if (partials) {
        g.add("mean_n_small", r.mean_small, "1");
        g.add("var_n_small", r.var_small, "1");
        g.add("mean_n_large", r.mean_large, "1");
        g.add("var_n_large", r.var_large, "1");
        g.attrs["exponent_small"] = r.exponent_small;
        g.attrs["exponent_large"] = r.exponent_large;
    }
    g.attrs["exponent"] = r.exponent;
    g.attrs["exponent_meaning"] = std::string("a in var_n ~ mean_n^a (Poisson 1); dN ~ <N>^(a/2)");
    g.attrs["alpha"] = 0.5 * r.exponent;
    g.attrs["fit"] = std::string("least squares in log-log over sizes with mean_n >= 1");
    g.attrs["boxes_layout"] = std::string("non-overlapping square tiles centred in the region");
    g.attrs["region"] =
        std::string(res.window.kind == GeometryKind::window_circle ? "square inscribed in the circle"
                                                                   : "whole box / window");
    g.attrs["frame_stride"] = stride;
    g.attrs["frames"] = r.frames;
    return g;
}

}  // namespace vibra::analysis
