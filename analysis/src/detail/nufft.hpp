// SPDX-License-Identifier: GPL-3.0-or-later
// Non-uniform FFTs in 2-D by Gaussian gridding (Greengard & Lee, SIAM Rev. 46, 443 (2004);
// Dutt & Rokhlin 1993): the sums of the current analyses,
//   type 1:  F(n, m) = Σ_j c_j e^{i(n θx_j + m θy_j)},          |n| ≤ n_max, |m| ≤ m_max,
//   type 2:  u_j     = Σ_{n,m} A(n, m) e^{−i(n θx_j + m θy_j)},
// in O(N·(2S)² + Mx·My·log(Mx·My)) instead of the O(N·n_max·m_max) of the direct sums. Each
// particle is spread with a periodic Gaussian exp(−d²/4τ) onto 2S × 2S points of an oversampled
// grid (Mx ≥ 2(2 n_max + 1), My likewise, FFT-friendly sizes); one FFTW transform of the grid,
// then division by the Gaussian's Fourier coefficients sqrt(τ/π)·e^{−k²τ} per axis (type 2:
// the same steps in reverse order). τ balances the truncation of the Gaussian at S grid steps
// against the aliasing of the grid: with S = 16 the error is ≈ 1e-15 of Σ_j |c_j| (measured in
// tests/analysis/test_nufft.cpp against the direct sums). Deterministic: the result depends only on
// the inputs (particles spread in their order; plans FFTW_ESTIMATE on aligned arrays), never on the
// thread that runs it. A Nufft2d is shared by threads; each thread has its own Work.
#pragma once

#include <fftw3.h>

#include <complex>
#include <cstddef>
#include <memory>
#include <vector>

#include "detail/fftw_plan.hpp"

namespace vibra::analysis::detail {

class Nufft2d {
public:
    using cplx = std::complex<double>;
    /// Modes n ∈ [−n_max, n_max], m ∈ [−m_max, m_max]; S grid steps of spreading on each side.
    Nufft2d(int n_max, int m_max, int spread = 16);
    ~Nufft2d();
    Nufft2d(const Nufft2d&) = delete;
    Nufft2d& operator=(const Nufft2d&) = delete;

    /// Per-thread buffers: the particles' kernel weights and the grids.
    struct Work {
        std::vector<int> ix, iy;                         ///< first grid point of each particle (padded index)
        std::vector<double> wx, wy;                      ///< 2S weights per particle and axis
        std::vector<double> pad_re, pad_im;              ///< padded grid (real and imaginary planes)
        std::unique_ptr<FftwBuffer<fftw_complex>> grid;  ///< Mx × My
    };
    /// Kernel weights of particles at angles θx, θy (radians, any real value: taken mod 2π).
    void prepare(const double* theta_x, const double* theta_y, std::size_t n, Work& w) const;
    /// Type 1 of c (n values, prepare() called): out[(n + n_max)(2 m_max + 1) + m + m_max] = F(n, m).
    void type1(const cplx* c, Work& w, cplx* out) const;
    /// Type 2 of A (same layout as type1's out): u[j] for the prepared particles.
    void type2(const cplx* a, Work& w, cplx* u) const;

    int n_max() const { return n_max_; }
    int m_max() const { return m_max_; }
    int modes_y() const { return 2 * m_max_ + 1; }
    /// Work per particle relative to a direct sum over the modes (used to pick the method).
    static double spread_points(int spread) { return 4.0 * spread * spread; }

private:
    /// fn(mode index (n + n_max)(2 m_max + 1) + m + m_max, its grid cell, its deconvolution factor)
    /// for every mode, in mode order.
    template <class Fn>
    void for_each_mode(Fn&& fn) const {
        const auto ny = static_cast<std::size_t>(2 * m_max_ + 1), cols = static_cast<std::size_t>(my_);
        for (int a = -n_max_; a <= n_max_; ++a) {
            const auto gx = static_cast<std::size_t>((a % mx_ + mx_) % mx_);
            const double fx = dx_[static_cast<std::size_t>(a + n_max_)];
            for (int b = -m_max_; b <= m_max_; ++b) {
                const auto gy = static_cast<std::size_t>((b % my_ + my_) % my_);
                fn(static_cast<std::size_t>(a + n_max_) * ny + static_cast<std::size_t>(b + m_max_),
                   gx * cols + gy, fx * dy_[static_cast<std::size_t>(b + m_max_)]);
            }
        }
    }
    void fold(Work& w) const;    ///< padded grid → periodic grid
    void unfold(Work& w) const;  ///< periodic grid → padded grid (wrapped copies)
    int n_max_, m_max_, s_;
    int mx_, my_;                  ///< grid sizes
    double tx_, ty_;               ///< τ per axis
    std::vector<double> dx_, dy_;  ///< deconvolution factors per mode index (n + n_max), (m + m_max)
    std::vector<double> ex_, ey_;  ///< the Gaussian at the 2S grid steps of the kernel
    fftw_plan to_modes_ = nullptr, to_grid_ = nullptr;
};

}  // namespace vibra::analysis::detail
