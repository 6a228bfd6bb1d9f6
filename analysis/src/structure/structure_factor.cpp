// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/analysis/structure_factor.hpp"

#include "detail/numeric.hpp"
#include "detail/parallel.hpp"

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <string>

#include "vibra/core/error.hpp"

namespace vibra::analysis {

namespace {
using detail::kNaN;
using cplx = std::complex<double>;

/// Rectangular region of the k set: the box or rectangle, or the square inscribed in a circle.
Geometry region_of(const Geometry& w) {
    if (w.kind == GeometryKind::window_circle) {
        const double h = w.r / std::sqrt(2.0);
        return Geometry::rect(w.cx - h, w.cy - h, w.cx + h, w.cy + h);
    }
    return w;
}
}  // namespace

void StructureFactorParams::validate() const {
    if (!(k_max > 0) || !std::isfinite(k_max))
        throw ParameterError("sk: k_max must be > 0, got " + std::to_string(k_max));
    if (bins < 1 || bins > 100000)
        throw ParameterError("sk: bins must be in [1, 1e5], got " + std::to_string(bins));
    if (max_vectors_per_bin < 0)
        throw ParameterError("sk: max_vectors_per_bin must be >= 0, got " +
                             std::to_string(max_vectors_per_bin));
    if (threads < 1) throw ParameterError("sk: threads must be >= 1, got " + std::to_string(threads));
}

StructureFactor::StructureFactor(const StructureFactorParams& p) : p_(p) {
    p_.validate();
    const auto nb = static_cast<std::size_t>(p_.bins);
    for (auto& v : num_) v.assign(nb, 0.0);
    cnt_.assign(nb, 0.0);
    ksum_.assign(nb, 0.0);
    nvec_.assign(nb, 0);
}

void StructureFactor::build_vectors(const Geometry& reg) {
    region_ = reg;
    have_region_ = true;
    const bool periodic = reg.periodic();
    kset_ = periodic ? "reciprocal_lattice" : "hann_window_lattice";
    const double qx = 2 * M_PI / reg.lx(), qy = 2 * M_PI / reg.ly();
    const int nmax = static_cast<int>(std::floor(p_.k_max / qx)),
              mmax = static_cast<int>(std::floor(p_.k_max / qy));
    if (static_cast<double>(nmax) * static_cast<double>(2 * mmax + 1) > 5e7)
        throw ParameterError("sk: k_max " + std::to_string(p_.k_max) +
                             " gives too many k-vectors for this region");
    const auto nb = static_cast<std::size_t>(p_.bins);
    const double dk = p_.k_max / static_cast<double>(p_.bins);
    std::vector<std::vector<std::pair<double, KVec>>> per_bin(nb);
    for (int n = 0; n <= nmax; ++n)
        for (int m = -mmax; m <= mmax; ++m) {
            if (n == 0 && m <= 0) continue;                           // half plane: S(−k) = S(k)
            if (!periodic && std::max(n, std::abs(m)) < 2) continue;  // taper transform ≠ 0 there
            const double kx = n * qx, ky = m * qy, k = std::hypot(kx, ky);
            if (k > p_.k_max) continue;
            const auto bin = std::min(nb - 1, static_cast<std::size_t>(k / dk));
            per_bin[bin].push_back({std::atan2(ky, kx), KVec{n, m, bin}});
        }
    kv_.clear();
    for (std::size_t b = 0; b < nb; ++b) {
        auto& v = per_bin[b];
        std::sort(v.begin(), v.end(), [](const auto& a, const auto& c) { return a.first < c.first; });
        const std::size_t cap =
            p_.max_vectors_per_bin > 0 ? static_cast<std::size_t>(p_.max_vectors_per_bin) : v.size();
        const std::size_t keep = std::min(cap, v.size());
        for (std::size_t j = 0; j < keep; ++j) kv_.push_back(v[j * v.size() / keep].second);
        if (frames_ == 0) nvec_[b] = static_cast<std::int64_t>(keep);
    }
}

void StructureFactor::accumulate(const StructureFrame& fr) {
    if (fr.size() < 2) return;  // nothing to correlate (and an unbounded frame has no window)
    const Geometry reg = region_of(fr.window);
    if (!have_region_ || !(reg == region_)) build_vectors(reg);
    const bool periodic = reg.periodic();
    const double qx = 2 * M_PI / reg.lx(), qy = 2 * M_PI / reg.ly();
    int nmax = 0, mmax = 0;
    for (const auto& k : kv_) nmax = std::max(nmax, k.n), mmax = std::max(mmax, std::abs(k.m));
    const std::size_t nk = kv_.size();
    std::vector<cplx> rho[3];
    for (auto& r : rho) r.assign(nk, cplx(0, 0));
    // Weights and species first; then the k-vectors split over the threads, each running the
    // serial loop over the particles (phase factors by recurrence) for its own k range: the very
    // sums of one thread, for any thread count, at the price of each thread computing the phase
    // factors (≈ 15% of the work).
    std::vector<double> pu, pv, pw;
    std::vector<int> ps;
    for (std::size_t i = 0; i < fr.size(); ++i) {
        const double u = fr.x[i] - reg.x0, v = fr.y[i] - reg.y0;
        if (!periodic && !(u >= 0 && u <= reg.lx() && v >= 0 && v <= reg.ly())) continue;
        double w = 1;
        if (!periodic) {
            const double sx = std::sin(M_PI * u / reg.lx()), sy = std::sin(M_PI * v / reg.ly());
            w = sx * sx * sy * sy;
        }
        const int s = fr.species[i] == kSpeciesSmall ? 0 : fr.species[i] == kSpeciesLarge ? 1 : 2;
        if (s < 2) w_[s] += w * w;
        w_[2] += w * w;
        ns_ += s == 0, nl_ += s == 1;
        pu.push_back(u), pv.push_back(v), pw.push_back(w), ps.push_back(s);
    }
    detail::parallel_for(nk, p_.threads, [&](std::size_t k0, std::size_t k1, int) {
        std::vector<cplx> ex(static_cast<std::size_t>(nmax) + 1), ey(static_cast<std::size_t>(2 * mmax) + 1);
        const auto mm = static_cast<std::size_t>(mmax);
        for (std::size_t i = 0; i < pu.size(); ++i) {
            const double u = pu[i], v = pv[i], w = pw[i];
            const cplx e1 = std::polar(1.0, -qx * u), f1 = std::polar(1.0, -qy * v);
            ex[0] = w;
            for (int n = 1; n <= nmax; ++n)
                ex[static_cast<std::size_t>(n)] = (n % 32 == 0) ? w * std::polar(1.0, -qx * u * n)
                                                                : ex[static_cast<std::size_t>(n - 1)] * e1;
            ey[mm] = 1;
            for (int m = 1; m <= mmax; ++m) {
                const auto a = static_cast<std::size_t>(m);
                ey[mm + a] = (m % 32 == 0) ? std::polar(1.0, -qy * v * m) : ey[mm + a - 1] * f1;
                ey[mm - a] = std::conj(ey[mm + a]);
            }
            cplx* r = rho[ps[i]].data();
            for (std::size_t k = k0; k < k1; ++k)
                r[k] +=
                    ex[static_cast<std::size_t>(kv_[k].n)] * ey[static_cast<std::size_t>(kv_[k].m + mmax)];
        }
    });
    for (std::size_t k = 0; k < nk; ++k) {
        const auto b = kv_[k].bin;
        const cplx tot = rho[0][k] + rho[1][k] + rho[2][k];
        num_[0][b] += std::norm(rho[0][k]);
        num_[1][b] += std::real(rho[0][k] * std::conj(rho[1][k]));
        num_[2][b] += std::norm(rho[1][k]);
        num_[3][b] += std::norm(tot);
        cnt_[b] += 1;
        ksum_[b] += std::hypot(kv_[k].n * qx, kv_[k].m * qy);
    }
    ++frames_;
}

StructureFactorResult StructureFactor::result() const {
    StructureFactorResult r;
    const auto nb = static_cast<std::size_t>(p_.bins);
    const double dk = p_.k_max / static_cast<double>(p_.bins);
    const double F = frames_ > 0 ? static_cast<double>(frames_) : kNaN;
    r.k.resize(nb), r.k_edges.resize(nb + 1), r.sk.resize(nb), r.sk_ss.resize(nb), r.sk_sl.resize(nb),
        r.sk_ll.resize(nb);
    r.n_vectors = nvec_;
    r.k_set = kset_;
    r.frames = frames_, r.n_small = ns_, r.n_large = nl_;
    const double ws = w_[0] / F, wl = w_[1] / F, wt = w_[2] / F;
    auto div = [](double a, double b) { return b > 0 ? a / b : kNaN; };
    for (std::size_t b = 0; b <= nb; ++b) r.k_edges[b] = dk * static_cast<double>(b);
    for (std::size_t b = 0; b < nb; ++b) {
        const double c = cnt_[b];
        r.k[b] = div(ksum_[b], c);
        r.sk[b] = div(div(num_[3][b], c), wt);
        r.sk_ss[b] = div(div(num_[0][b], c), ws);
        r.sk_sl[b] = div(div(num_[1][b], c), std::sqrt(ws * wl));
        r.sk_ll[b] = div(div(num_[2][b], c), wl);
    }
    return r;
}

std::pair<double, double> sk_first_peak(const StructureFactorResult& r, const std::vector<double>& s,
                                        double k_min) {
    std::size_t best = s.size();
    for (std::size_t b = 0; b < s.size() && b < r.k.size(); ++b) {
        if (!std::isfinite(s[b]) || !(r.k[b] > k_min)) continue;
        if (best == s.size() || s[b] > s[best]) best = b;
    }
    if (best == s.size()) return {kNaN, kNaN};
    return {r.k[best], s[best]};
}

// ---------------------------------------------------------------------------------------------
// The S(k) analysis

SkResult compute_sk(const TrajectorySource& src, const SkParams& p) {
    SkResult out;
    out.defaults = structure_defaults(src);
    out.sk = p.sk;
    if (!(out.sk.k_max > 0)) out.sk.k_max = 3 * 2 * M_PI / out.defaults.spacing;
    out.stride = p.stride > 0 ? p.stride : std::max<std::int64_t>(1, (src.n_frames() + 199) / 200);
    StructureFactor acc(out.sk);
    for_each_structure_frame(
        src, out.stride, [&](const StructureFrame& f) { acc.accumulate(f); }, p.progress, "sk");
    out.s = acc.result();
    return out;
}

ResultGroup to_group(const SkResult& res, const Metadata& m) {
    const std::string L = m.length_unit;
    const auto& r = res.s;
    const auto& p = res.sk;
    const auto& ff = res.defaults;
    const auto stride = res.stride;
    ResultGroup g;
    g.name = "sk";
    const std::string ku = "1/" + L;
    g.add("k", r.k, ku);
    g.add("k_edges", r.k_edges, ku);
    g.add("sk", r.sk, "1");
    g.add_int("n_vectors", r.n_vectors, "1");
    g.attrs["k_max"] = p.k_max;
    g.attrs["bins"] = p.bins;
    g.attrs["max_vectors_per_bin"] = p.max_vectors_per_bin;
    g.attrs["frame_stride"] = stride;
    g.attrs["frames"] = r.frames;
    g.attrs["k_set"] = r.k_set;
    g.attrs["geometry"] = std::string(to_string(ff.window.kind));
    g.attrs["taper"] = std::string(ff.window.periodic() ? "none" : "Hann sin^2(pi x/Lx) sin^2(pi y/Ly)");
    if (ff.window.kind == GeometryKind::window_circle)
        g.attrs["region"] = std::string("square inscribed in the circle");
    g.attrs["normalisation"] =
        std::string("Ashcroft-Langreth: <Re rho_a rho_b*> / sqrt(<sum_a w^2><sum_b w^2>)");
    const double kmin = 0.5 * 2 * M_PI / ff.spacing;
    g.attrs["peak_search_k_min"] = kmin;
    const auto [kp, sp] = sk_first_peak(r, r.sk, kmin);
    g.attrs["k_peak"] = kp;
    g.attrs["s_peak"] = sp;
    if (r.n_small > 0 && r.n_large > 0) {
        g.add("sk_small_small", r.sk_ss, "1");
        g.add("sk_small_large", r.sk_sl, "1");
        g.add("sk_large_large", r.sk_ll, "1");
        const auto a = sk_first_peak(r, r.sk_ss, kmin), b = sk_first_peak(r, r.sk_ll, kmin);
        g.attrs["k_peak_small_small"] = a.first;
        g.attrs["k_peak_large_large"] = b.first;
    }
    return g;
}

}  // namespace vibra::analysis
