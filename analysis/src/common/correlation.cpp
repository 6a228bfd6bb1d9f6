// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/analysis/correlation.hpp"

#include <stdexcept>

#include "detail/fftw_plan.hpp"

namespace vibra::analysis {

namespace detail {

std::mutex& fftw_planner_mutex() {
    static std::mutex m;
    return m;
}

RealFft::RealFft(int n) : n_(n) {
    if (n < 1) throw std::invalid_argument("RealFft: length must be >= 1");
    FftwBuffer<double> in(static_cast<std::size_t>(n));
    FftwBuffer<fftw_complex> out(static_cast<std::size_t>(n / 2 + 1));
    std::lock_guard lock(fftw_planner_mutex());
    fwd_ = fftw_plan_dft_r2c_1d(n, in.p, out.p, FFTW_ESTIMATE);
    bwd_ = fftw_plan_dft_c2r_1d(n, out.p, in.p, FFTW_ESTIMATE);
}

RealFft::~RealFft() {
    std::lock_guard lock(fftw_planner_mutex());
    if (fwd_) fftw_destroy_plan(fwd_);
    if (bwd_) fftw_destroy_plan(bwd_);
}

}  // namespace detail

namespace {
int padded_length(std::size_t T) {
    // 2T rounded up to a 2^a·3^b·5^c size FFTW handles fast.
    std::size_t n = 2 * T;
    auto smooth = [](std::size_t m) {
        for (std::size_t p : {2u, 3u, 5u})
            while (m % p == 0) m /= p;
        return m == 1;
    };
    while (!smooth(n)) ++n;
    return static_cast<int>(n);
}
}  // namespace

std::vector<double> crosscorrelation_sum(std::span<const double> a, std::span<const double> b) {
    if (a.size() != b.size()) throw std::invalid_argument("crosscorrelation_sum: a and b differ in length");
    const std::size_t T = a.size();
    if (T == 0) return {};
    const int n = padded_length(T);
    detail::RealFft fft(n);
    detail::FftwBuffer<double> xa(static_cast<std::size_t>(n)), xb(static_cast<std::size_t>(n));
    detail::FftwBuffer<fftw_complex> fa(static_cast<std::size_t>(n / 2 + 1)),
        fb(static_cast<std::size_t>(n / 2 + 1));
    for (int i = 0; i < n; ++i) {
        xa.p[i] = i < static_cast<int>(T) ? a[static_cast<std::size_t>(i)] : 0.0;
        xb.p[i] = i < static_cast<int>(T) ? b[static_cast<std::size_t>(i)] : 0.0;
    }
    fft.forward(xa.p, fa.p);
    fft.forward(xb.p, fb.p);
    // conj(A)·B ↔ Σ_t a(t) b(t+m)
    for (int k = 0; k < n / 2 + 1; ++k) {
        const double re = fa.p[k][0] * fb.p[k][0] + fa.p[k][1] * fb.p[k][1];
        const double im = fa.p[k][0] * fb.p[k][1] - fa.p[k][1] * fb.p[k][0];
        fa.p[k][0] = re;
        fa.p[k][1] = im;
    }
    fft.backward(fa.p, xa.p);
    std::vector<double> out(T);
    for (std::size_t m = 0; m < T; ++m) out[m] = xa.p[m] / n;
    return out;
}

std::vector<double> autocorrelation_sum(std::span<const double> a) { return crosscorrelation_sum(a, a); }

}  // namespace vibra::analysis
