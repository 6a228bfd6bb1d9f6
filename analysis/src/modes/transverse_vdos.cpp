// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/analysis/transverse_vdos.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numbers>

#include "detail/modes_engine.hpp"
#include "vibra/analysis/currents.hpp"
#include "vibra/core/error.hpp"
#include "vibra/core/periodic.hpp"

namespace vibra::analysis {

using detail::cplx;

void TransverseVdosParams::validate() const {
    auto bad = [](const std::string& f, double v) {
        throw ParameterError("TransverseVdosParams." + f + " is out of range: " + std::to_string(v));
    };
    if (!(k_max >= 0)) bad("k_max", k_max);
    if (segment < 0 || segment == 1 || segment % 2 != 0)
        bad("segment (0 or even >= 2)", static_cast<double>(segment));
    if (!(band_min >= 0)) bad("band_min", band_min);
    if (!(band_max >= 0) || (band_max > 0 && band_max < band_min)) bad("band_max", band_max);
    if (!(omega_max >= 0)) bad("omega_max", omega_max);
    if (!(c_t >= 0)) bad("c_t", c_t);
    if (!(c_l >= 0)) bad("c_l", c_l);
    if (!(taper >= 0 && taper <= 1)) bad("taper", taper);
    if (threads < 1) bad("threads", threads);
}

namespace {

/// Per-particle accumulator of one segment: raw band power (before the factor A·Δω), positions.
struct Acc {
    double p = 0, sx = 0, sy = 0, rx = 0, ry = 0;
    std::int64_t n = 0;
};

}  // namespace

TransverseVdosResult compute_transverse_vdos(const TrajectorySource& src, TransverseVdosParams p) {
    p.validate();
    CurrentsParams cp;
    cp.k_max = p.k_max;
    cp.taper = p.taper;
    const CurrentRegion region = current_region(src, p.taper);
    const std::int64_t T64 = src.n_frames();
    if (T64 < 8)
        throw InsufficientData("currents: need at least 8 frames (a Welch segment with >= 4 lags), got " +
                               std::to_string(T64));
    const auto T = static_cast<std::size_t>(T64);
    // k-vectors up to the Debye wavenumber of the mean row density (as compute_current_series).
    const KVectorSet ks = current_kvectors(
        region, static_cast<double>(src.n_rows()) / static_cast<double>(T64) / region.area, cp);
    if (p.segment == 0) p.segment = std::min<std::int64_t>(T64, 256) / 2 * 2;
    if (p.segment < 2 || p.segment > T64)
        throw ParameterError("tvdos: segment (" + std::to_string(p.segment) + " frames) must be in [2, " +
                             std::to_string(T64) + "]");
    const auto S = static_cast<std::size_t>(p.segment);
    const std::size_t nseg = T / S;
    const double dt = src.meta().frame_interval, omega_n = std::numbers::pi / dt;
    const double domega = 2 * std::numbers::pi / (static_cast<double>(S) * dt);
    if (p.omega_max == 0 || p.omega_max > omega_n) p.omega_max = omega_n;
    if (p.band_max == 0 || p.band_max > omega_n) p.band_max = omega_n;
    const std::size_t nw = std::min<std::size_t>(
        S / 2 + 1, static_cast<std::size_t>(std::floor(p.omega_max / domega + 1e-9)) + 1);
    const std::size_t nf = S / 2 + 1;
    const std::size_t K = ks.size();

    TransverseVdosResult r;
    r.params = p;
    r.dt = dt;
    r.domega = domega;
    r.n_segments = static_cast<std::int64_t>(nseg);
    r.n_vectors = static_cast<std::int64_t>(K);
    for (std::size_t f = 0; f < nw; ++f) r.omega.push_back(static_cast<double>(f) * domega);

    std::vector<double> win(S);
    for (std::size_t t = 0; t < S; ++t) win[t] = detail::hann(t, S);
    std::vector<bool> in_band(S);
    for (std::size_t b = 0; b < S; ++b) {
        const double w = std::abs(static_cast<double>(b <= S / 2 ? static_cast<std::int64_t>(b)
                                                                 : static_cast<std::int64_t>(b) -
                                                                       static_cast<std::int64_t>(S))) *
                         domega;
        in_band[b] = w >= p.band_min && w <= p.band_max;
    }
    detail::ComplexFft fwd(static_cast<int>(S), FFTW_BACKWARD);  // ĵ(ω) = Σ w_t j_t e^{+iωt}
    detail::ComplexFft inv(static_cast<int>(S), FFTW_FORWARD);   // g(k,t) = Σ_ω e^{−iωt} ĵ(ω)
    // raw spectra P_s(f) = Σ_k (|ĵ(f)|² + |ĵ(−f)|²), f = 0 … S/2, for T and L
    std::vector<double> pt(nseg * nf, 0.0), pl(nseg * nf, 0.0), band_raw(nseg, 0.0);
    const int nt = p.threads,
              nc = detail::kReduceChunks;  // partial sums per chunk of k-vectors, not per thread
    detail::CurrentEngine eng(ks);
    std::vector<double> khx(K), khy(K), ex(K), ey(K);
    for (std::size_t q = 0; q < K; ++q) {
        khx[q] = ks.kx[q] / ks.kabs[q];
        khy[q] = ks.ky[q] / ks.kabs[q];
        ex[q] = -ks.ky[q] / ks.kabs[q];
        ey[q] = ks.kx[q] / ks.kabs[q];
    }
    const bool periodic = region.geometry.periodic();
    const double Lx = region.lx, Ly = region.ly;
    // One segment at a time (memory: its frames and its currents, whatever the run's length):
    // j_L, j_T of its frames; their spectra; the band-passed g(k,t) replaces j_T; the per-particle
    // contributions by the adjoint Fourier sum. A = 1/(Δω ⟨Σ_bins Σ_k |ĵ|²⟩) needs every segment:
    // p_band is accumulated without it and scaled at the end.
    std::vector<cplx> jt(K * S), jl(K * S);
    std::vector<detail::FrameParticles> frames;
    frames.reserve(S);
    const auto process = [&](std::size_t sg) {
        detail::parallel_for(S, nt, [&](std::size_t b, std::size_t e, int) {
            detail::CurrentEngine::Work w;
            std::vector<double> ax, ay, wt;
            std::vector<cplx> jx(K), jy(K);
            for (std::size_t tl = b; tl < e; ++tl) {
                const auto& fp = frames[tl];
                double sw2 = 0;
                eng.phases(fp.x.data(), fp.y.data(), fp.x.size(), w);
                detail::weighted_velocities(fp, region, nullptr, p.subtract_mean, ax, ay, wt, sw2);
                eng.forward(ax.data(), ay.data(), jx.data(), jy.data(), w);
                for (std::size_t q = 0; q < K; ++q) {
                    jl[q * S + tl] = khx[q] * jx[q] + khy[q] * jy[q];
                    jt[q * S + tl] = -khy[q] * jx[q] + khx[q] * jy[q];
                }
            }
        });
        std::vector<std::vector<double>> pt_c(static_cast<std::size_t>(nc), std::vector<double>(nf, 0.0));
        std::vector<std::vector<double>> pl_c(static_cast<std::size_t>(nc), std::vector<double>(nf, 0.0));
        std::vector<double> band_c(static_cast<std::size_t>(nc), 0.0);
        detail::parallel_for_chunks(K, nt, [&](std::size_t b, std::size_t e, int c) {
            detail::FftwBuffer<fftw_complex> a(S), o(S);
            auto& PT = pt_c[static_cast<std::size_t>(c)];
            auto& PL = pl_c[static_cast<std::size_t>(c)];
            auto& BD = band_c[static_cast<std::size_t>(c)];
            for (std::size_t q = b; q < e; ++q)
                for (int which = 0; which < 2; ++which) {
                    cplx* z = (which ? jl.data() : jt.data()) + q * S;
                    for (std::size_t t = 0; t < S; ++t) {
                        a.p[t][0] = win[t] * z[t].real();
                        a.p[t][1] = win[t] * z[t].imag();
                    }
                    fwd.run(a.p, o.p);
                    auto& P = which ? PL : PT;
                    for (std::size_t f = 0; f < nf; ++f) {
                        const std::size_t fm = (S - f) % S;
                        P[f] += o.p[f][0] * o.p[f][0] + o.p[f][1] * o.p[f][1] + o.p[fm][0] * o.p[fm][0] +
                                o.p[fm][1] * o.p[fm][1];
                    }
                    if (which == 1 || !p.per_particle) continue;
                    for (std::size_t f = 0; f < S; ++f) {
                        if (in_band[f]) {
                            BD += o.p[f][0] * o.p[f][0] + o.p[f][1] * o.p[f][1];
                        } else {
                            o.p[f][0] = o.p[f][1] = 0;
                        }
                    }
                    inv.run(o.p, a.p);
                    for (std::size_t t = 0; t < S; ++t)
                        z[t] = cplx(a.p[t][0], a.p[t][1]);  // g(k,t) replaces j_T
                }
        });
        for (int c = 0; c < nc; ++c) {
            for (std::size_t f = 0; f < nf; ++f) {
                pt[sg * nf + f] += pt_c[static_cast<std::size_t>(c)][f];
                pl[sg * nf + f] += pl_c[static_cast<std::size_t>(c)][f];
            }
            band_raw[sg] += band_c[static_cast<std::size_t>(c)];
        }
        r.segment_first_frame.push_back(static_cast<std::int64_t>(sg * S));
        if (!p.per_particle) return;
        // p_i of this segment (without A): Δω Re Σ_t w_t Σ_k (a_i·ê_⊥) e^{−ik·r_i} g(k,t)
        std::vector<std::vector<double>> contrib(S);
        detail::parallel_for(S, nt, [&](std::size_t b, std::size_t e, int) {
            detail::CurrentEngine::Work w;
            std::vector<double> ax, ay, wt;
            std::vector<cplx> gx(K), gy(K), fx, fy;
            for (std::size_t tl = b; tl < e; ++tl) {
                const auto& fp = frames[tl];
                for (std::size_t q = 0; q < K; ++q) {
                    const cplx g = jt[q * S + tl];
                    gx[q] = ex[q] * g;
                    gy[q] = ey[q] * g;
                }
                double sw2 = 0;
                detail::weighted_velocities(fp, region, nullptr, p.subtract_mean, ax, ay, wt, sw2);
                eng.phases(fp.x.data(), fp.y.data(), fp.x.size(), w);
                fx.resize(fp.x.size());
                fy.resize(fp.x.size());
                eng.adjoint(gx.data(), gy.data(), fx.data(), fy.data(), w);
                auto& out = contrib[tl];
                out.resize(fp.x.size());
                for (std::size_t i = 0; i < fp.x.size(); ++i)
                    out[i] = domega * win[tl] * (ax[i] * fx[i].real() + ay[i] * fy[i].real());
            }
        });
        std::map<std::int64_t, Acc> acc;
        for (std::size_t tl = 0; tl < S; ++tl) {
            const auto& fp = frames[tl];
            for (std::size_t i = 0; i < fp.x.size(); ++i) {
                Acc& a = acc[fp.id[i]];
                a.p += contrib[tl][i];
                double x = fp.x[i], y = fp.y[i];
                if (a.n == 0) {
                    a.rx = x;
                    a.ry = y;
                } else if (periodic) {  // unwrap relative to the first position in the segment
                    x = a.rx + minimum_image(x - a.rx, Lx);
                    y = a.ry + minimum_image(y - a.ry, Ly);
                }
                a.sx += x;
                a.sy += y;
                ++a.n;
            }
        }
        for (const auto& [id, a] : acc) {
            r.particle.push_back(id);
            double x = a.sx / static_cast<double>(a.n), y = a.sy / static_cast<double>(a.n);
            if (periodic) {
                x = region.x0 + (x - region.x0 - Lx * std::floor((x - region.x0) / Lx));
                y = region.y0 + (y - region.y0 - Ly * std::floor((y - region.y0) / Ly));
            }
            r.x_mean.push_back(x);
            r.y_mean.push_back(y);
            r.p_band.push_back(a.p);
            r.frames_present.push_back(a.n);
        }
        r.segment_offsets.push_back(static_cast<std::int64_t>(r.particle.size()));
    };
    double sum_n = 0, sum_w2 = 0;
    r.segment_offsets.push_back(0);
    detail::stream_frames(
        src,
        [&](std::vector<detail::FrameParticles>& block) {
            for (auto& fp : block) {
                std::vector<double> ax, ay, wt;
                double sw2 = 0;
                detail::weighted_velocities(fp, region, nullptr, p.subtract_mean, ax, ay, wt, sw2);
                sum_n += static_cast<double>(fp.x.size());
                sum_w2 += sw2;
                if (static_cast<std::size_t>(fp.frame) >= nseg * S) continue;  // after the last whole segment
                frames.push_back(std::move(fp));
                if (frames.size() == S) {
                    process(static_cast<std::size_t>(frames.front().frame) / S);
                    frames.clear();
                }
            }
        },
        &r.velocity_source, p.velocity);
    if (!(sum_w2 > 0)) throw FormatError("currents: no particle with a velocity inside the region");
    const double density = sum_n / static_cast<double>(T) / region.area;
    r.k_debye = std::sqrt(4 * std::numbers::pi * density);
    // normalisation: Σ_f c_f D(ω_f) Δω = 1 with c_f = ½ at ω = 0 and Nyquist, i.e. A = 1/(Δω ⟨Σ_bins Σ_k |ĵ|²⟩)
    auto norm_of = [&](const std::vector<double>& P) {
        double tot = 0;
        for (std::size_t sg = 0; sg < nseg; ++sg)
            for (std::size_t f = 0; f < nf; ++f) tot += (f == 0 || f == S / 2 ? 0.5 : 1.0) * P[sg * nf + f];
        return tot > 0 ? static_cast<double>(nseg) / (domega * tot) : 0.0;
    };
    const double At = norm_of(pt), Al = norm_of(pl);
    r.d_t.assign(nw, 0.0);
    r.d_l.assign(nw, 0.0);
    r.d_t_segments.assign(nseg * nw, 0.0);
    for (std::size_t sg = 0; sg < nseg; ++sg)
        for (std::size_t f = 0; f < nw; ++f) {
            r.d_t_segments[sg * nw + f] = At * pt[sg * nf + f];
            r.d_t[f] += At * pt[sg * nf + f] / static_cast<double>(nseg);
            r.d_l[f] += Al * pl[sg * nf + f] / static_cast<double>(nseg);
        }
    for (std::size_t f = 0; f < nw; ++f) {
        r.d_t_reduced.push_back(f ? r.d_t[f] / r.omega[f] : NAN);
        r.d_l_reduced.push_back(f ? r.d_l[f] / r.omega[f] : NAN);
    }
    r.debye_t = p.c_t > 0 ? 2 / std::pow(p.c_t * r.k_debye, 2) : NAN;
    r.debye_l = p.c_l > 0 ? 2 / std::pow(p.c_l * r.k_debye, 2) : NAN;
    for (std::size_t sg = 0; sg < nseg; ++sg) r.band_sum_segments.push_back(At * domega * band_raw[sg]);
    if (!p.per_particle) r.segment_offsets.assign(nseg + 1, 0);
    for (double& v : r.p_band) v *= At;
    return r;
}

ResultGroup to_group(const TransverseVdosResult& r, const Metadata& meta) {
    const std::string L = meta.length_unit, T = meta.time_unit;
    ResultGroup g;
    g.name = "tvdos";
    const std::size_t nw = r.omega.size();
    g.add("omega", r.omega, "rad/" + T);
    g.add("d_t", r.d_t, T + "/rad");
    g.add("d_l", r.d_l, T + "/rad");
    g.add("d_t_reduced", r.d_t_reduced, T + "^2/rad^2");
    g.add("d_l_reduced", r.d_l_reduced, T + "^2/rad^2");
    g.add2d("d_t_segments", r.d_t_segments, static_cast<std::size_t>(r.n_segments), nw, T + "/rad");
    g.add("band_sum_segments", r.band_sum_segments, "1");
    // ragged per segment × particle table (docs/hdf5-layout.md): columns + segment_offsets
    ResultGroup t;
    t.name = "particles";
    t.add_int("segment_offsets", r.segment_offsets, "rows");
    t.add_int("segment_first_frame", r.segment_first_frame, "frame");
    t.add_int("particle", r.particle, "1");
    t.add_int("frames_present", r.frames_present, "frame");
    t.add("x_mean", r.x_mean, L);
    t.add("y_mean", r.y_mean, L);
    t.add("p_band", r.p_band, "1");
    t.attrs["band_min"] = r.params.band_min;
    t.attrs["band_max"] = r.params.band_max;
    t.attrs["segment_frames"] = r.params.segment;
    t.attrs["layout"] = std::string(
        "rows of segment s: [segment_offsets[s], segment_offsets[s+1]); p_band sums to band_sum_segments[s]");
    g.groups.push_back(std::move(t));
    const auto& p = r.params;
    g.attrs["k_max"] = p.k_max > 0 ? p.k_max : r.k_debye;
    g.attrs["k_debye"] = r.k_debye;
    g.attrs["n_vectors"] = r.n_vectors;
    g.attrs["segment_frames"] = p.segment;
    g.attrs["n_segments"] = r.n_segments;
    g.attrs["band_min"] = p.band_min;
    g.attrs["band_max"] = p.band_max;
    g.attrs["omega_max"] = p.omega_max;
    g.attrs["domega"] = r.domega;
    g.attrs["c_t"] = p.c_t;
    g.attrs["c_l"] = p.c_l;
    g.attrs["debye_level_t"] = r.debye_t;
    g.attrs["debye_level_l"] = r.debye_l;
    g.attrs["taper"] = p.taper;
    g.attrs["subtract_mean"] = std::int64_t{p.subtract_mean};
    g.attrs["window"] = std::string("hann, non-overlapping segments");
    g.attrs["velocity_source"] = r.velocity_source;
    g.attrs["normalisation"] = std::string(
        "sum_f c_f D(w_f) dw = 1 (c_f = 1/2 at 0 and Nyquist), number-weighted; p_band sums over particles "
        "to band_sum_segments; Debye level of D/w = 2/(c k_D)^2");
    g.attrs["layout"] = std::string(
        "per-particle table in sub-group particles: rows of segment s are [segment_offsets[s], "
        "segment_offsets[s+1]) of particle, x_mean, y_mean, p_band, frames_present");
    g.attrs["units"] = std::string("L=") + L + ", T=" + T;
    return g;
}

}  // namespace vibra::analysis
