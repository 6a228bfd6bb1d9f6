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

/// Everything fixed before the frames are read: the region, the k-vectors, the segment length,
/// the frequency grid, the Hann window, the band mask, and k̂ and ê_⊥ = ẑ × k̂ of every k-vector.
struct TvdosPlan {
    CurrentRegion region;
    KVectorSet ks;
    std::size_t T = 0, S = 0, nseg = 0, nw = 0, nf = 0, K = 0;
    double dt = 0, domega = 0;
    std::vector<double> win;
    std::vector<bool> in_band;
    std::vector<double> khx, khy, ex, ey;
};

/// Checks the run against p, resolves p's defaults (segment, omega_max, band_max) and plans it.
TvdosPlan make_plan(const TrajectorySource& src, TransverseVdosParams& p) {
    TvdosPlan pl;
    CurrentsParams cp;
    cp.k_max = p.k_max;
    cp.taper = p.taper;
    pl.region = current_region(src, p.taper);
    const std::int64_t T64 = src.n_frames();
    if (T64 < 8)
        throw InsufficientData("currents: need at least 8 frames (a Welch segment with >= 4 lags), got " +
                               std::to_string(T64));
    pl.T = static_cast<std::size_t>(T64);
    // k-vectors up to the Debye wavenumber of the mean row density (as compute_current_series).
    pl.ks = current_kvectors(
        pl.region, static_cast<double>(src.n_rows()) / static_cast<double>(T64) / pl.region.area, cp);
    if (p.segment == 0) p.segment = std::min<std::int64_t>(T64, 256) / 2 * 2;
    if (p.segment < 2 || p.segment > T64)
        throw ParameterError("tvdos: segment (" + std::to_string(p.segment) + " frames) must be in [2, " +
                             std::to_string(T64) + "]");
    const auto S = static_cast<std::size_t>(p.segment);
    pl.S = S;
    // Whole segments from frame 0, and when frames are left over, one more that ends at the last
    // frame (overlapping the one before, as Welch segments do), so every frame is analysed.
    pl.nseg = (pl.T + S - 1) / S;
    pl.dt = src.meta().frame_interval;
    const double omega_n = std::numbers::pi / pl.dt;
    pl.domega = 2 * std::numbers::pi / (static_cast<double>(S) * pl.dt);
    if (p.omega_max == 0 || p.omega_max > omega_n) p.omega_max = omega_n;
    if (p.band_max == 0 || p.band_max > omega_n) p.band_max = omega_n;
    pl.nw = std::min<std::size_t>(S / 2 + 1,
                                  static_cast<std::size_t>(std::floor(p.omega_max / pl.domega + 1e-9)) + 1);
    pl.nf = S / 2 + 1;
    pl.K = pl.ks.size();
    pl.win.resize(S);
    for (std::size_t t = 0; t < S; ++t) pl.win[t] = detail::hann(t, S);
    pl.in_band.resize(S);
    for (std::size_t b = 0; b < S; ++b) {
        const double w = std::abs(static_cast<double>(b <= S / 2 ? static_cast<std::int64_t>(b)
                                                                 : static_cast<std::int64_t>(b) -
                                                                       static_cast<std::int64_t>(S))) *
                         pl.domega;
        pl.in_band[b] = w >= p.band_min && w <= p.band_max;
    }
    const KVectorSet& ks = pl.ks;
    for (std::size_t q = 0; q < pl.K; ++q) {
        pl.khx.push_back(ks.kx[q] / ks.kabs[q]);
        pl.khy.push_back(ks.ky[q] / ks.kabs[q]);
        pl.ex.push_back(-ks.ky[q] / ks.kabs[q]);
        pl.ey.push_back(ks.kx[q] / ks.kabs[q]);
    }
    return pl;
}

/// One run, one segment at a time (memory: its frames and its currents, whatever the run's
/// length): segment → currents (j_L, j_T of its frames) → spectrum (the band-passed g(k,t)
/// replaces j_T) → per-particle contributions (adjoint Fourier sum) → normalise once every
/// segment is in (A = 1/(Δω ⟨Σ_bins Σ_k |ĵ|²⟩): p_band is accumulated without it, scaled at the end).
class TvdosRun {
public:
    TvdosRun(const TransverseVdosParams& p, TvdosPlan plan)
        : p_(p),
          pl_(std::move(plan)),
          eng_(pl_.ks, p_.fourier),
          pt_(pl_.nseg * pl_.nf, 0.0),
          pl_spec_(pl_.nseg * pl_.nf, 0.0),
          band_raw_(pl_.nseg, 0.0),
          jt_(pl_.K * pl_.S),
          jl_(pl_.K * pl_.S) {
        frames_.reserve(pl_.S);
        r_.params = p;
        r_.dt = pl_.dt;
        r_.domega = pl_.domega;
        r_.n_segments = static_cast<std::int64_t>(pl_.nseg);
        r_.n_vectors = static_cast<std::int64_t>(pl_.K);
        for (std::size_t f = 0; f < pl_.nw; ++f) r_.omega.push_back(static_cast<double>(f) * pl_.domega);
    }

    TransverseVdosResult run(const TrajectorySource& src) {
        r_.segment_offsets.push_back(0);
        detail::stream_frames(
            src,
            [&](std::vector<detail::FrameParticles>& block) {
                for (auto& fp : block) take_frame(fp);
            },
            &r_.velocity_source, p_.velocity);
        if (!(sum_w2_ > 0)) throw FormatError("currents: no particle with a velocity inside the region");
        normalise();
        return std::move(r_);
    }

private:
    /// Counts the frame for the density and the velocity check; files it into its segment.
    void take_frame(detail::FrameParticles& fp) {
        std::vector<double> ax, ay, wt;
        double sw2 = 0;
        detail::weighted_velocities(fp, pl_.region, nullptr, p_.subtract_mean, ax, ay, wt, sw2);
        sum_n_ += static_cast<double>(fp.x.size());
        sum_w2_ += sw2;
        frames_.push_back(std::move(fp));
        if (frames_.size() < pl_.S) return;
        const std::size_t f0 = static_cast<std::size_t>(frames_.front().frame);
        const std::size_t sg = f0 + pl_.S == pl_.T && pl_.T % pl_.S ? pl_.nseg - 1 : f0 / pl_.S;
        process_segment(sg, f0);
        // the last whole segment's frames that the last segment (ending at frame T − 1) shares
        const std::size_t tail = pl_.T % pl_.S, whole = pl_.T / pl_.S;
        if (tail && sg + 1 == whole)
            frames_.erase(frames_.begin(), frames_.begin() + static_cast<std::ptrdiff_t>(tail));
        else
            frames_.clear();
    }

    void process_segment(std::size_t sg, std::size_t first_frame) {
        segment_currents();
        segment_spectra(sg);
        r_.segment_first_frame.push_back(static_cast<std::int64_t>(first_frame));
        if (!p_.per_particle) return;
        particle_table(particle_contributions());
    }

    /// j_L(k,t), j_T(k,t) of the segment's frames.
    void segment_currents() {
        const std::size_t S = pl_.S, K = pl_.K;
        detail::parallel_for(S, p_.threads, [&](std::size_t b, std::size_t e, int) {
            detail::CurrentEngine::Work w;
            std::vector<double> ax, ay, wt;
            std::vector<cplx> jx(K), jy(K);
            for (std::size_t tl = b; tl < e; ++tl) {
                const auto& fp = frames_[tl];
                double sw2 = 0;
                eng_.phases(fp.x.data(), fp.y.data(), fp.x.size(), w);
                detail::weighted_velocities(fp, pl_.region, nullptr, p_.subtract_mean, ax, ay, wt, sw2);
                eng_.forward(ax.data(), ay.data(), jx.data(), jy.data(), w);
                for (std::size_t q = 0; q < K; ++q) {
                    jl_[q * S + tl] = pl_.khx[q] * jx[q] + pl_.khy[q] * jy[q];
                    jt_[q * S + tl] = -pl_.khy[q] * jx[q] + pl_.khx[q] * jy[q];
                }
            }
        });
    }

    /// Raw spectra P_s(f) = Σ_k (|ĵ(f)|² + |ĵ(−f)|²), f = 0 … S/2, for T and L, summed per chunk of
    /// k-vectors (not per thread) and then over chunks in order; with the per-particle map, the
    /// band power of ĵ_T and g(k,t) (its band-passed inverse) in place of j_T.
    void segment_spectra(std::size_t sg) {
        const std::size_t S = pl_.S, nf = pl_.nf;
        const int nc = detail::kReduceChunks;
        std::vector<std::vector<double>> pt_c(static_cast<std::size_t>(nc), std::vector<double>(nf, 0.0));
        std::vector<std::vector<double>> pl_c(static_cast<std::size_t>(nc), std::vector<double>(nf, 0.0));
        std::vector<double> band_c(static_cast<std::size_t>(nc), 0.0);
        detail::parallel_for_chunks(pl_.K, p_.threads, [&](std::size_t b, std::size_t e, int c) {
            detail::FftwBuffer<fftw_complex> a(S), o(S);
            auto& PT = pt_c[static_cast<std::size_t>(c)];
            auto& PL = pl_c[static_cast<std::size_t>(c)];
            auto& BD = band_c[static_cast<std::size_t>(c)];
            for (std::size_t q = b; q < e; ++q)
                for (int which = 0; which < 2; ++which) {
                    cplx* z = (which ? jl_.data() : jt_.data()) + q * S;
                    spectrum_of(z, a, o, which ? PL : PT);
                    if (which == 1 || !p_.per_particle) continue;
                    band_pass(z, a, o, BD);
                }
        });
        for (int c = 0; c < nc; ++c) {
            for (std::size_t f = 0; f < nf; ++f) {
                pt_[sg * nf + f] += pt_c[static_cast<std::size_t>(c)][f];
                pl_spec_[sg * nf + f] += pl_c[static_cast<std::size_t>(c)][f];
            }
            band_raw_[sg] += band_c[static_cast<std::size_t>(c)];
        }
    }

    /// ĵ(ω) = Σ w_t z_t e^{+iωt} into o; adds |ĵ(f)|² + |ĵ(−f)|² to P.
    void spectrum_of(const cplx* z, detail::FftwBuffer<fftw_complex>& a, detail::FftwBuffer<fftw_complex>& o,
                     std::vector<double>& P) const {
        const std::size_t S = pl_.S;
        for (std::size_t t = 0; t < S; ++t) {
            a.p[t][0] = pl_.win[t] * z[t].real();
            a.p[t][1] = pl_.win[t] * z[t].imag();
        }
        fwd_.run(a.p, o.p);
        for (std::size_t f = 0; f < pl_.nf; ++f) {
            const std::size_t fm = (S - f) % S;
            P[f] += o.p[f][0] * o.p[f][0] + o.p[f][1] * o.p[f][1] + o.p[fm][0] * o.p[fm][0] +
                    o.p[fm][1] * o.p[fm][1];
        }
    }

    /// Adds the in-band power of ĵ (in o) to BD; z becomes g(k,t) = Σ_{ω in band} e^{−iωt} ĵ(ω).
    void band_pass(cplx* z, detail::FftwBuffer<fftw_complex>& a, detail::FftwBuffer<fftw_complex>& o,
                   double& BD) const {
        const std::size_t S = pl_.S;
        for (std::size_t f = 0; f < S; ++f) {
            if (pl_.in_band[f]) {
                BD += o.p[f][0] * o.p[f][0] + o.p[f][1] * o.p[f][1];
            } else {
                o.p[f][0] = o.p[f][1] = 0;
            }
        }
        inv_.run(o.p, a.p);
        for (std::size_t t = 0; t < S; ++t) z[t] = cplx(a.p[t][0], a.p[t][1]);  // g(k,t) replaces j_T
    }

    /// p_i of this segment per frame (without A): Δω Re Σ_t w_t Σ_k (a_i·ê_⊥) e^{−ik·r_i} g(k,t).
    std::vector<std::vector<double>> particle_contributions() const {
        const std::size_t S = pl_.S, K = pl_.K;
        std::vector<std::vector<double>> contrib(S);
        detail::parallel_for(S, p_.threads, [&](std::size_t b, std::size_t e, int) {
            detail::CurrentEngine::Work w;
            std::vector<double> ax, ay, wt;
            std::vector<cplx> gx(K), gy(K), fx, fy;
            for (std::size_t tl = b; tl < e; ++tl) {
                const auto& fp = frames_[tl];
                for (std::size_t q = 0; q < K; ++q) {
                    const cplx g = jt_[q * S + tl];
                    gx[q] = pl_.ex[q] * g;
                    gy[q] = pl_.ey[q] * g;
                }
                double sw2 = 0;
                detail::weighted_velocities(fp, pl_.region, nullptr, p_.subtract_mean, ax, ay, wt, sw2);
                eng_.phases(fp.x.data(), fp.y.data(), fp.x.size(), w);
                fx.resize(fp.x.size());
                fy.resize(fp.x.size());
                eng_.adjoint(gx.data(), gy.data(), fx.data(), fy.data(), w);
                auto& out = contrib[tl];
                out.resize(fp.x.size());
                for (std::size_t i = 0; i < fp.x.size(); ++i)
                    out[i] = pl_.domega * pl_.win[tl] * (ax[i] * fx[i].real() + ay[i] * fy[i].real());
            }
        });
        return contrib;
    }

    /// Sums the contributions per particle (in id order) with its mean (unwrapped) position.
    void particle_table(const std::vector<std::vector<double>>& contrib) {
        const bool periodic = pl_.region.geometry.periodic();
        const double Lx = pl_.region.lx, Ly = pl_.region.ly;
        std::map<std::int64_t, Acc> acc;
        for (std::size_t tl = 0; tl < pl_.S; ++tl) {
            const auto& fp = frames_[tl];
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
        const double x0 = pl_.region.x0, y0 = pl_.region.y0;
        for (const auto& [id, a] : acc) {
            r_.particle.push_back(id);
            double x = a.sx / static_cast<double>(a.n), y = a.sy / static_cast<double>(a.n);
            if (periodic) {
                x = x0 + (x - x0 - Lx * std::floor((x - x0) / Lx));
                y = y0 + (y - y0 - Ly * std::floor((y - y0) / Ly));
            }
            r_.x_mean.push_back(x);
            r_.y_mean.push_back(y);
            r_.p_band.push_back(a.p);
            r_.frames_present.push_back(a.n);
        }
        r_.segment_offsets.push_back(static_cast<std::int64_t>(r_.particle.size()));
    }

    /// A = 1/(Δω ⟨Σ_bins Σ_k |ĵ|²⟩), i.e. Σ_f c_f D(ω_f) Δω = 1 with c_f = ½ at ω = 0 and Nyquist.
    double norm_of(const std::vector<double>& P) const {
        double tot = 0;
        for (std::size_t sg = 0; sg < pl_.nseg; ++sg)
            for (std::size_t f = 0; f < pl_.nf; ++f)
                tot += (f == 0 || f == pl_.S / 2 ? 0.5 : 1.0) * P[sg * pl_.nf + f];
        return tot > 0 ? static_cast<double>(pl_.nseg) / (pl_.domega * tot) : 0.0;
    }

    /// Density and Debye levels; D_T, D_L (mean over segments), per segment and reduced; p_band·A.
    void normalise() {
        const std::size_t nseg = pl_.nseg, nw = pl_.nw, nf = pl_.nf;
        TransverseVdosResult& r = r_;
        const double density = sum_n_ / static_cast<double>(pl_.T) / pl_.region.area;
        r.k_debye = std::sqrt(4 * std::numbers::pi * density);
        const double At = norm_of(pt_), Al = norm_of(pl_spec_);
        r.d_t.assign(nw, 0.0);
        r.d_l.assign(nw, 0.0);
        r.d_t_segments.assign(nseg * nw, 0.0);
        for (std::size_t sg = 0; sg < nseg; ++sg)
            for (std::size_t f = 0; f < nw; ++f) {
                r.d_t_segments[sg * nw + f] = At * pt_[sg * nf + f];
                r.d_t[f] += At * pt_[sg * nf + f] / static_cast<double>(nseg);
                r.d_l[f] += Al * pl_spec_[sg * nf + f] / static_cast<double>(nseg);
            }
        for (std::size_t f = 0; f < nw; ++f) {
            r.d_t_reduced.push_back(f ? r.d_t[f] / r.omega[f] : NAN);
            r.d_l_reduced.push_back(f ? r.d_l[f] / r.omega[f] : NAN);
        }
        r.debye_t = p_.c_t > 0 ? 2 / std::pow(p_.c_t * r.k_debye, 2) : NAN;
        r.debye_l = p_.c_l > 0 ? 2 / std::pow(p_.c_l * r.k_debye, 2) : NAN;
        for (std::size_t sg = 0; sg < nseg; ++sg)
            r.band_sum_segments.push_back(At * pl_.domega * band_raw_[sg]);
        if (!p_.per_particle) r.segment_offsets.assign(nseg + 1, 0);
        for (double& v : r.p_band) v *= At;
    }

    const TransverseVdosParams& p_;
    const TvdosPlan pl_;
    detail::ComplexFft fwd_{static_cast<int>(pl_.S), FFTW_BACKWARD};  // ĵ(ω) = Σ w_t j_t e^{+iωt}
    detail::ComplexFft inv_{static_cast<int>(pl_.S), FFTW_FORWARD};   // g(k,t) = Σ_ω e^{−iωt} ĵ(ω)
    detail::CurrentEngine eng_;
    std::vector<double> pt_, pl_spec_, band_raw_;  ///< raw spectra [segment][f] of T and L; band power
    std::vector<cplx> jt_, jl_;                    ///< [k][t] of the current segment
    std::vector<detail::FrameParticles> frames_;   ///< the current segment's frames
    double sum_n_ = 0, sum_w2_ = 0;
    TransverseVdosResult r_;
};

}  // namespace

TransverseVdosResult compute_transverse_vdos(const TrajectorySource& src, TransverseVdosParams p) {
    p.validate();
    TvdosPlan plan = make_plan(src, p);
    return TvdosRun(p, std::move(plan)).run(src);
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
