// SPDX-License-Identifier: GPL-3.0-or-later
// Benchmark of the collective-mode pipeline (docs/performance.md, "Collective modes"):
// currents C_L/C_T(k,t), C(k,ω) and the transverse VDOS with per-particle band contributions for
// N = 2000 particles, 1600 frames, every k-vector up to the Debye wavenumber. Prints seconds, peak
// memory and the ratio to a vectorised numpy direct sum over the same k set
// (bench/currents_baseline.py, run with /usr/bin/python3 on the same data written to a temp file).
// Usage: bench_currents [N] [frames] [baseline_frames] [threads]
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <random>
#include <string>

#include "vibra/analysis/currents.hpp"
#include "vibra/analysis/transverse_vdos.hpp"

using namespace vibra;
using namespace vibra::analysis;

namespace {
double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
long peak_rss_mb() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss / 1024;
}
}  // namespace

int main(int argc, char** argv) {
    const int N = argc > 1 ? std::atoi(argv[1]) : 2000;
    const int T = argc > 2 ? std::atoi(argv[2]) : 1600;
    const int TB = argc > 3 ? std::atoi(argv[3]) : 200;
    const int threads = argc > 4 ? std::atoi(argv[4]) : 2;
    const double L = std::sqrt(static_cast<double>(N)), dt = 0.05;  // density 1
    // Particles with OU velocities diffusing in a periodic box.
    Trajectory tr;
    tr.meta.geometry = Geometry::periodic(0, 0, L, L);
    tr.meta.frame_interval = dt;
    tr.meta.length_unit = "sigma";
    tr.meta.time_unit = "tau";
    std::mt19937_64 rng(1);
    std::uniform_real_distribution<double> u(0, L);
    std::normal_distribution<double> g;
    std::vector<double> x(N), y(N), vx(N), vy(N);
    for (int i = 0; i < N; ++i) x[i] = u(rng), y[i] = u(rng), vx[i] = g(rng), vy[i] = g(rng);
    const double a = std::exp(-dt), s = std::sqrt(1 - a * a);
    const auto tmp =
        std::filesystem::temp_directory_path() / ("vibra_bench_currents_" + std::to_string(::getpid()));
    std::filesystem::create_directories(tmp);
    std::ofstream raw(tmp / "frames.f64", std::ios::binary);
    tr.rows.reserve(static_cast<std::size_t>(N) * T);
    for (int f = 0; f < T; ++f) {
        for (int i = 0; i < N; ++i) {
            vx[i] = a * vx[i] + s * g(rng);
            vy[i] = a * vy[i] + s * g(rng);
            x[i] = std::fmod(x[i] + vx[i] * dt + L, L);
            y[i] = std::fmod(y[i] + vy[i] * dt + L, L);
            tr.rows.push(f, i, x[i], y[i], 0);
            tr.rows.vx.push_back(vx[i]);
            tr.rows.vy.push_back(vy[i]);
        }
        if (f < TB)
            for (const auto* v : {&x, &y, &vx, &vy})
                raw.write(reinterpret_cast<const char*>(v->data()),
                          static_cast<std::streamsize>(N * sizeof(double)));
    }
    raw.close();
    tr.index = build_frame_index(tr.rows, 0, T);
    const InMemorySource src(std::move(tr));
    const long rss_data = peak_rss_mb();

    CurrentsParams cp;
    cp.mass_weighted = false;
    cp.threads = threads;
    cp.segment = 256;
    cp.omega_max = 20;  // ω band asked for
    double t0 = now();
    const CurrentsResult cr = compute_currents(src, cp);
    const double t_currents = now() - t0;
    TransverseVdosParams tp;
    tp.threads = threads;
    tp.segment = 256;
    tp.omega_max = 20;
    tp.band_min = 2;
    tp.band_max = 6;
    t0 = now();
    const TransverseVdosResult tv = compute_transverse_vdos(src, tp);
    const double t_tvdos = now() - t0;
    const long rss = peak_rss_mb();
    // k set for the baseline
    const KVectorSet ks = current_kvectors(current_region(src, 0), cr.density, cp);
    {
        std::ofstream kf(tmp / "k.f64", std::ios::binary);
        kf.write(reinterpret_cast<const char*>(ks.kx.data()),
                 static_cast<std::streamsize>(ks.size() * sizeof(double)));
        kf.write(reinterpret_cast<const char*>(ks.ky.data()),
                 static_cast<std::streamsize>(ks.size() * sizeof(double)));
    }
    const std::string script = std::string(VIBRA_SOURCE_DIR) + "/bench/currents_baseline.py";
    const std::string cmd = "/usr/bin/python3 " + script + " " + tmp.string() + " " + std::to_string(N) +
                            " " + std::to_string(TB) + " " + std::to_string(ks.size()) + " > " +
                            (tmp / "baseline.txt").string();
    const int rc = std::system(cmd.c_str());
    double t_base_frames = NAN;
    if (rc == 0) {
        std::ifstream in(tmp / "baseline.txt");
        in >> t_base_frames;
    }
    // our per-frame cost of the same step (Fourier sums + time analysis), on TB frames
    Trajectory sub = src.read_frames(0, TB);
    sub.index = build_frame_index(sub.rows, 0, TB);
    const InMemorySource src_b(std::move(sub));
    CurrentsParams cpb = cp;
    cpb.blocks = 0;
    cpb.segment = std::min(256, TB / 2 * 2);
    t0 = now();
    (void)compute_currents(src_b, cpb);
    const double t_ours_frames = now() - t0;
    std::filesystem::remove_all(tmp);

    std::printf(
        "bench_currents: N = %d, frames = %d, k-vectors (half plane, |k| <= k_D = %.3f) = %zu, shells = %zu, "
        "threads = %d\n",
        N, T, cr.k_debye, ks.size(), cr.k.size(), threads);
    std::printf(
        "  currents (j_L, j_T for all k and frames, C(k,t), per-block C(k,t), Welch C(k,w) up to w = 20): "
        "%.2f s\n",
        t_currents);
    std::printf(
        "  tvdos (D_T, D_L and per-particle band [2,6] contributions, two passes): %.2f s (%lld segments x "
        "particles rows)\n",
        t_tvdos, static_cast<long long>(tv.particle.size()));
    std::printf("  peak RSS: %ld MB (of which input trajectory in memory: %ld MB)\n", rss, rss_data);
    std::printf(
        "  baseline (numpy direct sum exp(i k.r) on the same k set + FFT correlations), %d frames: %.2f s\n",
        TB, t_base_frames);
    std::printf("  vibra currents on the same %d frames: %.3f s\n", TB, t_ours_frames);
    std::printf("  speed-up vs numpy: %.1fx\n", t_base_frames / t_ours_frames);
    return rc == 0 ? 0 : 1;
}
