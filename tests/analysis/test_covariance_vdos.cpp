// SPDX-License-Identifier: GPL-3.0-or-later
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "modes_synthetic.hpp"
#include "vibra/analysis/covariance_vdos.hpp"
#include "vibra/core/error.hpp"

using namespace vibra;
using namespace vibra::analysis;
using Catch::Matchers::WithinRel;

namespace {

// Periodic triangular crystal (nx × ny, NN springs K = 1, m = 1): real-space stiffness matrix.
Eigen::MatrixXd stiffness(const test::TriangularCrystal& cr) {
    const int N = static_cast<int>(cr.n());
    Eigen::MatrixXd K = Eigen::MatrixXd::Zero(2 * N, 2 * N);
    for (int j = 0; j < cr.ny; ++j)
        for (int i = 0; i < cr.nx; ++i) {
            const int a = j * cr.nx + i;
            // three of the six bonds per site (each bond once): +x, and the two upward neighbours
            const int off = j % 2;  // odd rows are shifted by +1/2
            const int nb[3][2] = {{i + 1, j}, {i + off, j + 1}, {i + off - 1, j + 1}};
            for (const auto& q : nb) {
                const int b = ((q[1] + cr.ny) % cr.ny) * cr.nx + (q[0] + cr.nx) % cr.nx;
                // bond vector in the unwrapped lattice: site(q) − site(i, j) (rows j, j+1 have different shifts)
                Eigen::Vector2d d = cr.site(q[0], q[1]) - cr.site(i, j);
                d.normalize();
                const Eigen::Matrix2d P = cr.K * d * d.transpose();
                K.block<2, 2>(2 * a, 2 * a) += P;
                K.block<2, 2>(2 * b, 2 * b) += P;
                K.block<2, 2>(2 * a, 2 * b) -= P;
                K.block<2, 2>(2 * b, 2 * a) -= P;
            }
        }
    return K;
}

// Frames of thermal (k_BT = Tk) displacements and velocities drawn from the normal modes.
InMemorySource thermal_crystal(const test::TriangularCrystal& cr, int frames, double Tk,
                               std::vector<double>& omega) {
    const Eigen::MatrixXd K = stiffness(cr);
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(K);
    omega.clear();
    const int n2 = static_cast<int>(K.rows());
    for (int j = 0; j < n2; ++j)
        if (es.eigenvalues()[j] > 1e-9) omega.push_back(std::sqrt(es.eigenvalues()[j]));
    std::sort(omega.begin(), omega.end());
    std::mt19937_64 rng(77);
    std::normal_distribution<double> g;
    test::TrajBuilder tb(Geometry::periodic(0, 0, cr.lx(), cr.ly()));
    for (int f = 0; f < frames; ++f) {
        Eigen::VectorXd u = Eigen::VectorXd::Zero(n2), v = Eigen::VectorXd::Zero(n2);
        for (int j = 0; j < n2; ++j) {
            const double l = es.eigenvalues()[j];
            if (l <= 1e-9) continue;
            u += std::sqrt(Tk / l) * g(rng) * es.eigenvectors().col(j);
            v += std::sqrt(Tk) * g(rng) * es.eigenvectors().col(j);
        }
        for (int j = 0; j < cr.ny; ++j)
            for (int i = 0; i < cr.nx; ++i) {
                const int a = j * cr.nx + i;
                const Eigen::Vector2d R = cr.site(i, j);
                double x = R.x() + u[2 * a], y = R.y() + u[2 * a + 1];
                x -= cr.lx() * std::floor(x / cr.lx());
                y -= cr.ly() * std::floor(y / cr.ly());
                tb.add(f, a, x, y, v[2 * a], v[2 * a + 1]);
            }
    }
    return tb.source(0.1);
}

}  // namespace

TEST_CASE("Covariance VDOS of a harmonic triangular crystal reproduces its normal-mode frequencies",
          "[unit]") {
    test::TriangularCrystal cr{4, 4};
    std::vector<double> omega;
    const auto src = thermal_crystal(cr, 60000, 0.002, omega);
    REQUIRE(omega.size() == 30);  // 2N − 2 translations
    CovarianceVdosParams p;
    const auto r = compute_covariance_vdos(src, p);
    REQUIRE(r.n_particles == 16);
    REQUIRE_THAT(r.temperature, WithinRel(0.002, 0.01));
    REQUIRE(r.omega.size() == omega.size());
    double mean_e = 0, mean_a = 0;
    for (std::size_t j = 0; j < omega.size(); ++j) {
        INFO("mode " << j << ": covariance " << r.omega[j] << ", analytic " << omega[j]);
        REQUIRE_THAT(r.omega[j], WithinRel(omega[j], 0.03));
        mean_e += r.omega[j];
        mean_a += omega[j];
        REQUIRE(r.participation[j] > 0);
        REQUIRE(r.participation[j] <= 1 + 1e-12);
    }
    REQUIRE_THAT(mean_e, WithinRel(mean_a, 0.005));
    double integral = 0;
    for (double d : r.vdos) integral += d * (r.omega_bins[1] - r.omega_bins[0]);
    REQUIRE_THAT(integral, WithinRel(1.0, 1e-9));
}

TEST_CASE("Covariance VDOS refuses when frames < 10 x 2N unless forced", "[unit]") {
    test::TriangularCrystal cr{4, 4};
    std::vector<double> omega;
    const auto src = thermal_crystal(cr, 300, 0.002, omega);
    CovarianceVdosParams p;
    try {
        compute_covariance_vdos(src, p);
        FAIL("no refusal");
    } catch (const Error& e) {
        const std::string m = e.what();
        REQUIRE(m.find("320 frames") != std::string::npos);
        REQUIRE(m.find("has 300") != std::string::npos);
        REQUIRE(m.find("--covariance-vdos-force") != std::string::npos);
    }
    p.force = true;
    const auto r = compute_covariance_vdos(src, p);
    REQUIRE(r.omega.size() == 30);
}

TEST_CASE("Covariance VDOS does not depend on the frame blocks a memory budget sets", "[unit]") {
    test::TriangularCrystal cr{4, 4};
    std::vector<double> omega;
    const auto src = thermal_crystal(cr, 700, 0.002, omega);
    CovarianceVdosParams p;
    p.force = true;
    const auto whole = compute_covariance_vdos(src, p);
    // 16 disks a frame: blocks of 1, 3 and 40 frames instead of all 700 at once
    for (const std::int64_t rows : {16, 48, 640}) {
        INFO("blocks of " << rows << " rows");
        const RowBudgetSource budgeted(src, rows);
        REQUIRE(frames_per_block(budgeted, 1 << 20) == rows / 16);
        const auto r = compute_covariance_vdos(budgeted, p);
        REQUIRE(r.eigenvalues == whole.eigenvalues);
        REQUIRE(r.vdos == whole.vdos);
        REQUIRE(r.temperature == whole.temperature);
    }
}

TEST_CASE("Covariance VDOS: identical for 1, 2 and 3 threads, and equal to a direct covariance", "[unit]") {
    test::TriangularCrystal cr{6, 6};  // 2N = 72 rows of C: two column panels of the update
    std::vector<double> omega;
    const std::int64_t T = 800;
    const auto src = thermal_crystal(cr, static_cast<int>(T), 0.002, omega);
    std::vector<CovarianceVdosResult> runs;
    for (int threads : {1, 2, 3}) {
        CovarianceVdosParams p;
        p.threads = threads;
        runs.push_back(compute_covariance_vdos(src, p));
    }
    for (const auto& r : {runs[1], runs[2]}) {
        REQUIRE(r.eigenvalues == runs[0].eigenvalues);
        REQUIRE(r.participation == runs[0].participation);
        REQUIRE(r.vdos == runs[0].vdos);
    }
    // Reference: C = <d dᵀ> − <d><d>ᵀ of the displacements from frame 0 (centre of mass removed;
    // one species, so unit masses), by plain Eigen products.
    const auto N = static_cast<Eigen::Index>(cr.n());
    Eigen::MatrixXd D(2 * N, T);
    const auto first = src.read_frames(0, 1);
    for (std::int64_t f = 0; f < T; ++f) {
        const auto fr = src.read_frames(f, 1);
        REQUIRE(fr.rows.size() == static_cast<std::size_t>(N));
        Eigen::VectorXd d(2 * N);
        for (std::size_t i = 0; i < fr.rows.size(); ++i) {
            const auto a = static_cast<Eigen::Index>(fr.rows.particle[i]);
            const double dx = fr.rows.x[i] - first.rows.x[i], dy = fr.rows.y[i] - first.rows.y[i];
            d[2 * a] = dx - cr.lx() * std::round(dx / cr.lx());
            d[2 * a + 1] = dy - cr.ly() * std::round(dy / cr.ly());
        }
        const double mx = d(Eigen::seq(0, 2 * N - 1, 2)).mean(), my = d(Eigen::seq(1, 2 * N - 1, 2)).mean();
        for (Eigen::Index a = 0; a < N; ++a) d[2 * a] -= mx, d[2 * a + 1] -= my;
        D.col(f) = d;
    }
    const Eigen::VectorXd mean = D.rowwise().mean();
    const Eigen::MatrixXd C = D * D.transpose() / static_cast<double>(T) - mean * mean.transpose();
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(C);
    std::vector<double> ref(es.eigenvalues().data(), es.eigenvalues().data() + es.eigenvalues().size());
    std::sort(ref.rbegin(), ref.rend());  // largest λ = lowest ω first
    const auto& got = runs[0].eigenvalues;
    REQUIRE(got.size() == 2 * static_cast<std::size_t>(N) - 2);  // the two centre-of-mass modes dropped
    for (std::size_t j = 0; j < got.size(); ++j) {
        INFO("mode " << j);
        REQUIRE_THAT(got[j], WithinRel(ref[j], 1e-9));
    }
}
