// SPDX-License-Identifier: GPL-3.0-or-later
// Speed and memory of the single-particle dynamics (MSD, VACF) on a periodic 2000-particle ×
// 1600-frame trajectory generated on the fly (OU velocities integrated to positions, wrapped into
// the box, velocities given), against the O(T²) MSD definition measured in the same run on a
// subset of particles and scaled linearly to all of them (the direct cost is exactly linear in N).
// Then the memory bound: the analysis working set (VmHWM reset before each run via
// /proc/self/clear_refs) for 1600 and 16000 frames of 200 particles with a fixed block budget.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <cstdlib>
#include <unistd.h>

#include "vibra/analysis/msd.hpp"
#include "vibra/analysis/vacf.hpp"
#include "vibra/core/trajectory_source.hpp"

using namespace vibra;
using namespace vibra::analysis;

namespace {
long status_kb(const char* key) {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind(key, 0) == 0) return std::stol(line.substr(std::string(key).size()));
    return -1;
}
void reset_hwm() {
    std::ofstream f("/proc/self/clear_refs");
    f << "5";
}
double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

InMemorySource make(std::size_t N, std::size_t T, std::uint64_t seed) {
    const double L = 100.0, dt = 0.01, tau = 0.5, sig = 1.0;
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> g(0.0, 1.0);
    std::uniform_real_distribution<double> u(0.0, L);
    std::vector<double> x(N), y(N), vx(N), vy(N);
    for (std::size_t i = 0; i < N; ++i)
        x[i] = u(rng), y[i] = u(rng), vx[i] = sig * g(rng), vy[i] = sig * g(rng);
    const double a = std::exp(-dt / tau), b = std::sqrt(1 - a * a);
    Trajectory t;
    t.meta.length_unit = "sigma";
    t.meta.time_unit = "tau";
    t.meta.frame_interval = dt;
    t.meta.geometry = Geometry::periodic(0, 0, L, L);
    t.meta.species_diameters = {1.0, 1.4};
    t.rows.reserve(N * T);
    t.rows.vx.reserve(N * T);
    t.rows.vy.reserve(N * T);
    for (std::size_t f = 0; f < T; ++f) {
        for (std::size_t i = 0; i < N; ++i) {
            t.rows.push(static_cast<std::int64_t>(f), static_cast<std::int64_t>(i),
                        std::fmod(x[i] + 1e6 * L, L), std::fmod(y[i] + 1e6 * L, L),
                        static_cast<std::int8_t>(i % 2));
            t.rows.vx.push_back(vx[i]);
            t.rows.vy.push_back(vy[i]);
            x[i] += vx[i] * dt;
            y[i] += vy[i] * dt;
            vx[i] = a * vx[i] + b * sig * g(rng);
            vy[i] = a * vy[i] + b * sig * g(rng);
        }
    }
    t.index = build_frame_index(t.rows, 0, static_cast<std::int64_t>(T));
    return InMemorySource(std::move(t));
}
// Experiment-like: a rectangular window with `slots` particles visible at a time; each track lives a
// geometric number of frames (mean 200) then leaves and a new id enters; 5 % of detections missing;
// positions only (velocities by central differences).
InMemorySource make_tracked(std::size_t slots, std::size_t T, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> g(0.0, 0.3);
    std::uniform_real_distribution<double> u(0.0, 1000.0);
    std::geometric_distribution<int> life(1.0 / 200.0);
    std::bernoulli_distribution miss(0.05);
    std::vector<std::int64_t> id(slots), left(slots);
    std::vector<double> x(slots), y(slots);
    std::int64_t next = 0;
    for (std::size_t i = 0; i < slots; ++i)
        id[i] = next++, left[i] = 1 + life(rng), x[i] = u(rng), y[i] = u(rng);
    Trajectory t;
    t.meta.length_unit = "px";
    t.meta.time_unit = "s";
    t.meta.frame_interval = 1e-3;
    t.meta.geometry = Geometry::rect(0, 0, 1000, 1000);
    t.meta.species_diameters = {20.0, 28.0};
    std::vector<std::size_t> order(slots);
    for (std::size_t f = 0; f < T; ++f) {
        for (std::size_t i = 0; i < slots; ++i) {
            if (--left[i] < 0) id[i] = next++, left[i] = life(rng), x[i] = u(rng), y[i] = u(rng);
            x[i] += g(rng);
            y[i] += g(rng);
        }
        for (std::size_t i = 0; i < slots; ++i) order[i] = i;
        std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return id[a] < id[b]; });
        for (std::size_t i : order)
            if (!miss(rng))
                t.rows.push(static_cast<std::int64_t>(f), id[i], x[i], y[i],
                            static_cast<std::int8_t>(id[i] % 2));
    }
    t.index = build_frame_index(t.rows, 0, static_cast<std::int64_t>(T));
    return InMemorySource(std::move(t));
}
}  // namespace

int memory_run(std::size_t TT) {
    const auto s2 = make(200, TT, 2);
    const long base = status_kb("VmRSS:");
    MsdParams q;
    q.max_lag = 800;
    q.vanhove_lags = {};
    q.max_cells = 1 << 18;
    reset_hwm();
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = std::vector<ResultGroup>{to_group(compute_msd(s2, q), q, s2.meta())};
    const double tq = seconds_since(t0);
    const long hwm = status_kb("VmHWM:");
    std::printf(
        "  %6zu frames: MSD %.2f s, input in memory %ld MB, analysis working set (VmHWM - VmRSS before) %ld "
        "MB, "
        "%lld particle blocks\n",
        TT, tq, base / 1024, (hwm - base) / 1024,
        static_cast<long long>(std::get<std::int64_t>(r[0].attrs.at("particle_blocks"))));
    return 0;
}

int main(int argc, char** argv) {
    if (argc == 3 && std::string(argv[1]) == "memory") return memory_run(std::stoul(argv[2]));
    const std::size_t N = 2000, T = 1600;
    auto t0 = std::chrono::steady_clock::now();
    const auto src = make(N, T, 1);
    std::printf("generated %zu particles x %zu frames (periodic, velocities given) in %.2f s\n", N, T,
                seconds_since(t0));
    const long rss0 = status_kb("VmRSS:");

    MsdParams mp;
    mp.max_lag = static_cast<std::int64_t>(T) - 1;  // all lags: the FFT's advantage is largest here
    mp.vanhove_lags = {};
    reset_hwm();
    t0 = std::chrono::steady_clock::now();
    const auto msd = std::vector<ResultGroup>{to_group(compute_msd(src, mp), mp, src.meta())};
    const double t_msd = seconds_since(t0);
    const long hwm_msd = status_kb("VmHWM:");

    VacfParams vp;
    vp.max_lag = static_cast<std::int64_t>(T) - 1;
    reset_hwm();
    t0 = std::chrono::steady_clock::now();
    const auto vacf = to_group(compute_vacf(src, vp), vp, src.meta());
    const double t_vacf = seconds_since(t0);
    const long hwm_vacf = status_kb("VmHWM:");

    // O(T²) baseline: the direct definition on a subset of tracks, scaled to N
    const std::size_t sub = 40;
    const Trajectory& tr = src.trajectory();
    t0 = std::chrono::steady_clock::now();
    MsdSums direct;
    direct.resize(T);
    for (std::size_t i = 0; i < sub; ++i) {
        std::vector<double> x(T), y(T);
        double ux = 0, uy = 0;
        for (std::size_t f = 0; f < T; ++f) {  // unwrap like the analysis does
            const std::size_t r = f * N + i;
            if (f == 0)
                ux = tr.rows.x[r], uy = tr.rows.y[r];
            else {
                double dx = tr.rows.x[r] - tr.rows.x[r - N], dy = tr.rows.y[r] - tr.rows.y[r - N];
                ux += dx - 100.0 * std::round(dx / 100.0);
                uy += dy - 100.0 * std::round(dy / 100.0);
            }
            x[f] = ux, y[f] = uy;
        }
        accumulate_msd_direct(x, y, T - 1, direct);
    }
    const double t_direct = seconds_since(t0) * static_cast<double>(N) / static_cast<double>(sub);

    std::printf(
        "MSD  (FFT, all %zu lags, msd+alpha2, 3 species sets): %.2f s, working set %ld MB (VmHWM %ld MB)\n",
        T, t_msd, (hwm_msd - rss0) / 1024, hwm_msd / 1024);
    std::printf(
        "VACF (FFT, all lags):                               %.2f s, working set %ld MB (VmHWM %ld MB)\n",
        t_vacf, (hwm_vacf - rss0) / 1024, hwm_vacf / 1024);
    std::printf("O(T^2) MSD baseline: %.2f s (measured on %zu tracks, scaled x%.0f)\n", t_direct, sub,
                static_cast<double>(N) / sub);
    std::printf("speed-up FFT MSD vs O(T^2): %.1fx\n", t_direct / t_msd);
    std::printf("check: MSD(lag 1) = %.6g sigma^2, VACF(0) = %.4g (sigma/tau)^2 (expect ~2)\n",
                std::get<std::vector<double>>(msd[0].find("msd")->data)[1],
                std::get<std::vector<double>>(vacf.find("vacf")->data)[0]);

    // experiment-like tracked trajectory
    {
        const auto ex = make_tracked(2000, 1600, 3);
        std::printf(
            "tracked window: 2000 visible x 1600 frames, %lld rows, tracks start/end, 5%% gaps, positions "
            "only\n",
            static_cast<long long>(ex.n_rows()));
        MsdParams q;
        q.max_lag = 400;
        q.vanhove_lags = {};
        t0 = std::chrono::steady_clock::now();
        const auto r = std::vector<ResultGroup>{to_group(compute_msd(ex, q), q, ex.meta())};
        const double tm = seconds_since(t0);
        VacfParams qv;
        qv.max_lag = 400;
        t0 = std::chrono::steady_clock::now();
        const auto rv = to_group(compute_vacf(ex, qv), qv, ex.meta());
        const double tv = seconds_since(t0);
        std::printf(
            "  MSD %.2f s (%lld tracks), VACF (central differences) %.2f s, MSD(lag 1) = %.4g px^2 (expect "
            "0.18)\n",
            tm, static_cast<long long>(std::get<std::int64_t>(r[0].attrs.at("n_tracks"))), tv,
            std::get<std::vector<double>>(r[0].find("msd")->data)[1]);
        (void)rv;
    }

    // memory bound: a fresh process per size, so the allocator's retained pages of the runs
    // above do not hide the working set
    std::printf("memory bound (200 particles, block budget 2^18 track-frames, fresh process each):\n");
    for (const char* frames : {"1600", "16000"}) {
        const std::string cmd = "/proc/" + std::to_string(getpid()) + "/exe memory " + frames;
        std::fflush(stdout);
        if (std::system(cmd.c_str()) != 0) std::printf("  memory run failed\n");
    }
    return 0;
}
