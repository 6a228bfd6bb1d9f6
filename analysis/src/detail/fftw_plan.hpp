// SPDX-License-Identifier: GPL-3.0-or-later
// RAII FFTW plans. Plan creation is not thread-safe in FFTW: it is serialised by one mutex here;
// executing a plan on new arrays (fftw_execute_dft_*) is thread-safe.
#pragma once

#include <fftw3.h>

#include <complex>
#include <memory>
#include <mutex>
#include <vector>

namespace vibra::analysis::detail {

std::mutex& fftw_planner_mutex();

/// Real → complex 1-D plan of length n (n/2+1 outputs), reusable on any equally sized,
/// FFTW-aligned arrays.
class RealFft {
public:
    explicit RealFft(int n);
    ~RealFft();
    RealFft(const RealFft&) = delete;
    RealFft& operator=(const RealFft&) = delete;
    int size() const { return n_; }
    /// in: n doubles, out: n/2+1 complex.
    void forward(double* in, fftw_complex* out) const { fftw_execute_dft_r2c(fwd_, in, out); }
    /// in: n/2+1 complex (destroyed), out: n doubles; unnormalised (× n).
    void backward(fftw_complex* in, double* out) const { fftw_execute_dft_c2r(bwd_, in, out); }

private:
    int n_;
    fftw_plan fwd_ = nullptr, bwd_ = nullptr;
};

/// FFTW-aligned buffer.
template <class T>
struct FftwBuffer {
    explicit FftwBuffer(std::size_t n) : n(n), p(static_cast<T*>(fftw_malloc(sizeof(T) * (n ? n : 1)))) {
        if (!p) throw std::bad_alloc();
    }
    ~FftwBuffer() { fftw_free(p); }
    FftwBuffer(const FftwBuffer&) = delete;
    FftwBuffer& operator=(const FftwBuffer&) = delete;
    std::size_t n;
    T* p;
};

}  // namespace vibra::analysis::detail
