// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/analysis/velocity_distribution.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "detail/dynamics_common.hpp"
#include "detail/parallel.hpp"
#include "detail/numeric.hpp"
#include "vibra/core/error.hpp"

namespace vibra::analysis {

namespace {
/// ln Γ(s) without touching the global `signgam` that std::lgamma writes (a data race when the
/// bootstrap fits run on several threads): glibc's reentrant lgamma_r, the same values.
double log_gamma(double s) {
    int sign = 0;
    return ::lgamma_r(s, &sign);
}
}  // namespace

namespace {
using detail::kNaN;
}

namespace {
/// ln Γ(s, x) given lg = ln Γ(s) (the fits evaluate it at three values of s per Newton step,
/// nine times: computed once per s, the same values).
double log_upper_gamma_lg(double s, double x, double lg) {
    if (x <= 0) return lg;
    if (x < s + 1) {
        // lower γ(s,x) = e^{−x} x^s Σ_n x^n / (s(s+1)…(s+n))
        double ap = s, term = 1.0 / s, sum = term;
        for (int n = 0; n < 1000; ++n) {
            ap += 1;
            term *= x / ap;
            sum += term;
            if (std::abs(term) < std::abs(sum) * 1e-17) break;
        }
        const double logP = -x + s * std::log(x) - lg + std::log(sum);
        return lg + std::log1p(-std::exp(logP));
    }
    // continued fraction (modified Lentz) for Γ(s,x) = e^{−x} x^s · 1/(x+1−s− 1(1−s)/(x+3−s− …))
    constexpr double tiny = 1e-300;
    double b = x + 1 - s, c = 1 / tiny, d = 1 / b, h = d;
    for (int i = 1; i < 1000; ++i) {
        const double an = -i * (i - s);
        b += 2;
        d = an * d + b;
        if (std::abs(d) < tiny) d = tiny;
        c = b + an / c;
        if (std::abs(c) < tiny) c = tiny;
        d = 1 / d;
        const double del = d * c;
        h *= del;
        if (std::abs(del - 1) < 1e-16) break;
    }
    return -x + s * std::log(x) + std::log(h);
}
}  // namespace

double log_upper_gamma(double s, double x) {
    if (!(s > 0)) throw ParameterError("log_upper_gamma: s must be > 0");
    return log_upper_gamma_lg(s, x, log_gamma(s));
}

TailHistogram::TailHistogram(double lo_, double hi_, std::int64_t nb, std::int64_t nblk)
    : lo(lo_), hi(hi_), n_bins(nb), n_blocks(nblk), counts(static_cast<std::size_t>(nb * nblk), 0.0) {
    if (!(lo > 0) || !(hi > lo) || nb < 1 || nblk < 1)
        throw ParameterError("TailHistogram: need 0 < lo < hi, n_bins >= 1, n_blocks >= 1");
    log_ratio_ = std::log(hi / lo);
}

void TailHistogram::add_counts(const TailHistogram& o) {
    for (std::size_t i = 0; i < counts.size() && i < o.counts.size(); ++i) counts[i] += o.counts[i];
}

double TailHistogram::edge(std::int64_t b) const {
    return lo * std::exp(std::log(hi / lo) * static_cast<double>(b) / static_cast<double>(n_bins));
}

void TailHistogram::add(double x, std::int64_t block) {
    if (!(x >= lo) || block < 0 || block >= n_blocks) return;
    auto b = static_cast<std::int64_t>(std::log(x / lo) / log_ratio_ * static_cast<double>(n_bins));
    b = std::clamp<std::int64_t>(b, 0, n_bins - 1);
    counts[static_cast<std::size_t>(block * n_bins + b)] += 1;
}

TailHistogram tail_histogram(std::span<const double> x, std::span<const std::int64_t> block,
                             std::int64_t n_blocks, double lo, double hi, std::int64_t n_bins) {
    if (x.size() != block.size()) throw ParameterError("tail_histogram: x and block differ in length");
    TailHistogram h(lo, hi, n_bins, n_blocks);
    for (std::size_t i = 0; i < x.size(); ++i) h.add(x[i], block[i]);
    return h;
}

void TailFitParams::validate() const {
    if (!(threshold > 0))
        throw ParameterError("tail threshold must be > 0, got " + std::to_string(threshold));
    if (bootstrap < 0) throw ParameterError("bootstrap must be >= 0, got " + std::to_string(bootstrap));
    if (!(confidence > 0 && confidence < 1))
        throw ParameterError("confidence must be in (0,1), got " + std::to_string(confidence));
}

namespace {

/// The counts of one fit: bins b0 … b0 + m − 1 of a histogram (m ends at the last non-empty bin).
/// The grid is logarithmic, so bin k has ln(centre) = u0 + k·delta: an arithmetic progression.
struct Binned {
    const double* n = nullptr;
    std::size_t m = 0;
    double u0 = 0, delta = 0;
    double lxmin = 0;  // ln(threshold edge)
    double total = 0;
    std::size_t nonempty = 0;
};

Binned binned_from(const TailHistogram& h, const std::vector<double>& counts, std::int64_t b0) {
    Binned B;
    B.delta = std::log(h.hi / h.lo) / static_cast<double>(h.n_bins);
    B.u0 = std::log(h.lo) + (static_cast<double>(b0) + 0.5) * B.delta;
    B.lxmin = std::log(h.edge(b0));
    B.n = counts.data() + b0;
    for (std::int64_t b = b0; b < h.n_bins; ++b) {
        const double c = counts[static_cast<std::size_t>(b)];
        if (c <= 0) continue;
        B.total += c;
        ++B.nonempty;
        B.m = static_cast<std::size_t>(b - b0) + 1;
    }
    return B;
}

// ln Z(β, ℓ) = ℓ − ln β + ln Γ(1/β, exp(β(ln x_min − ℓ))); lg = ln Γ(1/β)
double log_z_lg(double beta, double ell, double lxmin, double lg) {
    return ell - std::log(beta) + log_upper_gamma_lg(1.0 / beta, std::exp(beta * (lxmin - ell)), lg);
}

double log_z(double beta, double ell, double lxmin) {
    return log_z_lg(beta, ell, lxmin, log_gamma(1.0 / beta));
}

/// Σ n w, Σ n w u, Σ n w u² over the bins, u = ln x − ℓ, w = exp(β u). Consecutive bins' w differ
/// by the factor exp(β·delta) (logarithmic grid): four interleaved product chains, restarted from
/// an exp every 64 bins (≤ 16 products each: a relative error ≲ 4e-15 per term). An empty bin
/// adds n·w = 0 unless w overflowed (then the sums are not finite, as a direct exp would make them).
struct TailSums {
    double S = 0, S1 = 0, S2 = 0;
};
TailSums tail_sums(const Binned& B, double beta, double ell) {
    constexpr std::size_t kChunk = 64, kLanes = 4;
    const double a = B.u0 - ell, q = std::exp(beta * B.delta * static_cast<double>(kLanes));
    double S[kLanes] = {}, S1[kLanes] = {}, S2[kLanes] = {};
    for (std::size_t s = 0; s < B.m; s += kChunk) {
        const std::size_t end = std::min(B.m, s + kChunk);
        double e[kLanes];
        for (std::size_t j = 0; j < kLanes; ++j)
            e[j] = std::exp(beta * (a + static_cast<double>(s + j) * B.delta));
        for (std::size_t k = s; k < end; k += kLanes)
            for (std::size_t j = 0; j < kLanes && k + j < end; ++j) {
                const double u = a + static_cast<double>(k + j) * B.delta, w = B.n[k + j] * e[j];
                S[j] += w;
                S1[j] += w * u;
                S2[j] += w * u * u;
                e[j] *= q;
            }
    }
    return {(S[0] + S[1]) + (S[2] + S[3]), (S1[0] + S1[1]) + (S1[2] + S1[3]),
            (S2[0] + S2[1]) + (S2[2] + S2[3])};
}

/// Gradient and Newton step of the negative log-likelihood at (β, ℓ); ln Z's derivatives by
/// central differences (ln Γ once per s).
struct Step {
    double g0 = 0, g1 = 0, d0 = 0, d1 = 0;
    bool newton = false;  ///< the Hessian was positive definite (else a scaled gradient step)
};
Step newton_step(const Binned& B, const TailSums& cur, double zc, double beta, double ell) {
    const double S = cur.S, S1 = cur.S1, S2 = cur.S2;
    // A = Σ n (x/c0)^β = S: ∂β = S1, ∂ℓ = −βS, ∂ββ = S2, ∂ℓℓ = β²S, ∂βℓ = −S − βS1
    Step st;
    st.g0 = S1, st.g1 = -beta * S;
    double h00 = S2, h11 = beta * beta * S, h01 = -S - beta * S1;
    const double hb = 1e-4 * std::max(1.0, beta), hl = 1e-4;
    const double lg0 = log_gamma(1.0 / beta), lgp = log_gamma(1.0 / (beta + hb)),
                 lgm = log_gamma(1.0 / (beta - hb));
    const double zbp = log_z_lg(beta + hb, ell, B.lxmin, lgp), zbm = log_z_lg(beta - hb, ell, B.lxmin, lgm);
    const double zlp = log_z_lg(beta, ell + hl, B.lxmin, lg0), zlm = log_z_lg(beta, ell - hl, B.lxmin, lg0);
    const double zpp = log_z_lg(beta + hb, ell + hl, B.lxmin, lgp),
                 zpm = log_z_lg(beta + hb, ell - hl, B.lxmin, lgp);
    const double zmp = log_z_lg(beta - hb, ell + hl, B.lxmin, lgm),
                 zmm = log_z_lg(beta - hb, ell - hl, B.lxmin, lgm);
    const double n = B.total;
    st.g0 += n * (zbp - zbm) / (2 * hb);
    st.g1 += n * (zlp - zlm) / (2 * hl);
    h00 += n * (zbp - 2 * zc + zbm) / (hb * hb);
    h11 += n * (zlp - 2 * zc + zlm) / (hl * hl);
    h01 += n * (zpp - zpm - zmp + zmm) / (4 * hb * hl);
    const double det = h00 * h11 - h01 * h01;
    if (h00 > 0 && det > 0) {
        st.d0 = -(h11 * st.g0 - h01 * st.g1) / det;
        st.d1 = -(-h01 * st.g0 + h00 * st.g1) / det;
        st.newton = true;
    } else {
        const double sc = std::max({std::abs(h00), std::abs(h11), 1e-300});
        st.d0 = -st.g0 / sc;
        st.d1 = -st.g1 / sc;
    }
    return st;
}

/// The fit ends with a whole Newton step once the Newton decrement per tail sample,
/// λ²/n = gᵀH⁻¹g/n, is below kDecrement: the distance to the maximum in the metric of one sample's
/// Fisher information (β's own statistical scale, the same in any length unit) is then ≲ 1e-5 and
/// the error after the step ≈ its square. The likelihood still changes there by ≈ λ²/2 ≳ 1e-11·n,
/// far above its rounding (≈ 1e-15·n), so the line search before it never works at the noise level.
constexpr double kDecrement = 1e-10;

// Newton in θ = (β, ℓ = ln c₀) with backtracking; returns converged flag.
bool newton_fit(const Binned& B, double& beta, double& ell) {
    if (B.total < 3 || B.nonempty < 2) return false;
    TailSums cur = tail_sums(B, beta, ell);
    double zc = log_z(beta, ell, B.lxmin);
    for (int it = 0; it < 200; ++it) {
        const Step st = newton_step(B, cur, zc, beta, ell);
        const double slope = st.g0 * st.d0 + st.g1 * st.d1;  // −λ² for a Newton step
        if (st.newton && -slope < kDecrement * B.total && beta + st.d0 > 0.05 && beta + st.d0 < 50) {
            beta += st.d0;
            ell += st.d1;
            return true;
        }
        const double f0 = cur.S + B.total * zc;
        double t = 1.0;
        TailSums trial;
        double ztrial = 0;
        for (; t > 1e-12; t *= 0.5) {
            const double nb = beta + t * st.d0, nl = ell + t * st.d1;
            if (!(nb > 0.05 && nb < 50)) continue;  // keep β in a sane range
            trial = tail_sums(B, nb, nl);
            ztrial = log_z(nb, nl, B.lxmin);
            const double f1 = trial.S + B.total * ztrial;  // nll(B, nb, nl)
            if (std::isfinite(f1) && f1 <= f0 + 1e-4 * t * slope) break;
        }
        if (t <= 1e-12) return std::abs(st.g0) + std::abs(st.g1) < 1e-6 * B.total;
        beta += t * st.d0;
        ell += t * st.d1;
        cur = trial;
        zc = ztrial;
        if (std::abs(t * st.d0) < 1e-10 && std::abs(t * st.d1) < 1e-10) return true;
    }
    return false;
}

double quantile(std::vector<double> v, double q) {
    if (v.empty()) return kNaN;
    std::sort(v.begin(), v.end());
    const double pos = q * static_cast<double>(v.size() - 1);
    const auto i = static_cast<std::size_t>(pos);
    const double f = pos - static_cast<double>(i);
    return i + 1 < v.size() ? v[i] * (1 - f) + v[i + 1] * f : v[i];
}

std::int64_t first_bin_at_or_above(const TailHistogram& h, double thr) {
    std::int64_t b = 0;
    while (b < h.n_bins && h.edge(b) < thr * (1 - 1e-12)) ++b;
    return b;
}

/// Counts of the blocks, each taken `mult[k]` times (integers in doubles: exact in any order).
void add_blocks(const TailHistogram& h, std::span<const double> mult, std::int64_t bmin,
                std::vector<double>& agg) {
    std::fill(agg.begin(), agg.end(), 0.0);
    for (std::int64_t k = 0; k < h.n_blocks; ++k) {
        const double m = mult[static_cast<std::size_t>(k)];
        if (m == 0) continue;
        const double* c = h.counts.data() + k * h.n_bins;
        for (std::int64_t b = bmin; b < h.n_bins; ++b) agg[static_cast<std::size_t>(b)] += m * c[b];
    }
}

/// i's first earlier threshold with the same first bin (the same fit), else i.
std::vector<std::size_t> same_fit_as(const std::vector<std::int64_t>& b0) {
    std::vector<std::size_t> same(b0.size());
    for (std::size_t i = 0; i < b0.size(); ++i)
        same[i] = static_cast<std::size_t>(std::find(b0.begin(), b0.end(), b0[i]) - b0.begin());
    return same;
}

}  // namespace

std::vector<TailFit> fit_tail_scan(const TailHistogram& h, std::span<const double> thresholds,
                                   const TailFitParams& p) {
    p.validate();
    const std::size_t nt = thresholds.size();
    std::vector<TailFit> fits(nt);
    std::vector<std::int64_t> b0(nt);
    for (std::size_t i = 0; i < nt; ++i) b0[i] = first_bin_at_or_above(h, thresholds[i]);
    const std::vector<std::size_t> same = same_fit_as(b0);
    std::vector<double> pooled(static_cast<std::size_t>(h.n_bins));
    add_blocks(h, std::vector<double>(static_cast<std::size_t>(h.n_blocks), 1.0), 0, pooled);
    for (std::size_t i = 0; i < nt; ++i) {
        TailFit& f = fits[i];
        if (same[i] != i) {
            f = fits[same[i]];
            continue;
        }
        f.beta = f.c0 = f.beta_ci_low = f.beta_ci_high = f.beta_sigma = kNaN;
        if (b0[i] >= h.n_bins) continue;
        f.threshold = h.edge(b0[i]);
        const Binned B = binned_from(h, pooled, b0[i]);
        f.n_tail = B.total;
        double beta = 1.5, ell = std::log(std::max(f.threshold, 1e-3));
        f.converged = newton_fit(B, beta, ell);
        if (f.converged) {
            f.beta = beta;
            f.c0 = std::exp(ell);
        }
    }
    if (p.bootstrap > 0 && h.n_blocks > 1) {
        // the resampled blocks are drawn in replicate order (the same draws for any thread count),
        // the replicates fitted in parallel, their β collected in replicate order
        std::mt19937_64 rng(p.seed);
        std::uniform_int_distribution<std::int64_t> pick(0, h.n_blocks - 1);
        const auto nr = static_cast<std::size_t>(p.bootstrap), nblk = static_cast<std::size_t>(h.n_blocks);
        std::vector<double> mult(nr * nblk, 0.0);  // times each block is drawn, per replicate
        for (std::size_t r = 0; r < nr; ++r)
            for (std::size_t k = 0; k < nblk; ++k) mult[r * nblk + static_cast<std::size_t>(pick(rng))] += 1;
        const std::int64_t bmin = *std::min_element(b0.begin(), b0.end());
        std::vector<double> rep_beta(nr * nt, kNaN);
        std::vector<char> rep_ok(nr * nt, 0);
        detail::parallel_for_each(nr, p.threads, [&](std::size_t r, int) {
            std::vector<double> agg(static_cast<std::size_t>(h.n_bins));
            add_blocks(h, std::span<const double>(mult).subspan(r * nblk, nblk), bmin, agg);
            for (std::size_t i = 0; i < nt; ++i) {
                if (same[i] != i) {
                    rep_beta[r * nt + i] = rep_beta[r * nt + same[i]];
                    rep_ok[r * nt + i] = rep_ok[r * nt + same[i]];
                    continue;
                }
                if (!fits[i].converged) continue;
                const Binned B = binned_from(h, agg, b0[i]);
                double beta = fits[i].beta, ell = std::log(fits[i].c0);
                if (newton_fit(B, beta, ell)) {
                    rep_beta[r * nt + i] = beta;
                    rep_ok[r * nt + i] = 1;
                }
            }
        });
        std::vector<std::vector<double>> reps(nt);
        for (std::size_t r = 0; r < nr; ++r)
            for (std::size_t i = 0; i < nt; ++i)
                if (rep_ok[r * nt + i]) reps[i].push_back(rep_beta[r * nt + i]);
        for (std::size_t i = 0; i < nt; ++i) {
            const auto& v = reps[i];
            if (v.size() < 2) continue;
            double m = 0, s2 = 0;
            for (double b : v) m += b;
            m /= static_cast<double>(v.size());
            for (double b : v) s2 += (b - m) * (b - m);
            fits[i].beta_sigma = std::sqrt(s2 / static_cast<double>(v.size() - 1));
            fits[i].beta_ci_low = quantile(v, (1 - p.confidence) / 2);
            fits[i].beta_ci_high = quantile(v, (1 + p.confidence) / 2);
        }
    }
    return fits;
}

TailFit fit_tail(const TailHistogram& h, const TailFitParams& p) {
    const double t[1] = {p.threshold};
    return fit_tail_scan(h, t, p).front();
}

void VelocityDistributionParams::validate() const {
    if (!(threshold > 0))
        throw ParameterError("velocity_distribution threshold must be > 0, got " + std::to_string(threshold));
    for (double s : scan)
        if (!(s > 0))
            throw ParameterError("velocity_distribution scan thresholds must be > 0, got " +
                                 std::to_string(s));
    if (bootstrap < 0)
        throw ParameterError("velocity_distribution bootstrap must be >= 0, got " +
                             std::to_string(bootstrap));
    if (blocks < 1)
        throw ParameterError("velocity_distribution blocks must be >= 1, got " + std::to_string(blocks));
    if (bins < 2)
        throw ParameterError("velocity_distribution bins must be >= 2, got " + std::to_string(bins));
    if (tail_bins < 10)
        throw ParameterError("velocity_distribution tail_bins must be >= 10, got " +
                             std::to_string(tail_bins));
    if (drift_window < 1)
        throw ParameterError("velocity_distribution drift_window must be >= 1, got " +
                             std::to_string(drift_window));
    if (max_cells < 1)
        throw ParameterError("velocity_distribution max_cells must be >= 1, got " +
                             std::to_string(max_cells));
}

namespace {
struct Moments {
    double n = 0, sxx = 0, syy = 0, c4 = 0, v4 = 0, max_comp = 0, max_speed = 0;
};
struct Hists {
    std::vector<double> cx, cy, sp;
    double n = 0;
    TailHistogram tail;
};

/// Velocity scales of one part (all particles, or one species): rms of a component and of the speed.
struct Scale {
    double rms_comp = kNaN, rms_speed = kNaN;
};

/// Adds the per-thread histogram counts into hs (integers in doubles: exact in any order).
void add_thread_counts(detail::SpeciesSet<Hists>& hs, std::vector<detail::SpeciesSet<Hists>>& hs_t) {
    const auto a = hs.all();
    for (auto& part : hs_t) {
        const auto b = part.all();
        for (std::size_t q = 0; q < a.size(); ++q) {
            for (std::size_t k = 0; k < a[q]->cx.size(); ++k) {
                a[q]->cx[k] += b[q]->cx[k];
                a[q]->cy[k] += b[q]->cy[k];
                a[q]->sp[k] += b[q]->sp[k];
            }
            a[q]->n += b[q]->n;
            a[q]->tail.add_counts(b[q]->tail);
        }
    }
}

/// The parts of the result (all particles, each species present): moments, histograms, and the
/// tail fit at the threshold and at each scan threshold.
void fit_parts(VelocityDistributionResult& res, detail::SpeciesSet<Hists>& hs,
               detail::SpeciesSet<Moments>& mom, detail::SpeciesSet<Scale>& sc,
               const VelocityDistributionParams& p) {
    const TrackStreamInfo& info = res.info;
    TailFitParams fp;
    fp.threshold = p.threshold;
    fp.bootstrap = p.bootstrap;
    fp.seed = p.seed;
    fp.threads = p.threads;
    std::vector<double> thr{p.threshold};
    thr.insert(thr.end(), p.scan.begin(), p.scan.end());
    auto hn = hs.named();
    auto mn = mom.named();
    auto sn = sc.named();
    for (std::size_t i = 0; i < 3; ++i) {
        const std::string& suf = hn[i].first;
        const Hists& h = *hn[i].second;
        const Moments& m = *mn[i].second;
        if (suf != "" && detail::info_count(info, suf) == 0) continue;
        if (h.n <= 0) continue;
        VelocityDistributionResult::Part part;
        part.suffix = suf;
        part.n = m.n, part.sxx = m.sxx, part.syy = m.syy, part.c4 = m.c4, part.v4 = m.v4;
        part.rms_comp = sn[i].second->rms_comp;
        part.hist_n = h.n, part.cx = h.cx, part.cy = h.cy, part.sp = h.sp;
        if (h.tail.n_bins > 0)
            part.fits = fit_tail_scan(h.tail, thr, fp);
        else
            part.fits.assign(thr.size(), TailFit{kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, 0, false});
        const TailFit& f = part.fits.front();
        const double n_x = p.fit_speed ? m.n : 2 * m.n;
        part.tail_fraction = f.n_tail / n_x;
        part.tail_amplitude = kNaN;
        if (f.converged) {
            const double lz = log_z(f.beta, std::log(f.c0), std::log(f.threshold));
            part.tail_amplitude = part.tail_fraction / (p.fit_speed ? 1.0 : 2.0) / std::exp(lz);
        }
        res.parts.push_back(std::move(part));
    }
}
}  // namespace

VelocityDistributionResult compute_velocity_distribution(const TrajectorySource& src,
                                                         const VelocityDistributionParams& p) {
    p.validate();
    const std::int64_t T = src.n_frames();
    TrackStreamParams tp = detail::stream_params(p, /*velocities=*/true);
    const auto own_cache = detail::ensure_cache(src, tp);  // one copy for both passes
    // ---- pass 1: moments
    detail::SpeciesSet<Moments> mom;
    auto add_m = [](Moments& m, double vx, double vy) {
        const double v2 = vx * vx + vy * vy;
        m.n += 1;
        m.sxx += vx * vx;
        m.syy += vy * vy;
        m.c4 += vx * vx * vx * vx + vy * vy * vy * vy;
        m.v4 += v2 * v2;
        m.max_comp = std::max({m.max_comp, std::abs(vx), std::abs(vy)});
        m.max_speed = std::max(m.max_speed, std::sqrt(v2));
    };
    const TrackStreamInfo info = stream_tracks(src, tp, [&](const Track& tk) {
        Moments* ms = mom.of(tk.species);
        for (std::size_t s = 0; s < tk.size(); ++s) {
            if (!std::isfinite(tk.vx[s]) || !std::isfinite(tk.vy[s])) continue;
            add_m(mom.total, tk.vx[s], tk.vy[s]);
            if (ms) add_m(*ms, tk.vx[s], tk.vy[s]);
        }
    });
    // scaled ranges
    double cmax = 0, smax = 0;
    detail::SpeciesSet<Scale> sc;
    {
        auto mn = mom.named();
        auto sn = sc.named();
        for (std::size_t i = 0; i < 3; ++i) {
            const Moments& m = *mn[i].second;
            if (m.n <= 0) continue;
            sn[i].second->rms_comp = std::sqrt((m.sxx + m.syy) / (2 * m.n));
            sn[i].second->rms_speed = std::sqrt((m.sxx + m.syy) / m.n);
            if (sn[i].second->rms_comp > 0) {
                cmax = std::max(cmax, m.max_comp / sn[i].second->rms_comp);
                smax = std::max(smax, m.max_speed / sn[i].second->rms_speed);
            }
        }
    }
    cmax = std::min(std::ceil(cmax * 1.0001 + 1e-9), 50.0);
    smax = std::min(std::ceil(smax * 1.0001 + 1e-9), 50.0);
    if (!(cmax > 0)) cmax = 1;
    if (!(smax > 0)) smax = 1;
    const auto nb = static_cast<std::size_t>(p.bins);
    double lo = p.threshold;
    for (double s : p.scan) lo = std::min(lo, s);
    detail::SpeciesSet<Hists> hs;
    {
        auto hn = hs.named();
        auto sn = sc.named();
        auto mn = mom.named();
        for (std::size_t i = 0; i < 3; ++i) {
            Hists& h = *hn[i].second;
            h.cx.assign(nb, 0.0);
            h.cy.assign(nb, 0.0);
            h.sp.assign(nb, 0.0);
            const double rms = p.fit_speed ? sn[i].second->rms_speed : sn[i].second->rms_comp;
            const double xmax = mn[i].second->n > 0 && rms > 0
                                    ? (p.fit_speed ? mn[i].second->max_speed : mn[i].second->max_comp) / rms
                                    : 0.0;
            if (xmax > lo) h.tail = TailHistogram(lo, xmax * (1 + 1e-9), p.tail_bins, p.blocks);
        }
    }
    // ---- pass 2: histograms and tail grids
    const double wc = 2 * cmax / static_cast<double>(nb), ws = smax / static_cast<double>(nb);
    auto bin = [&](double v, double lo_, double w) -> std::int64_t {
        const auto b = static_cast<std::int64_t>(std::floor((v - lo_) / w));
        return b >= 0 && b < static_cast<std::int64_t>(nb) ? b : -1;
    };
    auto add_h = [&](Hists& h, const Scale& s, double vx, double vy, std::int64_t blk) {
        if (!(s.rms_comp > 0)) return;
        const double cx = vx / s.rms_comp, cy = vy / s.rms_comp,
                     sp = std::sqrt(vx * vx + vy * vy) / s.rms_speed;
        h.n += 1;
        if (auto b = bin(cx, -cmax, wc); b >= 0) h.cx[b] += 1;
        if (auto b = bin(cy, -cmax, wc); b >= 0) h.cy[b] += 1;
        if (auto b = bin(sp, 0, ws); b >= 0) h.sp[b] += 1;
        if (h.tail.n_bins > 0) {
            if (p.fit_speed)
                h.tail.add(sp, blk);
            else {
                h.tail.add(std::abs(cx), blk);
                h.tail.add(std::abs(cy), blk);
            }
        }
    };
    // counts (integers in doubles: exact in any order), one set per thread, added at the end
    const int nth = std::max(1, p.threads);
    std::vector<detail::SpeciesSet<Hists>> hs_t(static_cast<std::size_t>(nth), hs);
    stream_track_blocks(src, tp, [&](std::vector<Track>& block) {
        detail::parallel_for_each(block.size(), nth, [&](std::size_t i, int th) {
            const Track& tk = block[i];
            auto& hst = hs_t[static_cast<std::size_t>(th)];
            Hists* h = hst.of(tk.species);
            const Scale* s = sc.of(tk.species);
            for (std::size_t k = 0; k < tk.size(); ++k) {
                if (!std::isfinite(tk.vx[k]) || !std::isfinite(tk.vy[k])) continue;
                const std::int64_t f = tk.first_frame + static_cast<std::int64_t>(k);
                const std::int64_t blk =
                    std::min<std::int64_t>(p.blocks - 1, f * p.blocks / std::max<std::int64_t>(T, 1));
                add_h(hst.total, sc.total, tk.vx[k], tk.vy[k], blk);
                if (h) add_h(*h, *s, tk.vx[k], tk.vy[k], blk);
            }
        });
    });
    add_thread_counts(hs, hs_t);
    // ---- tail fits per part
    VelocityDistributionResult res;
    res.info = info;
    res.n_frames = T;
    res.cmax = cmax, res.smax = smax, res.wc = wc, res.ws = ws;
    fit_parts(res, hs, mom, sc, p);
    return res;
}

ResultGroup to_group(const VelocityDistributionResult& res, const VelocityDistributionParams& p,
                     const Metadata& meta) {
    const std::int64_t T = res.n_frames;
    const double cmax = res.cmax, wc = res.wc, ws = res.ws;
    const auto nb = static_cast<std::size_t>(p.bins);
    ResultGroup g;
    g.name = "velocity_distribution";
    detail::add_stream_attrs(g, res.info);
    const std::string vunit = meta.length_unit + "/" + meta.time_unit;
    std::vector<double> cc(nb), ss(nb);
    for (std::size_t b = 0; b < nb; ++b) {
        cc[b] = -cmax + (static_cast<double>(b) + 0.5) * wc;
        ss[b] = (static_cast<double>(b) + 0.5) * ws;
    }
    g.add("c", cc, "1");
    g.add("speed", ss, "1");
    for (const auto& part : res.parts) {
        const std::string& suf = part.suffix;
        std::vector<double> pc(nb), px(nb), py(nb), psp(nb);
        for (std::size_t b = 0; b < nb; ++b) {
            px[b] = part.cx[b] / (part.hist_n * wc);
            py[b] = part.cy[b] / (part.hist_n * wc);
            pc[b] = (part.cx[b] + part.cy[b]) / (2 * part.hist_n * wc);
            psp[b] = part.sp[b] / (part.hist_n * ws);
        }
        g.add("p_c" + suf, pc, "1");
        g.add("p_cx" + suf, px, "1");
        g.add("p_cy" + suf, py, "1");
        g.add("p_speed" + suf, psp, "1");
        g.attrs["rms_velocity" + suf] = part.rms_comp;
        g.attrs["rms_vx" + suf] = std::sqrt(part.sxx / part.n);
        g.attrs["rms_vy" + suf] = std::sqrt(part.syy / part.n);
        const double c2 = (part.sxx + part.syy) / (2 * part.n), c4 = part.c4 / (2 * part.n);
        g.attrs["kurtosis" + suf] = c4 / (c2 * c2);
        const double v2 = (part.sxx + part.syy) / part.n, v4 = part.v4 / part.n;
        g.attrs["sonine_a2" + suf] = v4 / (v2 * v2) / 2.0 - 1.0;
        g.attrs["n_samples" + suf] = static_cast<std::int64_t>(part.n);
        const auto& fits = part.fits;
        const TailFit& f = fits.front();
        g.attrs["beta" + suf] = f.beta;
        g.attrs["beta_ci_low" + suf] = f.beta_ci_low;
        g.attrs["beta_ci_high" + suf] = f.beta_ci_high;
        g.attrs["beta_sigma" + suf] = f.beta_sigma;
        g.attrs["beta_threshold" + suf] = f.threshold;
        g.attrs["c0" + suf] = f.c0;
        g.attrs["n_tail" + suf] = f.n_tail;
        g.attrs["tail_fraction" + suf] = part.tail_fraction;
        g.attrs["tail_amplitude" + suf] = part.tail_amplitude;
        std::vector<double> st, sb, sl, sh, sn_;
        for (std::size_t k = 1; k < fits.size(); ++k) {
            st.push_back(fits[k].threshold);
            sb.push_back(fits[k].beta);
            sl.push_back(fits[k].beta_ci_low);
            sh.push_back(fits[k].beta_ci_high);
            sn_.push_back(fits[k].n_tail);
        }
        g.add("scan_threshold" + suf, st, "1");
        g.add("scan_beta" + suf, sb, "1");
        g.add("scan_beta_ci_low" + suf, sl, "1");
        g.add("scan_beta_ci_high" + suf, sh, "1");
        g.add("scan_n_tail" + suf, sn_, "1");
    }
    g.attrs["fitted_variable"] =
        std::string(p.fit_speed ? "speed |v|/rms speed" : "component |v_x|,|v_y| pooled / rms component");
    g.attrs["scaling"] = std::string("per species: c = v / sqrt(<v_x^2 + v_y^2>/2); speed / sqrt(<|v|^2>)");
    g.attrs["tail_model"] = std::string("P ~ tail_amplitude * exp(-(|c|/c0)^beta) for |c| > beta_threshold");
    g.attrs["fit_method"] = std::string(
        "maximum likelihood, truncated normaliser (c0/beta) Gamma(1/beta, (cmin/c0)^beta), fine log grid of "
        "tail_bins bins");
    g.attrs["bootstrap"] = p.bootstrap;
    g.attrs["bootstrap_blocks"] = p.blocks;
    g.attrs["bootstrap_block_frames"] = static_cast<double>(T) / static_cast<double>(p.blocks);
    g.attrs["confidence"] = 0.95;
    g.attrs["tail_bins"] = p.tail_bins;
    g.attrs["bins"] = p.bins;
    g.attrs["seed"] = static_cast<std::int64_t>(p.seed);
    g.attrs["kurtosis_definition"] = std::string("<c^4>/<c^2>^2 of pooled components (3 for a Gaussian)");
    g.attrs["velocity_units"] = vunit;
    return g;
}

}  // namespace vibra::analysis
