// SPDX-License-Identifier: GPL-3.0-or-later
// Gaussian-gridding non-uniform FFTs (detail/nufft.hpp).
#include "detail/nufft.hpp"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <numbers>

namespace vibra::analysis::detail {

namespace {

constexpr double kTwoPi = 2 * std::numbers::pi;

/// Smallest n' ≥ n whose only prime factors are 2, 3, 5, 7 (fast FFTW sizes).
int fft_size(int n) {
    for (int m = std::max(n, 1);; ++m) {
        int r = m;
        for (int p : {2, 3, 5, 7})
            while (r % p == 0) r /= p;
        if (r == 1) return m;
    }
}

/// τ that balances the Gaussian's truncation at S steps (times the largest deconvolution factor)
/// against the aliasing of the grid of `grid` points for modes |k| ≤ k_max.
double gaussian_tau(int grid, int k_max, int spread) {
    return std::numbers::pi * spread / (static_cast<double>(grid) * static_cast<double>(grid - k_max));
}

/// Deconvolution factors 1 / (grid · sqrt(τ/π) e^{−k²τ}) for k = −k_max … k_max.
std::vector<double> deconvolution(int grid, int k_max, double tau) {
    std::vector<double> d(static_cast<std::size_t>(2 * k_max + 1));
    for (int k = -k_max; k <= k_max; ++k)
        d[static_cast<std::size_t>(k + k_max)] =
            std::sqrt(std::numbers::pi / tau) * std::exp(static_cast<double>(k) * k * tau) / grid;
    return d;
}

/// exp(−(l·h)²/4τ) for l = −S+1 … S (the Gaussian at the grid steps, fast gridding's third factor).
std::vector<double> step_factors(int grid, int s, double tau) {
    const double h = kTwoPi / grid;
    std::vector<double> e(static_cast<std::size_t>(2 * s));
    for (int k = 0; k < 2 * s; ++k) {
        const double d = (k - s + 1) * h;
        e[static_cast<std::size_t>(k)] = std::exp(-d * d / (4 * tau));
    }
    return e;
}

/// First grid point (unpadded index − S + 1, then + S of padding) and the 2S weights
/// exp(−(l·h − δ)²/4τ) of one angle, by fast Gaussian gridding (Greengard & Lee §3): the
/// product exp(−δ²/4τ) · exp(δh/2τ)^l · exp(−(l·h)²/4τ), two exp() calls per angle.
inline int kernel(double theta, int grid, int s, double tau, const double* steps, double* w) {
    const double h = kTwoPi / grid;
    double u = std::fmod(theta, kTwoPi);
    if (u < 0) u += kTwoPi;
    int p0 = static_cast<int>(u / h);
    if (p0 >= grid) p0 = grid - 1;
    const double delta = u - p0 * h;  // in [0, h)
    const double e1 = std::exp(-delta * delta / (4 * tau)), e2 = std::exp(delta * h / (2 * tau));
    double up = e1, down = e1 / e2;
    for (int k = s - 1; k < 2 * s; ++k, up *= e2) w[k] = up * steps[k];   // l = 0 … S
    for (int k = s - 2; k >= 0; --k, down /= e2) w[k] = down * steps[k];  // l = −1 … −S+1
    return p0 + 1;                                                        // (p0 − S + 1) + S
}

}  // namespace

Nufft2d::Nufft2d(int n_max, int m_max, int spread) : n_max_(n_max), m_max_(m_max), s_(spread) {
    mx_ = fft_size(std::max(2 * (2 * n_max + 1), 2 * spread + 2));
    my_ = fft_size(std::max(2 * (2 * m_max + 1), 2 * spread + 2));
    tx_ = gaussian_tau(mx_, n_max, spread);
    ty_ = gaussian_tau(my_, m_max, spread);
    dx_ = deconvolution(mx_, n_max, tx_);
    dy_ = deconvolution(my_, m_max, ty_);
    ex_ = step_factors(mx_, spread, tx_);
    ey_ = step_factors(my_, spread, ty_);
    FftwBuffer<fftw_complex> a(static_cast<std::size_t>(mx_) * static_cast<std::size_t>(my_));
    std::lock_guard lock(fftw_planner_mutex());
    to_modes_ = fftw_plan_dft_2d(mx_, my_, a.p, a.p, FFTW_BACKWARD, FFTW_ESTIMATE);  // Σ_p g_p e^{+ikx_p}
    to_grid_ = fftw_plan_dft_2d(mx_, my_, a.p, a.p, FFTW_FORWARD, FFTW_ESTIMATE);    // Σ_k b_k e^{−ikx_p}
}

Nufft2d::~Nufft2d() {
    std::lock_guard lock(fftw_planner_mutex());
    fftw_destroy_plan(to_modes_);
    fftw_destroy_plan(to_grid_);
}

void Nufft2d::prepare(const double* theta_x, const double* theta_y, std::size_t n, Work& w) const {
    const std::size_t k = 2 * static_cast<std::size_t>(s_);
    w.ix.resize(n);
    w.iy.resize(n);
    w.wx.resize(n * k);
    w.wy.resize(n * k);
    for (std::size_t j = 0; j < n; ++j) {
        w.ix[j] = kernel(theta_x[j], mx_, s_, tx_, ex_.data(), &w.wx[j * k]);
        w.iy[j] = kernel(theta_y[j], my_, s_, ty_, ey_.data(), &w.wy[j * k]);
    }
    const std::size_t cells = static_cast<std::size_t>(mx_) * static_cast<std::size_t>(my_);
    if (!w.grid || w.grid->n != cells) w.grid = std::make_unique<FftwBuffer<fftw_complex>>(cells);
    const std::size_t padded =
        static_cast<std::size_t>(mx_ + 2 * s_) * static_cast<std::size_t>(my_ + 2 * s_);
    w.pad_re.resize(padded);
    w.pad_im.resize(padded);
}

void Nufft2d::fold(Work& w) const {
    const int py = my_ + 2 * s_;
    fftw_complex* g = w.grid->p;
    std::fill_n(&g[0][0], 2 * static_cast<std::size_t>(mx_) * static_cast<std::size_t>(my_), 0.0);
    for (int a = 0; a < mx_ + 2 * s_; ++a) {
        const int gx = ((a - s_) % mx_ + mx_) % mx_;
        const std::size_t row = static_cast<std::size_t>(a) * static_cast<std::size_t>(py);
        double* out = &g[static_cast<std::size_t>(gx) * static_cast<std::size_t>(my_)][0];
        for (int b = 0; b < py; ++b) {
            const int gy = ((b - s_) % my_ + my_) % my_;
            out[2 * gy] += w.pad_re[row + static_cast<std::size_t>(b)];
            out[2 * gy + 1] += w.pad_im[row + static_cast<std::size_t>(b)];
        }
    }
}

void Nufft2d::unfold(Work& w) const {
    const int py = my_ + 2 * s_;
    const fftw_complex* g = w.grid->p;
    for (int a = 0; a < mx_ + 2 * s_; ++a) {
        const int gx = ((a - s_) % mx_ + mx_) % mx_;
        const std::size_t row = static_cast<std::size_t>(a) * static_cast<std::size_t>(py);
        const double* in = &g[static_cast<std::size_t>(gx) * static_cast<std::size_t>(my_)][0];
        for (int b = 0; b < py; ++b) {
            const int gy = ((b - s_) % my_ + my_) % my_;
            w.pad_re[row + static_cast<std::size_t>(b)] = in[2 * gy];
            w.pad_im[row + static_cast<std::size_t>(b)] = in[2 * gy + 1];
        }
    }
}

void Nufft2d::type1(const cplx* c, Work& w, cplx* out) const {
    const std::size_t n = w.ix.size(), k = 2 * static_cast<std::size_t>(s_),
                      py = static_cast<std::size_t>(my_ + 2 * s_);
    std::fill(w.pad_re.begin(), w.pad_re.end(), 0.0);
    std::fill(w.pad_im.begin(), w.pad_im.end(), 0.0);
    for (std::size_t j = 0; j < n; ++j) {
        const double* wx = &w.wx[j * k];
        const double* __restrict wy = &w.wy[j * k];
        const double cr = c[j].real(), ci = c[j].imag();
        for (std::size_t a = 0; a < k; ++a) {
            const std::size_t at =
                (static_cast<std::size_t>(w.ix[j]) + a) * py + static_cast<std::size_t>(w.iy[j]);
            double* __restrict re = &w.pad_re[at];
            double* __restrict im = &w.pad_im[at];
            const double ar = cr * wx[a], ai = ci * wx[a];
            for (std::size_t b = 0; b < k; ++b) {
                re[b] += ar * wy[b];
                im[b] += ai * wy[b];
            }
        }
    }
    fold(w);
    fftw_execute_dft(to_modes_, w.grid->p, w.grid->p);
    for_each_mode([&](std::size_t mode, std::size_t cell, double factor) {
        const fftw_complex& v = w.grid->p[cell];
        out[mode] = cplx(v[0], v[1]) * factor;
    });
}

void Nufft2d::type2(const cplx* in, Work& w, cplx* u) const {
    const std::size_t n = w.ix.size(), k = 2 * static_cast<std::size_t>(s_),
                      py = static_cast<std::size_t>(my_ + 2 * s_);
    fftw_complex* g = w.grid->p;
    std::fill_n(&g[0][0], 2 * static_cast<std::size_t>(mx_) * static_cast<std::size_t>(my_), 0.0);
    for_each_mode([&](std::size_t mode, std::size_t cell, double factor) {
        const cplx v = in[mode] * factor;
        g[cell][0] = v.real();
        g[cell][1] = v.imag();
    });
    fftw_execute_dft(to_grid_, g, g);
    unfold(w);
    for (std::size_t j = 0; j < n; ++j) {
        const double* wx = &w.wx[j * k];
        const double* wy = &w.wy[j * k];
        double sr = 0, si = 0;
        for (std::size_t a = 0; a < k; ++a) {
            const std::size_t at =
                (static_cast<std::size_t>(w.ix[j]) + a) * py + static_cast<std::size_t>(w.iy[j]);
            const double* re = &w.pad_re[at];
            const double* im = &w.pad_im[at];
            double rr = 0, ri = 0;
            for (std::size_t b = 0; b < k; ++b) {
                rr += re[b] * wy[b];
                ri += im[b] * wy[b];
            }
            sr += rr * wx[a];
            si += ri * wx[a];
        }
        u[j] = cplx(sr, si);
    }
}

}  // namespace vibra::analysis::detail
