// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/analysis/currents.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numbers>
#include <string>

#include "detail/modes_engine.hpp"
#include "detail/temp_file.hpp"
#include "vibra/core/error.hpp"

namespace vibra::analysis {

using detail::cplx;

void CurrentsParams::validate() const {
    auto bad = [](const std::string& f, double v) {
        throw ParameterError("CurrentsParams." + f + " is out of range: " + std::to_string(v));
    };
    if (!(k_max >= 0)) bad("k_max", k_max);
    if (!(k_min >= 0)) bad("k_min", k_min);
    if (!(dk >= 0)) bad("dk", dk);
    if (segment < 0 || segment == 1 || segment % 2 != 0)
        bad("segment (0 or even >= 2)", static_cast<double>(segment));
    if (max_lag < 0) bad("max_lag", static_cast<double>(max_lag));
    if (!(omega_max >= 0)) bad("omega_max", omega_max);
    if (blocks < 0) bad("blocks", static_cast<double>(blocks));
    if (!(taper >= 0 && taper <= 1)) bad("taper", taper);
    if (threads < 1) bad("threads", threads);
    if (memory_bytes < 0) bad("memory_bytes", static_cast<double>(memory_bytes));
    if (block_rows < 1) bad("block_rows", static_cast<double>(block_rows));
}

// ------------------------------------------------------------------ series storage
struct CurrentSeries::File {
    detail::TempFile tmp;
    std::size_t K = 0, T = 0;
    File(const std::string& dir, std::size_t k, std::size_t t)
        : tmp(dir, "vibra-currents", "the current series j(k,t)"), K(k), T(t) {}
    std::int64_t offset(int which, std::size_t q, std::size_t t) const {
        return static_cast<std::int64_t>(((static_cast<std::size_t>(which) * K + q) * T + t) * sizeof(cplx));
    }
};

const cplx* CurrentSeries::series(Kind which, std::size_t q, std::vector<cplx>& buf) const {
    const auto T = static_cast<std::size_t>(n_frames);
    if (!file) {
        const auto& v = which == L ? jl : which == T_ ? jt : which == L_mass ? jl_mass : jt_mass;
        return v.data() + q * T;
    }
    buf.resize(T);
    file->tmp.read(file->offset(which, q, 0), buf.data(), T * sizeof(cplx));
    return buf.data();
}

void CurrentSeries::frames(Kind which, std::size_t t0, std::size_t n, std::vector<cplx>& buf) const {
    const std::size_t K = ks.size();
    const auto T = static_cast<std::size_t>(n_frames);
    buf.resize(K * n);
    for (std::size_t q = 0; q < K; ++q) {
        if (!file) {
            const auto& v = which == L ? jl : which == T_ ? jt : which == L_mass ? jl_mass : jt_mass;
            std::copy(v.begin() + static_cast<std::ptrdiff_t>(q * T + t0),
                      v.begin() + static_cast<std::ptrdiff_t>(q * T + t0 + n),
                      buf.begin() + static_cast<std::ptrdiff_t>(q * n));
        } else {
            file->tmp.read(file->offset(which, q, t0), buf.data() + q * n, n * sizeof(cplx));
        }
    }
}

namespace {

/// Scratch of frame_currents (one per thread).
struct FrameWork {
    detail::CurrentEngine::Work w;
    std::vector<double> ax, ay, wt;
    std::vector<cplx> jx, jy;
};

/// j_L, j_T of one frame for every k-vector: out[0][q·stride] = j_L, out[1][q·stride] = j_T and,
/// with masses, out[2], out[3] the mass-weighted ones; sw2, sw2m the frame's Σw² and Σw²m.
void frame_currents(const detail::CurrentEngine& eng, const detail::FrameParticles& fp,
                    const CurrentRegion& region, const std::vector<double>* masses, bool subtract_mean,
                    const std::vector<double>& khx, const std::vector<double>& khy, std::size_t stride,
                    cplx* const out[4], double& sw2, double& sw2m, FrameWork& fw) {
    const std::size_t K = khx.size();
    fw.jx.resize(K);
    fw.jy.resize(K);
    eng.phases(fp.x.data(), fp.y.data(), fp.x.size(), fw.w);
    for (int pass = 0; pass < (masses ? 2 : 1); ++pass) {
        double w2 = 0;
        detail::weighted_velocities(fp, region, pass ? masses : nullptr, subtract_mean, fw.ax, fw.ay, fw.wt,
                                    w2);
        (pass ? sw2m : sw2) = w2;
        eng.forward(fw.ax.data(), fw.ay.data(), fw.jx.data(), fw.jy.data(), fw.w);
        cplx* JL = out[2 * pass];
        cplx* JT = out[2 * pass + 1];
        for (std::size_t q = 0; q < K; ++q) {
            JL[q * stride] = khx[q] * fw.jx[q] + khy[q] * fw.jy[q];
            JT[q * stride] = -khy[q] * fw.jx[q] + khx[q] * fw.jy[q];
        }
    }
}

double tukey(double u, double a) {
    if (u < 0 || u > 1) return 0;
    if (a <= 0) return 1;
    if (u < a / 2) return 0.5 * (1 - std::cos(2 * std::numbers::pi * u / a));
    if (u > 1 - a / 2) return 0.5 * (1 - std::cos(2 * std::numbers::pi * (1 - u) / a));
    return 1;
}
}  // namespace

double CurrentRegion::weight(double x, double y) const {
    switch (geometry.kind) {
        case GeometryKind::periodic_box:
            return 1.0;
        case GeometryKind::window_circle: {
            const double r = std::hypot(x - geometry.cx, y - geometry.cy);
            if (r > geometry.r) return 0;
            // radial taper: 1 inside, cosine roll-off over the outer taper/2 of the radius
            return tukey(0.5 + 0.5 * r / geometry.r, taper);
        }
        default:
            return tukey((x - x0) / lx, taper) * tukey((y - y0) / ly, taper);
    }
}

CurrentRegion current_region(const TrajectorySource& src, double taper) {
    CurrentRegion r;
    const Geometry& g = src.meta().geometry;
    r.geometry = g;
    switch (g.kind) {
        case GeometryKind::periodic_box:
        case GeometryKind::window_rect:
            r.x0 = g.x0;
            r.y0 = g.y0;
            r.lx = g.lx();
            r.ly = g.ly();
            r.area = g.area();
            break;
        case GeometryKind::window_circle:
            r.x0 = g.cx - g.r;
            r.y0 = g.cy - g.r;
            r.lx = r.ly = 2 * g.r;
            r.area = g.area();
            break;
        case GeometryKind::unbounded: {
            const std::int64_t n = std::min<std::int64_t>(
                src.n_frames(), std::max<std::int64_t>(1, frames_per_block(src, 1 << 18)));
            Trajectory t = src.read_frames(0, n);
            double xa = INFINITY, xb = -INFINITY, ya = INFINITY, yb = -INFINITY;
            for (std::size_t i = 0; i < t.rows.size(); ++i) {
                if (!std::isfinite(t.rows.x[i]) || !std::isfinite(t.rows.y[i])) continue;
                xa = std::min(xa, t.rows.x[i]);
                xb = std::max(xb, t.rows.x[i]);
                ya = std::min(ya, t.rows.y[i]);
                yb = std::max(yb, t.rows.y[i]);
            }
            if (!(xb > xa && yb > ya))
                throw FormatError(
                    "currents: cannot infer a region from the first frames (no spread of positions)");
            r.geometry = Geometry::rect(xa, ya, xb, yb);
            r.x0 = xa;
            r.y0 = ya;
            r.lx = xb - xa;
            r.ly = yb - ya;
            r.area = r.lx * r.ly;
            break;
        }
    }
    if (!(r.lx > 0 && r.ly > 0)) throw FormatError("currents: geometry has zero extent (lx or ly <= 0)");
    r.taper = g.periodic() ? 0.0 : taper;
    return r;
}

KVectorSet current_kvectors(const CurrentRegion& reg, double density, const CurrentsParams& p) {
    KVectorSet ks;
    ks.x0 = reg.x0;
    ks.y0 = reg.y0;
    ks.lx = reg.lx;
    ks.ly = reg.ly;
    const double dkx = 2 * std::numbers::pi / reg.lx, dky = 2 * std::numbers::pi / reg.ly;
    double kmax = p.k_max > 0 ? p.k_max : std::sqrt(4 * std::numbers::pi * density);
    if (!(kmax > 0)) throw ParameterError("currents: k_max is 0 (no density to derive the Debye wavenumber)");
    ks.dk = p.dk > 0 ? p.dk : std::max(dkx, dky);
    ks.n_max = static_cast<int>(std::floor(kmax / dkx + 1e-9));
    ks.m_max = static_cast<int>(std::floor(kmax / dky + 1e-9));
    std::map<int, std::vector<std::size_t>> shells;
    for (int n = 0; n <= ks.n_max; ++n)
        for (int m = -ks.m_max; m <= ks.m_max; ++m) {
            if (n == 0 && m <= 0) continue;
            const double kx = n * dkx, ky = m * dky, k = std::hypot(kx, ky);
            if (k > kmax * (1 + 1e-12) || k < p.k_min) continue;
            ks.n.push_back(n);
            ks.m.push_back(m);
            ks.kx.push_back(kx);
            ks.ky.push_back(ky);
            ks.kabs.push_back(k);
            shells[static_cast<int>(std::lround(k / ks.dk))].push_back(ks.n.size() - 1);
        }
    if (ks.n.empty())
        throw ParameterError("currents: no k-vector with k_min <= |k| <= k_max = " + std::to_string(kmax));
    ks.shell.assign(ks.n.size(), 0);
    for (auto& [b, list] : shells) {
        double s = 0;
        for (auto q : list) {
            ks.shell[q] = static_cast<int>(ks.shell_k.size());
            s += ks.kabs[q];
        }
        ks.shell_k.push_back(s / static_cast<double>(list.size()));
        ks.shell_count.push_back(static_cast<std::int64_t>(list.size()));
    }
    return ks;
}

std::vector<double> species_masses(const Metadata& meta) {
    std::vector<double> m;
    if (meta.species_diameters.empty() || !(meta.species_diameters[0] > 0)) return m;
    for (double d : meta.species_diameters)
        m.push_back((d / meta.species_diameters[0]) * (d / meta.species_diameters[0]));
    return m;
}

namespace {

/// A series without its values: region, k-vectors (from the mean row density), frames, masses.
CurrentSeries series_header(const TrajectorySource& src, const CurrentsParams& p,
                            std::vector<double>& masses) {
    CurrentSeries s;
    s.region = current_region(src, p.taper);
    s.n_frames = src.n_frames();
    s.dt = src.meta().frame_interval;
    if (s.n_frames < 8)
        throw InsufficientData("currents: need at least 8 frames (a Welch segment with >= 4 lags), got " +
                               std::to_string(s.n_frames));
    // Density from the row count (mean particles per frame inside the region).
    const double mean_rows = static_cast<double>(src.n_rows()) / static_cast<double>(s.n_frames);
    const double density = mean_rows / s.region.area;
    s.ks = current_kvectors(s.region, density, p);
    masses = species_masses(src.meta());
    s.has_mass = p.mass_weighted && !masses.empty();
    return s;
}

/// Bytes of the whole series j(k,t) of a run.
double series_bytes(const CurrentSeries& s) {
    return static_cast<double>(s.ks.size()) * static_cast<double>(s.n_frames) *
           static_cast<double>((s.has_mass ? 4 : 2) * sizeof(cplx));
}

}  // namespace

CurrentSeries compute_current_series(const TrajectorySource& src, const CurrentsParams& p) {
    p.validate();
    std::vector<double> masses;
    CurrentSeries s = series_header(src, p, masses);
    const std::size_t K = s.ks.size();
    const auto T = static_cast<std::size_t>(s.n_frames);
    const std::size_t n_series = s.has_mass ? 4 : 2;
    // In memory when the series fit the budget; else chunks of Fc frames (a multiple of
    // stream_frames' block, so no block straddles two chunks) written k-major to a temporary file.
    const bool spill = series_bytes(s) > static_cast<double>(p.memory_bytes);
    std::size_t Fc = T;  // frames held in memory per series and k-vector
    if (spill) {
        const auto fpb =
            static_cast<std::size_t>(std::max<std::int64_t>(1, frames_per_block(src, p.block_rows)));
        const double per_frame = static_cast<double>(K * n_series * sizeof(cplx));
        const auto fit = static_cast<std::size_t>(static_cast<double>(p.memory_bytes / 2) / per_frame /
                                                  static_cast<double>(fpb));
        Fc = std::min(T, fpb * std::max<std::size_t>(1, fit));
        s.file = std::make_shared<CurrentSeries::File>(p.temp_dir, K, T);
    }
    s.jl.assign(K * Fc, 0.0);
    s.jt.assign(K * Fc, 0.0);
    if (s.has_mass) {
        s.jl_mass.assign(K * Fc, 0.0);
        s.jt_mass.assign(K * Fc, 0.0);
    }
    const auto flush = [&](std::size_t c0, std::size_t n) {
        const std::vector<cplx>* v[4] = {&s.jl, &s.jt, &s.jl_mass, &s.jt_mass};
        for (std::size_t w = 0; w < n_series; ++w)
            for (std::size_t q = 0; q < K; ++q)
                s.file->tmp.write(s.file->offset(static_cast<int>(w), q, c0), v[w]->data() + q * Fc,
                                  n * sizeof(cplx));
    };
    detail::CurrentEngine eng(s.ks, p.fourier);
    std::vector<double> khx(K), khy(K);
    for (std::size_t q = 0; q < K; ++q) {
        khx[q] = s.ks.kx[q] / s.ks.kabs[q];
        khy[q] = s.ks.ky[q] / s.ks.kabs[q];
    }
    double sum_n = 0, sum_w2 = 0, sum_w2m = 0;
    const int nt = p.threads;
    detail::stream_frames(
        src,
        [&](std::vector<detail::FrameParticles>& block) {
            std::vector<double> bn(block.size()), bw(block.size()), bwm(block.size());
            detail::parallel_for(block.size(), nt, [&](std::size_t b, std::size_t e, int) {
                FrameWork fw;
                for (std::size_t f = b; f < e; ++f) {
                    const auto& fp = block[f];
                    const auto t = static_cast<std::size_t>(fp.frame) % Fc;  // = frame when in memory
                    bn[f] = static_cast<double>(fp.x.size());
                    cplx* out[4] = {s.jl.data() + t, s.jt.data() + t,
                                    s.has_mass ? s.jl_mass.data() + t : nullptr,
                                    s.has_mass ? s.jt_mass.data() + t : nullptr};
                    frame_currents(eng, fp, s.region, s.has_mass ? &masses : nullptr, p.subtract_mean, khx,
                                   khy, Fc, out, bw[f], bwm[f], fw);
                }
            });
            for (std::size_t f = 0; f < block.size(); ++f) {
                sum_n += bn[f];
                sum_w2 += bw[f];
                sum_w2m += bwm[f];
            }
            if (spill && !block.empty()) {
                const auto end = static_cast<std::size_t>(block.back().frame) + 1;
                if (end % Fc == 0 || end == T) flush((end - 1) / Fc * Fc, end - (end - 1) / Fc * Fc);
            }
        },
        &s.velocity_source, p.velocity, p.block_rows);
    if (spill) {  // the series live in the file now
        s.jl = {}, s.jt = {}, s.jl_mass = {}, s.jt_mass = {};
    }
    s.mean_n = sum_n / static_cast<double>(T);
    s.density = s.mean_n / s.region.area;
    s.norm = sum_w2 / static_cast<double>(T);
    s.norm_mass = sum_w2m / static_cast<double>(T);
    if (!(s.norm > 0)) throw FormatError("currents: no particle with a velocity inside the region");
    return s;
}

double spectral_peak(const double* y, std::size_t n, double domega) {
    if (n == 0) return NAN;
    std::size_t j = 0;
    for (std::size_t i = 1; i < n; ++i)
        if (y[i] > y[j]) j = i;
    if (j == 0 || j + 1 >= n) return static_cast<double>(j) * domega;
    const double a = y[j - 1], b = y[j], c = y[j + 1];
    const double den = a - 2 * b + c;
    const double off = den < 0 ? 0.5 * (a - c) / den : 0.0;
    return (static_cast<double>(j) + std::clamp(off, -0.5, 0.5)) * domega;
}

namespace {

/// The picked parameters of a currents run over n_frames frames and what follows from them.
struct Plan {
    CurrentsParams p;
    std::size_t T = 0, S = 0, L = 0, n_omega = 0, B = 0, TB = 0;
    double domega = 0;
};

Plan plan_currents(const CurrentsParams& p0, std::int64_t n_frames, double dt) {
    Plan pl;
    CurrentsParams& p = pl.p;
    p = p0;
    const auto T = static_cast<std::size_t>(n_frames);
    if (p.segment == 0) p.segment = std::min<std::int64_t>(n_frames, 256) / 2 * 2;
    if (p.segment < 2) throw ParameterError("currents: segment must be >= 2 frames");
    if (p.segment > n_frames)
        throw ParameterError("currents: segment (" + std::to_string(p.segment) + " frames) exceeds the " +
                             std::to_string(n_frames) + " frames");
    if (p.max_lag == 0) p.max_lag = p.segment / 2;
    p.max_lag = std::min<std::int64_t>(p.max_lag, n_frames);
    const double omega_n = std::numbers::pi / dt;
    if (p.omega_max == 0 || p.omega_max > omega_n) p.omega_max = omega_n;
    const auto S = static_cast<std::size_t>(p.segment);
    const auto L = static_cast<std::size_t>(p.max_lag);
    const double domega = 2 * std::numbers::pi / (static_cast<double>(S) * dt);
    const std::size_t n_omega = std::min<std::size_t>(
        S / 2 + 1, static_cast<std::size_t>(std::floor(p.omega_max / domega + 1e-9)) + 1);
    std::size_t B = static_cast<std::size_t>(p.blocks);
    std::size_t TB = B ? T / B : 0;
    if (B && TB < 2 * L) {  // blocks must be longer than the correlation window
        B = T / (2 * L);
        TB = B ? T / B : 0;
    }
    p.blocks = static_cast<std::int64_t>(B);
    pl.T = T, pl.S = S, pl.L = L, pl.n_omega = n_omega, pl.B = B, pl.TB = TB, pl.domega = domega;
    return pl;
}

/// Everything of the result but the correlations and spectra.
CurrentsResult result_header(const CurrentSeries& s, const Plan& pl) {
    CurrentsResult r;
    r.params = pl.p;
    const auto& ks = s.ks;
    r.k = ks.shell_k;
    r.n_vectors = ks.shell_count;
    r.dt = s.dt;
    r.density = s.density;
    r.mean_n = s.mean_n;
    r.k_debye = std::sqrt(4 * std::numbers::pi * s.density);
    r.n_frames = s.n_frames;
    r.n_blocks = static_cast<std::int64_t>(pl.B);
    r.velocity_source = s.velocity_source;
    r.geometry = to_string(s.region.geometry.kind);
    r.has_mass = s.has_mass;
    r.dk = ks.dk;
    for (std::size_t l = 0; l < pl.L; ++l) r.t.push_back(static_cast<double>(l) * s.dt);
    for (std::size_t f = 0; f < pl.n_omega; ++f) r.omega.push_back(static_cast<double>(f) * pl.domega);
    return r;
}

}  // namespace

CurrentsResult currents_from_series(const CurrentSeries& s, const CurrentsParams& p0) {
    const Plan pl = plan_currents(p0, s.n_frames, s.dt);
    const CurrentsParams& p = pl.p;
    const std::size_t T = pl.T, S = pl.S, L = pl.L, n_omega = pl.n_omega, B = pl.B, TB = pl.TB;
    const double domega = pl.domega;
    CurrentsResult r = result_header(s, pl);
    const auto& ks = s.ks;
    const std::size_t NS = ks.shell_k.size();

    const int P = detail::fast_size(static_cast<std::int64_t>(T + L));
    const int PB = B ? detail::fast_size(static_cast<std::int64_t>(TB + L)) : 1;
    detail::ComplexFft fftP(P, FFTW_FORWARD), ifftP(P, FFTW_BACKWARD), fftB(PB, FFTW_FORWARD),
        ifftB(PB, FFTW_BACKWARD);
    detail::ComplexFft fftS(static_cast<int>(S), FFTW_BACKWARD);  // e^{+iωt}
    std::vector<double> win(S);
    double sum_win2 = 0;
    for (std::size_t t = 0; t < S; ++t) {
        win[t] = detail::hann(t, S);
        sum_win2 += win[t] * win[t];
    }
    const std::size_t hop = S / 2;
    const std::size_t n_seg = (T - S) / hop + 1;

    // One (series, norm) → outputs.
    auto analyse = [&](CurrentSeries::Kind J, double norm, std::vector<double>& ckt, std::vector<double>& ckw,
                       std::vector<double>* blocks) {
        const std::size_t K = ks.size();
        const int nt = p.threads,
                  nc = detail::kReduceChunks;  // partial sums per chunk of k-vectors, not per thread
        std::vector<std::vector<double>> ckt_t(static_cast<std::size_t>(nc),
                                               std::vector<double>(NS * L, 0.0));
        std::vector<std::vector<double>> ckw_t(static_cast<std::size_t>(nc),
                                               std::vector<double>(NS * n_omega, 0.0));
        std::vector<std::vector<double>> blk_t(static_cast<std::size_t>(nc),
                                               std::vector<double>(B * NS * L, 0.0));
        detail::parallel_for_chunks(K, nt, [&](std::size_t b, std::size_t e, int th) {
            detail::FftwBuffer<fftw_complex> a(static_cast<std::size_t>(P)), c(static_cast<std::size_t>(P));
            detail::FftwBuffer<fftw_complex> ab(static_cast<std::size_t>(PB)),
                cb(static_cast<std::size_t>(PB));
            detail::FftwBuffer<fftw_complex> sa(S), sc(S);
            auto& CKT = ckt_t[static_cast<std::size_t>(th)];
            auto& CKW = ckw_t[static_cast<std::size_t>(th)];
            auto& BLK = blk_t[static_cast<std::size_t>(th)];
            auto autocorr = [](const cplx* z, std::size_t n, std::size_t lags, const detail::ComplexFft& f,
                               const detail::ComplexFft& fi, fftw_complex* x, fftw_complex* y, double* out) {
                const auto Pn = static_cast<std::size_t>(f.size());
                for (std::size_t t = 0; t < Pn; ++t) {
                    x[t][0] = t < n ? z[t].real() : 0.0;
                    x[t][1] = t < n ? z[t].imag() : 0.0;
                }
                f.run(x, y);
                for (std::size_t t = 0; t < Pn; ++t) {
                    x[t][0] = y[t][0] * y[t][0] + y[t][1] * y[t][1];
                    x[t][1] = 0;
                }
                fi.run(x, y);  // y[m] = P · Σ_t z(t+m) z*(t)
                for (std::size_t m = 0; m < lags; ++m) out[m] = y[m][0] / static_cast<double>(Pn);
            };
            std::vector<double> tmp(L);
            std::vector<cplx> zbuf;
            for (std::size_t q = b; q < e; ++q) {
                const cplx* z = s.series(J, q, zbuf);
                const auto sh = static_cast<std::size_t>(ks.shell[q]);
                autocorr(z, T, L, fftP, ifftP, a.p, c.p, tmp.data());
                for (std::size_t m = 0; m < L; ++m) CKT[sh * L + m] += tmp[m] / static_cast<double>(T - m);
                for (std::size_t bb = 0; bb < B; ++bb) {
                    autocorr(z + bb * TB, TB, L, fftB, ifftB, ab.p, cb.p, tmp.data());
                    for (std::size_t m = 0; m < L; ++m)
                        BLK[(bb * NS + sh) * L + m] += tmp[m] / static_cast<double>(TB - m);
                }
                for (std::size_t sg = 0; sg < n_seg; ++sg) {
                    for (std::size_t t = 0; t < S; ++t) {
                        sa.p[t][0] = win[t] * z[sg * hop + t].real();
                        sa.p[t][1] = win[t] * z[sg * hop + t].imag();
                    }
                    fftS.run(sa.p, sc.p);
                    for (std::size_t f = 0; f < n_omega; ++f) {
                        const std::size_t fm = (S - f) % S;
                        const double pw = 0.5 * (sc.p[f][0] * sc.p[f][0] + sc.p[f][1] * sc.p[f][1] +
                                                 sc.p[fm][0] * sc.p[fm][0] + sc.p[fm][1] * sc.p[fm][1]);
                        CKW[sh * n_omega + f] += pw;
                    }
                }
            }
        });
        ckt.assign(NS * L, 0.0);
        ckw.assign(NS * n_omega, 0.0);
        if (blocks) blocks->assign(B * NS * L, 0.0);
        for (int th = 0; th < nc; ++th) {
            for (std::size_t i = 0; i < NS * L; ++i) ckt[i] += ckt_t[static_cast<std::size_t>(th)][i];
            for (std::size_t i = 0; i < NS * n_omega; ++i) ckw[i] += ckw_t[static_cast<std::size_t>(th)][i];
            if (blocks)
                for (std::size_t i = 0; i < B * NS * L; ++i)
                    (*blocks)[i] += blk_t[static_cast<std::size_t>(th)][i];
        }
        for (std::size_t sh = 0; sh < NS; ++sh) {
            const double c = static_cast<double>(ks.shell_count[sh]);
            for (std::size_t m = 0; m < L; ++m) ckt[sh * L + m] /= c * norm;
            for (std::size_t f = 0; f < n_omega; ++f)
                ckw[sh * n_omega + f] *= s.dt / (c * norm * sum_win2 * static_cast<double>(n_seg));
            if (blocks)
                for (std::size_t bb = 0; bb < B; ++bb)
                    for (std::size_t m = 0; m < L; ++m) (*blocks)[(bb * NS + sh) * L + m] /= c * norm;
        }
    };
    auto peaks = [&](const std::vector<double>& ckw) {
        std::vector<double> out(NS);
        for (std::size_t sh = 0; sh < NS; ++sh) out[sh] = spectral_peak(&ckw[sh * n_omega], n_omega, domega);
        return out;
    };
    analyse(CurrentSeries::T_, s.norm, r.c_t_kt, r.c_t_kw, &r.c_t_kt_blocks);
    analyse(CurrentSeries::L, s.norm, r.c_l_kt, r.c_l_kw, &r.c_l_kt_blocks);
    r.omega_t_peak = peaks(r.c_t_kw);
    r.omega_l_peak = peaks(r.c_l_kw);
    if (s.has_mass) {
        analyse(CurrentSeries::T_mass, s.norm_mass, r.c_t_kt_mass, r.c_t_kw_mass, nullptr);
        analyse(CurrentSeries::L_mass, s.norm_mass, r.c_l_kt_mass, r.c_l_kw_mass, nullptr);
        r.omega_t_peak_mass = peaks(r.c_t_kw_mass);
        r.omega_l_peak_mass = peaks(r.c_l_kw_mass);
    }
    return r;
}

namespace {

/// Shell-summed raw sums of one series, one accumulator per chunk of k-vectors (added in chunk
/// order at the end, so bit-identical for any thread count).
struct RawSums {
    std::vector<std::vector<double>> ckt, blk,
        ckw;  ///< [chunk][shell·L + m], [chunk][(b·NS + shell)·L + m], [chunk][shell·n_omega + f]
    std::vector<double> total(const std::vector<std::vector<double>>& v) const {
        std::vector<double> out(v.front().size(), 0.0);
        for (const auto& c : v)
            for (std::size_t i = 0; i < out.size(); ++i) out[i] += c[i];
        return out;
    }
};

/// The currents analysis when the series j(k,t) do not fit the memory budget: one pass over the
/// frames in chunks of F frames; every k-vector's series keeps only the chunk plus the last
/// max(L, S) frames of the previous one. C(k,t) and the block C(k,t) are direct lag sums of the
/// pairs whose later frame lies in the chunk; C(k,ω) adds the Welch segments that end in the
/// chunk. The sums are those of currents_from_series (equal up to rounding: direct sums instead
/// of zero-padded FFTs). Steps: frames → currents (into the buffer) → per chunk: lag sums and
/// segment spectra, carry-over → normalise.
class StreamedCurrents {
public:
    StreamedCurrents(const TrajectorySource& src, const CurrentsParams& p0)
        : s_(series_header(src, p0, masses_)),
          pl_(plan_currents(p0, s_.n_frames, s_.dt)),
          p_(pl_.p),
          T_(pl_.T),
          S_(pl_.S),
          L_(pl_.L),
          n_omega_(pl_.n_omega),
          B_(pl_.B),
          TB_(pl_.TB),
          K_(s_.ks.size()),
          NS_(s_.ks.shell_k.size()),
          nser_(s_.has_mass ? 4 : 2),
          H_(std::max(L_, S_)),
          F_(chunk_frames()),
          W_(H_ + F_),
          hop_(S_ / 2),
          n_seg_((T_ - S_) / hop_ + 1),
          buf_(nser_, std::vector<cplx>(K_ * W_)),
          fftS_(static_cast<int>(S_), FFTW_BACKWARD) {  // e^{+iωt}
        const auto& ks = s_.ks;
        khx_.resize(K_);
        khy_.resize(K_);
        for (std::size_t q = 0; q < K_; ++q) {
            khx_[q] = ks.kx[q] / ks.kabs[q];
            khy_[q] = ks.ky[q] / ks.kabs[q];
        }
        win_.resize(S_);
        for (std::size_t t = 0; t < S_; ++t) {
            win_[t] = detail::hann(t, S_);
            sum_win2_ += win_[t] * win_[t];
        }
        const int nc = detail::kReduceChunks;
        sums_.resize(nser_);
        for (std::size_t w = 0; w < nser_; ++w) {
            sums_[w].ckt.assign(static_cast<std::size_t>(nc), std::vector<double>(NS_ * L_, 0.0));
            sums_[w].blk.assign(static_cast<std::size_t>(nc),
                                std::vector<double>(w < 2 ? B_ * NS_ * L_ : 0, 0.0));
            sums_[w].ckw.assign(static_cast<std::size_t>(nc), std::vector<double>(NS_ * n_omega_, 0.0));
        }
    }

    CurrentsResult run(const TrajectorySource& src) {
        const detail::CurrentEngine eng(s_.ks, p_.fourier);
        detail::stream_frames(
            src, [&](std::vector<detail::FrameParticles>& block) { add_block(eng, block); },
            &s_.velocity_source, p_.velocity, p_.block_rows);
        s_.mean_n = sum_n_ / static_cast<double>(T_);
        s_.density = s_.mean_n / s_.region.area;
        s_.norm = sum_w2_ / static_cast<double>(T_);
        s_.norm_mass = sum_w2m_ / static_cast<double>(T_);
        if (!(s_.norm > 0)) throw FormatError("currents: no particle with a velocity inside the region");
        return result();
    }

private:
    /// Frames per chunk: what fits half the memory budget beside the carried-over H (at least H).
    std::size_t chunk_frames() const {
        const double per_frame = static_cast<double>(K_ * nser_ * sizeof(cplx));
        const auto fit = static_cast<std::size_t>(static_cast<double>(p_.memory_bytes / 2) / per_frame);
        return std::min(T_, std::max(H_, fit > H_ ? fit - H_ : 0));
    }

    /// The currents of the block's frames into the buffer, a chunk processed whenever it is full.
    void add_block(const detail::CurrentEngine& eng, std::vector<detail::FrameParticles>& block) {
        std::size_t pos = 0;
        while (pos < block.size()) {
            const std::size_t n = std::min(block.size() - pos, c0_ + F_ - next_);
            std::vector<double> bw(n, 0.0), bwm(n, 0.0);
            detail::parallel_for(n, p_.threads, [&](std::size_t b, std::size_t e, int) {
                FrameWork fw;
                for (std::size_t i = b; i < e; ++i) {
                    const std::size_t col = next_ + i - b0_;
                    cplx* out[4] = {buf_[0].data() + col, buf_[1].data() + col,
                                    nser_ > 2 ? buf_[2].data() + col : nullptr,
                                    nser_ > 2 ? buf_[3].data() + col : nullptr};
                    frame_currents(eng, block[pos + i], s_.region, s_.has_mass ? &masses_ : nullptr,
                                   p_.subtract_mean, khx_, khy_, W_, out, bw[i], bwm[i], fw);
                }
            });
            for (std::size_t i = 0; i < n; ++i) {
                sum_n_ += static_cast<double>(block[pos + i].x.size());
                sum_w2_ += bw[i];
                sum_w2m_ += bwm[i];
            }
            pos += n;
            next_ += n;
            if (next_ == c0_ + F_ || next_ == T_) {
                process_chunk();
                carry_over();
            }
        }
    }

    /// Lag sums and segment spectra of the chunk [c0, next), per chunk of k-vectors.
    void process_chunk() {
        const std::size_t c1 = next_;
        const std::size_t sg_lo = c0_ < S_ ? 0 : (c0_ - S_) / hop_ + 1;  // first segment ending after c0
        const std::size_t sg_end =
            c1 < S_ ? 0 : std::min(n_seg_, (c1 - S_) / hop_ + 1);  // … and ending at or before c1
        detail::parallel_for_chunks(K_, p_.threads, [&](std::size_t b, std::size_t e, int c) {
            detail::FftwBuffer<fftw_complex> sa(S_), sc(S_);
            for (std::size_t w = 0; w < nser_; ++w) {
                auto& CKT = sums_[w].ckt[static_cast<std::size_t>(c)];
                auto& BLK = sums_[w].blk[static_cast<std::size_t>(c)];
                auto& CKW = sums_[w].ckw[static_cast<std::size_t>(c)];
                const bool blocks = w < 2 && B_ > 0;
                for (std::size_t q = b; q < e; ++q) {
                    const cplx* z = buf_[w].data() + q * W_;  // z[f − b0] = frame f, f ∈ [b0, c1)
                    const auto sh = static_cast<std::size_t>(s_.ks.shell[q]);
                    lag_sums(z, c1, &CKT[sh * L_], blocks ? &BLK[sh * L_] : nullptr);
                    for (std::size_t sg = sg_lo; sg < sg_end; ++sg)
                        segment_power(z, sg, sa, sc, &CKW[sh * n_omega_]);
                }
            }
        });
    }

    /// ck[m] += Re z(u) z*(u−m) for the frames u of the chunk (and the same into the time block of
    /// u, blk = that shell's row of block 0, when the pair lies in one block).
    void lag_sums(const cplx* z, std::size_t c1, double* ck, double* blk) const {
        for (std::size_t u = c0_; u < c1; ++u) {
            const cplx zu = z[u - b0_];
            const std::size_t mf = std::min(L_ - 1, u);
            const std::size_t bl = blk ? u / TB_ : B_;
            double* bk = bl < B_ ? blk + bl * NS_ * L_ : nullptr;
            const std::size_t mb = bk ? std::min(mf, u - bl * TB_) : 0;
            for (std::size_t m = 0; m <= mf; ++m) {
                const cplx zv = z[u - m - b0_];
                const double v = zu.real() * zv.real() + zu.imag() * zv.imag();  // Re z(u) z*(u−m)
                ck[m] += v;
                if (bk && m <= mb) bk[m] += v;
            }
        }
    }

    /// ckw[f] += ½ (|ĵ(f)|² + |ĵ(−f)|²) of Welch segment sg (Hann window).
    void segment_power(const cplx* z, std::size_t sg, detail::FftwBuffer<fftw_complex>& sa,
                       detail::FftwBuffer<fftw_complex>& sc, double* ckw) const {
        for (std::size_t t = 0; t < S_; ++t) {
            sa.p[t][0] = win_[t] * z[sg * hop_ + t - b0_].real();
            sa.p[t][1] = win_[t] * z[sg * hop_ + t - b0_].imag();
        }
        fftS_.run(sa.p, sc.p);
        for (std::size_t f = 0; f < n_omega_; ++f) {
            const std::size_t fm = (S_ - f) % S_;
            ckw[f] += 0.5 * (sc.p[f][0] * sc.p[f][0] + sc.p[f][1] * sc.p[f][1] + sc.p[fm][0] * sc.p[fm][0] +
                             sc.p[fm][1] * sc.p[fm][1]);
        }
    }

    /// Keeps the last H frames for the pairs and segments that reach back into this chunk.
    void carry_over() {
        const std::size_t c1 = next_;
        const std::size_t keep = std::min(H_, c1 - b0_), nb0 = c1 - keep;
        for (auto& v : buf_)
            for (std::size_t q = 0; q < K_; ++q)
                std::copy(v.begin() + static_cast<std::ptrdiff_t>(q * W_ + (nb0 - b0_)),
                          v.begin() + static_cast<std::ptrdiff_t>(q * W_ + (c1 - b0_)),
                          v.begin() + static_cast<std::ptrdiff_t>(q * W_));
        b0_ = nb0;
        c0_ = c1;
    }

    /// The chunk sums of series w, added in chunk order and normalised per shell.
    void finish(std::size_t w, double norm, std::vector<double>& ckt, std::vector<double>& ckw,
                std::vector<double>* blocks) const {
        const auto& ks = s_.ks;
        ckt = sums_[w].total(sums_[w].ckt);
        ckw = sums_[w].total(sums_[w].ckw);
        if (blocks) *blocks = sums_[w].total(sums_[w].blk);
        for (std::size_t sh = 0; sh < NS_; ++sh) {
            const double c = static_cast<double>(ks.shell_count[sh]);
            for (std::size_t m = 0; m < L_; ++m)
                ckt[sh * L_ + m] = ckt[sh * L_ + m] / static_cast<double>(T_ - m) / (c * norm);
            for (std::size_t f = 0; f < n_omega_; ++f)
                ckw[sh * n_omega_ + f] *= s_.dt / (c * norm * sum_win2_ * static_cast<double>(n_seg_));
            if (blocks)
                for (std::size_t bb = 0; bb < B_; ++bb)
                    for (std::size_t m = 0; m < L_; ++m) {
                        double& v = (*blocks)[(bb * NS_ + sh) * L_ + m];
                        v = v / static_cast<double>(TB_ - m) / (c * norm);
                    }
        }
    }

    std::vector<double> peaks(const std::vector<double>& ckw) const {
        std::vector<double> out(NS_);
        for (std::size_t sh = 0; sh < NS_; ++sh)
            out[sh] = spectral_peak(&ckw[sh * n_omega_], n_omega_, pl_.domega);
        return out;
    }

    CurrentsResult result() const {
        CurrentsResult r = result_header(s_, pl_);
        finish(CurrentSeries::T_, s_.norm, r.c_t_kt, r.c_t_kw, B_ ? &r.c_t_kt_blocks : nullptr);
        finish(CurrentSeries::L, s_.norm, r.c_l_kt, r.c_l_kw, B_ ? &r.c_l_kt_blocks : nullptr);
        r.omega_t_peak = peaks(r.c_t_kw);
        r.omega_l_peak = peaks(r.c_l_kw);
        if (s_.has_mass) {
            finish(CurrentSeries::T_mass, s_.norm_mass, r.c_t_kt_mass, r.c_t_kw_mass, nullptr);
            finish(CurrentSeries::L_mass, s_.norm_mass, r.c_l_kt_mass, r.c_l_kw_mass, nullptr);
            r.omega_t_peak_mass = peaks(r.c_t_kw_mass);
            r.omega_l_peak_mass = peaks(r.c_l_kw_mass);
        }
        return r;
    }

    std::vector<double> masses_;
    CurrentSeries s_;  ///< the header (k-vectors, region, norms): no series
    const Plan pl_;
    const CurrentsParams& p_;
    const std::size_t T_, S_, L_, n_omega_, B_, TB_, K_, NS_, nser_;
    const std::size_t H_;      ///< frames carried over from one chunk to the next
    const std::size_t F_, W_;  ///< frames per chunk; buffer frames per k-vector
    const std::size_t hop_, n_seg_;
    std::vector<std::vector<cplx>> buf_;  ///< [series][k·W + frame − b0]
    std::vector<double> khx_, khy_, win_;
    double sum_win2_ = 0;
    std::vector<RawSums> sums_;
    detail::ComplexFft fftS_;
    std::size_t b0_ = 0, c0_ = 0, next_ = 0;  ///< the buffer holds frames [b0, next); the chunk starts at c0
    double sum_n_ = 0, sum_w2_ = 0, sum_w2m_ = 0;
};

CurrentsResult currents_streamed(const TrajectorySource& src, const CurrentsParams& p0) {
    return StreamedCurrents(src, p0).run(src);
}

}  // namespace

CurrentsResult compute_currents(const TrajectorySource& src, CurrentsParams p) {
    p.validate();
    std::vector<double> masses;
    // The whole series in memory (FFT correlations over the full length) when it fits the budget;
    // else one bounded streaming pass.
    if (series_bytes(series_header(src, p, masses)) > static_cast<double>(p.memory_bytes))
        return currents_streamed(src, p);
    const CurrentSeries s = compute_current_series(src, p);
    return currents_from_series(s, p);
}

ResultGroup to_group(const CurrentsResult& r, const Metadata& meta) {
    const std::string L = meta.length_unit, T = meta.time_unit;
    const std::string v2 = L + "^2/" + T + "^2", spec = L + "^2/" + T;
    ResultGroup g;
    g.name = "currents";
    const std::size_t NS = r.k.size(), NL = r.t.size(), NW = r.omega.size();
    g.add("k", r.k, "1/" + L);
    g.add_int("n_vectors", r.n_vectors, "1");
    g.add("t", r.t, T);
    std::vector<std::int64_t> tf(NL);
    for (std::size_t i = 0; i < NL; ++i) tf[i] = static_cast<std::int64_t>(i);
    g.add_int("t_frames", tf, "frame");
    g.add("omega", r.omega, "rad/" + T);
    g.add2d("c_t_kt", r.c_t_kt, NS, NL, v2);
    g.add2d("c_l_kt", r.c_l_kt, NS, NL, v2);
    g.add2d("c_t_kw", r.c_t_kw, NS, NW, spec);
    g.add2d("c_l_kw", r.c_l_kw, NS, NW, spec);
    g.add("omega_t_peak", r.omega_t_peak, "rad/" + T);
    g.add("omega_l_peak", r.omega_l_peak, "rad/" + T);
    if (r.n_blocks > 0) {
        auto& a = g.add("c_t_kt_blocks", r.c_t_kt_blocks, v2);
        a.shape = {static_cast<std::size_t>(r.n_blocks), NS, NL};
        auto& b = g.add("c_l_kt_blocks", r.c_l_kt_blocks, v2);
        b.shape = {static_cast<std::size_t>(r.n_blocks), NS, NL};
    }
    if (r.has_mass) {
        const std::string mv2 = v2, mspec = spec;  // masses in units of the species-0 mass
        g.add2d("c_t_kt_mass", r.c_t_kt_mass, NS, NL, mv2);
        g.add2d("c_l_kt_mass", r.c_l_kt_mass, NS, NL, mv2);
        g.add2d("c_t_kw_mass", r.c_t_kw_mass, NS, NW, mspec);
        g.add2d("c_l_kw_mass", r.c_l_kw_mass, NS, NW, mspec);
        g.add("omega_t_peak_mass", r.omega_t_peak_mass, "rad/" + T);
        g.add("omega_l_peak_mass", r.omega_l_peak_mass, "rad/" + T);
    }
    const auto& p = r.params;
    g.attrs["k_max"] = r.k.empty() ? 0.0 : (p.k_max > 0 ? p.k_max : r.k_debye);
    g.attrs["k_min"] = p.k_min;
    g.attrs["k_debye"] = r.k_debye;
    g.attrs["segment_frames"] = p.segment;
    g.attrs["max_lag_frames"] = p.max_lag;
    g.attrs["omega_max"] = p.omega_max;
    g.attrs["blocks"] = r.n_blocks;
    g.attrs["taper"] = p.taper;
    g.attrs["subtract_mean"] = std::int64_t{p.subtract_mean};
    g.attrs["frame_interval"] = r.dt;
    g.attrs["density"] = r.density;
    g.attrs["mean_n"] = r.mean_n;
    g.attrs["n_frames"] = r.n_frames;
    g.attrs["velocity_source"] = r.velocity_source;
    g.attrs["geometry"] = r.geometry;
    g.attrs["window"] = std::string("hann segments, 50% overlap");
    g.attrs["normalisation"] = std::string(
        "C(k,t) = Re<j(t0+t) j*(t0)>/<sum_i w_i^2>; C(k,w) = int C(k,t) e^{iwt} dt (two-sided density); "
        "mass: a_i = w_i m_i v_i, norm <sum w^2 m>, m = (d_s/d_0)^2");
    g.attrs["k_set"] = std::string(
        "grid (2pi n/Lx, 2pi m/Ly), half plane, k_min <= |k| <= k_max; shells of width dk centred on "
        "multiples of dk");
    g.attrs["dk"] = r.dk;
    g.attrs["units"] = std::string("L=") + L + ", T=" + T;
    return g;
}

}  // namespace vibra::analysis
