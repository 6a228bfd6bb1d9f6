// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/analysis/evolution.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "vibra/core/error.hpp"

namespace vibra::analysis {

void PiecewiseParams::validate() const {
    if (segments < 1) throw ParameterError("evolution segments must be ≥ 1, got " + std::to_string(segments));
    if (min_points < 2)
        throw ParameterError("evolution min_points must be ≥ 2, got " + std::to_string(min_points));
}

PiecewiseFit piecewise_linear_fit(std::span<const double> xs, std::span<const double> ys,
                                  const PiecewiseParams& p) {
    p.validate();
    if (xs.size() != ys.size()) throw ParameterError("piecewise_linear_fit: x and y differ in length");
    std::vector<double> x, y;
    for (std::size_t i = 0; i < xs.size(); ++i)
        if (std::isfinite(xs[i]) && std::isfinite(ys[i])) x.push_back(xs[i]), y.push_back(ys[i]);
    const std::size_t n = x.size();
    PiecewiseFit fit;
    if (n < 2) return fit;
    // Prefix sums: the least-squares line of any run [a, b) in O(1).
    std::vector<double> S1(n + 1, 0), Sx(n + 1, 0), Sy(n + 1, 0), Sxx(n + 1, 0), Sxy(n + 1, 0), Syy(n + 1, 0);
    for (std::size_t i = 0; i < n; ++i) {
        S1[i + 1] = S1[i] + 1, Sx[i + 1] = Sx[i] + x[i], Sy[i + 1] = Sy[i] + y[i];
        Sxx[i + 1] = Sxx[i] + x[i] * x[i], Sxy[i + 1] = Sxy[i] + x[i] * y[i],
                Syy[i + 1] = Syy[i] + y[i] * y[i];
    }
    auto line = [&](std::size_t a, std::size_t b, double& slope, double& icpt) {
        const double m = S1[b] - S1[a], sx = Sx[b] - Sx[a], sy = Sy[b] - Sy[a];
        const double vxx = (Sxx[b] - Sxx[a]) - sx * sx / m, vxy = (Sxy[b] - Sxy[a]) - sx * sy / m;
        const double vyy = (Syy[b] - Syy[a]) - sy * sy / m;
        slope = vxx > 0 ? vxy / vxx : 0.0;
        icpt = (sy - slope * sx) / m;
        return std::max(0.0, vyy - slope * vxy);
    };
    const std::size_t mp = std::min(p.min_points, n);
    const std::size_t S = std::max<std::size_t>(1, std::min(p.segments, n / mp));
    const double inf = std::numeric_limits<double>::infinity();
    // best[s][b] = minimal RSS of the first b points in s segments; from[s][b] = start of the last one.
    std::vector<std::vector<double>> best(S + 1, std::vector<double>(n + 1, inf));
    std::vector<std::vector<std::size_t>> from(S + 1, std::vector<std::size_t>(n + 1, 0));
    best[0][0] = 0;
    double sl, ic;
    for (std::size_t s = 1; s <= S; ++s)
        for (std::size_t b = s * mp; b <= n; ++b)
            for (std::size_t a = (s - 1) * mp; a + mp <= b; ++a) {
                if (best[s - 1][a] == inf) continue;
                const double v = best[s - 1][a] + line(a, b, sl, ic);
                if (v < best[s][b]) best[s][b] = v, from[s][b] = a;
            }
    std::vector<std::size_t> starts;
    std::size_t b = n;
    for (std::size_t s = S; s >= 1; --s) {
        starts.push_back(from[s][b]);
        b = from[s][b];
    }
    std::reverse(starts.begin(), starts.end());
    fit.starts = starts;
    fit.rss = best[S][n];
    for (std::size_t s = 0; s < starts.size(); ++s) {
        const std::size_t e = s + 1 < starts.size() ? starts[s + 1] : n;
        line(starts[s], e, sl, ic);
        fit.slopes.push_back(sl);
        fit.intercepts.push_back(ic);
        if (s > 0) fit.change_x.push_back(x[starts[s]]);
    }
    return fit;
}

// ---------------------------------------------------------------------------------------------
// The evolution analysis

EvolutionResult compute_evolution(const std::vector<EvolutionSeries>& series, const EvolutionParams& p) {
    EvolutionResult r;
    for (const auto& se : series) {
        EvolutionResult::Stages st;
        st.series = se;
        const auto& t = se.time;
        const auto& v = se.value;
        const double t0 = t.empty() ? 0 : t.front();
        std::vector<double> x(t.size()), y(v.size());
        bool positive = true;
        for (double q : v)
            if (std::isfinite(q) && !(q > 0)) positive = false;
        for (std::size_t i = 0; i < t.size(); ++i) {
            x[i] = std::log(t[i] - t0 + p.frame_interval);
            y[i] = positive ? std::log(v[i]) : v[i];
        }
        const auto fit = piecewise_linear_fit(x, y, p.fit);
        for (double cx : fit.change_x) st.change_times.push_back(std::exp(cx) + t0 - p.frame_interval);
        st.segment_slopes = fit.slopes;
        st.log_scale = positive;
        r.stages.push_back(std::move(st));
    }
    return r;
}

ResultGroup to_group(const EvolutionResult& r, const EvolutionParams& p, const Metadata& meta) {
    ResultGroup g;
    g.name = "evolution";
    g.attrs["lag_frames"] = p.lag;
    g.attrs["segments"] = static_cast<std::int64_t>(p.fit.segments);
    g.attrs["min_points"] = static_cast<std::int64_t>(p.fit.min_points);
    g.attrs["change_point_rule"] = std::string(
        "optimal piecewise-linear least-squares fit (independent segments) of y vs log(t - t0 + "
        "frame_interval); "
        "y = log(value) when all values are > 0, else the value");
    for (const auto& st : r.stages) {
        const std::string n = st.series.name;
        const bool positive = st.log_scale;
        g.add(n + "_time", st.series.time, meta.time_unit);
        g.add(n, st.series.value, st.series.units).attrs["origin"] = st.series.origin;
        g.add(n + "_change_times", st.change_times, meta.time_unit);
        g.add(n + "_segment_slopes", st.segment_slopes, positive ? "1" : st.series.units).attrs["meaning"] =
            std::string(positive ? "d log(value) / d log(t) per segment" : "d value / d log(t) per segment");
        g.attrs[n + "_log_scale"] = std::int64_t{positive ? 1 : 0};
    }
    return g;
}

}  // namespace vibra::analysis
