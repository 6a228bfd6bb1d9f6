// SPDX-License-Identifier: GPL-3.0-or-later
// The Gaussian-gridding NUFFT (analysis/src/detail/nufft.hpp) against direct sums, and the current
// engine's two methods (matrix product, NUFFT) against each other.
#include <catch2/catch.hpp>
#include <cmath>
#include <complex>
#include <numbers>
#include <random>

#include "detail/modes_engine.hpp"  // analysis/src (the test target adds it to its include path)
#include "detail/nufft.hpp"

using namespace vibra::analysis;
using cplx = std::complex<double>;

namespace {

struct Cloud {
    std::vector<double> x, y;
    std::vector<cplx> c;
    double sum_abs = 0;
};

Cloud random_cloud(std::size_t n, double lo, double hi, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(lo, hi);
    std::normal_distribution<double> g(0.2, 1.0);
    Cloud cl;
    for (std::size_t j = 0; j < n; ++j) {
        cl.x.push_back(u(rng));
        cl.y.push_back(u(rng));
        cl.c.emplace_back(g(rng), g(rng));
        cl.sum_abs += std::abs(cl.c.back());
    }
    return cl;
}

}  // namespace

TEST_CASE("NUFFT type 1 and type 2 equal the direct sums within 1e-14 of the sum of |c|", "[unit]") {
    // angles beyond [0, 2π) and negative ones: the sums are periodic in them
    for (auto [nm, mm] : {std::pair{7, 5}, std::pair{20, 31}, std::pair{1, 0}}) {
        INFO("n_max " << nm << ", m_max " << mm);
        const Cloud cl = random_cloud(300, -4.0, 11.0, 7 + static_cast<std::uint64_t>(nm));
        const std::size_t n = cl.x.size();
        detail::Nufft2d nu(nm, mm);
        detail::Nufft2d::Work w;
        nu.prepare(cl.x.data(), cl.y.data(), n, w);
        const std::size_t ny = static_cast<std::size_t>(2 * mm + 1);
        std::vector<cplx> modes(static_cast<std::size_t>(2 * nm + 1) * ny);
        nu.type1(cl.c.data(), w, modes.data());
        double worst = 0;
        for (int a = -nm; a <= nm; ++a)
            for (int b = -mm; b <= mm; ++b) {
                cplx s = 0;
                for (std::size_t j = 0; j < n; ++j) s += cl.c[j] * std::polar(1.0, a * cl.x[j] + b * cl.y[j]);
                const cplx got =
                    modes[static_cast<std::size_t>(a + nm) * ny + static_cast<std::size_t>(b + mm)];
                worst = std::max(worst, std::abs(got - s) / cl.sum_abs);
            }
        CHECK(worst < 1e-14);
        // type 2 with random coefficients
        std::mt19937_64 rng(99);
        std::normal_distribution<double> g(0, 1);
        double sum_a = 0;
        for (auto& m : modes) {
            m = cplx(g(rng), g(rng));
            sum_a += std::abs(m);
        }
        std::vector<cplx> u(n);
        nu.type2(modes.data(), w, u.data());
        worst = 0;
        for (std::size_t j = 0; j < n; ++j) {
            cplx s = 0;
            for (int a = -nm; a <= nm; ++a)
                for (int b = -mm; b <= mm; ++b)
                    s += modes[static_cast<std::size_t>(a + nm) * ny + static_cast<std::size_t>(b + mm)] *
                         std::polar(1.0, -(a * cl.x[j] + b * cl.y[j]));
            worst = std::max(worst, std::abs(u[j] - s) / sum_a);
        }
        CHECK(worst < 1e-14);
    }
}

TEST_CASE(
    "current engine: the NUFFT gives the matrix product's j(k) and adjoint within 1e-14 of the sum of |a|",
    "[unit]") {
    // A window grid (origin not 0, periods unequal) with n_max 30, m_max 24, particles partly
    // outside the rectangle (their phases wrap).
    KVectorSet ks;
    ks.x0 = 1.5, ks.y0 = -2.0, ks.lx = 40, ks.ly = 33;
    ks.n_max = 30, ks.m_max = 24;
    for (int n = 0; n <= ks.n_max; ++n)
        for (int m = -ks.m_max; m <= ks.m_max; ++m) {
            if (n == 0 && m <= 0) continue;
            if (n * n + m * m > 30 * 30) continue;
            ks.n.push_back(n);
            ks.m.push_back(m);
        }
    const Cloud cl = random_cloud(2000, -3.0, 44.0, 5);
    const std::size_t N = cl.x.size(), K = ks.size();
    std::vector<double> ax(N), ay(N);
    double sum_a = 0;
    for (std::size_t i = 0; i < N; ++i) {
        ax[i] = cl.c[i].real();
        ay[i] = cl.c[i].imag();
        sum_a += std::abs(ax[i]) + std::abs(ay[i]);
    }
    const detail::CurrentEngine mat(ks, FourierSums::matrix), nu(ks, FourierSums::nufft);
    REQUIRE_FALSE(mat.uses_nufft());
    REQUIRE(nu.uses_nufft());
    CHECK(detail::CurrentEngine(ks).uses_nufft());  // automatic: this grid is large enough
    detail::CurrentEngine::Work wm, wn;
    mat.phases(cl.x.data(), cl.y.data(), N, wm);
    nu.phases(cl.x.data(), cl.y.data(), N, wn);
    std::vector<cplx> jx(K), jy(K), kx(K), ky(K);
    mat.forward(ax.data(), ay.data(), jx.data(), jy.data(), wm);
    nu.forward(ax.data(), ay.data(), kx.data(), ky.data(), wn);
    double worst = 0;
    for (std::size_t q = 0; q < K; ++q)
        worst = std::max({worst, std::abs(jx[q] - kx[q]) / sum_a, std::abs(jy[q] - ky[q]) / sum_a});
    CHECK(worst < 1e-14);

    std::vector<cplx> fx(N), fy(N), gx(N), gy(N);
    double sum_g = 0;
    for (std::size_t q = 0; q < K; ++q) sum_g += std::abs(jx[q]) + std::abs(jy[q]);
    mat.adjoint(jx.data(), jy.data(), fx.data(), fy.data(), wm);
    nu.adjoint(jx.data(), jy.data(), gx.data(), gy.data(), wn);
    worst = 0;
    for (std::size_t i = 0; i < N; ++i)
        worst = std::max({worst, std::abs(fx[i] - gx[i]) / sum_g, std::abs(fy[i] - gy[i]) / sum_g});
    CHECK(worst < 1e-14);

    // the same inputs give the same bits, whatever Work (thread) computes them
    detail::CurrentEngine::Work w2;
    nu.phases(cl.x.data(), cl.y.data(), N, w2);
    std::vector<cplx> lx(K), ly(K);
    nu.forward(ax.data(), ay.data(), lx.data(), ly.data(), w2);
    CHECK(lx == kx);
    CHECK(ly == ky);
}
