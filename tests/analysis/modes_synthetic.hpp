// SPDX-License-Identifier: GPL-3.0-or-later
// Synthetic inputs with exact ground truth for the collective-mode tests (currents, kgap, tvdos,
// covariance_vdos): trajectories from arrays, a periodic triangular harmonic crystal built from
// its analytic normal modes, and exactly discretised stochastic damped oscillators; and one
// comparison of two results groups within a tolerance.
#pragma once

#include <Eigen/Dense>
#include <algorithm>
#include <catch2/catch.hpp>
#include <variant>
#include <cmath>
#include <complex>
#include <numbers>
#include <random>
#include <vector>

#include "vibra/core/result.hpp"
#include "vibra/core/trajectory.hpp"
#include "vibra/core/trajectory_source.hpp"

namespace vibra::test {

/// Every array of `b` within tol × (largest finite |value| of that array in `a`), NaN where `a` has
/// NaN; names, shapes and non-double arrays equal.
inline void require_close_groups(const ResultGroup& a, const ResultGroup& b, double tol) {
    REQUIRE(a.arrays.size() == b.arrays.size());
    for (std::size_t k = 0; k < a.arrays.size(); ++k) {
        INFO(a.arrays[k].name);
        REQUIRE(a.arrays[k].name == b.arrays[k].name);
        REQUIRE(a.arrays[k].shape == b.arrays[k].shape);
        if (const auto* x = std::get_if<std::vector<double>>(&a.arrays[k].data)) {
            const auto& y = std::get<std::vector<double>>(b.arrays[k].data);
            double scale = 0;
            for (double v : *x)
                if (std::isfinite(v)) scale = std::max(scale, std::abs(v));
            for (std::size_t i = 0; i < x->size(); ++i) {
                if (std::isnan((*x)[i])) {
                    CHECK(std::isnan(y[i]));
                    continue;
                }
                REQUIRE_THAT(y[i], Catch::Matchers::WithinAbs((*x)[i], tol * scale));
            }
        } else {
            CHECK(a.arrays[k].data == b.arrays[k].data);
        }
    }
}

/// Builder of a trajectory frame by frame.
struct TrajBuilder {
    Trajectory t;
    bool velocities = true;
    std::int64_t n_frames = 0;
    explicit TrajBuilder(const Geometry& g, bool with_velocities = true) : velocities(with_velocities) {
        t.meta.geometry = g;
        t.meta.length_unit = "sigma";
        t.meta.time_unit = "tau";
        t.meta.coordinate_convention = "simulation";
    }
    void add(std::int64_t f, std::int64_t id, double x, double y, double vx = 0, double vy = 0,
             std::int8_t s = 0) {
        t.rows.push(f, id, x, y, s);
        if (velocities) {
            t.rows.vx.push_back(vx);
            t.rows.vy.push_back(vy);
        }
        n_frames = std::max(n_frames, f + 1);
    }
    InMemorySource source(double dt) {
        t.meta.frame_interval = dt;
        t.index = build_frame_index(t.rows, 0, n_frames);
        return InMemorySource(std::move(t));
    }
};

/// Periodic triangular lattice, nearest-neighbour springs (stiffness K, mass 1, spacing a = 1).
struct TriangularCrystal {
    int nx, ny;  ///< ny even
    double K = 1;
    double lx() const { return nx; }
    double ly() const { return ny * std::sqrt(3.0) / 2; }
    std::size_t n() const { return static_cast<std::size_t>(nx * ny); }
    Eigen::Vector2d site(int i, int j) const { return {i + 0.5 * (j % 2), j * std::sqrt(3.0) / 2}; }
    /// Dynamical matrix D(k) = Σ_δ K (1 − cos k·δ) δ̂δ̂ᵀ.
    Eigen::Matrix2d dyn(double kx, double ky) const {
        Eigen::Matrix2d D = Eigen::Matrix2d::Zero();
        for (int a = 0; a < 6; ++a) {
            const double th = a * std::numbers::pi / 3;
            const Eigen::Vector2d d(std::cos(th), std::sin(th));
            D += K * (1 - std::cos(kx * d.x() + ky * d.y())) * d * d.transpose();
        }
        return D;
    }
};

/// Stationary stochastic damped oscillator x'' + 2Γx' + ω0²x = noise, sampled exactly at steps dt,
/// with ⟨x²⟩ = var. Autocorrelation var·e^{−Γt}[cos ωt + (Γ/ω) sin ωt], ω² = ω0² − Γ² (any sign).
struct DampedOscillator {
    double gamma, omega0, var, dt;
    Eigen::Matrix2d M, Lc;
    Eigen::Vector2d s;
    DampedOscillator(double gamma_, double omega0_, double var_, double dt_)
        : gamma(gamma_), omega0(omega0_), var(var_), dt(dt_) {
        const double w2 = omega0 * omega0 - gamma * gamma;
        auto ch = [&](double t) {
            if (w2 > 1e-12) return std::cos(std::sqrt(w2) * t);
            if (w2 < -1e-12) return std::cosh(std::sqrt(-w2) * t);
            return 1.0;
        };
        auto sh = [&](double t) {
            if (w2 > 1e-12) return std::sin(std::sqrt(w2) * t) / std::sqrt(w2);
            if (w2 < -1e-12) return std::sinh(std::sqrt(-w2) * t) / std::sqrt(-w2);
            return t;
        };
        const double e = std::exp(-gamma * dt), c = ch(dt), sn = sh(dt);
        M << e * (c + gamma * sn), e * sn, -e * omega0 * omega0 * sn, e * (c - gamma * sn);
        Eigen::Matrix2d S;
        S << var, 0, 0, var * omega0 * omega0;
        const Eigen::Matrix2d Q = S - M * S * M.transpose();
        Eigen::SelfAdjointEigenSolver<Eigen::Matrix2d> es(Q);
        Eigen::Vector2d ev = es.eigenvalues().cwiseMax(0.0);
        Lc = es.eigenvectors() * ev.cwiseSqrt().asDiagonal();
        s.setZero();
    }
    template <class Rng>
    void start(Rng& rng) {
        std::normal_distribution<double> g;
        s << std::sqrt(var) * g(rng), std::sqrt(var) * omega0 * g(rng);
    }
    template <class Rng>
    double step(Rng& rng) {
        std::normal_distribution<double> g;
        Eigen::Vector2d xi(g(rng), g(rng));
        s = M * s + Lc * xi;
        return s.x();
    }
};

}  // namespace vibra::test
