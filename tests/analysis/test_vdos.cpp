// SPDX-License-Identifier: GPL-3.0-or-later
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>

#include "dynamics_synth.hpp"
#include "vibra/analysis/vdos.hpp"
#include "vibra/core/error.hpp"

using namespace vibra;
using namespace vibra::analysis;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

namespace {
double trapezoid(const std::vector<double>& x, const std::vector<double>& y) {
    double s = 0;
    for (std::size_t i = 1; i < x.size(); ++i) s += 0.5 * (y[i] + y[i - 1]) * (x[i] - x[i - 1]);
    return s;
}
}  // namespace

TEST_CASE("cosine transform of a known VACF: Lorentzian for exp(-gamma t), sum rule", "[unit]") {
    const double gamma = 0.2, dt = 0.1;
    const std::size_t M = 3000;  // t_max = 300 ≫ 1/gamma
    std::vector<double> z(M + 1);
    for (std::size_t m = 0; m <= M; ++m) z[m] = std::exp(-gamma * m * dt);
    const auto d = vdos_from_vacf(z, dt, VdosWindow::hann);
    const auto w = vdos_omega(M, dt);
    REQUIRE(d.size() == M + 1);
    CHECK_THAT(trapezoid(w, d), WithinAbs(1.0, 1e-9));
    for (double om : {0.0, 0.1, 0.2, 0.5, 1.0}) {
        const auto j = static_cast<std::size_t>(std::lround(om / w[1]));
        const double expect = 2 / M_PI * gamma / (gamma * gamma + w[j] * w[j]);
        CHECK_THAT(d[j], WithinRel(expect, 0.02));
    }
}

TEST_CASE("harmonic oscillator trajectories give a VDOS peak at omega0", "[unit]") {
    const double w0 = 1.3, dt = 0.05;
    const std::size_t N = 20, T = 2000;
    std::mt19937_64 rng(2);
    std::uniform_real_distribution<double> ph(0, 2 * M_PI), amp(0.5, 2.0);
    test::Series s;
    s.x.assign(N, std::vector<double>(T));
    s.y = s.vx = s.vy = s.x;
    s.species.assign(N, 0);
    for (std::size_t i = 0; i < N; ++i) {
        const double ax = amp(rng), ay = amp(rng), px = ph(rng), py = ph(rng);
        s.species[i] = static_cast<std::int8_t>(i % 2);
        for (std::size_t t = 0; t < T; ++t) {
            const double tt = t * dt;
            s.x[i][t] = 50 + ax * std::cos(w0 * tt + px);
            s.y[i][t] = 50 + ay * std::cos(w0 * tt + py);
            s.vx[i][t] = -ax * w0 * std::sin(w0 * tt + px);
            s.vy[i][t] = -ay * w0 * std::sin(w0 * tt + py);
        }
    }
    Metadata m;
    m.time_unit = std::string("s");  // (not = "s": GCC 12 -Wrestrict false positive)
    m.frame_interval = dt;
    for (bool given : {true, false}) {
        test::Series q = s;
        if (!given) q.vx.clear(), q.vy.clear();
        auto src = test::make_source(q, m);
        for (auto est : {VdosEstimator::welch, VdosEstimator::unbiased}) {
            INFO("estimator " << int(est) << ", given velocities " << given);
            VdosParams p;
            p.estimator = est;
            p.vacf.max_lag = 1000;
            p.transfer_correction = !given;
            const auto g = to_group(compute_vdos(src, p), p, src.meta());
            const auto& w = test::array(g, "omega");
            const auto& d = test::array(g, "vdos");
            const auto& dr = test::array(g, "vdos_reduced");
            CHECK(g.find("omega")->units == "rad/s");
            CHECK_THAT(w.back(), WithinRel(M_PI / dt, 1e-12));
            CHECK_THAT(trapezoid(w, d), WithinAbs(1.0, 1e-9));
            std::size_t jmax = 0;
            for (std::size_t j = 0; j < d.size(); ++j)
                if (d[j] > d[jmax]) jmax = j;
            CHECK_THAT(w[jmax], WithinAbs(w0, w[1]));  // within one frequency bin
            CHECK_THAT(dr[jmax], WithinRel(d[jmax] / w[jmax], 1e-12));
            CHECK(std::isnan(dr[0]));
            CHECK(std::get<std::string>(g.attrs.at("transfer_correction")) == (given ? "none" : "central"));
            const auto& ds = test::array(g, "vdos_small");
            CHECK_THAT(trapezoid(w, ds), WithinAbs(1.0, 1e-9));
        }
    }
}

TEST_CASE("finite-difference transfer functions", "[unit]") {
    const double dt = 0.1, w = 5.0;
    CHECK_THAT(transfer_function_sq(VelocityScheme::central, w, dt),
               WithinRel(std::pow(std::sin(0.5) / 0.5, 2), 1e-12));
    CHECK_THAT(transfer_function_sq(VelocityScheme::forward, w, dt),
               WithinRel(std::pow(std::sin(0.25) / 0.25, 2), 1e-12));
    CHECK(transfer_function_sq(VelocityScheme::given, w, dt) == 1.0);
    // a central-difference VACF of a pure cosine has amplitude H(ω0)^2: check the formula
    // against a direct computation for x = cos(ω0 t)
    const double w0 = 7.0;
    const double v_fd_amp =
        std::sin(w0 * dt) / dt;  // (cos(w(t+dt)) − cos(w(t−dt)))/(2dt) = −sin(wt) sin(w dt)/dt
    CHECK_THAT(std::pow(v_fd_amp / w0, 2),
               WithinRel(transfer_function_sq(VelocityScheme::central, w0, dt), 1e-12));
}

TEST_CASE("species with shorter tracks share one omega grid", "[unit]") {
    // small particles seen for 1000 frames, large ones for 200: the large VACF ends at lag 199,
    // so every part is cut to the common finite length
    const std::size_t N = 10, T = 1000;
    std::mt19937_64 rng(6);
    std::normal_distribution<double> g(0.0, 1.0);
    test::Series s;
    s.x.assign(N, std::vector<double>(T, test::kNaN));
    s.y = s.vx = s.vy = s.x;
    s.species.resize(N);
    for (std::size_t i = 0; i < N; ++i) {
        s.species[i] = static_cast<std::int8_t>(i % 2);
        const std::size_t len = i % 2 ? 200 : T;
        for (std::size_t t = 0; t < len; ++t) {
            s.x[i][t] = s.y[i][t] = 0.0;
            s.vx[i][t] = g(rng);
            s.vy[i][t] = g(rng);
        }
    }
    auto src = test::make_source(s, Metadata{});
    VdosParams p;
    p.estimator = VdosEstimator::unbiased;  // the VACF route: parts cut to the common finite lags
    p.vacf.max_lag = 600;
    const auto r = to_group(compute_vdos(src, p), p, src.meta());
    const auto& w = test::array(r, "omega");
    CHECK(w.size() == 200);
    CHECK(std::get<std::int64_t>(r.attrs.at("max_lag_used")) == 199);
    for (const char* n : {"vdos", "vdos_small", "vdos_large"}) {
        const auto& d = test::array(r, n);
        REQUIRE(d.size() == w.size());
        CHECK_THAT(trapezoid(w, d), WithinAbs(1.0, 1e-9));
        for (double v : d) CHECK(std::isfinite(v));
    }
}

TEST_CASE("mass-weighted VDOS: species peaks weighted by m <v^2>", "[unit]") {
    // small disks oscillate at w1, large at w2, equal velocity amplitudes; m_large/m_small = 1.96
    const double w1 = 1.0, w2 = 2.0, dt = 0.05;
    const std::size_t N = 20, T = 2000;
    std::mt19937_64 rng(9);
    std::uniform_real_distribution<double> ph(0, 2 * M_PI);
    test::Series s;
    s.x.assign(N, std::vector<double>(T));
    s.y = s.vx = s.vy = s.x;
    s.species.resize(N);
    for (std::size_t i = 0; i < N; ++i) {
        s.species[i] = static_cast<std::int8_t>(i % 2);
        const double w = i % 2 ? w2 : w1, p = ph(rng), q = ph(rng);
        for (std::size_t t = 0; t < T; ++t) {
            s.vx[i][t] = std::sin(w * t * dt + p);
            s.vy[i][t] = std::sin(w * t * dt + q);
        }
    }
    Metadata m;
    m.frame_interval = dt;
    m.species_diameters = {1.0, 1.4};
    auto src = test::make_source(s, m);
    VdosParams p;
    p.vacf.max_lag = 1000;
    const auto r = to_group(compute_vdos(src, p), p, src.meta());
    const auto& w = test::array(r, "omega");
    const auto& dm = test::array(r, "vdos_mass");
    const auto& d = test::array(r, "vdos");
    CHECK_THAT(trapezoid(w, dm), WithinAbs(1.0, 1e-9));
    // weight of each line = integral of the spectrum on its half of the axis
    auto area = [&](const std::vector<double>& y, double lo, double hi) {
        double a = 0;
        for (std::size_t j = 1; j < w.size(); ++j)
            if (w[j] > lo && w[j] <= hi) a += 0.5 * (y[j] + y[j - 1]) * (w[j] - w[j - 1]);
        return a;
    };
    const double lo_m = area(dm, 0, 1.5), hi_m = area(dm, 1.5, 4), lo_n = area(d, 0, 1.5),
                 hi_n = area(d, 1.5, 4);
    CHECK_THAT(hi_n / lo_n, WithinRel(1.0, 0.05));   // number-weighted: equal ⟨v²⟩ → equal lines
    CHECK_THAT(hi_m / lo_m, WithinRel(1.96, 0.05));  // mass-weighted: large line × m_large
    CHECK_THAT(test::attr(r, "mass_weight_small"), WithinRel(1 / 2.96, 0.02));
}

TEST_CASE("biased estimator without window is a non-negative periodogram", "[unit]") {
    const std::size_t N = 6, T = 300;
    std::mt19937_64 rng(13);
    std::normal_distribution<double> g(0.0, 1.0);
    test::Series s;
    s.x.assign(N, std::vector<double>(T, 0.0));
    s.y = s.vx = s.vy = s.x;
    s.species.assign(N, 0);
    for (std::size_t i = 0; i < N; ++i)
        for (std::size_t t = 0; t < T; ++t) s.vx[i][t] = g(rng), s.vy[i][t] = g(rng);
    auto src = test::make_source(s, Metadata{});
    VdosParams p;
    p.vacf.max_lag = T - 1;
    p.window = VdosWindow::none;
    p.estimator = VdosEstimator::biased;
    const auto r = to_group(compute_vdos(src, p), p, src.meta());
    const auto& d = test::array(r, "vdos");
    double dmin = 1e300;
    for (double v : d) dmin = std::min(dmin, v);
    CHECK(dmin > -1e-12);
    CHECK_THAT(trapezoid(test::array(r, "omega"), d), WithinAbs(1.0, 1e-9));
    p.estimator =
        VdosEstimator::unbiased;  // the unbiased per-pair mean of white noise does go negative somewhere
    const auto ru =
        to_group(compute_vdos(src, p), p, src.meta());  // kept alive: test::array returns a reference into it
    const auto& du = test::array(ru, "vdos");
    double umin = 1e300;
    for (double v : du) umin = std::min(umin, v);
    CHECK(umin < 0);
}

namespace {

/// A harmonic solid: two independent rings (x and y) of N equal masses and springs, every real
/// normal mode excited with the same energy (equipartition) and a random phase. Mode k has
/// ω_k = 2 ω0 |sin(π k/N)|; the zero mode (translation) is left out, so the VDOS is N − 1 lines of
/// equal weight: ∫₀^Ω D dω = (number of modes below Ω)/(N − 1).
test::Series harmonic_ring(std::size_t N, std::size_t T, double dt, double w0, std::vector<double>& freqs) {
    std::mt19937_64 rng(17);
    std::uniform_real_distribution<double> ph(0, 2 * M_PI);
    struct Mode {
        double w;
        std::vector<double> e;  // normalised shape over the ring
    };
    std::vector<Mode> modes;
    for (std::size_t k = 1; k <= N / 2; ++k) {
        const double w = 2 * w0 * std::abs(std::sin(M_PI * double(k) / double(N)));
        for (int c = 0; c < (2 * k == N ? 1 : 2); ++c) {
            Mode m{w, std::vector<double>(N)};
            double norm = 0;
            for (std::size_t n = 0; n < N; ++n) {
                const double q = 2 * M_PI * double(k * n) / double(N);
                m.e[n] = c == 0 ? std::cos(q) : std::sin(q);
                norm += m.e[n] * m.e[n];
            }
            for (double& v : m.e) v /= std::sqrt(norm);
            modes.push_back(std::move(m));
        }
    }
    REQUIRE(modes.size() == N - 1);
    freqs.clear();
    for (const auto& m : modes) freqs.push_back(m.w);
    test::Series s;
    s.x.assign(N, std::vector<double>(T, 0.0));
    s.y = s.vx = s.vy = s.x;
    s.species.assign(N, 0);
    for (auto* v : {&s.vx, &s.vy})
        for (const auto& m : modes) {
            const double phase = ph(rng);
            for (std::size_t t = 0; t < T; ++t) {
                const double a = std::sin(m.w * double(t) * dt + phase);
                for (std::size_t n = 0; n < N; ++n) (*v)[n][t] += m.e[n] * a;
            }
        }
    for (std::size_t n = 0; n < N; ++n)
        for (std::size_t t = 0; t < T; ++t) s.x[n][t] = double(n), s.y[n][t] = 0.0;
    return s;
}

/// A gas: free particles with Ornstein–Uhlenbeck velocities (exact AR(1) update,
/// a = exp(−γ dt)), VACF ∝ exp(−γ t).
test::Series ou_gas(std::size_t N, std::size_t T, double dt, double gamma) {
    std::mt19937_64 rng(23);
    std::normal_distribution<double> g(0.0, 1.0);
    const double a = std::exp(-gamma * dt), b = std::sqrt(1 - a * a);
    test::Series s;
    s.x.assign(N, std::vector<double>(T, 0.0));
    s.y = s.vx = s.vy = s.x;
    s.species.assign(N, 0);
    for (std::size_t i = 0; i < N; ++i) {
        s.species[i] = static_cast<std::int8_t>(i % 2);
        double vx = g(rng), vy = g(rng);
        for (std::size_t t = 0; t < T; ++t) {
            s.vx[i][t] = vx, s.vy[i][t] = vy;
            if (t) s.x[i][t] = s.x[i][t - 1] + vx * dt, s.y[i][t] = s.y[i][t - 1] + vy * dt;
            vx = a * vx + b * g(rng);
            vy = a * vy + b * g(rng);
        }
    }
    return s;
}

double min_of(const std::vector<double>& v) {
    double m = 1e300;
    for (double x : v) m = std::min(m, x);
    return m;
}

}  // namespace

TEST_CASE("welch VDOS of a harmonic solid: non-negative, normalised, one line per normal mode", "[unit]") {
    const std::size_t N = 16, T = 8192;
    const double dt = 0.5, w0 = 1.0;
    std::vector<double> freqs;
    const auto s = harmonic_ring(N, T, dt, w0, freqs);
    Metadata m;
    m.frame_interval = dt;
    auto src = test::make_source(s, m);
    VdosParams p;  // the default estimator
    REQUIRE(p.estimator == VdosEstimator::welch);
    p.vacf.max_lag = 1024;  // segments of 2048 frames: Δω = π/(1024·0.5) ≈ 0.006, lines ≥ 0.04 apart
    const auto g = to_group(compute_vdos(src, p), p, src.meta());
    const auto& w = test::array(g, "omega");
    const auto& d = test::array(g, "vdos");
    REQUIRE(w.size() == 1025);
    CHECK(min_of(d) >= 0.0);  // non-negative by construction, every bin
    CHECK_THAT(trapezoid(w, d), WithinAbs(1.0, 1e-9));
    // Parseval: before normalisation the spectrum already carries the mean square velocity
    CHECK_THAT(test::attr(g, "integral_before_normalisation"), WithinAbs(1.0, 0.01));
    CHECK(std::get<std::int64_t>(g.attrs.at("segments")) ==
          std::int64_t(N) * 7);  // 50 % overlap: 7 per track
    // mode counting: the integral up to halfway between distinct lines = fraction of modes below
    std::vector<double> distinct = freqs;
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end(),
                               [](double a, double b) { return std::abs(a - b) < 1e-12; }),
                   distinct.end());
    for (std::size_t i = 0; i + 1 < distinct.size(); ++i) {
        const double cut = 0.5 * (distinct[i] + distinct[i + 1]);
        double below = 0;
        for (std::size_t j = 1; j < w.size() && w[j] <= cut; ++j)
            below += 0.5 * (d[j] + d[j - 1]) * (w[j] - w[j - 1]);
        double expect = 0;
        for (double f : freqs) expect += f < cut ? 1.0 : 0.0;
        INFO("cut " << cut);
        CHECK_THAT(below, WithinAbs(expect / double(N - 1), 0.01));
    }
}

TEST_CASE("welch VDOS of a gas: the Lorentzian of an Ornstein-Uhlenbeck velocity, D(0) > 0", "[unit]") {
    const std::size_t N = 100, T = 4000;
    const double dt = 0.1, gamma = 2.0;
    auto s = ou_gas(N, T, dt, gamma);
    Metadata m;
    m.frame_interval = dt;
    auto src = test::make_source(s, m);
    VdosParams p;
    p.vacf.max_lag = 128;
    const auto g = to_group(compute_vdos(src, p), p, src.meta());
    const auto& w = test::array(g, "omega");
    for (const char* part : {"vdos", "vdos_small", "vdos_large"}) {
        INFO(part);
        const auto& d = test::array(g, part);
        CHECK(min_of(d) >= 0.0);
        CHECK_THAT(trapezoid(w, d), WithinAbs(1.0, 1e-9));
    }
    CHECK_THAT(test::attr(g, "integral_before_normalisation"), WithinAbs(1.0, 0.02));
    // the sampled AR(1) spectrum, normalised on [0, π/dt]: (dt/π)(1 − a²)/(1 − 2a cos ωdt + a²)
    const double a = std::exp(-gamma * dt);
    const auto& d = test::array(g, "vdos");
    for (double om : {0.0, 1.0, 2.0, 5.0, 10.0, 20.0}) {
        const auto j = static_cast<std::size_t>(std::lround(om / w[1]));
        const double expect = dt / M_PI * (1 - a * a) / (1 - 2 * a * std::cos(w[j] * dt) + a * a);
        INFO("omega " << w[j]);
        CHECK_THAT(d[j], WithinRel(expect, 0.06));
    }
    // the old default on the same data: the cosine transform of the unbiased VACF at long lags
    // has negative bins; the Welch estimator has none
    p.estimator = VdosEstimator::unbiased;
    p.vacf.max_lag = 2000;
    CHECK(min_of(test::array(to_group(compute_vdos(src, p), p, src.meta()), "vdos")) < 0);
}

TEST_CASE("vdos on too short an input throws InsufficientData instead of writing half a group", "[unit]") {
    for (std::size_t T : {std::size_t(1), std::size_t(2)}) {
        auto s = ou_gas(4, T, 0.1, 1.0);
        s.vx.clear(), s.vy.clear();  // central differences: no velocity in a 1- or 2-frame track
        auto src = test::make_source(s, Metadata{});
        for (auto est : {VdosEstimator::welch, VdosEstimator::unbiased, VdosEstimator::biased}) {
            VdosParams p;
            p.estimator = est;
            INFO("frames " << T << ", estimator " << int(est));
            CHECK_THROWS_AS(compute_vdos(src, p), InsufficientData);
        }
    }
}
