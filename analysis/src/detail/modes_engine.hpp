// SPDX-License-Identifier: GPL-3.0-or-later
// Private machinery of the mode analyses: complex FFTW plans, a tiny parallel_for, frame
// streaming with velocities (columns or central differences), and the Fourier-sum engine
// j(k) = Σ_i a_i e^{ik·r_i} over a (n, m) grid of k-vectors done as one complex matrix product
// (e^{i(nθx + mθy)} = e^{inθx}·e^{imθy}), plus its adjoint f_i = Σ_k g(k) e^{−ik·r_i}.
#pragma once

#include <fftw3.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <functional>
#include <memory>
#include <numbers>
#include <thread>
#include <vector>

#include "detail/fftw_plan.hpp"
#include "detail/nufft.hpp"
#include "detail/parallel.hpp"
#include "vibra/analysis/currents.hpp"
#include "vibra/core/error.hpp"
#include "vibra/core/periodic.hpp"
#include "vibra/core/workers.hpp"
#include "vibra/core/trajectory_source.hpp"

namespace vibra::analysis::detail {

using cplx = std::complex<double>;

/// Complex 1-D FFT plan of length n (sign FFTW_FORWARD = e^{−i}, FFTW_BACKWARD = e^{+i}),
/// out of place, executable on any fftw_malloc'd arrays of that size (thread-safe execution).
class ComplexFft {
public:
    ComplexFft(int n, int sign) : n_(n) {
        FftwBuffer<fftw_complex> a(static_cast<std::size_t>(n)), b(static_cast<std::size_t>(n));
        std::lock_guard lock(fftw_planner_mutex());
        plan_ = fftw_plan_dft_1d(n, a.p, b.p, sign, FFTW_ESTIMATE);
    }
    ~ComplexFft() {
        std::lock_guard lock(fftw_planner_mutex());
        if (plan_) fftw_destroy_plan(plan_);
    }
    ComplexFft(const ComplexFft&) = delete;
    ComplexFft& operator=(const ComplexFft&) = delete;
    int size() const { return n_; }
    void run(fftw_complex* in, fftw_complex* out) const { fftw_execute_dft(plan_, in, out); }

private:
    int n_;
    fftw_plan plan_ = nullptr;
};

/// Smallest 2^a 3^b 5^c ≥ n.
inline int fast_size(std::int64_t n) {
    for (std::int64_t m = std::max<std::int64_t>(n, 1);; ++m) {
        std::int64_t r = m;
        for (int f : {2, 3, 5})
            while (r % f == 0) r /= f;
        if (r == 1) return static_cast<int>(m);
    }
}

/// Sums split over threads are summed in chunks fixed by the data, not by the thread count: an
/// accumulator per chunk, added up in chunk order, gives bit-identical results for any --threads.
inline constexpr int kReduceChunks = 8;

/// Calls fn(begin, end, chunk) for the kReduceChunks chunks of [0, n) (chunk c = [c·n/8, (c+1)·n/8)),
/// chunk c on thread c % threads; fn may touch the accumulator of its chunk only.
inline void parallel_for_chunks(std::size_t n, int threads,
                                const std::function<void(std::size_t, std::size_t, int)>& fn) {
    const int nt = std::clamp(threads, 1, kReduceChunks);
    const auto run = [&](int t) {
        for (int c = t; c < kReduceChunks; c += nt) {
            const std::size_t b = n * static_cast<std::size_t>(c) / kReduceChunks;
            const std::size_t e = n * static_cast<std::size_t>(c + 1) / kReduceChunks;
            if (b < e) fn(b, e, c);
        }
    };
    run_workers(nt, run);
}

inline double hann(std::size_t t, std::size_t n) {
    return 0.5 *
           (1 - std::cos(2 * std::numbers::pi * (static_cast<double>(t) + 0.5) / static_cast<double>(n)));
}

/// Particles of one frame that have a velocity.
struct FrameParticles {
    std::int64_t frame = 0;
    std::vector<std::int64_t> id;
    std::vector<double> x, y, vx, vy;
    std::vector<std::int8_t> species;
};

/// Streams the source in blocks and calls fn(block) with the frames of each block in order.
/// Velocities: the vx/vy columns when present, otherwise central differences of linked
/// positions (one-sided at track ends; minimum image in periodic boxes). Rows without a
/// velocity are left out. Sets `velocity_source`.
inline void stream_frames(const TrajectorySource& src,
                          const std::function<void(std::vector<FrameParticles>&)>& fn,
                          std::string* velocity_source = nullptr,
                          VelocityScheme scheme = VelocityScheme::automatic,
                          std::int64_t block_rows = 1 << 20) {
    const std::int64_t T = src.n_frames();
    const std::int64_t fpb = std::max<std::int64_t>(1, frames_per_block(src, block_rows));
    const Metadata& meta = src.meta();
    const bool periodic = meta.geometry.periodic();
    const double Lx = meta.geometry.lx(), Ly = meta.geometry.ly();
    auto wrap = [&](double d, double L) { return periodic && L > 0 ? minimum_image(d, L) : d; };
    bool first_block = true;
    for (std::int64_t b0 = 0; b0 < T; b0 += fpb) {
        const std::int64_t cnt = std::min(fpb, T - b0);
        const std::int64_t r0 = std::max<std::int64_t>(0, b0 - 1);
        const std::int64_t r1 = std::min(T, b0 + cnt + 1);
        Trajectory tr = src.read_frames(r0, r1 - r0);
        const auto& rows = tr.rows;
        if (scheme == VelocityScheme::given && !rows.has_velocity())
            throw FormatError(
                "velocity scheme 'given' but the trajectory has no vx/vy columns (use auto, central or "
                "forward)");
        const bool cols =
            rows.has_velocity() && (scheme == VelocityScheme::automatic || scheme == VelocityScheme::given);
        const bool fwd = scheme == VelocityScheme::forward;
        if (first_block && velocity_source)
            *velocity_source = cols  ? "columns"
                               : fwd ? "forward differences"
                                     : "central differences (one-sided at track ends)";
        first_block = false;
        std::vector<FrameParticles> out(static_cast<std::size_t>(cnt));
        const double dt = meta.frame_interval;
        for (std::int64_t f = b0; f < b0 + cnt; ++f) {
            FrameParticles& fp = out[static_cast<std::size_t>(f - b0)];
            fp.frame = f;
            const std::int64_t rb = tr.index.begin(f), re = tr.index.end(f);
            auto push = [&](std::int64_t r, double vx, double vy) {
                if (!std::isfinite(vx) || !std::isfinite(vy) || !std::isfinite(rows.x[r]) ||
                    !std::isfinite(rows.y[r]))
                    return;
                fp.id.push_back(rows.particle[r]);
                fp.x.push_back(rows.x[r]);
                fp.y.push_back(rows.y[r]);
                fp.vx.push_back(vx);
                fp.vy.push_back(vy);
                fp.species.push_back(rows.species[r]);
            };
            if (cols) {
                for (std::int64_t r = rb; r < re; ++r) push(r, rows.vx[r], rows.vy[r]);
                continue;
            }
            // Central differences: merge-join on sorted particle ids of f−1 and f+1.
            const bool has_prev = f - 1 >= r0, has_next = f + 1 < r1;
            std::int64_t pp = has_prev ? tr.index.begin(f - 1) : 0, pe = has_prev ? tr.index.end(f - 1) : 0;
            std::int64_t np = has_next ? tr.index.begin(f + 1) : 0, ne = has_next ? tr.index.end(f + 1) : 0;
            for (std::int64_t r = rb; r < re; ++r) {
                const std::int64_t id = rows.particle[r];
                if (id < 0) continue;
                while (pp < pe && rows.particle[pp] < id) ++pp;
                while (np < ne && rows.particle[np] < id) ++np;
                const bool a = pp < pe && rows.particle[pp] == id, c = np < ne && rows.particle[np] == id;
                double vx = NAN, vy = NAN;
                if (fwd) {
                    if (c) {
                        vx = wrap(rows.x[np] - rows.x[r], Lx) / dt;
                        vy = wrap(rows.y[np] - rows.y[r], Ly) / dt;
                    }
                } else if (a && c) {
                    vx = (wrap(rows.x[np] - rows.x[r], Lx) + wrap(rows.x[r] - rows.x[pp], Lx)) / (2 * dt);
                    vy = (wrap(rows.y[np] - rows.y[r], Ly) + wrap(rows.y[r] - rows.y[pp], Ly)) / (2 * dt);
                } else if (c) {
                    vx = wrap(rows.x[np] - rows.x[r], Lx) / dt;
                    vy = wrap(rows.y[np] - rows.y[r], Ly) / dt;
                } else if (a) {
                    vx = wrap(rows.x[r] - rows.x[pp], Lx) / dt;
                    vy = wrap(rows.y[r] - rows.y[pp], Ly) / dt;
                }
                push(r, vx, vy);
            }
        }
        fn(out);
    }
}

/// Fourier sums over the k grid of a KVectorSet: j(k) = Σ_i a_i e^{ik·r_i} and its adjoint.
/// Two methods, picked by FourierSums (automatic: the cheaper for the grid's size): a complex
/// matrix product (e^{i(nθx + mθy)} = e^{inθx}·e^{imθy}; exact to rounding, O(N·n_max·m_max)) or
/// a non-uniform FFT (detail/nufft.hpp; ≈ 1e-15 of Σ|a_i|, O(N + grid log grid)).
class CurrentEngine {
public:
    using Mat = Eigen::Matrix<cplx, Eigen::Dynamic, Eigen::Dynamic>;
    explicit CurrentEngine(const KVectorSet& ks, FourierSums method = FourierSums::automatic) : ks_(ks) {
        const double direct = 2.0 * (ks.n_max + 1) * (2 * ks.m_max + 1);  // complex MACs per particle
        const bool nufft = method == FourierSums::nufft ||
                           (method == FourierSums::automatic && direct > 2 * Nufft2d::spread_points(kSpread));
        if (nufft) nufft_ = std::make_unique<Nufft2d>(ks.n_max, ks.m_max, kSpread);
    }
    bool uses_nufft() const { return nufft_ != nullptr; }

    struct Work {
        Mat ex, ey, a, j, g, h;
        Nufft2d::Work nu;
        std::vector<double> tx, ty;
        std::vector<cplx> c, modes, u;
    };

    /// Phase tables (or the NUFFT's kernel weights) for positions x, y.
    void phases(const double* x, const double* y, std::size_t n, Work& w) const {
        const double tx = 2 * std::numbers::pi / ks_.lx, ty = 2 * std::numbers::pi / ks_.ly;
        if (nufft_) {
            w.tx.resize(n);
            w.ty.resize(n);
            for (std::size_t i = 0; i < n; ++i) {
                w.tx[i] = tx * (x[i] - ks_.x0);
                w.ty[i] = ty * (y[i] - ks_.y0);
            }
            nufft_->prepare(w.tx.data(), w.ty.data(), n, w.nu);
            return;
        }
        const auto N = static_cast<Eigen::Index>(n);
        const int nx = ks_.n_max + 1, ny = 2 * ks_.m_max + 1;
        w.ex.resize(N, nx);
        w.ey.resize(N, ny);
        for (Eigen::Index i = 0; i < N; ++i) {
            const cplx e1 = std::polar(1.0, tx * (x[i] - ks_.x0));
            cplx e = 1.0;
            for (int c = 0; c < nx; ++c) {
                w.ex(i, c) = e;
                e *= e1;
            }
            const cplx f1 = std::polar(1.0, ty * (y[i] - ks_.y0));
            const cplx f1c = std::conj(f1);
            w.ey(i, ks_.m_max) = 1.0;
            cplx fp = 1.0, fm = 1.0;
            for (int c = 1; c <= ks_.m_max; ++c) {
                fp *= f1;
                fm *= f1c;
                w.ey(i, ks_.m_max + c) = fp;
                w.ey(i, ks_.m_max - c) = fm;
            }
        }
    }

    /// jx[k] = Σ_i ax_i e^{ik·r_i}, same for y; phases() must have been called.
    void forward(const double* ax, const double* ay, cplx* jx, cplx* jy, Work& w) const {
        if (nufft_) return forward_nufft(ax, ay, jx, jy, w);
        const Eigen::Index N = w.ex.rows(), nx = w.ex.cols();
        w.a.resize(N, 2 * nx);
        for (Eigen::Index c = 0; c < nx; ++c)
            for (Eigen::Index i = 0; i < N; ++i) {
                w.a(i, c) = w.ex(i, c) * ax[i];
                w.a(i, nx + c) = w.ex(i, c) * ay[i];
            }
        w.j.noalias() = w.a.transpose() * w.ey;  // (2nx) × ny
        for (std::size_t q = 0; q < ks_.size(); ++q) {
            const int r = ks_.n[q], c = ks_.m[q] + ks_.m_max;
            jx[q] = w.j(r, c);
            jy[q] = w.j(nx + r, c);
        }
    }

    /// fx_i = Σ_k gx(k) e^{−ik·r_i}, same for y; phases() must have been called.
    void adjoint(const cplx* gx, const cplx* gy, cplx* fx, cplx* fy, Work& w) const {
        if (nufft_) return adjoint_nufft(gx, gy, fx, fy, w);
        const Eigen::Index N = w.ex.rows(), nx = w.ex.cols(), ny = w.ey.cols();
        w.g.setZero(ny, 2 * nx);
        for (std::size_t q = 0; q < ks_.size(); ++q) {
            const int r = ks_.n[q], c = ks_.m[q] + ks_.m_max;
            w.g(c, r) = gx[q];
            w.g(c, nx + r) = gy[q];
        }
        w.h.noalias() = w.ey.conjugate() * w.g;  // N × 2nx
        for (Eigen::Index i = 0; i < N; ++i) {
            cplx sx = 0, sy = 0;
            for (Eigen::Index c = 0; c < nx; ++c) {
                const cplx e = std::conj(w.ex(i, c));
                sx += e * w.h(i, c);
                sy += e * w.h(i, nx + c);
            }
            fx[i] = sx;
            fy[i] = sy;
        }
    }

private:
    static constexpr int kSpread = 16;  // NUFFT kernel half-width, grid steps (≈ 1e-15 of Σ|a|)

    std::size_t mode(int n, int m) const {
        return static_cast<std::size_t>(n + ks_.n_max) * static_cast<std::size_t>(2 * ks_.m_max + 1) +
               static_cast<std::size_t>(m + ks_.m_max);
    }

    // One transform of c = ax + i·ay gives both: a real, so jx(−k) = jx(k)*, and
    // jx = (F(k) + F(−k)*)/2, jy = (F(k) − F(−k)*)/(2i).
    void forward_nufft(const double* ax, const double* ay, cplx* jx, cplx* jy, Work& w) const {
        const std::size_t n = w.tx.size();
        w.c.resize(n);
        for (std::size_t i = 0; i < n; ++i) w.c[i] = cplx(ax[i], ay[i]);
        w.modes.resize(static_cast<std::size_t>(2 * ks_.n_max + 1) *
                       static_cast<std::size_t>(2 * ks_.m_max + 1));
        nufft_->type1(w.c.data(), w.nu, w.modes.data());
        for (std::size_t q = 0; q < ks_.size(); ++q) {
            const cplx f = w.modes[mode(ks_.n[q], ks_.m[q])],
                       g = std::conj(w.modes[mode(-ks_.n[q], -ks_.m[q])]);
            jx[q] = 0.5 * (f + g);
            jy[q] = cplx(0, -0.5) * (f - g);
        }
    }

    void adjoint_nufft(const cplx* gx, const cplx* gy, cplx* fx, cplx* fy, Work& w) const {
        w.modes.assign(
            static_cast<std::size_t>(2 * ks_.n_max + 1) * static_cast<std::size_t>(2 * ks_.m_max + 1),
            cplx(0));
        for (std::size_t q = 0; q < ks_.size(); ++q) w.modes[mode(ks_.n[q], ks_.m[q])] = gx[q];
        nufft_->type2(w.modes.data(), w.nu, fx);
        for (std::size_t q = 0; q < ks_.size(); ++q) w.modes[mode(ks_.n[q], ks_.m[q])] = gy[q];
        nufft_->type2(w.modes.data(), w.nu, fy);
    }

    const KVectorSet& ks_;
    std::unique_ptr<Nufft2d> nufft_;
};

/// Weighted velocities a = w·(v − v̄) (v̄ the w²-weighted mean when subtract_mean) for one frame.
inline void weighted_velocities(const FrameParticles& fp, const CurrentRegion& reg,
                                const std::vector<double>* mass, bool subtract_mean, std::vector<double>& ax,
                                std::vector<double>& ay, std::vector<double>& w, double& sum_w2) {
    const std::size_t n = fp.x.size();
    w.resize(n);
    ax.resize(n);
    ay.resize(n);
    double sw = 0, mx = 0, my = 0;
    for (std::size_t i = 0; i < n; ++i) {
        double wi = reg.weight(fp.x[i], fp.y[i]);
        double m = 1;
        if (mass && !mass->empty()) {
            const int s = fp.species[i];
            m = (s >= 0 && static_cast<std::size_t>(s) < mass->size()) ? (*mass)[static_cast<std::size_t>(s)]
                                                                       : 1.0;
        }
        w[i] = wi * m;  // factor on v
        sw += wi * wi * m;
        mx += wi * wi * m * fp.vx[i];
        my += wi * wi * m * fp.vy[i];
    }
    if (subtract_mean && sw > 0) {
        mx /= sw;
        my /= sw;
    } else {
        mx = my = 0;
    }
    sum_w2 = sw;
    for (std::size_t i = 0; i < n; ++i) {
        ax[i] = w[i] * (fp.vx[i] - mx);
        ay[i] = w[i] * (fp.vy[i] - my);
    }
}

}  // namespace vibra::analysis::detail
