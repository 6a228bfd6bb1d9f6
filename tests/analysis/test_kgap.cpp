// SPDX-License-Identifier: GPL-3.0-or-later
#include <catch2/catch.hpp>
#include <cmath>
#include <complex>
#include <cstring>
#include <numbers>
#include <random>

#include "modes_synthetic.hpp"
#include "vibra/analysis/currents.hpp"
#include "vibra/analysis/fit.hpp"
#include "vibra/analysis/kgap.hpp"
#include "vibra/core/error.hpp"
#include "vibra/core/units.hpp"

using namespace vibra;
using namespace vibra::analysis;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

namespace {

// Bias below 3σ and below 5 %.
void require_recovered(const char* what, double est, double err, double truth) {
    INFO(what << ": estimate " << est << " ± " << err << ", truth " << truth);
    REQUIRE(std::isfinite(est));
    REQUIRE(err > 0);
    REQUIRE(std::abs(est - truth) < 3 * err);
    REQUIRE(std::abs(est - truth) < 0.05 * truth);
}

}  // namespace

TEST_CASE("Levenberg-Marquardt recovers the damped-oscillator parameters exactly", "[unit]") {
    std::vector<double> t, c;
    for (int m = 0; m < 60; ++m) t.push_back(0.1 * m);
    for (auto [G, s] : {std::pair{0.8, 4.0}, std::pair{1.5, -0.5}, std::pair{0.5, 0.0}}) {
        c.clear();
        for (double x : t) {
            double ch, sh;
            if (s > 0)
                ch = std::cos(std::sqrt(s) * x), sh = std::sin(std::sqrt(s) * x) / std::sqrt(s);
            else if (s < 0)
                ch = std::cosh(std::sqrt(-s) * x), sh = std::sinh(std::sqrt(-s) * x) / std::sqrt(-s);
            else
                ch = 1, sh = x;
            c.push_back(2.5 * std::exp(-G * x) * (ch + G * sh));
        }
        const auto p = fit_damped_oscillator(t, c.data(), c.size());
        REQUIRE_THAT(p[0], WithinRel(2.5, 1e-6));
        REQUIRE_THAT(p[1], WithinRel(G, 1e-5));
        REQUIRE_THAT(p[2], WithinAbs(s, 1e-5));
    }
}

TEST_CASE("Weighted line fit is exact on a line and weights matter", "[unit]") {
    const std::vector<double> x{1, 2, 3, 4}, y{3, 5, 7, 9.5}, s{1, 1, 1, 100};
    const auto f = weighted_line_fit(x, y, s);
    REQUIRE_THAT(f.a, WithinRel(2.0, 1e-3));
    REQUIRE_THAT(f.b, WithinAbs(1.0, 3e-3));
}

TEST_CASE(
    "k-gap chain recovers c, tau, k_gap from damped transverse modes — peak fit gives tau/sqrt2, sqrt2 k_gap",
    "[unit]") {
    // Frozen square lattice; every transverse current j_T(k,t) = sqrt(N) q_k(t) with q_k a complex
    // stochastic damped oscillator: ω0 = c|k|, Γ = 1/(2τ)  ⇒  pole ω = sqrt(c²k² − 1/(4τ²)).
    const int n = 16, T = 6000;
    const double dt = 0.1, c = 1.0, tau = 0.5, kgap = 1 / (2 * c * tau);
    const Geometry g = Geometry::periodic(0, 0, n, n);
    CurrentsParams cp;
    cp.k_max = 2.75;
    cp.dk = 0.01;
    cp.segment = 160;
    cp.max_lag = 80;
    cp.blocks = 20;
    cp.threads = 2;
    // the k set the analysis will use
    test::TrajBuilder probe(g);
    probe.add(0, 0, 0.5, 0.5);
    const KVectorSet ks = current_kvectors(current_region(probe.source(dt), 0), double(n * n) / (n * n), cp);
    std::mt19937_64 rng(2024);
    std::vector<test::DampedOscillator> re, im;
    for (std::size_t q = 0; q < ks.size(); ++q) {
        re.emplace_back(1 / (2 * tau), c * ks.kabs[q], 0.5, dt);
        im.emplace_back(1 / (2 * tau), c * ks.kabs[q], 0.5, dt);
        re.back().start(rng);
        im.back().start(rng);
    }
    test::TrajBuilder tb(g);
    const double sn = std::sqrt(double(n * n));
    std::vector<std::complex<double>> ph(ks.size() * n * n);
    for (std::size_t q = 0; q < ks.size(); ++q)
        for (int i = 0; i < n * n; ++i)
            ph[q * n * n + i] = std::polar(1.0, -(ks.kx[q] * (i % n) + ks.ky[q] * (i / n)));
    std::vector<double> vx(n * n), vy(n * n);
    for (int f = 0; f < T; ++f) {
        std::fill(vx.begin(), vx.end(), 0.0);
        std::fill(vy.begin(), vy.end(), 0.0);
        for (std::size_t q = 0; q < ks.size(); ++q) {
            const std::complex<double> a(re[q].step(rng), im[q].step(rng));
            const double ex = -ks.ky[q] / ks.kabs[q], ey = ks.kx[q] / ks.kabs[q];
            for (int i = 0; i < n * n; ++i) {
                const double v = 2 * (a * ph[q * n * n + i]).real() / sn;
                vx[i] += ex * v;
                vy[i] += ey * v;
            }
        }
        for (int i = 0; i < n * n; ++i) tb.add(f, i, i % n, i / n, vx[i], vy[i]);
    }
    const auto src = tb.source(dt);
    const CurrentsResult cr = compute_currents(src, cp);
    REQUIRE(cr.n_blocks == 20);
    KgapParams kp;
    const KgapResult r = fit_kgap(kgap_input(cr), kp);
    INFO("pole: c=" << r.pole.c << "±" << r.pole.c_err << " tau=" << r.pole.tau << "±" << r.pole.tau_err
                    << " kgap=" << r.pole.k_gap << "±" << r.pole.k_gap_err << " n=" << r.pole.n_points
                    << " k in [" << r.pole.k_min << "," << r.pole.k_max << "]");
    INFO("peak: c=" << r.peak.c << "±" << r.peak.c_err << " tau=" << r.peak.tau << "±" << r.peak.tau_err
                    << " kgap=" << r.peak.k_gap << "±" << r.peak.k_gap_err << " n=" << r.peak.n_points
                    << " k in [" << r.peak.k_min << "," << r.peak.k_max << "]");
    require_recovered("pole c", r.pole.c, r.pole.c_err, c);
    require_recovered("pole tau", r.pole.tau, r.pole.tau_err, tau);
    require_recovered("pole k_gap", r.pole.k_gap, r.pole.k_gap_err, kgap);
    require_recovered("peak c", r.peak.c, r.peak.c_err, c);
    require_recovered("peak tau", r.peak.tau, r.peak.tau_err, tau / std::sqrt(2.0));
    require_recovered("peak k_gap", r.peak.k_gap, r.peak.k_gap_err, std::sqrt(2.0) * kgap);
    // the per-shell damping is the model's 1/(2τ) on the propagating branch
    for (std::size_t s = 0; s < r.k.size(); ++s)
        if (r.pole.used[s]) REQUIRE(std::abs(r.gamma[s] - 1 / (2 * tau)) < 4 * r.gamma_err[s] + 0.02);
    // the same fit from the /analysis/currents group (the `vibra analyze` path via ctx.earlier)
    const KgapResult r2 = fit_kgap(kgap_input(to_group(cr, src.meta())), kp);
    REQUIRE_THAT(r2.pole.k_gap, WithinRel(r.pole.k_gap, 1e-12));
    REQUIRE_THAT(r2.peak.c, WithinRel(r.peak.c, 1e-12));
    // The bootstrap replicas fitted on 3 threads: the same bits.
    {
        KgapParams kp3 = kp;
        kp3.threads = 3;
        const KgapResult r3 = fit_kgap(kgap_input(cr), kp3);
        const auto same = [](const std::vector<double>& a, const std::vector<double>& b) {
            return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
        };
        REQUIRE(same(r3.omega2_pole_err, r.omega2_pole_err));
        REQUIRE(same(r3.gamma_err, r.gamma_err));
        REQUIRE(same(r3.omega_peak_err, r.omega_peak_err));
        for (const auto m : {&KgapResult::pole, &KgapResult::peak}) {
            REQUIRE(std::memcmp(&(r3.*m).c_err, &(r.*m).c_err, sizeof(double)) == 0);
            REQUIRE(std::memcmp(&(r3.*m).k_gap_err, &(r.*m).k_gap_err, sizeof(double)) == 0);
            REQUIRE(std::memcmp(&(r3.*m).tau_err, &(r.*m).tau_err, sizeof(double)) == 0);
            REQUIRE((r3.*m).n_bootstrap_ok == (r.*m).n_bootstrap_ok);
        }
        REQUIRE(std::memcmp(&r3.c_l_err, &r.c_l_err, sizeof(double)) == 0);
    }
    // Units: the same run as a tracked file in px (2.5 px per mm, frame times in s) read in mm and s,
    // as `vibra analyze` does by default: c in mm/s = c / 2.5, τ in s unchanged, k_gap and the fitted
    // k range in 1/mm = 2.5 × (the k grid scaled with them, so the same shells).
    {
        constexpr double px_per_mm = 2.5;
        Trajectory t2 = src.trajectory();
        t2.meta.length_unit = "px";
        t2.meta.time_unit = "s";
        t2.meta.px_per_mm = px_per_mm;
        t2.frames.time_s.resize(static_cast<std::size_t>(T));
        for (int f = 0; f < T; ++f) t2.frames.time_s[static_cast<std::size_t>(f)] = dt * f;
        const InMemorySource cal(std::move(t2));
        const UnitSource mm(cal, unit_conversion(cal.meta(), UnitSystem::automatic, "cal"));
        REQUIRE(mm.meta().length_unit == "mm");
        CurrentsParams cpm = cp;
        cpm.k_max *= px_per_mm, cpm.dk *= px_per_mm;
        const KgapResult rm = fit_kgap(kgap_input(compute_currents(mm, cpm)), kp);
        for (const auto m : {&KgapResult::pole, &KgapResult::peak}) {
            const auto &a = r.*m, &b = rm.*m;
            REQUIRE(std::isfinite(a.c));
            REQUIRE_THAT(b.c, WithinRel(a.c / px_per_mm, 1e-6));
            REQUIRE_THAT(b.c_err, WithinRel(a.c_err / px_per_mm, 1e-6));
            REQUIRE_THAT(b.tau, WithinRel(a.tau, 1e-6));
            REQUIRE_THAT(b.k_gap, WithinRel(a.k_gap * px_per_mm, 1e-6));
            REQUIRE_THAT(b.k_min, WithinRel(a.k_min * px_per_mm, 1e-6));
            REQUIRE_THAT(b.k_max, WithinRel(a.k_max * px_per_mm, 1e-6));
        }
        const auto grp_mm = to_group(rm, mm.meta());
        REQUIRE(std::get<std::string>(grp_mm.groups.front().attrs.at("units")) == "k: 1/mm, c: mm/s, tau: s");
    }
    // the group carries the attributes the issue asks for
    const ResultGroup grp = to_group(r, src.meta());
    REQUIRE(grp.groups.size() == 2);
    for (const auto& sg : grp.groups)
        for (const char* a :
             {"k_gap", "k_gap_err", "c", "c_err", "tau", "tau_err", "k_min", "k_max", "method"})
            REQUIRE(sg.attrs.count(a) == 1);
}

TEST_CASE("k-gap parameters are validated", "[unit]") {
    KgapParams p;
    p.lag_window = "triangle";
    REQUIRE_THROWS_AS(p.validate(), ParameterError);
    p.lag_window = "none";
    p.bootstrap = 3;
    REQUIRE_THROWS_AS(p.validate(), ParameterError);
}
