// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/analysis/velocity_correlation.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "detail/collective_stream.hpp"
#include "detail/numeric.hpp"
#include "vibra/core/cell_list.hpp"
#include "vibra/core/error.hpp"

namespace vibra::analysis {

namespace {
using detail::kNaN;
}

void VelocityCorrelationParams::validate() const {
    if (!(r_max > 0) || !std::isfinite(r_max))
        throw ParameterError("velocity correlation r_max must be > 0, got " + std::to_string(r_max));
    if (!(dr > 0) || !(dr <= r_max))
        throw ParameterError("velocity correlation dr must be in (0, r_max], got " + std::to_string(dr));
}

VelocityCorrelation::VelocityCorrelation(const VelocityCorrelationParams& p) : p_(p) {
    p.validate();
    reset();
}

void VelocityCorrelation::reset() {
    const auto nb = static_cast<std::size_t>(std::ceil(p_.r_max / p_.dr));
    pairs_.assign(nb, 0.0);
    dot_.assign(nb, 0.0);
    lon_.assign(nb, 0.0);
    sum_sq_ = 0, n_ = 0;
}

void VelocityCorrelation::add(std::span<const double> x, std::span<const double> y,
                              std::span<const double> ux, std::span<const double> uy, const Geometry& g) {
    const std::size_t n = x.size();
    if (y.size() != n || ux.size() != n || uy.size() != n)
        throw ParameterError("velocity correlation: x, y, ux, uy differ in length");
    if (n == 0) return;
    double mx = 0, my = 0;
    if (p_.subtract_mean) {
        for (std::size_t i = 0; i < n; ++i) mx += ux[i], my += uy[i];
        mx /= static_cast<double>(n), my /= static_cast<double>(n);
    }
    std::vector<double> dx(n), dy(n);
    for (std::size_t i = 0; i < n; ++i) {
        dx[i] = ux[i] - mx, dy[i] = uy[i] - my;
        sum_sq_ += dx[i] * dx[i] + dy[i] * dy[i];
    }
    n_ += static_cast<double>(n);
    const auto nb = pairs_.size();
    const double inv_dr = 1.0 / p_.dr;
    CellList cl(x, y, p_.r_max, g);
    cl.for_each_pair([&](std::size_t i, std::size_t j, double rx, double ry, double r2) {
        const double r = std::sqrt(r2);
        const auto b = static_cast<std::size_t>(r * inv_dr);
        if (b >= nb) return;
        pairs_[b] += 1;
        dot_[b] += dx[i] * dx[j] + dy[i] * dy[j];
        if (r > 0) lon_[b] += (dx[i] * rx + dy[i] * ry) * (dx[j] * rx + dy[j] * ry) / r2;
    });
}

void VelocityCorrelation::merge(const VelocityCorrelation& o) {
    if (o.pairs_.size() != pairs_.size())
        throw ParameterError("velocity correlation: merging different binnings");
    for (std::size_t b = 0; b < pairs_.size(); ++b)
        pairs_[b] += o.pairs_[b], dot_[b] += o.dot_[b], lon_[b] += o.lon_[b];
    sum_sq_ += o.sum_sq_, n_ += o.n_;
}

std::vector<double> VelocityCorrelation::r() const {
    std::vector<double> r(pairs_.size());
    for (std::size_t b = 0; b < r.size(); ++b) r[b] = (static_cast<double>(b) + 0.5) * p_.dr;
    return r;
}

double VelocityCorrelation::mean_square() const { return n_ > 0 ? sum_sq_ / n_ : kNaN; }

std::vector<double> VelocityCorrelation::c() const {
    std::vector<double> c(pairs_.size(), kNaN);
    const double ms = mean_square();
    for (std::size_t b = 0; b < c.size(); ++b)
        if (pairs_[b] > 0 && ms > 0) c[b] = dot_[b] / pairs_[b] / ms;
    return c;
}

std::vector<double> VelocityCorrelation::c_long() const {
    std::vector<double> c(pairs_.size(), kNaN);
    const double ms = mean_square();
    for (std::size_t b = 0; b < c.size(); ++b)
        if (pairs_[b] > 0 && ms > 0) c[b] = lon_[b] / pairs_[b] / ms;
    return c;
}

std::vector<double> VelocityCorrelation::c_trans() const {
    std::vector<double> c(pairs_.size(), kNaN);
    const double ms = mean_square();
    for (std::size_t b = 0; b < c.size(); ++b)
        if (pairs_[b] > 0 && ms > 0) c[b] = (dot_[b] - lon_[b]) / pairs_[b] / ms;
    return c;
}

double correlation_length(std::span<const double> r, std::span<const double> c, double floor) {
    std::size_t b0 = 0;
    while (b0 < c.size() && !std::isfinite(c[b0])) ++b0;
    if (b0 >= c.size() || !(c[b0] > 0)) return kNaN;
    const double stop = floor * c[b0];
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    std::size_t n = 0;
    for (std::size_t b = b0; b < c.size() && b < r.size(); ++b) {
        if (!std::isfinite(c[b]) || !(c[b] > stop)) break;
        const double yv = std::log(c[b]);
        sx += r[b], sy += yv, sxx += r[b] * r[b], sxy += r[b] * yv;
        ++n;
    }
    if (n < 3) return kNaN;
    const double dn = static_cast<double>(n), vx = sxx - sx * sx / dn;
    if (!(vx > 0)) return kNaN;
    const double slope = (sxy - sx * sy / dn) / vx;
    return slope < 0 ? -1.0 / slope : kNaN;
}

double polar_order(std::span<const double> ux, std::span<const double> uy) {
    double sx = 0, sy = 0;
    std::size_t n = 0;
    for (std::size_t i = 0; i < ux.size() && i < uy.size(); ++i) {
        const double m = std::hypot(ux[i], uy[i]);
        if (!(m > 0) || !std::isfinite(m)) continue;
        sx += ux[i] / m, sy += uy[i] / m;
        ++n;
    }
    return n ? std::hypot(sx, sy) / static_cast<double>(n) : kNaN;
}

// ---------------------------------------------------------------------------------------------
// The correlations analysis

CorrelationsResult compute_correlations(const TrajectorySource& src, const CorrelationsParams& q) {
    constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
    const auto& s = q.field;
    CorrelationsResult res;
    VelocityCorrelationParams& p = res.corr;
    p = q.corr;
    if (std::isnan(p.r_max))
        p.r_max = std::min(15 * s.mean_spacing, 0.25 * std::min(s.grid.lx(), s.grid.ly()));
    if (std::isnan(p.dr)) p.dr = 0.5 * s.mean_spacing;
    p.validate();
    const double floor = q.fit_floor;
    const std::size_t nl = s.lags.size(), nt = static_cast<std::size_t>(s.n_times);
    res.acc.assign(nl, VelocityCorrelation(p));
    auto& acc = res.acc;
    res.xi.assign(nl * nt, kNaN), res.polar.assign(nl * nt, kNaN);
    auto& xi = res.xi;
    auto& polar = res.polar;
    res.r = acc[0].r();
    const auto& r = res.r;
    // Each pair's correlation on the worker threads (into its batch slot), merged in stream order.
    std::vector<VelocityCorrelation> ones(4 * static_cast<std::size_t>(std::max(1, q.threads)),
                                          VelocityCorrelation(p));
    detail::stream_displacements(
        src, s,
        [&](std::size_t li, std::int64_t k, Displacements& d, std::size_t slot) {
            auto& one = ones[slot];
            one = VelocityCorrelation(p);
            one.add(d.x, d.y, d.ux, d.uy, s.geometry);
            xi[li * nt + static_cast<std::size_t>(k)] = correlation_length(r, one.c(), floor);
            polar[li * nt + static_cast<std::size_t>(k)] = polar_order(d.ux, d.uy);
        },
        [&](std::size_t li, std::int64_t, Displacements&, std::size_t slot) { acc[li].merge(ones[slot]); },
        q.threads);
    return res;
}

ResultGroup to_group(const CorrelationsResult& res, const CorrelationsParams& q,
                     const TrajectorySource& src) {
    const auto& s = q.field;
    const auto& p = res.corr;
    const auto& acc = res.acc;
    const auto& r = res.r;
    const double floor = q.fit_floor;
    const std::size_t nl = s.lags.size(), nt = static_cast<std::size_t>(s.n_times);
    ResultGroup g;
    g.name = "correlations";
    detail::record_field_settings(s, g.attrs);
    g.attrs["r_max"] = p.r_max;
    g.attrs["dr"] = p.dr;
    g.attrs["mean"] = std::string(p.subtract_mean ? "subtract" : "keep");
    g.attrs["fit_floor"] = floor;
    g.attrs["normalisation"] =
        std::string("pair count per bin (window geometry cancels), divided by <|du|^2>");
    g.attrs["xi_rule"] =
        std::string("least squares of log C(r) from the first bin while C > fit_floor * C(first bin)");
    detail::common_arrays(g, src, s);
    g.add("r", r, s.L);
    std::vector<double> c, cl, ct, pc, xim, ms;
    for (const auto& a : acc) {
        const auto cc = a.c(), ll = a.c_long(), tt = a.c_trans();
        c.insert(c.end(), cc.begin(), cc.end());
        cl.insert(cl.end(), ll.begin(), ll.end());
        ct.insert(ct.end(), tt.begin(), tt.end());
        pc.insert(pc.end(), a.pair_counts().begin(), a.pair_counts().end());
        xim.push_back(correlation_length(r, cc, floor));
        ms.push_back(a.mean_square());
    }
    g.add2d("c_vv", c, nl, r.size(), "1");
    g.add2d("c_long", cl, nl, r.size(), "1");
    g.add2d("c_trans", ct, nl, r.size(), "1");
    g.add2d("pair_counts", pc, nl, r.size(), "1");
    g.add("xi_mean", xim, s.L).attrs["meaning"] = std::string("fit of the time-averaged C_vv(r), per lag");
    g.add("mean_square", ms, s.energy_unit());
    g.add2d("xi", res.xi, nl, nt, s.L);
    g.add2d("polar_order", res.polar, nl, nt, "1");
    return g;
}

}  // namespace vibra::analysis
