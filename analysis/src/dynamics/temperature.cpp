// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/analysis/temperature.hpp"

#include <cmath>
#include <limits>

#include "detail/dynamics_common.hpp"
#include "vibra/core/error.hpp"

namespace vibra::analysis {

using detail::stream_params;

void TemperatureParams::validate() const {
    if (drift_window < 1)
        throw ParameterError("temperature drift_window must be >= 1, got " + std::to_string(drift_window));
    if (max_cells < 1)
        throw ParameterError("temperature max_cells must be >= 1, got " + std::to_string(max_cells));
}

TemperatureResult compute_temperature(const TrajectorySource& src, const TemperatureParams& p) {
    p.validate();
    const Metadata& meta = src.meta();
    const auto T = static_cast<std::size_t>(src.n_frames());
    TrackStreamParams tp = stream_params(p, true);
    TemperatureResult r;
    auto& sum = r.sum;
    auto& cnt = r.count;
    for (int s = 0; s < 3; ++s) {
        sum[s].assign(T, 0.0);
        cnt[s].assign(T, 0.0);
    }
    r.mass_small = species_mass(meta, 0), r.mass_large = species_mass(meta, 1);
    r.mass_known = meta.species_diameters.size() >= 2;
    const double m_large = r.mass_large;
    r.info = stream_tracks(src, tp, [&](const Track& tk) {
        const int slot = tk.species == kSpeciesSmall ? 1 : tk.species == kSpeciesLarge ? 2 : 0;
        const double m = slot == 2 ? m_large : 1.0;
        for (std::size_t s = 0; s < tk.size(); ++s) {
            const double v2 = tk.vx[s] * tk.vx[s] + tk.vy[s] * tk.vy[s];
            if (!std::isfinite(v2)) continue;
            const auto f = static_cast<std::size_t>(tk.first_frame) + s;
            sum[0][f] += m * v2;
            cnt[0][f] += 1;
            if (slot > 0) {
                sum[slot][f] += v2;
                cnt[slot][f] += 1;
            }
        }
    });
    return r;
}

ResultGroup to_group(const TemperatureResult& r, const Metadata& meta) {
    constexpr double nan = std::numeric_limits<double>::quiet_NaN();
    const auto& info = r.info;
    const auto& sum = r.sum;
    const auto& cnt = r.count;
    const auto T = sum[0].size();
    const double m_small = r.mass_small, m_large = r.mass_large;
    ResultGroup g;
    g.name = "temperature";
    detail::add_stream_attrs(g, info);
    const std::string tunit = "(" + meta.length_unit + "/" + meta.time_unit + ")^2";
    std::vector<double> t(info.frame_times);
    std::vector<std::int64_t> fr(T);
    for (std::size_t f = 0; f < T; ++f) fr[f] = static_cast<std::int64_t>(f);
    g.add("t", t, meta.time_unit);
    g.add_int("frame", fr, "frame");
    const double mass[3] = {1.0, m_small, m_large};
    const char* names[3] = {"temperature", "temperature_small", "temperature_large"};
    std::vector<double> temp[3];
    for (int s = 0; s < 3; ++s) {
        temp[s].assign(T, nan);
        double a = 0, n = 0;
        for (std::size_t f = 0; f < T; ++f) {
            if (cnt[s][f] > 0) temp[s][f] = mass[s] * sum[s][f] / (2.0 * cnt[s][f]);
            a += sum[s][f];
            n += cnt[s][f];
        }
        if (s > 0 && (s == 1 ? info.n_small : info.n_large) == 0) continue;
        g.attrs[std::string(names[s]) + "_mean"] = n > 0 ? mass[s] * a / (2.0 * n) : nan;
        g.add(names[s], temp[s], tunit);
    }
    if (info.n_small > 0 && info.n_large > 0) {
        std::vector<double> ratio(T, nan);
        for (std::size_t f = 0; f < T; ++f) ratio[f] = temp[2][f] / temp[1][f];
        g.add("ratio", ratio, "1");
        const auto a = std::get<double>(g.attrs["temperature_large_mean"]);
        const auto b = std::get<double>(g.attrs["temperature_small_mean"]);
        g.attrs["ratio_mean"] = a / b;
        std::vector<std::int64_t> ns(T), nl(T);
        for (std::size_t f = 0; f < T; ++f) {
            ns[f] = static_cast<std::int64_t>(cnt[1][f]);
            nl[f] = static_cast<std::int64_t>(cnt[2][f]);
        }
        g.add_int("n_small", ns, "1");
        g.add_int("n_large", nl, "1");
    }
    g.attrs["definition"] =
        std::string("T_a(t) = m_a <|v|^2>_a(t) / 2 (2-D, k_B = 1); ratio = T_large/T_small");
    g.attrs["mass_unit"] = std::string("mass of a small disk (m proportional to diameter^2)");
    g.attrs["mass_large"] = m_large;
    g.attrs["mass_known"] = static_cast<std::int64_t>(r.mass_known ? 1 : 0);
    return g;
}

}  // namespace vibra::analysis
