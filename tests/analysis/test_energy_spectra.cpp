// SPDX-License-Identifier: GPL-3.0-or-later
// Energy spectra, transfer and flux on fields with known answers (docs/collective-motion.md, "Validation").
#include <catch2/catch.hpp>

#include <cmath>
#include <complex>
#include <functional>
#include <numbers>
#include <random>

#include "vibra/analysis/displacement_field.hpp"
#include "vibra/analysis/energy_spectra.hpp"

using namespace vibra;
using namespace vibra::analysis;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

namespace {

constexpr double kPi = std::numbers::pi;

GridField grid_field(std::size_t nx, std::size_t ny, double h, bool periodic,
                     const std::function<std::pair<double, double>(double, double)>& fn) {
    GridField f;
    f.grid.x0 = 0, f.grid.y0 = 0, f.grid.hx = h, f.grid.hy = h, f.grid.nx = nx, f.grid.ny = ny;
    f.grid.periodic = periodic;
    f.ux.resize(nx * ny), f.uy.resize(nx * ny), f.weight.assign(nx * ny, 1.0), f.valid.assign(nx * ny, 1);
    for (std::size_t j = 0; j < ny; ++j)
        for (std::size_t i = 0; i < nx; ++i) {
            const auto [a, b] = fn(f.grid.x(i), f.grid.y(j));
            f.ux[j * nx + i] = a, f.uy[j * nx + i] = b;
        }
    return f;
}

/// A random-phase vector field on a periodic box of side L with E(k) ∝ k^s for 0 < |n| ≤ nmax
/// (integer wave numbers n, k = 2π n / L): modes A ê cos(k·r + φ) with A² ∝ k^{s−1}.
struct PowerLawField {
    double L;
    struct Mode {
        double kx, ky, ax, ay, phi;
    };
    std::vector<Mode> modes;
    PowerLawField(double L_, int nmax, double s, unsigned seed) : L(L_) {
        std::mt19937_64 rng(seed);
        std::uniform_real_distribution<double> u(0, 2 * kPi);
        for (int nx = 0; nx <= nmax; ++nx)
            for (int ny = -nmax; ny <= nmax; ++ny) {
                if (nx == 0 && ny <= 0) continue;  // half plane
                if (nx * nx + ny * ny > nmax * nmax) continue;
                const double kx = 2 * kPi * nx / L, ky = 2 * kPi * ny / L, k = std::hypot(kx, ky);
                const double A = std::sqrt(std::pow(k, s - 1)), th = u(rng);
                modes.push_back({kx, ky, A * std::cos(th), A * std::sin(th), u(rng)});
            }
    }
    /// Separable evaluation at many points: Σ_modes a cos(k·r + φ).
    void eval(const std::vector<double>& x, const std::vector<double>& y, std::vector<double>& ux,
              std::vector<double>& uy) const {
        ux.assign(x.size(), 0.0), uy.assign(x.size(), 0.0);
        for (std::size_t p = 0; p < x.size(); ++p)
            for (const auto& m : modes) {
                const double c = std::cos(m.kx * x[p] + m.ky * y[p] + m.phi);
                ux[p] += m.ax * c, uy[p] += m.ay * c;
            }
    }
};

}  // namespace

TEST_CASE("windowed estimator satisfies its Parseval identity", "[unit]") {
    std::mt19937_64 rng(2);
    std::normal_distribution<double> g;
    for (Taper tp : {Taper::none, Taper::hann, Taper::tukey}) {
        auto f = grid_field(40, 28, 0.7, false, [&](double, double) {
            return std::pair{g(rng) + 0.3, g(rng) - 1.0};
        });
        for (std::size_t k = 0; k < f.valid.size(); k += 7) f.valid[k] = 0, f.ux[k] = f.uy[k] = 0;  // holes
        SpectrumParams p;
        p.taper = tp;
        SpectrumEstimator est(f.grid, p);
        const auto s = est.spectrum(f);
        // Right-hand side computed here from its definition.
        double mx = 0, my = 0, n = 0;
        for (std::size_t k = 0; k < f.ux.size(); ++k)
            if (f.valid[k]) mx += f.ux[k], my += f.uy[k], n += 1;
        mx /= n, my /= n;
        double num = 0, w2 = 0;
        for (std::size_t k = 0; k < f.ux.size(); ++k) {
            const double w = f.valid[k] ? est.taper()[k] : 0.0;
            num += w * w * ((f.ux[k] - mx) * (f.ux[k] - mx) + (f.uy[k] - my) * (f.uy[k] - my));
            w2 += w * w;
        }
        const double rhs = 0.5 * num / w2;
        double lhs = 0, split = 0;
        for (std::size_t b = 0; b < s.e.size(); ++b)
            lhs += s.e[b] * s.dk, split += (s.e_long[b] + s.e_trans[b]) * s.dk;
        REQUIRE_THAT(lhs, WithinRel(rhs, 1e-10));
        REQUIRE_THAT(s.energy, WithinRel(rhs, 1e-10));
        REQUIRE_THAT(s.mean_flow_energy, WithinRel(0.5 * (mx * mx + my * my), 1e-12));
        // L + T = total except the k = 0 shell.
        REQUIRE_THAT(split, WithinRel(lhs - s.e[0] * s.dk, 1e-10));
    }
}

TEST_CASE("power-law spectrum on a grid: exponent recovered within 0.05", "[unit]") {
    // Stated band: [4 Δk, π/(2h)] (no coarse-graining cut-off on a given grid).
    SECTION("periodic field, no taper, one realisation") {
        const double L = 128;
        for (double s : {-5.0 / 3.0, -3.0}) {
            PowerLawField pf(L, 64, s, 9);
            const Grid grid = make_grid(Geometry::periodic(0, 0, L, L), 1.0);
            std::vector<double> x, y;
            for (std::size_t j = 0; j < grid.ny; ++j)
                for (std::size_t i = 0; i < grid.nx; ++i) x.push_back(grid.x(i)), y.push_back(grid.y(j));
            GridField f;
            f.grid = grid;
            pf.eval(x, y, f.ux, f.uy);
            f.weight.assign(grid.size(), 1), f.valid.assign(grid.size(), 1);
            SpectrumParams p;
            p.taper = Taper::none;
            SpectrumEstimator est(grid, p);
            const auto sp = est.spectrum(f);
            const auto fit = fit_power_law(sp.k, sp.e_iso, 4 * est.dk(), 0.5 * kPi / grid.hx);
            INFO("s=" << s);
            REQUIRE(fit.n_points >= 20);
            REQUIRE_THAT(fit.exponent, WithinAbs(s, 0.05));
        }
    }
    SECTION("Hann window, averaged over realisations") {
        const double L = 64;
        for (double s : {-5.0 / 3.0, -3.0}) {
            const Grid grid = make_grid(Geometry::rect(0, 0, L, L), 1.0);
            std::vector<double> x, y;
            for (std::size_t j = 0; j < grid.ny; ++j)
                for (std::size_t i = 0; i < grid.nx; ++i) x.push_back(grid.x(i)), y.push_back(grid.y(j));
            SpectrumEstimator est(grid, SpectrumParams{});
            std::vector<double> mean;
            const int R = 12;
            for (int r = 0; r < R; ++r) {
                PowerLawField pf(L, 32, s, 100 + static_cast<unsigned>(r));
                GridField f;
                f.grid = grid;
                pf.eval(x, y, f.ux, f.uy);
                f.weight.assign(grid.size(), 1), f.valid.assign(grid.size(), 1);
                const auto sp = est.spectrum(f);
                if (mean.empty()) mean.assign(sp.e_iso.size(), 0.0);
                for (std::size_t b = 0; b < mean.size(); ++b) mean[b] += sp.e_iso[b] / R;
            }
            std::vector<double> k(mean.size());
            for (std::size_t b = 0; b < k.size(); ++b) k[b] = static_cast<double>(b) * est.dk();
            const auto fit = fit_power_law(k, mean, 4 * est.dk(), 0.5 * kPi / grid.hx);
            INFO("s=" << s);
            REQUIRE(fit.n_points >= 10);
            REQUIRE_THAT(fit.exponent, WithinAbs(s, 0.05));
        }
    }
}

TEST_CASE("power-law spectrum sampled at particles: exponent within 0.1 after coarse-graining", "[unit]") {
    // Stated band (the analysis default): [4 Δk, min(1/σ, π/(2h))], E(k) divided by the kernel's exp(−k²σ²).
    const double L = 64, s = -2.0, sigma = 0.35;
    PowerLawField pf(L, 40, s, 21);  // modes up to k = 3.9 > 1/σ
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<double> u(0, L);
    std::vector<double> x, y, ux, uy;
    for (int n = 0; n < 32768; ++n) x.push_back(u(rng)), y.push_back(u(rng));
    pf.eval(x, y, ux, uy);
    const Geometry box = Geometry::periodic(0, 0, L, L);
    const Grid grid = make_grid(box, sigma);
    CoarseGrainParams cg;
    cg.sigma = sigma;
    const auto f = coarse_grain(grid, x, y, ux, uy, box, cg);
    REQUIRE(f.n_valid() == grid.size());
    SpectrumParams p;
    p.taper = Taper::none;  // the sampled field is periodic
    SpectrumEstimator est(grid, p);
    auto sp = est.spectrum(f);
    for (std::size_t b = 0; b < sp.e.size(); ++b) sp.e_iso[b] *= std::exp(sp.k[b] * sp.k[b] * sigma * sigma);
    const double kmin = 4 * est.dk(), kmax = std::min(1.0 / sigma, 0.5 * kPi / grid.hx);
    const auto fit = fit_power_law(sp.k, sp.e_iso, kmin, kmax);
    REQUIRE(fit.n_points >= 8);
    WARN("particle-sampled exponent " << fit.exponent << " (prescribed " << s << ")");
    REQUIRE_THAT(fit.exponent, WithinAbs(s, 0.1));
    // Without the deconvolution the kernel steepens the spectrum measurably (the test can fail).
    const auto raw = fit_power_law(sp.k, est.spectrum(f).e_iso, kmin, kmax);
    REQUIRE(raw.exponent < s - 0.1);
}

TEST_CASE("fields without nonlinear transfer give zero T(k) and flux", "[unit]") {
    const double L = 64;
    SECTION("oblique single transverse wave, spectral gradients") {
        const double kx = 2 * kPi * 3 / L, ky = 2 * kPi * 2 / L, k = std::hypot(kx, ky);
        auto f = grid_field(64, 64, 1.0, true, [&](double x, double y) {
            const double a = 0.7 * std::sin(kx * x + ky * y);
            return std::pair{-ky / k * a, kx / k * a};
        });
        SpectrumParams p;
        p.taper = Taper::none, p.gradient = Gradient::spectral;
        SpectrumEstimator est(f.grid, p);
        const auto t = est.transfer(f);
        for (std::size_t b = 0; b < t.t.size(); ++b) {
            REQUIRE_THAT(t.t[b], WithinAbs(0.0, 1e-12));
            REQUIRE_THAT(t.flux[b], WithinAbs(0.0, 1e-12));
        }
        // The single mode does carry energy.
        const auto s = est.spectrum(f);
        REQUIRE_THAT(s.energy, WithinRel(0.25 * 0.49, 1e-10));
    }
    SECTION("axis-aligned shear wave, fd2 gradients, Hann window; FST flux") {
        auto f = grid_field(48, 40, 1.0, false, [&](double x, double) {
            return std::pair{0.0, std::sin(0.4 * x)};
        });
        SpectrumParams p;
        p.gradient = Gradient::fd2;
        SpectrumEstimator est(f.grid, p);
        const auto t = est.transfer(f);
        for (std::size_t b = 0; b < t.t.size(); ++b) REQUIRE_THAT(t.flux[b], WithinAbs(0.0, 1e-12));
        const std::vector<double> scales{1.0, 2.0, 4.0};
        for (double v : fst_flux(f, scales)) REQUIRE_THAT(v, WithinAbs(0.0, 1e-12));
        // Periodic grid: the wrapped filter keeps the shear wave a pure shear wave.
        auto fp = grid_field(64, 64, 1.0, true, [&](double x, double) {
            return std::pair{0.0, std::sin(2 * kPi * 3 * x / 64)};
        });
        for (double v : fst_flux(fp, scales)) REQUIRE_THAT(v, WithinAbs(0.0, 1e-12));
    }
    SECTION("FST of a triad: energy moves to large scales (Pi_l < 0)") {
        const double kappa = 2 * kPi * 2 / 64;
        auto f = grid_field(64, 64, 1.0, true, [&](double x, double) {
            return std::pair{0.8 * std::cos(kappa * x) + 0.5 * std::cos(2 * kappa * x + kPi / 2), 0.0};
        });
        const std::vector<double> scales{3.0, 5.0};
        for (double v : fst_flux(f, scales)) REQUIRE(v < 0);
    }
    SECTION("Taylor–Green vortex: the nonlinear term is a gradient, T(k) = 0") {
        const double q = 2 * kPi * 2 / L;
        auto f = grid_field(64, 64, 1.0, true, [&](double x, double y) {
            return std::pair{std::sin(q * x) * std::cos(q * y), -std::cos(q * x) * std::sin(q * y)};
        });
        SpectrumParams p;
        p.taper = Taper::none, p.gradient = Gradient::spectral;
        SpectrumEstimator est(f.grid, p);
        const auto t = est.transfer(f);
        for (std::size_t b = 0; b < t.t.size(); ++b) REQUIRE_THAT(t.t[b], WithinAbs(0.0, 1e-12));
    }
}

TEST_CASE("a triad interaction gives the analytic T(k) and an inverse flux", "[unit]") {
    // u_x = A cos(κx) + C cos(2κx + π/2), u_y = 0:  T(κ)Δk = A²Cκ/4 = −T(2κ)Δk.
    const double L = 64, kappa = 2 * kPi * 2 / L, A = 0.8, C = 0.5;
    auto f = grid_field(64, 64, 1.0, true, [&](double x, double) {
        return std::pair{A * std::cos(kappa * x) + C * std::cos(2 * kappa * x + kPi / 2), 0.0};
    });
    const double expect = A * A * C * kappa / 4;
    for (Gradient gr : {Gradient::spectral, Gradient::fd2}) {
        SpectrumParams p;
        p.taper = Taper::none, p.gradient = gr;
        SpectrumEstimator est(f.grid, p);
        const auto t = est.transfer(f);
        const double tol = gr == Gradient::spectral ? 1e-12 : 0.05 * expect;
        INFO("gradient=" << static_cast<int>(gr));
        REQUIRE_THAT(t.t[2] * t.dk, WithinAbs(expect, tol));
        REQUIRE_THAT(t.t[4] * t.dk, WithinAbs(-expect, tol));
        for (std::size_t b = 0; b < t.t.size(); ++b)
            if (b != 2 && b != 4)
                REQUIRE_THAT(t.t[b] * t.dk, WithinAbs(0.0, gr == Gradient::spectral ? 1e-10 : 0.05 * expect));
        REQUIRE_THAT(t.flux[3], WithinAbs(-expect, tol));  // Π < 0 between κ and 2κ: inverse transfer
        // fd2 does not conserve energy exactly: Σ T ≠ 0 at the level of its truncation error.
        REQUIRE_THAT(t.flux[1], WithinAbs(0.0, gr == Gradient::spectral ? 1e-10 : 0.05 * expect));
        REQUIRE_THAT(t.flux[5], WithinAbs(0.0, 1e-10));
    }
}

TEST_CASE("fit_power_law is exact on a power law and ignores points outside the band", "[unit]") {
    std::vector<double> k, e;
    for (int n = 1; n < 40; ++n) k.push_back(0.1 * n), e.push_back(3.0 * std::pow(0.1 * n, -2.5));
    e[0] = 1e9;  // outside the band
    const auto fit = fit_power_law(k, e, 0.25, 3.0);
    REQUIRE_THAT(fit.exponent, WithinAbs(-2.5, 1e-12));
    REQUIRE_THAT(fit.prefactor, WithinRel(3.0, 1e-12));
    REQUIRE(fit.n_points == 28);
}
