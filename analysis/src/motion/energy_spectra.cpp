// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/analysis/energy_spectra.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <numbers>
#include <string>

#include "detail/collective_stream.hpp"
#include "detail/fftw_plan.hpp"
#include "detail/numeric.hpp"
#include "vibra/core/error.hpp"

namespace vibra::analysis {

namespace {
using detail::kNaN;
using detail::kPi;

std::vector<double> window_1d(std::size_t n, Taper t, double alpha) {
    std::vector<double> w(n, 1.0);
    if (t == Taper::none || n < 2) return w;
    for (std::size_t i = 0; i < n; ++i) {
        // Node centres at (i+½)/n of the extent: the window vanishes at the region edges.
        const double u = (static_cast<double>(i) + 0.5) / static_cast<double>(n);
        if (t == Taper::hann) {
            w[i] = 0.5 * (1 - std::cos(2 * kPi * u));
        } else {
            const double a = alpha;
            if (u < a / 2)
                w[i] = 0.5 * (1 - std::cos(2 * kPi * u / a));
            else if (u > 1 - a / 2)
                w[i] = 0.5 * (1 - std::cos(2 * kPi * (1 - u) / a));
        }
    }
    return w;
}

// Signed frequency index of FFT bin i of an n-point transform.
double freq_index(std::size_t i, std::size_t n) {
    return i <= n / 2 ? static_cast<double>(i) : static_cast<double>(i) - static_cast<double>(n);
}

}  // namespace

Taper taper_from_string(const std::string& s) {
    if (s == "none") return Taper::none;
    if (s == "hann") return Taper::hann;
    if (s == "tukey") return Taper::tukey;
    throw ParameterError("taper: '" + s + "' is not one of none, hann, tukey");
}

Gradient gradient_from_string(const std::string& s) {
    if (s == "spectral") return Gradient::spectral;
    if (s == "fd2") return Gradient::fd2;
    throw ParameterError("gradient: '" + s + "' is not one of spectral, fd2");
}

void SpectrumParams::validate() const {
    if (!(tukey_alpha > 0 && tukey_alpha <= 1))
        throw ParameterError("spectrum tukey_alpha must be in (0, 1], got " + std::to_string(tukey_alpha));
}

struct SpectrumEstimator::Impl {
    std::size_t M;
    detail::FftwBuffer<fftw_complex> in, ax, ay, bx, by;
    fftw_plan fwd = nullptr, bwd = nullptr;
    std::vector<std::int64_t> shell;  // per mode
    std::vector<double> kx, ky;       // per mode
    explicit Impl(std::size_t m) : M(m), in(m), ax(m), ay(m), bx(m), by(m) {}
    ~Impl() {
        std::lock_guard lock(detail::fftw_planner_mutex());
        if (fwd) fftw_destroy_plan(fwd);
        if (bwd) fftw_destroy_plan(bwd);
    }
    // out = FFT(in)/M (forward) or IFFT(in) (backward, unnormalised → caller divides).
    void forward(fftw_complex* src, fftw_complex* dst) const {
        fftw_execute_dft(fwd, src, dst);
        const double s = 1.0 / static_cast<double>(M);
        for (std::size_t k = 0; k < M; ++k) dst[k][0] *= s, dst[k][1] *= s;
    }
    void backward(fftw_complex* src, fftw_complex* dst) const { fftw_execute_dft(bwd, src, dst); }
};

SpectrumEstimator::SpectrumEstimator(const Grid& grid, const SpectrumParams& p) : grid_(grid), p_(p) {
    p.validate();
    if (grid.nx < 2 || grid.ny < 2) throw ParameterError("SpectrumEstimator: grid needs at least 2×2 nodes");
    const std::size_t M = grid.size();
    impl_ = std::make_unique<Impl>(M);
    {
        std::lock_guard lock(detail::fftw_planner_mutex());
        impl_->fwd = fftw_plan_dft_2d(static_cast<int>(grid.ny), static_cast<int>(grid.nx), impl_->in.p,
                                      impl_->ax.p, FFTW_FORWARD, FFTW_ESTIMATE);
        impl_->bwd = fftw_plan_dft_2d(static_cast<int>(grid.ny), static_cast<int>(grid.nx), impl_->in.p,
                                      impl_->ax.p, FFTW_BACKWARD, FFTW_ESTIMATE);
    }
    if (!impl_->fwd || !impl_->bwd) throw Error("SpectrumEstimator: FFTW could not make a plan");
    const auto wx = window_1d(grid.nx, p.taper, p.tukey_alpha),
               wy = window_1d(grid.ny, p.taper, p.tukey_alpha);
    taper_.resize(M);
    for (std::size_t j = 0; j < grid.ny; ++j)
        for (std::size_t i = 0; i < grid.nx; ++i) taper_[j * grid.nx + i] = wx[i] * wy[j];
    dk_ = 2 * kPi / std::max(grid.lx(), grid.ly());
    impl_->shell.resize(M);
    impl_->kx.resize(M);
    impl_->ky.resize(M);
    std::int64_t smax = 0;
    for (std::size_t j = 0; j < grid.ny; ++j)
        for (std::size_t i = 0; i < grid.nx; ++i) {
            const std::size_t k = j * grid.nx + i;
            impl_->kx[k] = 2 * kPi * freq_index(i, grid.nx) / grid.lx();
            impl_->ky[k] = 2 * kPi * freq_index(j, grid.ny) / grid.ly();
            impl_->shell[k] = std::llround(std::hypot(impl_->kx[k], impl_->ky[k]) / dk_);
            smax = std::max(smax, impl_->shell[k]);
        }
    n_shells_ = static_cast<std::size_t>(smax) + 1;
}

SpectrumEstimator::~SpectrumEstimator() = default;

namespace {

void check_grid(const Grid& a, const Grid& b) {
    if (a.nx != b.nx || a.ny != b.ny || std::abs(a.hx - b.hx) > 1e-9 * a.hx ||
        std::abs(a.hy - b.hy) > 1e-9 * a.hy)
        throw ParameterError("SpectrumEstimator: the field's grid differs from the estimator's");
}

// Mean of the usable nodes (0 when none).
std::pair<double, double> valid_mean(const GridField& f) {
    double mx = 0, my = 0;
    std::size_t n = 0;
    for (std::size_t k = 0; k < f.ux.size(); ++k)
        if (f.valid[k]) mx += f.ux[k], my += f.uy[k], ++n;
    if (n) mx /= static_cast<double>(n), my /= static_cast<double>(n);
    return {mx, my};
}

}  // namespace

Spectrum SpectrumEstimator::spectrum(const GridField& f) {
    check_grid(grid_, f.grid);
    auto& I = *impl_;
    const std::size_t M = I.M;
    Spectrum s;
    s.dk = dk_;
    s.k.resize(n_shells_);
    for (std::size_t n = 0; n < n_shells_; ++n) s.k[n] = static_cast<double>(n) * dk_;
    s.e.assign(n_shells_, 0.0);
    s.e_long.assign(n_shells_, 0.0);
    s.e_trans.assign(n_shells_, 0.0);
    s.modes.assign(n_shells_, 0);
    auto [mx, my] = p_.subtract_mean ? valid_mean(f) : std::pair{0.0, 0.0};
    s.mean_flow_energy = 0.5 * (mx * mx + my * my);
    double w2 = 0, e_real = 0;
    for (std::size_t k = 0; k < M; ++k) {
        const double w = f.valid[k] ? taper_[k] : 0.0;
        const double ux = w * (f.ux[k] - mx), uy = w * (f.uy[k] - my);
        w2 += w * w;
        e_real += ux * ux + uy * uy;
        I.in.p[k][0] = ux, I.in.p[k][1] = 0;
        I.bx.p[k][0] = uy, I.bx.p[k][1] = 0;
    }
    for (std::size_t k = 0; k < M; ++k) ++s.modes[static_cast<std::size_t>(I.shell[k])];
    if (w2 <= 0) {
        std::fill(s.e.begin(), s.e.end(), kNaN);
        std::fill(s.e_long.begin(), s.e_long.end(), kNaN);
        std::fill(s.e_trans.begin(), s.e_trans.end(), kNaN);
        s.e_iso = s.e;
        s.energy = kNaN;
        return s;
    }
    w2 /= static_cast<double>(M);
    s.energy = 0.5 * e_real / static_cast<double>(M) / w2;
    I.forward(I.in.p, I.ax.p);
    I.forward(I.bx.p, I.ay.p);
    const double norm = 1.0 / (dk_ * w2);
    for (std::size_t k = 0; k < M; ++k) {
        const auto n = static_cast<std::size_t>(I.shell[k]);
        const double xr = I.ax.p[k][0], xi = I.ax.p[k][1], yr = I.ay.p[k][0], yi = I.ay.p[k][1];
        s.e[n] += 0.5 * (xr * xr + xi * xi + yr * yr + yi * yi) * norm;
        const double kk = std::hypot(I.kx[k], I.ky[k]);
        if (kk == 0) continue;
        const double cx = I.kx[k] / kk, cy = I.ky[k] / kk;
        const double lr = cx * xr + cy * yr, li = cx * xi + cy * yi;    // k̂·û
        const double tr = -cy * xr + cx * yr, ti = -cy * xi + cx * yi;  // ẑ×k̂·û
        s.e_long[n] += 0.5 * (lr * lr + li * li) * norm;
        s.e_trans[n] += 0.5 * (tr * tr + ti * ti) * norm;
    }
    s.e_iso = s.e;
    const double mode_area = (2 * kPi / grid_.lx()) * (2 * kPi / grid_.ly());
    for (std::size_t n = 1; n < n_shells_; ++n)
        s.e_iso[n] = s.modes[n] > 0
                         ? s.e[n] * (2 * kPi * s.k[n] * dk_ / mode_area) / static_cast<double>(s.modes[n])
                         : kNaN;
    return s;
}

namespace {

// Second-order central differences of q along x (dir 0) or y (dir 1) over usable nodes;
// one-sided next to an edge or a masked node; ok[k] = 0 where neither neighbour is usable.
void fd2(const Grid& g, const std::vector<std::uint8_t>& valid, const std::vector<double>& q, int dir,
         std::vector<double>& d, std::vector<std::uint8_t>& ok) {
    const std::size_t M = g.size();
    d.assign(M, 0.0);
    for (std::size_t j = 0; j < g.ny; ++j)
        for (std::size_t i = 0; i < g.nx; ++i) {
            const std::size_t k = j * g.nx + i;
            if (!valid[k]) {
                ok[k] = 0;
                continue;
            }
            const std::size_t n = dir == 0 ? g.nx : g.ny, c = dir == 0 ? i : j;
            const double h = dir == 0 ? g.hx : g.hy;
            auto at = [&](std::size_t cc) { return dir == 0 ? j * g.nx + cc : cc * g.nx + i; };
            std::int64_t lo = -1, hi = -1;
            if (c + 1 < n)
                hi = static_cast<std::int64_t>(at(c + 1));
            else if (g.periodic)
                hi = static_cast<std::int64_t>(at(0));
            if (c > 0)
                lo = static_cast<std::int64_t>(at(c - 1));
            else if (g.periodic)
                lo = static_cast<std::int64_t>(at(n - 1));
            const bool vh = hi >= 0 && valid[static_cast<std::size_t>(hi)],
                       vl = lo >= 0 && valid[static_cast<std::size_t>(lo)];
            if (vh && vl)
                d[k] = (q[static_cast<std::size_t>(hi)] - q[static_cast<std::size_t>(lo)]) / (2 * h);
            else if (vh)
                d[k] = (q[static_cast<std::size_t>(hi)] - q[k]) / h;
            else if (vl)
                d[k] = (q[k] - q[static_cast<std::size_t>(lo)]) / h;
            else
                ok[k] = 0;
        }
}

}  // namespace

Transfer SpectrumEstimator::transfer(const GridField& f) {
    check_grid(grid_, f.grid);
    auto& I = *impl_;
    const std::size_t M = I.M;
    const Grid& g = grid_;
    Transfer t;
    t.dk = dk_;
    t.k.resize(n_shells_);
    for (std::size_t n = 0; n < n_shells_; ++n) t.k[n] = static_cast<double>(n) * dk_;
    t.t.assign(n_shells_, 0.0);
    t.flux.assign(n_shells_, 0.0);
    auto [mx, my] = p_.subtract_mean ? valid_mean(f) : std::pair{0.0, 0.0};
    std::vector<double> ux(M), uy(M);
    for (std::size_t k = 0; k < M; ++k) {
        ux[k] = f.valid[k] ? f.ux[k] - mx : 0.0;
        uy[k] = f.valid[k] ? f.uy[k] - my : 0.0;
    }
    // Gradients.
    std::vector<double> dxux, dyux, dxuy, dyuy;
    std::vector<std::uint8_t> ok(f.valid.begin(), f.valid.end());
    if (p_.gradient == Gradient::fd2) {
        fd2(g, f.valid, ux, 0, dxux, ok);
        fd2(g, f.valid, ux, 1, dyux, ok);
        fd2(g, f.valid, uy, 0, dxuy, ok);
        fd2(g, f.valid, uy, 1, dyuy, ok);
    } else {
        auto deriv = [&](const std::vector<double>& q, int dir, std::vector<double>& out) {
            for (std::size_t k = 0; k < M; ++k) I.in.p[k][0] = q[k], I.in.p[k][1] = 0;
            I.forward(I.in.p, I.ax.p);
            for (std::size_t k = 0; k < M; ++k) {
                const std::size_t i = k % g.nx, j = k / g.nx;
                // i·k, with the Nyquist bin of an even transform zeroed (its derivative is not real).
                const bool nyq =
                    dir == 0 ? (g.nx % 2 == 0 && i == g.nx / 2) : (g.ny % 2 == 0 && j == g.ny / 2);
                const double kk = nyq ? 0.0 : (dir == 0 ? I.kx[k] : I.ky[k]);
                const double re = I.ax.p[k][0], im = I.ax.p[k][1];
                I.bx.p[k][0] = -kk * im, I.bx.p[k][1] = kk * re;
            }
            I.backward(I.bx.p, I.by.p);
            out.resize(M);
            for (std::size_t k = 0; k < M; ++k) out[k] = I.by.p[k][0];
        };
        deriv(ux, 0, dxux);
        deriv(ux, 1, dyux);
        deriv(uy, 0, dxuy);
        deriv(uy, 1, dyuy);
    }
    double w2 = 0;
    for (std::size_t k = 0; k < M; ++k) {
        const double w = f.valid[k] ? taper_[k] : 0.0;
        w2 += w * w;
        const double wf = ok[k] ? w : 0.0;
        const double fx = -(ux[k] * dxux[k] + uy[k] * dyux[k]), fy = -(ux[k] * dxuy[k] + uy[k] * dyuy[k]);
        I.in.p[k][0] = w * ux[k], I.in.p[k][1] = w * uy[k];  // pack U as ux + i·uy
        I.bx.p[k][0] = wf * fx, I.bx.p[k][1] = wf * fy;      // pack F likewise
    }
    if (w2 <= 0) {
        std::fill(t.t.begin(), t.t.end(), kNaN);
        std::fill(t.flux.begin(), t.flux.end(), kNaN);
        return t;
    }
    w2 /= static_cast<double>(M);
    I.forward(I.in.p, I.ax.p);
    I.forward(I.bx.p, I.ay.p);
    // Unpack the two real transforms from each packed one: x̂(k) = (Z(k) + Z*(−k))/2, ŷ(k) = (Z(k) − Z*(−k))/(2i).
    const double norm = 1.0 / (dk_ * w2);
    for (std::size_t j = 0; j < g.ny; ++j)
        for (std::size_t i = 0; i < g.nx; ++i) {
            const std::size_t k = j * g.nx + i;
            const std::size_t km = ((g.ny - j) % g.ny) * g.nx + (g.nx - i) % g.nx;
            auto unpack = [&](const fftw_complex* Z, double& xr, double& xi, double& yr, double& yi) {
                const double ar = Z[k][0], ai = Z[k][1], br = Z[km][0], bi = -Z[km][1];  // b = Z*(−k)
                xr = 0.5 * (ar + br), xi = 0.5 * (ai + bi);
                yr = 0.5 * (ai - bi), yi = -0.5 * (ar - br);
            };
            double uxr, uxi, uyr, uyi, fxr, fxi, fyr, fyi;
            unpack(I.ax.p, uxr, uxi, uyr, uyi);
            unpack(I.ay.p, fxr, fxi, fyr, fyi);
            t.t[static_cast<std::size_t>(I.shell[k])] +=
                (uxr * fxr + uxi * fxi + uyr * fyr + uyi * fyi) * norm;
        }
    double acc = 0;
    for (std::size_t n = n_shells_; n-- > 0;) {
        acc += t.t[n] * dk_;
        t.flux[n] = acc;
    }
    return t;
}

PowerLawFit fit_power_law(std::span<const double> k, std::span<const double> e, double k_min, double k_max) {
    PowerLawFit r;
    double sx = 0, sy = 0, sxx = 0, sxy = 0, syy = 0;
    std::size_t n = 0;
    for (std::size_t i = 0; i < k.size() && i < e.size(); ++i) {
        if (!(k[i] >= k_min && k[i] <= k_max && k[i] > 0 && e[i] > 0) || !std::isfinite(e[i])) continue;
        const double x = std::log(k[i]), y = std::log(e[i]);
        sx += x, sy += y, sxx += x * x, sxy += x * y, syy += y * y;
        ++n;
    }
    r.n_points = n;
    if (n < 2) {
        r.exponent = r.prefactor = r.exponent_error = kNaN;
        return r;
    }
    const double dn = static_cast<double>(n), vx = sxx - sx * sx / dn;
    if (!(vx > 0)) {
        r.exponent = r.prefactor = r.exponent_error = kNaN;
        return r;
    }
    r.exponent = (sxy - sx * sy / dn) / vx;
    const double a = (sy - r.exponent * sx) / dn;
    r.prefactor = std::exp(a);
    const double rss = std::max(0.0, syy - a * sy - r.exponent * sxy);
    r.exponent_error = n > 2 ? std::sqrt(rss / (dn - 2) / vx) : kNaN;
    return r;
}

namespace {

// Separable truncated Gaussian filter of q (σ = ell) along x then y; periodic wrap or truncation
// (zeros outside). Each line is copied into a padded buffer so the inner loop has no index logic.
std::vector<double> gauss_filter(const Grid& g, const std::vector<double>& q, double ell) {
    auto taps = [&](double h) {
        const auto r = static_cast<std::int64_t>(std::ceil(3 * ell / h));
        std::vector<double> k(static_cast<std::size_t>(2 * r + 1));
        for (std::int64_t d = -r; d <= r; ++d) {
            const double u = static_cast<double>(d) * h / ell;
            k[static_cast<std::size_t>(d + r)] = std::exp(-0.5 * u * u);
        }
        return k;
    };
    const auto kx = taps(g.hx), ky = taps(g.hy);
    const std::size_t nx = g.nx, ny = g.ny;
    std::vector<double> t(q.size(), 0.0), out(q.size(), 0.0), buf;
    // One line of n values (stride `step` from `first`) of src, filtered with k into dst.
    auto line = [&](const double* src, double* dst, std::size_t n, std::size_t step,
                    const std::vector<double>& k) {
        const std::size_t r = (k.size() - 1) / 2;
        buf.assign(n + 2 * r, 0.0);
        for (std::size_t i = 0; i < n; ++i) buf[r + i] = src[i * step];
        if (g.periodic)
            for (std::size_t i = 0; i < r; ++i) {
                const auto m = static_cast<std::int64_t>(n);
                buf[i] =
                    src[static_cast<std::size_t>(
                            ((static_cast<std::int64_t>(i) - static_cast<std::int64_t>(r)) % m + m) % m) *
                        step];
                buf[r + n + i] = src[((i) % n) * step];
            }
        for (std::size_t i = 0; i < n; ++i) {
            double s = 0;
            const double* b = buf.data() + i;
            for (std::size_t d = 0; d < k.size(); ++d) s += k[d] * b[d];
            dst[i * step] = s;
        }
    };
    for (std::size_t j = 0; j < ny; ++j) line(q.data() + j * nx, t.data() + j * nx, nx, 1, kx);
    for (std::size_t i = 0; i < nx; ++i) line(t.data() + i, out.data() + i, ny, nx, ky);
    return out;
}

}  // namespace

std::vector<double> fst_flux(const GridField& f, std::span<const double> scales) {
    const Grid& g = f.grid;
    const std::size_t M = g.size();
    std::vector<double> out;
    std::vector<double> m(M), mux(M), muy(M), mxx(M), mxy(M), myy(M);
    for (std::size_t k = 0; k < M; ++k) {
        const double v = f.valid[k] ? 1.0 : 0.0;
        m[k] = v;
        mux[k] = v * f.ux[k], muy[k] = v * f.uy[k];
        mxx[k] = v * f.ux[k] * f.ux[k], mxy[k] = v * f.ux[k] * f.uy[k], myy[k] = v * f.uy[k] * f.uy[k];
    }
    for (double ell : scales) {
        if (!(ell > 0) || !std::isfinite(ell)) throw ParameterError("fst_flux: scales must be > 0");
        const auto gm = gauss_filter(g, m, ell);
        auto filt = [&](const std::vector<double>& q) {
            auto r = gauss_filter(g, q, ell);
            for (std::size_t k = 0; k < M; ++k) r[k] = gm[k] > 1e-12 ? r[k] / gm[k] : 0.0;
            return r;
        };
        const auto fx = filt(mux), fy = filt(muy), fxx = filt(mxx), fxy = filt(mxy), fyy = filt(myy);
        std::vector<std::uint8_t> ok(f.valid.begin(), f.valid.end());
        std::vector<double> dxx, dyx, dxy,
            dyy;  // d_j U_i: dxx = ∂x Ux, dyx = ∂y Ux, dxy = ∂x Uy, dyy = ∂y Uy
        fd2(g, f.valid, fx, 0, dxx, ok);
        fd2(g, f.valid, fx, 1, dyx, ok);
        fd2(g, f.valid, fy, 0, dxy, ok);
        fd2(g, f.valid, fy, 1, dyy, ok);
        double s = 0;
        std::size_t n = 0;
        for (std::size_t j = 0; j < g.ny; ++j)
            for (std::size_t i = 0; i < g.nx; ++i) {
                const std::size_t k = j * g.nx + i;
                if (!ok[k]) continue;
                if (!g.periodic) {
                    const double ex = std::min(g.x(i) - g.x0, g.x0 + g.lx() - g.x(i));
                    const double ey = std::min(g.y(j) - g.y0, g.y0 + g.ly() - g.y(j));
                    if (ex < 2 * ell || ey < 2 * ell) continue;
                }
                const double txx = fxx[k] - fx[k] * fx[k], txy = fxy[k] - fx[k] * fy[k],
                             tyy = fyy[k] - fy[k] * fy[k];
                s += -(txx * dxx[k] + txy * (dyx[k] + dxy[k]) + tyy * dyy[k]);
                ++n;
            }
        out.push_back(n ? s / static_cast<double>(n) : kNaN);
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// The spectra analysis

SpectraResult compute_spectra(const TrajectorySource& src, const SpectraParams& p) {
    constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
    const auto& s = p.field;
    SpectraResult R;
    SpectrumEstimator est(s.grid, p.spectrum);
    const double h = std::max(s.grid.hx, s.grid.hy);
    const double kmin = !std::isnan(p.k_min) ? p.k_min : 4 * est.dk();
    const double kmax =
        !std::isnan(p.k_max) ? p.k_max : std::min(1.0 / s.cg.sigma, 0.5 * std::numbers::pi / h);
    if ((!std::isnan(p.k_min) || !std::isnan(p.k_max)) && !(kmin > 0 && kmax > kmin))
        throw ParameterError("--spectra-kmin/--spectra-kmax: need 0 < kmin < kmax");
    std::vector<double> scales;
    if (!p.fst_scales.empty()) {
        scales = p.fst_scales;
    } else {
        for (double f : {1.0, 2.0, 4.0, 8.0})
            if (f * s.cg.sigma < 0.25 * std::min(s.grid.lx(), s.grid.ly())) scales.push_back(f * s.cg.sigma);
    }
    const std::size_t nl = s.lags.size(), nt = static_cast<std::size_t>(s.n_times), nk = est.n_shells(),
                      ns = scales.size();
    std::vector<double> E(nl * nt * nk, kNaN), flux(nl * nt * nk, kNaN), fst(nl * nt * ns, kNaN);
    std::vector<double> eiso(nl * nk, 0), el(nl * nk, 0), et(nl * nk, 0), tsum(nl * nk, 0),
        energy(nl * nt, kNaN), mfe(nl * nt, kNaN), slope(nl * nt, kNaN);
    std::vector<double> nsum(nl, 0);
    std::vector<double> k_axis;
    auto deconv = [&](std::vector<double>& e, const std::vector<double>& k) {
        if (p.deconvolve)
            for (std::size_t n = 0; n < e.size(); ++n)
                e[n] *= std::exp(k[n] * k[n] * s.cg.sigma * s.cg.sigma);
    };
    // Per (lag, start) pair on the worker threads, each with its own estimator (FFT plans and
    // buffers): the pair's own rows, and its shell spectra into its batch slot; the time sums over
    // the pairs are added in stream order (the same for any thread count).
    struct Slot {
        Spectrum S;
        Transfer Tr;
    };
    const std::size_t batch = 4 * static_cast<std::size_t>(std::max(1, p.threads));
    std::vector<Slot> slots(batch);
    std::vector<std::unique_ptr<SpectrumEstimator>> ests(batch);
    const auto map = [&](std::size_t li, std::int64_t k, Displacements& d, std::size_t slot) {
        const auto F = detail::field_of(s, d);
        auto& e = ests[slot];
        if (!e) e = std::make_unique<SpectrumEstimator>(s.grid, p.spectrum);
        auto& S = slots[slot].S;
        S = e->spectrum(F);
        slots[slot].Tr = e->transfer(F);
        const auto& Tr = slots[slot].Tr;
        deconv(S.e_iso, S.k);  // fits only: e, e_long, e_trans stay raw (Parseval)
        const std::size_t at = li * nt + static_cast<std::size_t>(k);
        std::copy(S.e.begin(), S.e.end(), E.begin() + static_cast<std::ptrdiff_t>(at * nk));
        std::copy(Tr.flux.begin(), Tr.flux.end(), flux.begin() + static_cast<std::ptrdiff_t>(at * nk));
        energy[at] = S.energy;
        mfe[at] = S.mean_flow_energy;
        slope[at] = fit_power_law(S.k, S.e_iso, kmin, kmax).exponent;
        if (ns) {
            const auto fl = fst_flux(F, scales);
            std::copy(fl.begin(), fl.end(), fst.begin() + static_cast<std::ptrdiff_t>(at * ns));
        }
    };
    const auto reduce = [&](std::size_t li, std::int64_t, Displacements&, std::size_t slot) {
        const auto& S = slots[slot].S;
        const auto& Tr = slots[slot].Tr;
        if (k_axis.empty()) k_axis = S.k;
        if (!std::isfinite(S.energy)) return;
        for (std::size_t n = 0; n < nk; ++n) {
            eiso[li * nk + n] += std::isfinite(S.e_iso[n]) ? S.e_iso[n] : 0.0;
            el[li * nk + n] += S.e_long[n];
            et[li * nk + n] += S.e_trans[n];
            tsum[li * nk + n] += Tr.t[n];
        }
        nsum[li] += 1;
    };
    detail::stream_displacements(src, s, map, reduce, p.threads);
    if (k_axis.empty())
        for (std::size_t n = 0; n < nk; ++n) k_axis.push_back(static_cast<double>(n) * est.dk());
    R.dk = est.dk();
    R.k_min = kmin;
    R.k_max = kmax;
    R.fit_band_shells = static_cast<std::int64_t>(
        kmax > kmin ? std::floor(kmax / est.dk()) - std::ceil(kmin / est.dk()) + 1 : 0);
    // Time means and fits per lag.
    std::vector<double> em(nl * nk, kNaN), fm(nl * nk, kNaN), tm(nl * nk, kNaN), elm(nl * nk, kNaN),
        etm(nl * nk, kNaN);
    std::vector<double> sm(nl, kNaN), se(nl, kNaN), pref(nl, kNaN), fstm(nl * ns, kNaN);
    for (std::size_t li = 0; li < nl; ++li) {
        for (std::size_t n = 0; n < nk; ++n) {
            double a = 0, b = 0;
            std::size_t c = 0;
            for (std::size_t k = 0; k < nt; ++k) {
                const double v = E[(li * nt + k) * nk + n];
                if (std::isfinite(v)) a += v, b += flux[(li * nt + k) * nk + n], ++c;
            }
            if (c) em[li * nk + n] = a / static_cast<double>(c), fm[li * nk + n] = b / static_cast<double>(c);
            if (nsum[li] > 0) {
                tm[li * nk + n] = tsum[li * nk + n] / nsum[li];
                elm[li * nk + n] = el[li * nk + n] / nsum[li];
                etm[li * nk + n] = et[li * nk + n] / nsum[li];
            }
        }
        std::vector<double> iso(nk, kNaN);
        if (nsum[li] > 0)
            for (std::size_t n = 0; n < nk; ++n) iso[n] = eiso[li * nk + n] / nsum[li];
        const auto fit = fit_power_law(k_axis, iso, kmin, kmax);
        sm[li] = fit.exponent, se[li] = fit.exponent_error, pref[li] = fit.prefactor;
        for (std::size_t q = 0; q < ns; ++q) {
            double a = 0;
            std::size_t c = 0;
            for (std::size_t k = 0; k < nt; ++k) {
                const double v = fst[(li * nt + k) * ns + q];
                if (std::isfinite(v)) a += v, ++c;
            }
            if (c) fstm[li * ns + q] = a / static_cast<double>(c);
        }
    }
    std::vector<double> isom(nl * nk, kNaN);
    for (std::size_t li = 0; li < nl; ++li)
        if (nsum[li] > 0)
            for (std::size_t n = 0; n < nk; ++n) isom[li * nk + n] = eiso[li * nk + n] / nsum[li];
    // Time-resolved change of E(k): literal "transfer across scales over time", not Π(k).
    std::vector<double> dedt(nl * nt * nk, kNaN);
    const auto times = detail::start_times(src, s);
    for (std::size_t li = 0; li < nl; ++li)
        for (std::size_t k = 1; k < nt; ++k) {
            const double dt = times[k] - times[k - 1];
            if (!(dt > 0)) continue;
            for (std::size_t n = 0; n < nk; ++n)
                dedt[(li * nt + k) * nk + n] =
                    (E[(li * nt + k) * nk + n] - E[(li * nt + k - 1) * nk + n]) / dt;
        }
    R.k = std::move(k_axis);
    R.n_shells = nk;
    R.fst_scales = std::move(scales);
    R.e = std::move(E), R.flux = std::move(flux), R.fst_flux = std::move(fst);
    R.energy = std::move(energy), R.mean_flow_energy = std::move(mfe), R.slope = std::move(slope);
    R.e_mean = std::move(em), R.flux_mean = std::move(fm), R.transfer_mean = std::move(tm);
    R.e_long_mean = std::move(elm), R.e_trans_mean = std::move(etm), R.e_iso_mean = std::move(isom);
    R.slope_mean = std::move(sm), R.slope_mean_error = std::move(se), R.prefactor_mean = std::move(pref);
    R.fst_flux_mean = std::move(fstm);
    R.de_dt = std::move(dedt);
    return R;
}

namespace {
/// "L^a/T^b" from the unit names (powers 1 written bare, 0 omitted).
std::string unit_of(const std::string& L, int lp, const std::string& T, int tp) {
    auto term = [](const std::string& u, int p) { return p == 1 ? u : u + "^" + std::to_string(p); };
    std::string s = lp ? term(L, lp) : "1";
    if (tp) s += "/" + term(T, tp);
    return s;
}
}  // namespace

ResultGroup to_group(const SpectraResult& R, const SpectraParams& p, const TrajectorySource& src) {
    const auto& s = p.field;
    const std::size_t nl = s.lags.size(), nt = static_cast<std::size_t>(s.n_times), nk = R.n_shells,
                      ns = R.fst_scales.size();
    ResultGroup g;
    g.name = "spectra";
    detail::record_field_settings(s, g.attrs);
    g.attrs["taper"] = p.taper_name;
    g.attrs["tukey_alpha"] = p.spectrum.tukey_alpha;
    g.attrs["gradient"] = p.gradient_name;
    g.attrs["fit_k_min"] = R.k_min;
    g.attrs["fit_k_max"] = R.k_max;
    g.attrs["fit_band_shells"] = R.fit_band_shells;
    g.attrs["deconvolve_kernel"] = std::string(p.deconvolve ? "on" : "off");
    g.attrs["fit_rule"] = std::string(
        "least squares of log E_iso vs log k in [fit_k_min, fit_k_max]; E_iso = E compensated for the "
        "lattice mode count per shell");
    g.attrs["dk"] = R.dk;
    g.attrs["mean_removed"] = std::string("mean over usable nodes removed before E(k) and T(k)");
    g.attrs["normalisation"] = std::string(
        "E(k_n) = 1/2 sum_shell |u_hat|^2 / (dk <(w m)^2>), sum_n E dk = 1/2 <|w m U|^2>/<(w m)^2>");
    g.attrs["flux_sign"] = std::string(
        "Pi(k) = sum_{k'>=k} T(k') dk; Pi > 0 forward (to small scales), Pi < 0 inverse (to large scales)");
    detail::common_arrays(g, src, s);
    const auto fu = [&](int lp, int tp) {
        return s.velocity ? unit_of(s.L, lp, s.T, tp) : unit_of(s.L, lp, s.T, 0);
    };
    g.add("k", R.k, "rad/" + s.L);
    detail::add3d(g, "e", R.e, nl, nt, nk, fu(3, 2));
    g.add2d("e_mean", R.e_mean, nl, nk, fu(3, 2));
    g.add2d("e_iso_mean", R.e_iso_mean, nl, nk, fu(3, 2)).attrs["meaning"] = std::string(
        "time-mean E compensated for the mode count per shell (and kernel-deconvolved when "
        "deconvolve_kernel = on): what the fits use");
    g.add2d("e_long_mean", R.e_long_mean, nl, nk, fu(3, 2));
    g.add2d("e_trans_mean", R.e_trans_mean, nl, nk, fu(3, 2));
    g.add2d("energy", R.energy, nl, nt, fu(2, 2)).attrs["meaning"] =
        std::string("sum_n E(k_n) dk (windowed, mean removed)");
    g.add2d("mean_flow_energy", R.mean_flow_energy, nl, nt, fu(2, 2));
    g.add2d("slope", R.slope, nl, nt, "1").attrs["meaning"] =
        std::string("power-law exponent of E(k) in [fit_k_min, fit_k_max]");
    g.add("slope_mean", R.slope_mean, "1").attrs["meaning"] =
        std::string("exponent of the time-averaged E(k) per lag (exponent vs lag)");
    g.add("slope_mean_error", R.slope_mean_error, "1");
    g.add("prefactor_mean", R.prefactor_mean, fu(3, 2));
    g.add2d("transfer_mean", R.transfer_mean, nl, nk, fu(3, 3));
    detail::add3d(g, "flux", R.flux, nl, nt, nk, fu(2, 3));
    g.add2d("flux_mean", R.flux_mean, nl, nk, fu(2, 3));
    g.add("fst_scales", R.fst_scales, s.L);
    detail::add3d(g, "fst_flux", R.fst_flux, nl, nt, ns, fu(2, 3)).attrs["meaning"] =
        std::string("filter-space flux Pi_l = -<tau_ij d_j U_i,l> over interior nodes");
    g.add2d("fst_flux_mean", R.fst_flux_mean, nl, ns, fu(2, 3));
    detail::add3d(g, "de_dt", R.de_dt, nl, nt, nk,
                  s.velocity ? unit_of(s.L, 3, s.T, 3) : unit_of(s.L, 3, s.T, 1))
        .attrs["meaning"] =
        std::string("backward difference of E(k,t) between consecutive start frames; NOT the flux Pi(k)");
    return g;
}

}  // namespace vibra::analysis
