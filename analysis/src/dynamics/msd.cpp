// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/analysis/msd.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "detail/fftw_plan.hpp"
#include "detail/dynamics_common.hpp"
#include "detail/parallel.hpp"
#include "detail/numeric.hpp"
#include "vibra/core/error.hpp"

namespace vibra::analysis {

using detail::add_lag_axes;
using detail::add_stream_attrs;
using detail::info_count;
using detail::mean_frame_interval;
using detail::resolve_max_lag;
using detail::SpeciesSet;
using detail::stream_params;

namespace {
using detail::kNaN;

std::size_t smooth_length(std::size_t n) {
    auto smooth = [](std::size_t m) {
        for (std::size_t q : {2u, 3u, 5u})
            while (m % q == 0) m /= q;
        return m == 1;
    };
    if (n < 2) n = 2;
    while (!smooth(n)) ++n;
    return n;
}
}  // namespace

// ---------------------------------------------------------------- FftCorrelator
struct FftCorrelator::Impl {
    std::size_t n = 0, length = 0, max_lag = 0, capacity = 0;
    std::map<std::size_t, std::unique_ptr<detail::RealFft>> plans;
    std::unique_ptr<detail::FftwBuffer<double>> real;
    std::vector<std::unique_ptr<detail::FftwBuffer<fftw_complex>>> slots;
    std::unique_ptr<detail::FftwBuffer<fftw_complex>> acc;
    detail::RealFft* plan = nullptr;
};

FftCorrelator::FftCorrelator() : impl_(std::make_unique<Impl>()) {}
FftCorrelator::~FftCorrelator() = default;
std::size_t FftCorrelator::fft_length() const { return impl_->n; }

void FftCorrelator::prepare(std::size_t length, std::size_t max_lag, std::size_t slots) {
    Impl& m = *impl_;
    m.length = length;
    m.max_lag = std::min(max_lag, length > 0 ? length - 1 : 0);
    m.n = smooth_length(length + m.max_lag);
    auto it = m.plans.find(m.n);
    if (it == m.plans.end()) {
        if (m.plans.size() >= 64) m.plans.clear();  // bound the cache (experiments: many track lengths)
        it = m.plans.emplace(m.n, std::make_unique<detail::RealFft>(static_cast<int>(m.n))).first;
    }
    m.plan = it->second.get();
    const std::size_t nc = m.n / 2 + 1;
    if (m.capacity < m.n) {
        m.capacity = std::max(m.n, m.capacity * 2);
        m.real = std::make_unique<detail::FftwBuffer<double>>(m.capacity);
        m.acc = std::make_unique<detail::FftwBuffer<fftw_complex>>(m.capacity / 2 + 1);
        m.slots.clear();
    }
    while (m.slots.size() < slots)
        m.slots.push_back(std::make_unique<detail::FftwBuffer<fftw_complex>>(m.capacity / 2 + 1));
    for (std::size_t k = 0; k < nc; ++k) m.acc->p[k][0] = m.acc->p[k][1] = 0.0;
}

void FftCorrelator::forward(std::span<const double> series, std::size_t slot) {
    Impl& m = *impl_;
    if (series.size() > m.length)
        throw std::invalid_argument("FftCorrelator::forward: series longer than prepared");
    std::copy(series.begin(), series.end(), m.real->p);
    std::fill(m.real->p + series.size(), m.real->p + m.n, 0.0);
    m.plan->forward(m.real->p, m.slots.at(slot)->p);
}

void FftCorrelator::add_cross(std::size_t a, std::size_t b, double coef) {
    Impl& m = *impl_;
    const fftw_complex* A = m.slots.at(a)->p;
    const fftw_complex* B = m.slots.at(b)->p;
    fftw_complex* acc = m.acc->p;
    const std::size_t nc = m.n / 2 + 1;
    for (std::size_t k = 0; k < nc; ++k) {
        acc[k][0] += coef * (A[k][0] * B[k][0] + A[k][1] * B[k][1]);
        acc[k][1] += coef * (A[k][0] * B[k][1] - A[k][1] * B[k][0]);
    }
}

void FftCorrelator::add_power(std::size_t a, std::size_t b, double coef) {
    Impl& m = *impl_;
    const fftw_complex* A = m.slots.at(a)->p;
    const fftw_complex* B = m.slots.at(b)->p;
    fftw_complex* acc = m.acc->p;
    const std::size_t nc = m.n / 2 + 1;
    for (std::size_t k = 0; k < nc; ++k) {
        const double r = acc[k][0] + coef * (A[k][0] * A[k][0] + A[k][1] * A[k][1]);
        acc[k][0] = r + coef * (B[k][0] * B[k][0] + B[k][1] * B[k][1]);
    }
}

void FftCorrelator::inverse(std::span<double> out) {
    Impl& m = *impl_;
    m.plan->backward(m.acc->p, m.real->p);
    const std::size_t nl = std::min(out.size(), m.max_lag + 1);
    for (std::size_t k = 0; k < nl; ++k) out[k] = m.real->p[k] / static_cast<double>(m.n);
    for (std::size_t k = 0; k < m.n / 2 + 1; ++k) m.acc->p[k][0] = m.acc->p[k][1] = 0.0;
}

// ---------------------------------------------------------------- MSD sums
void MsdSums::resize(std::size_t n) {
    pairs.assign(n, 0.0);
    s2.assign(n, 0.0);
    s4.assign(n, 0.0);
}

void MsdSums::add(const MsdSums& o) {
    for (std::size_t k = 0; k < pairs.size() && k < o.pairs.size(); ++k) {
        pairs[k] += o.pairs[k];
        s2[k] += o.s2[k];
        s4[k] += o.s4[k];
    }
}

namespace {
/// Per-thread scratch of accumulate_msd (no allocation per track once warm).
struct MsdScratch {
    std::vector<double> xs, ys, ms, w, buf, out, pre, suf;
    void size(std::size_t L, std::size_t nl) {
        for (auto* v : {&xs, &ys, &ms, &w, &buf, &pre, &suf})
            if (v->size() < L + 1) v->resize(L + 1);
        if (out.size() < nl) out.resize(nl);
    }
};

/// Pair counts (all lags) and Σ|Δr|², Σ|Δr|⁴ for lags kd+1 … ml of one track (series in `sc`,
/// length L, relative to the track mean, 0 in gaps) by FFT.
void fft_lags(MsdScratch& sc, std::size_t L, std::size_t ml, std::size_t kd, bool gaps, MsdSums& sums,
              FftCorrelator& corr) {
    const double *xs = sc.xs.data(), *ys = sc.ys.data(), *ms = sc.ms.data(), *w = sc.w.data();
    double* buf = sc.buf.data();
    enum Slot : std::size_t { kX, kY, kW, kWX, kWY, kA, kB, kM, kW2, kSlots };
    const std::size_t n_slots = gaps ? kSlots : kM;
    corr.prepare(L, ml, n_slots);
    auto put = [&](Slot s, auto f) {
        for (std::size_t t = 0; t < L; ++t) buf[t] = f(t);
        corr.forward(std::span<const double>(buf, L), s);
    };
    corr.forward(std::span<const double>(xs, L), kX);
    corr.forward(std::span<const double>(ys, L), kY);
    corr.forward(std::span<const double>(w, L), kW);
    put(kWX, [&](std::size_t t) { return w[t] * xs[t]; });
    put(kWY, [&](std::size_t t) { return w[t] * ys[t]; });
    put(kA, [&](std::size_t t) { return xs[t] * xs[t] - ys[t] * ys[t]; });
    put(kB, [&](std::size_t t) { return 2.0 * xs[t] * ys[t]; });
    std::span<double> out(sc.out.data(), ml + 1);
    if (gaps) {
        corr.forward(std::span<const double>(ms, L), kM);
        put(kW2, [&](std::size_t t) { return w[t] * w[t]; });
        corr.add_cross(kM, kM, 1.0);
        corr.inverse(out);
        for (std::size_t k = 0; k <= ml; ++k) sums.pairs[k] += std::round(out[k]);
    } else {
        for (std::size_t k = 0; k <= ml; ++k) sums.pairs[k] += static_cast<double>(L - k);
    }
    // Σ_{t ≤ L−1−τ} (f(t+τ) + f(t)) for the terms against the mask of a track without gaps
    auto add_ends = [&](const double* f, std::span<double> o) {
        double* pre = sc.pre.data();  // pre[j] = Σ_{t<j} f, suf[j] = Σ_{t≥j} f
        double* suf = sc.suf.data();
        pre[0] = 0;
        for (std::size_t t = 0; t < L; ++t) pre[t + 1] = pre[t] + f[t];
        suf[L] = 0;
        for (std::size_t t = L; t-- > 0;) suf[t] = suf[t + 1] + f[t];
        for (std::size_t k = kd + 1; k <= ml; ++k) o[k] += suf[k] + pre[L - k];
    };
    // Σ Δr²
    corr.add_cross(kX, kX, -2.0);
    corr.add_cross(kY, kY, -2.0);
    if (gaps) {
        corr.add_cross(kM, kW, 1.0);
        corr.add_cross(kW, kM, 1.0);
    }
    corr.inverse(out);
    if (!gaps) add_ends(w, out);
    for (std::size_t k = kd + 1; k <= ml; ++k) sums.s2[k] += out[k];
    // Σ Δr⁴
    corr.add_cross(kW, kW, 4.0);
    corr.add_cross(kX, kWX, -4.0);
    corr.add_cross(kWX, kX, -4.0);
    corr.add_cross(kY, kWY, -4.0);
    corr.add_cross(kWY, kY, -4.0);
    corr.add_cross(kA, kA, 2.0);
    corr.add_cross(kB, kB, 2.0);
    if (gaps) {
        corr.add_cross(kM, kW2, 1.0);
        corr.add_cross(kW2, kM, 1.0);
    }
    corr.inverse(out);
    if (!gaps) {
        for (std::size_t t = 0; t < L; ++t) buf[t] = w[t] * w[t];
        add_ends(buf, out);
    }
    for (std::size_t k = kd + 1; k <= ml; ++k) sums.s4[k] += out[k];
}
}  // namespace

void accumulate_msd(std::span<const double> x, std::span<const double> y, std::size_t max_lag, MsdSums& sums,
                    FftCorrelator& corr) {
    if (x.empty() || y.size() != x.size() || sums.pairs.empty()) return;
    // leading and trailing gaps carry no pair: the series is trimmed to [t0, t1)
    auto ok = [&](std::size_t t) { return !std::isnan(x[t]) && !std::isnan(y[t]); };
    std::size_t t0 = 0, t1 = x.size();
    while (t0 < t1 && !ok(t0)) ++t0;
    while (t1 > t0 && !ok(t1 - 1)) --t1;
    if (t0 == t1) return;
    const std::size_t L = t1 - t0;
    double mx = 0, my = 0;
    std::size_t nv = 0;
    for (std::size_t t = t0; t < t1; ++t)
        if (ok(t)) {
            mx += x[t];
            my += y[t];
            ++nv;
        }
    mx /= static_cast<double>(nv);
    my /= static_cast<double>(nv);
    const bool gaps = nv < L;
    const std::size_t ml = std::min({max_lag, L - 1, sums.pairs.size() - 1});
    thread_local MsdScratch sc;
    sc.size(L, ml + 1);
    double *xs = sc.xs.data(), *ys = sc.ys.data(), *ms = sc.ms.data(), *w = sc.w.data();
    for (std::size_t t = 0; t < L; ++t) {
        const bool v = ok(t0 + t);
        ms[t] = v ? 1.0 : 0.0;
        xs[t] = v ? x[t0 + t] - mx : 0.0;
        ys[t] = v ? y[t0 + t] - my : 0.0;
        w[t] = xs[t] * xs[t] + ys[t] * ys[t];
    }
    // With w = x² + y², a = x² − y², b = 2xy (u = x + iy: a + ib = u²), for a pair r = r(t), r' = r(t+τ):
    //   |Δr|² = w' + w − 2(x'x + y'y)
    //   |Δr|⁴ = w'² + w² + 4w'w − 4(w'x')x − 4(w'y')y − 4x'(wx) − 4y'(wy) + 2(a'a + b'b)
    // (4(r'·r)² = 2w'w + 2Re(u'²ū²)), so every pair sum is a sum of correlations of 7 series
    // (x, y, w, wx, wy, a, b) plus the ones against the mask: by FFT when the track has gaps, as
    // running sums when it has none (then pairs(τ) = L − τ).
    // Short lags (≤ kDirectLags) are summed directly below: there |Δr| is smallest relative to the
    // track extent, so the FFT's cancellation error (∝ extent²·ε for Σ Δr², extent⁴·ε for Σ Δr⁴)
    // matters most; O(kDirectLags·L), negligible. Without longer lags no transform is needed.
    constexpr std::size_t kDirectLags = 16;
    const std::size_t kd = std::min(ml, kDirectLags);
    if (ml > kd)
        fft_lags(sc, L, ml, kd, gaps, sums, corr);
    else
        for (std::size_t k = 0; k <= ml; ++k) {
            double n = 0;
            for (std::size_t t = 0; t + k < L; ++t) n += ms[t] * ms[t + k];
            sums.pairs[k] += n;
        }
    for (std::size_t k = 1; k <= kd; ++k) {
        double a2 = 0, a4 = 0;
        for (std::size_t t = 0; t + k < L; ++t) {
            if (ms[t] == 0 || ms[t + k] == 0) continue;
            const double ddx = xs[t + k] - xs[t], ddy = ys[t + k] - ys[t];
            const double d2 = ddx * ddx + ddy * ddy;
            a2 += d2;
            a4 += d2 * d2;
        }
        sums.s2[k] += a2;
        sums.s4[k] += a4;
    }
}

void accumulate_msd_direct(std::span<const double> x, std::span<const double> y, std::size_t max_lag,
                           MsdSums& sums) {
    const std::size_t L = x.size();
    if (L == 0 || sums.pairs.empty()) return;
    const std::size_t ml = std::min({max_lag, L - 1, sums.pairs.size() - 1});
    for (std::size_t k = 0; k <= ml; ++k)
        for (std::size_t t = 0; t + k < L; ++t) {
            const double ddx = x[t + k] - x[t], ddy = y[t + k] - y[t];
            if (std::isnan(ddx) || std::isnan(ddy)) continue;
            const double d2 = ddx * ddx + ddy * ddy;
            sums.pairs[k] += 1;
            sums.s2[k] += d2;
            sums.s4[k] += d2 * d2;
        }
}

std::vector<double> msd_from_sums(const MsdSums& s, double min_pairs) {
    std::vector<double> out(s.pairs.size(), kNaN);
    for (std::size_t k = 0; k < out.size(); ++k)
        if (s.pairs[k] >= std::max(1.0, min_pairs)) out[k] = s.s2[k] / s.pairs[k];
    return out;
}

std::vector<double> alpha2_from_sums(const MsdSums& s, double min_pairs) {
    std::vector<double> out(s.pairs.size(), kNaN);
    for (std::size_t k = 1; k < out.size(); ++k)
        if (s.pairs[k] >= std::max(1.0, min_pairs) && s.s2[k] > 0) {
            const double m2 = s.s2[k] / s.pairs[k], m4 = s.s4[k] / s.pairs[k];
            out[k] = m4 / (2.0 * m2 * m2) - 1.0;
        }
    return out;
}

std::pair<double, double> localisation_noise(std::span<const double> msd, std::int64_t n_fit) {
    // least squares c + aτ + bτ² on lags 1 … n_fit (needs ≥ 3 finite points, else linear / NaN)
    std::vector<double> tau, val;
    for (std::int64_t k = 1; k <= n_fit && static_cast<std::size_t>(k) < msd.size(); ++k)
        if (std::isfinite(msd[static_cast<std::size_t>(k)])) {
            tau.push_back(static_cast<double>(k));
            val.push_back(msd[static_cast<std::size_t>(k)]);
        }
    const std::size_t n = tau.size();
    if (n < 2) return {kNaN, kNaN};
    const int deg = n >= 3 ? 2 : 1;
    // normal equations (≤ 3×3), solved by Gaussian elimination
    double A[3][4] = {};
    for (std::size_t i = 0; i < n; ++i) {
        double phi[3] = {1.0, tau[i], tau[i] * tau[i]};
        for (int r = 0; r <= deg; ++r) {
            for (int c = 0; c <= deg; ++c) A[r][c] += phi[r] * phi[c];
            A[r][3] += phi[r] * val[i];
        }
    }
    const int m = deg + 1;
    for (int c = 0; c < m; ++c) {
        int piv = c;
        for (int r = c + 1; r < m; ++r)
            if (std::abs(A[r][c]) > std::abs(A[piv][c])) piv = r;
        for (int k = 0; k < 4; ++k) std::swap(A[c][k], A[piv][k]);
        for (int r = 0; r < m; ++r) {
            if (r == c || A[c][c] == 0) continue;
            const double f = A[r][c] / A[c][c];
            for (int k = c; k < 4; ++k) A[r][k] -= f * A[c][k];
        }
    }
    const double c0 = A[0][3] / A[0][0];
    return {c0, std::sqrt(std::max(c0, 0.0) / 4.0)};
}

/// D from the long-time MSD: a least-squares line MSD = 4 D t + b over the lags [max_lag/4,
/// max_lag] that have data; the error is the slope's standard error from the residuals (lags are
/// correlated, so it is a lower bound). {NaN, NaN} with fewer than 3 usable lags.
namespace {
std::pair<double, double> diffusion_from_msd(const std::vector<double>& msd, double dt) {
    const std::size_t ml = msd.size() - 1;
    double n = 0, st = 0, sy = 0, stt = 0, sty = 0;
    std::vector<std::pair<double, double>> pts;
    for (std::size_t k = std::max<std::size_t>(1, ml / 4); k <= ml; ++k)
        if (std::isfinite(msd[k])) pts.emplace_back(static_cast<double>(k) * dt, msd[k]);
    if (pts.size() < 3)
        return {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN()};
    for (const auto& [t, y] : pts) n += 1, st += t, sy += y, stt += t * t, sty += t * y;
    const double den = n * stt - st * st;
    const double slope = (n * sty - st * sy) / den, icpt = (sy - slope * st) / n;
    double rss = 0;
    for (const auto& [t, y] : pts) rss += (y - icpt - slope * t) * (y - icpt - slope * t);
    const double se = std::sqrt(rss / (n - 2) * n / den);
    return {slope / 4.0, se / 4.0};
}
}  // namespace

void MsdParams::validate() const {
    if (max_lag < -1)
        throw ParameterError("msd max_lag must be >= 0 (or -1 = auto), got " + std::to_string(max_lag));
    if (drift_window < 1)
        throw ParameterError("msd drift_window must be >= 1, got " + std::to_string(drift_window));
    for (auto l : vanhove_lags)
        if (l < 1) throw ParameterError("msd vanhove_lags must be >= 1 frame, got " + std::to_string(l));
    if (vanhove_bins < 2)
        throw ParameterError("msd vanhove_bins must be >= 2, got " + std::to_string(vanhove_bins));
    if (!(vanhove_range > 0))
        throw ParameterError("msd vanhove_range must be > 0, got " + std::to_string(vanhove_range));
    if (sigma_fit_lags < 2)
        throw ParameterError("msd sigma_fit_lags must be >= 2, got " + std::to_string(sigma_fit_lags));
    if (max_cells < 1) throw ParameterError("msd max_cells must be >= 1, got " + std::to_string(max_cells));
}

MsdResult compute_msd(const TrajectorySource& src, const MsdParams& p) {
    p.validate();
    const Metadata& meta = src.meta();
    const std::int64_t T = src.n_frames();
    const std::size_t ml = resolve_max_lag(p.max_lag, T);
    TrackStreamParams tp = stream_params(p, false);
    const auto own_cache = detail::ensure_cache(src, tp);  // one copy for both passes
    SpeciesSet<MsdSums> sums;
    for (auto* s : sums.all()) s->resize(ml + 1);
    // Each track's sums are computed in parallel (one correlator per thread), then added in track
    // order: the same additions as a serial loop, so the result is identical for any --threads.
    const int nt = std::max(1, p.threads);
    std::vector<FftCorrelator> corr(static_cast<std::size_t>(nt));
    constexpr std::size_t kGroup = 64;
    std::vector<MsdSums> ones;
    MsdResult r;
    r.info = stream_track_blocks(src, tp, [&](std::vector<Track>& block) {
        // groups of tracks: memory of a group's sums, not of the block's
        for (std::size_t g0 = 0; g0 < block.size(); g0 += kGroup) {
            const std::size_t gn = std::min(kGroup, block.size() - g0);
            ones.resize(gn);
            detail::parallel_for_each(gn, nt, [&](std::size_t j, int t) {
                const Track& tk = block[g0 + j];
                // lags beyond the track's length get nothing: sized to what it can fill
                ones[j].resize(std::min(ml + 1, std::max<std::size_t>(tk.size(), 1)));
                accumulate_msd(tk.x, tk.y, ml, ones[j], corr[static_cast<std::size_t>(t)]);
            });
            for (std::size_t j = 0; j < gn; ++j) {
                sums.total.add(ones[j]);
                if (auto* s = sums.of(block[g0 + j].species)) s->add(ones[j]);
            }
        }
    });
    r.max_lag = ml;
    r.dt = mean_frame_interval(r.info, meta);
    const auto msd_total = msd_from_sums(sums.total, p.min_pairs);
    r.total = std::move(sums.total), r.small = std::move(sums.small), r.large = std::move(sums.large);

    // ---- van Hove (second pass): G_s(Δx, τ) of pooled x and y displacement components
    std::vector<std::int64_t> lags;
    for (auto l : p.vanhove_lags)
        if (static_cast<std::size_t>(l) <= ml && std::isfinite(msd_total[static_cast<std::size_t>(l)]) &&
            msd_total[static_cast<std::size_t>(l)] > 0)
            lags.push_back(l);
    if (lags.empty()) return r;
    const std::size_t nb = static_cast<std::size_t>(p.vanhove_bins), nl = lags.size();
    std::vector<double> range(nl);
    for (std::size_t j = 0; j < nl; ++j)
        range[j] = p.vanhove_range * std::sqrt(msd_total[static_cast<std::size_t>(lags[j])] / 2.0);
    // counts (integers in doubles: exact in any order), one set per thread, added at the end
    const int nth = std::max(1, p.threads);
    std::vector<SpeciesSet<std::vector<double>>> hist_t(static_cast<std::size_t>(nth)), ns_t(hist_t.size());
    for (std::size_t t = 0; t < hist_t.size(); ++t) {
        for (auto* h : hist_t[t].all()) h->assign(nl * nb, 0.0);
        for (auto* h : ns_t[t].all()) h->assign(nl, 0.0);
    }
    TrackStreamParams tp2 = tp;
    tp2.progress = p.progress;
    stream_track_blocks(src, tp2, [&](std::vector<Track>& block) {
        detail::parallel_for_each(block.size(), nth, [&](std::size_t i, int th) {
            const Track& tk = block[i];
            auto& hist = hist_t[static_cast<std::size_t>(th)];
            auto& n_samples = ns_t[static_cast<std::size_t>(th)];
            auto* hs = hist.of(tk.species);
            auto* ns = n_samples.of(tk.species);
            for (std::size_t j = 0; j < nl; ++j) {
                const auto l = static_cast<std::size_t>(lags[j]);
                const double w = 2 * range[j] / static_cast<double>(nb);
                for (std::size_t t = 0; t + l < tk.size(); ++t) {
                    const double d[2] = {tk.x[t + l] - tk.x[t], tk.y[t + l] - tk.y[t]};
                    if (std::isnan(d[0]) || std::isnan(d[1])) continue;
                    for (double v : d) {
                        n_samples.total[j] += 1;
                        if (ns) (*ns)[j] += 1;
                        const double u = (v + range[j]) / w;
                        if (u < 0 || u >= static_cast<double>(nb)) continue;
                        const auto b = static_cast<std::size_t>(u);
                        hist.total[j * nb + b] += 1;
                        if (hs) (*hs)[j * nb + b] += 1;
                    }
                }
            }
        });
    });
    SpeciesSet<std::vector<double>> hist = std::move(hist_t[0]), n_samples = std::move(ns_t[0]);
    for (std::size_t t = 1; t < hist_t.size(); ++t) {
        const auto a = hist.all(), b = hist_t[t].all(), c = n_samples.all(), d = ns_t[t].all();
        for (std::size_t q = 0; q < a.size(); ++q) {
            for (std::size_t k = 0; k < a[q]->size(); ++k) (*a[q])[k] += (*b[q])[k];
            for (std::size_t k = 0; k < c[q]->size(); ++k) (*c[q])[k] += (*d[q])[k];
        }
    }
    r.vanhove_lags = std::move(lags);
    r.vanhove_range = std::move(range);
    r.hist_total = std::move(hist.total), r.hist_small = std::move(hist.small),
    r.hist_large = std::move(hist.large);
    r.samples_total = std::move(n_samples.total), r.samples_small = std::move(n_samples.small),
    r.samples_large = std::move(n_samples.large);
    return r;
}

namespace {

/// The sub-group van_hove {lag, lag_frames, dx, gs[_small|_large], fraction_outside[…]}.
ResultGroup van_hove_group(const MsdResult& r, const MsdParams& p, const Metadata& meta) {
    const std::string L = meta.length_unit, Tu = meta.time_unit;
    const std::size_t nb = static_cast<std::size_t>(p.vanhove_bins), nl = r.vanhove_lags.size();
    const auto& range = r.vanhove_range;
    ResultGroup v;
    v.name = "van_hove";
    std::vector<double> lag(nl), dxs(nl * nb);
    for (std::size_t j = 0; j < nl; ++j) {
        lag[j] = static_cast<double>(r.vanhove_lags[j]) * r.dt;
        const double w = 2 * range[j] / static_cast<double>(nb);
        for (std::size_t b = 0; b < nb; ++b) dxs[j * nb + b] = -range[j] + (static_cast<double>(b) + 0.5) * w;
    }
    v.add("lag", lag, Tu);
    v.add_int("lag_frames", r.vanhove_lags, "frame");
    v.add2d("dx", dxs, nl, nb, L);
    const std::tuple<const char*, const std::vector<double>*, const std::vector<double>*> species[] = {
        {"", &r.hist_total, &r.samples_total},
        {"_small", &r.hist_small, &r.samples_small},
        {"_large", &r.hist_large, &r.samples_large}};
    for (const auto& [sfx, hist, n_samples] : species) {
        const std::string suffix = sfx;
        if (suffix != "" && info_count(r.info, suffix) == 0) continue;
        std::vector<double> gs(nl * nb);
        const auto& ns = *n_samples;
        std::vector<double> outside(nl);
        for (std::size_t j = 0; j < nl; ++j) {
            const double w = 2 * range[j] / static_cast<double>(nb);
            double inside = 0;
            for (std::size_t b = 0; b < nb; ++b) {
                gs[j * nb + b] = ns[j] > 0 ? (*hist)[j * nb + b] / (ns[j] * w) : kNaN;
                inside += (*hist)[j * nb + b];
            }
            outside[j] = ns[j] > 0 ? 1.0 - inside / ns[j] : kNaN;
        }
        v.add2d("gs" + suffix, gs, nl, nb, "1/" + L);
        v.add("fraction_outside" + suffix, outside, "1");
    }
    v.attrs["definition"] = std::string("pdf of one displacement component (x and y pooled) at each lag");
    v.attrs["bins"] = p.vanhove_bins;
    v.attrs["range_in_sqrt_msd_half"] = p.vanhove_range;
    v.attrs["drift"] = std::string(to_string(p.drift));
    return v;
}

}  // namespace

ResultGroup to_group(const MsdResult& r, const MsdParams& p, const Metadata& meta) {
    const std::string L = meta.length_unit, Tu = meta.time_unit;
    const std::size_t ml = r.max_lag;
    const double dt = r.dt;
    ResultGroup g;
    g.name = "msd";
    add_lag_axes(g, ml + 1, dt, Tu);
    add_stream_attrs(g, r.info);
    g.attrs["max_lag"] = static_cast<std::int64_t>(ml);
    g.attrs["min_pairs"] = p.min_pairs;
    g.attrs["algorithm"] = std::string("mask-aware FFT (double precision), positions relative to track mean");
    g.attrs["alpha2_definition"] = std::string("<dr^4>/(2 <dr^2>^2) - 1 (2-D)");
    const std::pair<const char*, const MsdSums*> species[] = {
        {"", &r.total}, {"_small", &r.small}, {"_large", &r.large}};
    for (const auto& [sfx, ptr] : species) {
        const std::string suffix = sfx;
        if (suffix != "" && info_count(r.info, suffix) == 0) continue;
        std::vector<std::int64_t> np(ptr->pairs.size());
        for (std::size_t k = 0; k < np.size(); ++k) np[k] = static_cast<std::int64_t>(ptr->pairs[k]);
        g.add_int("n_pairs" + suffix, np, "1");
        auto msd = msd_from_sums(*ptr, p.min_pairs);
        const auto [D, D_err] = diffusion_from_msd(msd, dt);
        g.add("msd" + suffix, std::move(msd), L + "^2");
        g.add("alpha2" + suffix, alpha2_from_sums(*ptr, p.min_pairs), "1");
        g.attrs["diffusion_coefficient" + suffix] = D;
        g.attrs["diffusion_coefficient_err" + suffix] = D_err;
    }
    g.attrs["diffusion_coefficient_units"] = L + "^2/" + Tu;
    g.attrs["diffusion_definition"] = std::string(
        "D = slope/4 of a least-squares line through MSD(t) over lags [max_lag/4, max_lag]; err = the "
        "slope's standard error / 4");
    const auto msd_total = msd_from_sums(r.total, p.min_pairs);
    const auto [c0, sig] = localisation_noise(msd_total, p.sigma_fit_lags);
    g.attrs["msd_intercept"] = c0;
    g.attrs["sigma_loc"] = sig;
    g.attrs["sigma_loc_units"] = L;
    g.attrs["sigma_fit_lags"] = p.sigma_fit_lags;
    g.attrs["sigma_loc_method"] = std::string(
        "least-squares c + a*lag + b*lag^2 over lags 1..sigma_fit_lags; sigma_loc = sqrt(max(c,0)/4)");
    // Naming rule: one group per analysis, so G_s lives inside it as /analysis/msd/van_hove.
    if (!r.vanhove_lags.empty()) g.groups.push_back(van_hove_group(r, p, meta));
    return g;
}

}  // namespace vibra::analysis
