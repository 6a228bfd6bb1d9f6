// SPDX-License-Identifier: GPL-3.0-or-later
// Synthetic trajectories with exact ground truth for the dynamics tests: per-particle series
// (NaN = absent) turned into an InMemorySource.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "vibra/core/result.hpp"
#include "vibra/core/trajectory.hpp"
#include "vibra/core/trajectory_source.hpp"

namespace vibra::test {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// Series [particle][frame]; vx/vy empty = no velocity columns.
struct Series {
    std::vector<std::vector<double>> x, y, vx, vy;
    std::vector<std::int8_t> species;
};

inline InMemorySource make_source(const Series& s, Metadata meta, std::vector<double> time_s = {}) {
    const std::size_t N = s.x.size();
    const std::size_t T = N ? s.x[0].size() : 0;
    Trajectory t;
    t.meta = std::move(meta);
    const bool vel = !s.vx.empty();
    for (std::size_t f = 0; f < T; ++f)
        for (std::size_t i = 0; i < N; ++i) {
            if (std::isnan(s.x[i][f])) continue;
            t.rows.push(static_cast<std::int64_t>(f), static_cast<std::int64_t>(i), s.x[i][f], s.y[i][f],
                        s.species.empty() ? std::int8_t{0} : s.species[i]);
            if (vel) {
                t.rows.vx.push_back(s.vx[i][f]);
                t.rows.vy.push_back(s.vy[i][f]);
            }
        }
    t.index = build_frame_index(t.rows, 0, static_cast<std::int64_t>(T));
    t.frames.time_s = std::move(time_s);
    return InMemorySource(std::move(t));
}

/// Gaussian random walks: N particles, T frames, per-step std `s` per axis, optional drift per frame.
inline Series random_walks(std::size_t N, std::size_t T, double s, std::uint64_t seed, double ux = 0,
                           double uy = 0) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> g(0.0, s);
    std::uniform_real_distribution<double> u(0.0, 100.0);
    Series r;
    r.x.assign(N, std::vector<double>(T));
    r.y.assign(N, std::vector<double>(T));
    r.species.assign(N, 0);
    for (std::size_t i = 0; i < N; ++i) {
        double x = u(rng), y = u(rng);
        for (std::size_t t = 0; t < T; ++t) {
            if (t > 0) {
                x += g(rng) + ux;
                y += g(rng) + uy;
            }
            r.x[i][t] = x;
            r.y[i][t] = y;
        }
        r.species[i] = static_cast<std::int8_t>(i % 2);
    }
    return r;
}

inline const std::vector<double>& array(const ResultGroup& g, const std::string& name) {
    const ResultArray* a = g.find(name);
    if (!a) throw std::runtime_error("missing array " + name);
    return std::get<std::vector<double>>(a->data);
}

inline double attr(const ResultGroup& g, const std::string& name) {
    const auto it = g.attrs.find(name);
    if (it == g.attrs.end()) throw std::runtime_error("missing attribute " + name);
    return std::get<double>(it->second);
}

}  // namespace vibra::test
