// SPDX-License-Identifier: GPL-3.0-or-later
#include <catch2/catch.hpp>
#include <cmath>
#include <complex>
#include <numbers>
#include <random>

#include "modes_synthetic.hpp"
#include "vibra/analysis/currents.hpp"
#include "vibra/core/error.hpp"
#include "vibra/analysis/registry.hpp"

using namespace vibra;
using namespace vibra::analysis;
using Catch::Matchers::WithinAbs;
using cplx = std::complex<double>;

namespace {

struct Frame {
    std::vector<double> x, y, vx, vy;
};

// Random particles (positions and velocities fresh every frame, some rows dropped) in a geometry.
std::vector<Frame> random_frames(const Geometry& g, int n, int T, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> ux(g.x0, g.x1), uy(g.y0, g.y1), u01(0, 1);
    std::normal_distribution<double> gv(0.3, 1.1);
    std::vector<Frame> fr(static_cast<std::size_t>(T));
    for (auto& f : fr)
        for (int i = 0; i < n; ++i) {
            if (u01(rng) < 0.1) continue;  // absent in this frame
            f.x.push_back(ux(rng));
            f.y.push_back(uy(rng));
            f.vx.push_back(gv(rng));
            f.vy.push_back(gv(rng));
        }
    return fr;
}

InMemorySource to_source(const Geometry& g, const std::vector<Frame>& fr, double dt) {
    test::TrajBuilder b(g);
    for (std::size_t f = 0; f < fr.size(); ++f)
        for (std::size_t i = 0; i < fr[f].x.size(); ++i)
            b.add(static_cast<std::int64_t>(f), static_cast<std::int64_t>(i), fr[f].x[i], fr[f].y[i],
                  fr[f].vx[i], fr[f].vy[i]);
    return b.source(dt);
}

double tukey(double u, double a) {
    if (u < 0 || u > 1) return 0;
    if (u < a / 2) return 0.5 * (1 - std::cos(2 * std::numbers::pi * u / a));
    if (u > 1 - a / 2) return 0.5 * (1 - std::cos(2 * std::numbers::pi * (1 - u) / a));
    return 1;
}

// O(N·T·K) reference: currents by direct sums, correlations by direct lag sums, Welch by a direct DFT.
void check_direct(const Geometry& g, double taper) {
    const int T = 48;
    const double dt = 0.1;
    const auto fr = random_frames(g, 25, T, 11);
    const auto src = to_source(g, fr, dt);
    CurrentsParams p;
    p.segment = 16;
    p.max_lag = 8;
    p.blocks = 2;
    p.taper = taper;
    p.mass_weighted = false;
    const CurrentsResult r = compute_currents(src, p);
    const CurrentRegion reg = current_region(src, taper);
    const KVectorSet ks = current_kvectors(reg, r.density, p);
    REQUIRE(ks.size() >= 4);
    const std::size_t K = ks.size(), NS = ks.shell_k.size(), L = 8, S = 16;
    REQUIRE(r.k.size() == NS);
    std::vector<cplx> jl(K * T), jt(K * T);
    double norm = 0;
    for (int t = 0; t < T; ++t) {
        const auto& f = fr[static_cast<std::size_t>(t)];
        const std::size_t n = f.x.size();
        std::vector<double> w(n);
        double sw = 0, mx = 0, my = 0;
        for (std::size_t i = 0; i < n; ++i) {
            w[i] = g.periodic()
                       ? 1.0
                       : tukey((f.x[i] - g.x0) / g.lx(), taper) * tukey((f.y[i] - g.y0) / g.ly(), taper);
            sw += w[i] * w[i];
            mx += w[i] * w[i] * f.vx[i];
            my += w[i] * w[i] * f.vy[i];
        }
        norm += sw / T;
        mx /= sw;
        my /= sw;
        for (std::size_t q = 0; q < K; ++q) {
            const double kx = ks.kx[q], ky = ks.ky[q], k = std::hypot(kx, ky);
            cplx sl = 0, st = 0;
            for (std::size_t i = 0; i < n; ++i) {
                const cplx e = std::polar(1.0, kx * f.x[i] + ky * f.y[i]);
                const double ax = w[i] * (f.vx[i] - mx), ay = w[i] * (f.vy[i] - my);
                sl += (ax * kx / k + ay * ky / k) * e;
                st += (-ax * ky / k + ay * kx / k) * e;
            }
            jl[q * T + t] = sl;
            jt[q * T + t] = st;
        }
    }
    auto corr = [&](const std::vector<cplx>& J, std::size_t q, std::size_t t0, std::size_t n, std::size_t m) {
        double s = 0;
        for (std::size_t t = t0; t + m < t0 + n; ++t)
            s += (J[q * T + t + m] * std::conj(J[q * T + t])).real();
        return s / static_cast<double>(n - m);
    };
    const std::size_t TB = T / 2;
    const std::size_t nw = r.omega.size();
    for (int which = 0; which < 2; ++which) {
        const auto& J = which ? jl : jt;
        const auto& ckt = which ? r.c_l_kt : r.c_t_kt;
        const auto& ckw = which ? r.c_l_kw : r.c_t_kw;
        const auto& blk = which ? r.c_l_kt_blocks : r.c_t_kt_blocks;
        std::vector<double> e_kt(NS * L, 0), e_kw(NS * nw, 0), e_b(2 * NS * L, 0);
        for (std::size_t q = 0; q < K; ++q) {
            const auto sh = static_cast<std::size_t>(ks.shell[q]);
            const double c = static_cast<double>(ks.shell_count[sh]) * norm;
            for (std::size_t m = 0; m < L; ++m) {
                e_kt[sh * L + m] += corr(J, q, 0, T, m) / c;
                for (std::size_t b = 0; b < 2; ++b)
                    e_b[(b * NS + sh) * L + m] += corr(J, q, b * TB, TB, m) / c;
            }
            double sw2 = 0;
            for (std::size_t t = 0; t < S; ++t)
                sw2 += std::pow(0.5 * (1 - std::cos(2 * std::numbers::pi * (t + 0.5) / S)), 2);
            const std::size_t nseg = (T - S) / (S / 2) + 1;
            for (std::size_t f = 0; f < nw; ++f) {
                const double om = r.omega[f];
                double acc = 0;
                for (std::size_t sg = 0; sg < nseg; ++sg)
                    for (double sign : {1.0, -1.0}) {
                        cplx a = 0;
                        for (std::size_t t = 0; t < S; ++t) {
                            const double w = 0.5 * (1 - std::cos(2 * std::numbers::pi * (t + 0.5) / S));
                            a += w * J[q * T + sg * (S / 2) + t] * std::polar(1.0, sign * om * t * dt);
                        }
                        acc += 0.5 * std::norm(a);
                    }
                e_kw[sh * nw + f] += acc * dt / (c * sw2 * nseg);
            }
        }
        for (std::size_t i = 0; i < NS * L; ++i)
            REQUIRE_THAT(ckt[i], WithinAbs(e_kt[i], 1e-10 * (1 + std::abs(e_kt[i]))));
        for (std::size_t i = 0; i < 2 * NS * L; ++i)
            REQUIRE_THAT(blk[i], WithinAbs(e_b[i], 1e-10 * (1 + std::abs(e_b[i]))));
        for (std::size_t i = 0; i < NS * nw; ++i)
            REQUIRE_THAT(ckw[i], WithinAbs(e_kw[i], 1e-10 * (1 + std::abs(e_kw[i]))));
    }
}

}  // namespace

TEST_CASE("C_T(k,t), C_L(k,t), blocks and Welch spectra equal direct O(N T K) sums", "[unit]") {
    SECTION("periodic box") { check_direct(Geometry::periodic(0, 0, 5, 4.5), 0.2); }
    SECTION("rectangular window with Tukey taper") { check_direct(Geometry::rect(1, 2, 7, 7.5), 0.3); }
}

TEST_CASE("C_T(k,0) = C_L(k,0) = <v_x^2> for uncorrelated velocities", "[unit]") {
    const Geometry g = Geometry::periodic(0, 0, 20, 20);
    const int T = 400, n = 400;
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<double> u(0, 20);
    std::normal_distribution<double> gv(0, 1.3);
    test::TrajBuilder b(g);
    for (int f = 0; f < T; ++f)
        for (int i = 0; i < n; ++i) b.add(f, i, u(rng), u(rng), gv(rng), gv(rng));
    const auto src = b.source(0.05);
    CurrentsParams p;
    p.blocks = 0;
    p.segment = 64;
    const auto r = compute_currents(src, p);
    const std::size_t L = r.t.size();
    REQUIRE(r.k.size() > 5);
    const double expect = 1.3 * 1.3 * (1 - 1.0 / n);  // mean subtraction removes one degree of freedom
    for (std::size_t s = 0; s < r.k.size(); ++s) {
        const double tol = 4 * expect / std::sqrt(static_cast<double>(T * r.n_vectors[s]));
        REQUIRE_THAT(r.c_t_kt[s * L], WithinAbs(expect, tol));
        REQUIRE_THAT(r.c_l_kt[s * L], WithinAbs(expect, tol));
        REQUIRE_THAT(r.c_t_kt[s * L + 1], WithinAbs(0.0, tol));  // no memory between frames
    }
}

TEST_CASE("Harmonic triangular crystal: C_T and C_L peaks lie on the analytic phonon branches", "[unit]") {
    test::TriangularCrystal cr{12, 12};
    const Geometry g = Geometry::periodic(0, 0, cr.lx(), cr.ly());
    const double dt = 0.5, kmax = 2.0, amp = 0.01;
    const int T = 1280;
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> ph(0, 2 * std::numbers::pi);
    // All modes with grid k in the half plane and |k| <= kmax + margin, both branches, random phases,
    // equal velocity amplitude.
    struct Mode {
        double kx, ky, w, phi;
        Eigen::Vector2d e;
    };
    std::vector<Mode> modes;
    const double dkx = 2 * std::numbers::pi / cr.lx(), dky = 2 * std::numbers::pi / cr.ly();
    for (int n = 0; n <= 6; ++n)
        for (int m = -6; m <= 6; ++m) {
            if (n == 0 && m <= 0) continue;
            const double kx = n * dkx, ky = m * dky;
            if (std::hypot(kx, ky) > kmax + 0.3) continue;
            Eigen::SelfAdjointEigenSolver<Eigen::Matrix2d> es(cr.dyn(kx, ky));
            for (int b = 0; b < 2; ++b)
                modes.push_back({kx, ky, std::sqrt(es.eigenvalues()[b]), ph(rng), es.eigenvectors().col(b)});
        }
    test::TrajBuilder tb(g);
    for (int f = 0; f < T; ++f) {
        const double t = f * dt;
        for (int j = 0; j < cr.ny; ++j)
            for (int i = 0; i < cr.nx; ++i) {
                const Eigen::Vector2d R = cr.site(i, j);
                Eigen::Vector2d u = Eigen::Vector2d::Zero(), v = Eigen::Vector2d::Zero();
                for (const auto& md : modes) {
                    const double a = md.kx * R.x() + md.ky * R.y() - md.w * t + md.phi;
                    u += (amp / md.w) * std::cos(a) * md.e;
                    v += amp * std::sin(a) * md.e;
                }
                tb.add(f, j * cr.nx + i, R.x() + u.x(), R.y() + u.y(), v.x(), v.y());
            }
    }
    const auto src = tb.source(dt);
    CurrentsParams p;
    p.k_max = kmax;
    p.dk = 0.01;  // shells hold symmetry-equivalent vectors only
    p.segment = 640;
    p.blocks = 0;
    p.subtract_mean = false;
    const auto r = compute_currents(src, p);
    const CurrentRegion reg = current_region(src, 0);
    const KVectorSet ks = current_kvectors(reg, r.density, p);
    const double domega = r.omega[1];
    REQUIRE(r.k.size() >= 5);
    for (std::size_t s = 0; s < r.k.size(); ++s) {
        // analytic branches at the first vector of the shell; T = eigenvector closer to ê_⊥
        std::size_t q = 0;
        while (static_cast<std::size_t>(ks.shell[q]) != s) ++q;
        const double kx = ks.kx[q], ky = ks.ky[q], k = ks.kabs[q];
        Eigen::SelfAdjointEigenSolver<Eigen::Matrix2d> es(cr.dyn(kx, ky));
        const Eigen::Vector2d et(-ky / k, kx / k);
        const int bt =
            std::abs(es.eigenvectors().col(0).dot(et)) > std::abs(es.eigenvectors().col(1).dot(et)) ? 0 : 1;
        const double wt = std::sqrt(es.eigenvalues()[bt]), wl = std::sqrt(es.eigenvalues()[1 - bt]);
        INFO("shell k = " << r.k[s] << " expected wT = " << wt << " wL = " << wl);
        REQUIRE_THAT(r.omega_t_peak[s], WithinAbs(wt, 0.25 * domega));
        REQUIRE_THAT(r.omega_l_peak[s], WithinAbs(wl, 0.25 * domega));
    }
    // low-k slopes: c_T = sqrt(3/8), c_L = sqrt(9/8) for unit K, m, a
    REQUIRE_THAT(r.omega_t_peak[0] / r.k[0], WithinAbs(std::sqrt(3.0 / 8), 0.03));
    REQUIRE_THAT(r.omega_l_peak[0] / r.k[0], WithinAbs(std::sqrt(9.0 / 8), 0.05));
}

TEST_CASE("Currents from central differences of positions match the velocity columns", "[unit]") {
    // Transverse plane wave u = A ê_⊥ cos(k0·R − ω0 t) on a square lattice, without velocity columns.
    const int n = 16, T = 512;
    const double dt = 0.4, w0 = 2.0, A = 0.02;  // w0·dt = 0.8: the difference schemes differ by 15 % in power
    const Geometry g = Geometry::periodic(0, 0, n, n);
    const double k0 = 2 * std::numbers::pi * 3 / n;  // along x
    test::TrajBuilder tb(g, false);
    for (int f = 0; f < T; ++f)
        for (int j = 0; j < n; ++j)
            for (int i = 0; i < n; ++i) tb.add(f, j * n + i, i, j + A * std::cos(k0 * i - w0 * f * dt));
    const auto src = tb.source(dt);
    CurrentsParams p;
    p.k_max = 2.5;
    p.dk = 0.05;
    p.segment = 256;
    p.blocks = 0;
    const auto r = compute_currents(src, p);
    REQUIRE(r.velocity_source == "central differences (one-sided at track ends)");
    std::size_t s0 = 0;
    for (std::size_t s = 0; s < r.k.size(); ++s)
        if (std::abs(r.k[s] - k0) < std::abs(r.k[s0] - k0)) s0 = s;
    REQUIRE_THAT(r.k[s0], WithinAbs(k0, 1e-9));
    REQUIRE_THAT(r.omega_t_peak[s0], WithinAbs(w0, 0.25 * r.omega[1]));
    // central-difference amplitude: v = A ω0 sinc(ω0 dt), C_T(k0,0) = (vN/2)²/N per vector, shared by the shell
    const double v = A * std::sin(w0 * dt) / dt;
    const double expect = v * v / 4 * static_cast<double>(n * n) / static_cast<double>(r.n_vectors[s0]);
    REQUIRE_THAT(r.c_t_kt[s0 * r.t.size()], WithinAbs(expect, 0.02 * expect));
    REQUIRE(r.c_l_kt[s0 * r.t.size()] < 1e-3 * expect);
    // forward differences: |H| = sin(ω0 dt/2)/(ω0 dt/2) (the last frame has no velocity)
    p.velocity = VelocityScheme::forward;
    const auto rf = compute_currents(src, p);
    REQUIRE(rf.velocity_source == "forward differences");
    const double vf = 2 * A * std::sin(w0 * dt / 2) / dt;
    const double ef = vf * vf / 4 * static_cast<double>(n * n) / static_cast<double>(rf.n_vectors[s0]);
    REQUIRE_THAT(rf.c_t_kt[s0 * rf.t.size()], WithinAbs(ef, 0.02 * ef));
    REQUIRE(std::abs(ef - expect) > 0.05 * expect);  // the two schemes are distinguishable here
    // 'given' needs velocity columns
    p.velocity = VelocityScheme::given;
    REQUIRE_THROWS_AS(compute_currents(src, p), FormatError);
}

TEST_CASE("Currents parameters are validated", "[unit]") {
    CurrentsParams p;
    p.segment = 7;
    REQUIRE_THROWS_AS(p.validate(), ParameterError);
    p.segment = 0;
    p.taper = 2;
    REQUIRE_THROWS_AS(p.validate(), ParameterError);
}

TEST_CASE(
    "Mode analyses run through the registry: kgap uses earlier currents, tvdos the kgap sound speeds, "
    "covariance refuses",
    "[unit]") {
    // Small frozen square lattice with independent OU velocities: enough frames for blocks.
    const int n = 8, T = 700;
    test::TrajBuilder tb(Geometry::periodic(0, 0, n, n));
    std::mt19937_64 rng(5);
    std::normal_distribution<double> g;
    std::vector<double> vx(n * n), vy(n * n);
    for (int f = 0; f < T; ++f)
        for (int i = 0; i < n * n; ++i) {
            vx[i] = 0.8 * vx[i] + 0.6 * g(rng);
            vy[i] = 0.8 * vy[i] + 0.6 * g(rng);
            tb.add(f, i, i % n + 0.01 * g(rng), i / n + 0.01 * g(rng), vx[i], vy[i]);
        }
    const auto src = tb.source(0.1);
    std::map<std::string, AnalysisSpec> specs;
    for (auto& s : modes_analyses()) specs.emplace(s.name, s);
    REQUIRE(specs.size() == 4);
    REQUIRE_FALSE(specs.at("covariance_vdos").default_on);
    auto options = [&](const std::string& name) {
        std::map<std::string, std::string> o;
        for (const auto& opt : specs.at(name).options) o[opt.flag] = opt.default_value;
        return o;
    };
    std::map<std::string, ResultGroup> earlier;
    auto run = [&](const std::string& name, std::map<std::string, std::string> o) {
        AnalysisContext ctx{src, std::move(o), false, 2, &earlier};
        auto groups = specs.at(name).run(ctx);
        REQUIRE(groups.at(0).name == name);
        earlier[name] = groups.at(0);
        return groups.at(0);
    };
    auto oc = options("currents");
    oc["currents-segment"] = "64";
    const ResultGroup cur = run("currents", oc);
    REQUIRE(cur.find("c_t_kw") != nullptr);
    REQUIRE(cur.find("c_t_kt_blocks") != nullptr);
    auto ok = options("kgap");
    ok["kgap-bootstrap"] = "20";
    ok["kgap-lag-window"] = "hann";
    const ResultGroup kg = run("kgap", ok);
    REQUIRE(std::get<std::string>(kg.attrs.at("currents_source")) == "earlier currents group");
    REQUIRE(std::get<std::string>(kg.attrs.at("lag_window")) == "hann");
    REQUIRE(kg.groups.size() == 2);
    auto ot = options("tvdos");
    ot["tvdos-ct"] = "1.5";
    const ResultGroup tv = run("tvdos", ot);
    REQUIRE_THAT(std::get<double>(tv.attrs.at("c_t")), WithinAbs(1.5, 1e-15));  // the option wins over kgap
    REQUIRE(std::get<double>(tv.attrs.at("c_l")) == std::get<double>(kg.attrs.at("c_l")));  // taken from kgap
    REQUIRE(tv.groups.at(0).name == "particles");
    // 64 particles need 10 × 128 = 1280 frames: refused, then forced
    REQUIRE_THROWS_WITH(run("covariance_vdos", options("covariance_vdos")),
                        Catch::Contains("1280 frames") && Catch::Contains("--covariance-vdos-force"));
    auto ov = options("covariance_vdos");
    ov["covariance-vdos-force"] = "1";
    REQUIRE(run("covariance_vdos", ov).find("omega") != nullptr);
    // malformed option values name the flag
    ok["kgap-bootstrap"] = "many";
    REQUIRE_THROWS_WITH(run("kgap", ok), Catch::Contains("--kgap-bootstrap"));
}

TEST_CASE("currents: series beyond the memory budget go to a temporary file, results bit-identical",
          "[unit]") {
    const Geometry g = Geometry::periodic(0, 0, 12, 10);
    const auto fr = random_frames(g, 30, 150, 23);
    test::TrajBuilder b(g);
    for (std::size_t f = 0; f < fr.size(); ++f)
        for (std::size_t i = 0; i < fr[f].x.size(); ++i)
            b.add(static_cast<std::int64_t>(f), static_cast<std::int64_t>(i), fr[f].x[i], fr[f].y[i],
                  fr[f].vx[i], fr[f].vy[i], static_cast<std::int8_t>(i % 2));
    b.t.meta.species_diameters = {1.0, 1.4};
    const auto src = b.source(0.05);
    CurrentsParams p;
    p.segment = 32;
    p.blocks = 3;
    p.threads = 2;
    p.block_rows = 200;  // ≈ 7 frames per block read
    const auto mem = to_group(compute_currents(src, p), src.meta());
    for (std::int64_t budget :
         {std::int64_t{1}, std::int64_t{40000}}) {  // chunks of one block; of several blocks
        INFO("memory_bytes " << budget);
        CurrentsParams q = p;
        q.memory_bytes = budget;
        const CurrentSeries s = compute_current_series(src, q);
        REQUIRE(s.file);      // spilled
        CHECK(s.jl.empty());  // nothing of the series left in memory
        const auto disk = to_group(currents_from_series(s, q), src.meta());
        REQUIRE(disk.arrays.size() == mem.arrays.size());
        CHECK(mem.find("c_l_kt_mass"));
        for (std::size_t k = 0; k < mem.arrays.size(); ++k) {
            INFO(mem.arrays[k].name);
            CHECK(disk.arrays[k].data == mem.arrays[k].data);  // NaN-free arrays: == is bit equality here
        }
        // the frame-wise reader returns what the in-memory series hold
        const CurrentSeries sm = compute_current_series(src, p);
        std::vector<cplx> a, bb;
        s.frames(CurrentSeries::T_, 40, 9, a);
        sm.frames(CurrentSeries::T_, 40, 9, bb);
        CHECK(a == bb);
    }
}

TEST_CASE(
    "currents beyond the memory budget: one streaming pass equal to the in-memory results, any --threads",
    "[unit]") {
    // Streaming keeps a chunk of frames per k-vector (plus the last max(lag, segment) frames), forms
    // C(k,t) and the block C(k,t) by direct lag sums and C(k,w) from the Welch segments ending in
    // the chunk: the same sums as the full-length FFTs up to rounding.
    const Geometry g = Geometry::periodic(0, 0, 12, 10);
    const auto fr = random_frames(g, 30, 301, 29);
    test::TrajBuilder b(g);
    for (std::size_t f = 0; f < fr.size(); ++f)
        for (std::size_t i = 0; i < fr[f].x.size(); ++i)
            b.add(static_cast<std::int64_t>(f), static_cast<std::int64_t>(i), fr[f].x[i], fr[f].y[i],
                  fr[f].vx[i], fr[f].vy[i], static_cast<std::int8_t>(i % 2));
    b.t.meta.species_diameters = {1.0, 1.4};
    const auto src = b.source(0.05);
    for (std::int64_t segment : {std::int64_t{32}, std::int64_t{0}}) {  // 0: the default, min(T, 256)
        INFO("segment " << segment);
        CurrentsParams p;
        p.segment = segment;
        p.blocks = 3;
        p.threads = 2;
        p.block_rows = 200;  // ≈ 7 frames per block read: chunks straddle blocks
        const auto mem = to_group(compute_currents(src, p), src.meta());
        REQUIRE(mem.find("c_t_kt_blocks"));
        REQUIRE(mem.find("c_l_kw_mass"));
        std::vector<ResultGroup> streamed;
        for (std::int64_t budget :
             {std::int64_t{1}, std::int64_t{300000}}) {  // chunks of max(lag, segment) frames; larger
            for (int threads : {1, 3}) {
                INFO("memory_bytes " << budget << ", threads " << threads);
                CurrentsParams q = p;
                q.memory_bytes = budget;
                q.threads = threads;
                streamed.push_back(to_group(compute_currents(src, q), src.meta()));
                const auto& st = streamed.back();
                REQUIRE(st.arrays.size() == mem.arrays.size());
                for (std::size_t k = 0; k < mem.arrays.size(); ++k) {
                    INFO(mem.arrays[k].name);
                    REQUIRE(st.arrays[k].name == mem.arrays[k].name);
                    REQUIRE(st.arrays[k].shape == mem.arrays[k].shape);
                    if (const auto* a = std::get_if<std::vector<double>>(&mem.arrays[k].data)) {
                        const auto& s = std::get<std::vector<double>>(st.arrays[k].data);
                        REQUIRE(s.size() == a->size());
                        double scale = 0;
                        for (double v : *a) scale = std::max(scale, std::abs(v));
                        for (std::size_t i = 0; i < a->size(); ++i)
                            REQUIRE_THAT(s[i], WithinAbs((*a)[i], 1e-12 * scale));
                    } else {
                        CHECK(st.arrays[k].data == mem.arrays[k].data);
                    }
                }
                CHECK(st.attrs == mem.attrs);
            }
        }
        // bit-identical for any thread count
        for (std::size_t k = 0; k < mem.arrays.size(); ++k) {
            CHECK(streamed[0].arrays[k].data == streamed[1].arrays[k].data);
            CHECK(streamed[2].arrays[k].data == streamed[3].arrays[k].data);
        }
    }
}

TEST_CASE(
    "currents: the NUFFT and the matrix product give the same results, the NUFFT's alike for any --threads",
    "[unit]") {
    for (const Geometry& g : {Geometry::periodic(0, 0, 30, 26), Geometry::rect(-2, 1, 31, 24)}) {
        INFO((g.periodic() ? "periodic box" : "window"));
        const auto fr = random_frames(g, 400, 70, 31);
        test::TrajBuilder b(g);
        for (std::size_t f = 0; f < fr.size(); ++f)
            for (std::size_t i = 0; i < fr[f].x.size(); ++i)
                b.add(static_cast<std::int64_t>(f), static_cast<std::int64_t>(i), fr[f].x[i], fr[f].y[i],
                      fr[f].vx[i], fr[f].vy[i], static_cast<std::int8_t>(i % 2));
        b.t.meta.species_diameters = {1.0, 1.3};
        const auto src = b.source(0.05);
        CurrentsParams p;
        p.segment = 32;
        p.blocks = 3;
        p.k_max = 3.0;  // a grid of ≈ 15 × 25 modes
        p.fourier = FourierSums::matrix;
        const auto mat = to_group(compute_currents(src, p), src.meta());
        p.fourier = FourierSums::nufft;
        const auto nu1 = to_group(compute_currents(src, p), src.meta());
        test::require_close_groups(mat, nu1, 1e-12);
        CHECK(mat.attrs == nu1.attrs);
        p.threads = 3;
        const auto nu3 = to_group(compute_currents(src, p), src.meta());
        for (std::size_t k = 0; k < nu1.arrays.size(); ++k) CHECK(nu3.arrays[k].data == nu1.arrays[k].data);
    }
}
