// SPDX-License-Identifier: GPL-3.0-or-later
// How `vibra analyze` scales with the length of a run. Generates (into a temporary folder) a
// vibra-layout trajectory of N Brownian disks in a periodic box for each number of frames, then
// runs every analysis of the default set (plus defects and spectra) as its own
// `vibra analyze --only X` child process and reports its wall time and peak RSS (wait4's
// ru_maxrss); then the growth ratio of each analysis between consecutive sizes, and its rows per
// second against reading the columns alone (TrajectoryReader over all frames) in the same run.
// Optionally (--numpy) the speed of msd/vacf against a plain numpy FFT MSD per particle (the
// algorithm of tidynamics, MDAnalysis' fft=True) on 2000 × 1600 frames, timed in the same run
// with Debian's /usr/bin/python3 (skipped with a message when numpy or h5py is absent).
//
//   bench_scale [--particles 10000] [--frames 1000,4000,16000] [--only msd,vacf,...]
//               [--threads 2] [--memory MIB] [--tmp DIR] [--numpy] [--no-scale] [--vibra PATH]
// (--vibra: another build of the CLI, e.g. an older one for a before/after comparison)
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "vibra/analysis/registry.hpp"
#include "vibra/store/trajectory_file.hpp"

extern char** environ;

using namespace vibra;
namespace fs = std::filesystem;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string t;
    while (std::getline(ss, t, ','))
        if (!t.empty()) out.push_back(t);
    return out;
}

/// N Brownian disks (rms step 0.05 per coordinate and frame, so MSD = 2·0.05²·lag = 0.005·lag) in a periodic L × L box,
/// positions wrapped, written frame block by frame block (memory: one block).
void generate(const std::string& path, std::int64_t N, std::int64_t T, std::uint64_t seed) {
    const double L = std::sqrt(static_cast<double>(N)) * 2.0;  // area fraction ≈ 0.2 for unit disks
    const double step = 0.05;                                  // rms step per coordinate
    Metadata meta;
    meta.length_unit = "sigma";
    meta.time_unit = "tau";
    meta.frame_interval = 0.01;
    meta.geometry = Geometry::periodic(0, 0, L, L);
    meta.species_diameters = {1.0, 1.4};
    store::TrajectoryWriter w(path, meta, store::ColumnSet{});
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> g(0.0, step);
    std::uniform_real_distribution<double> u(0.0, L);
    std::vector<double> x(static_cast<std::size_t>(N)), y(x.size());
    for (auto& v : x) v = u(rng);
    for (auto& v : y) v = u(rng);
    const std::int64_t fpb = std::max<std::int64_t>(1, (1 << 20) / N);
    for (std::int64_t f0 = 0; f0 < T; f0 += fpb) {
        const std::int64_t nf = std::min(fpb, T - f0);
        TrajectoryTable rows;
        rows.reserve(static_cast<std::size_t>(nf * N));
        for (std::int64_t f = f0; f < f0 + nf; ++f)
            for (std::int64_t i = 0; i < N; ++i) {
                auto& xi = x[static_cast<std::size_t>(i)];
                auto& yi = y[static_cast<std::size_t>(i)];
                rows.push(f, i, xi, yi, static_cast<std::int8_t>(i % 2));
                xi = std::fmod(xi + g(rng) + L, L);
                yi = std::fmod(yi + g(rng) + L, L);
            }
        w.append(rows, nf);
    }
    w.commit();
}

/// Seconds to read every column of every frame (the floor of any analysis that reads the file).
double read_columns(const std::string& path) {
    const auto t0 = std::chrono::steady_clock::now();
    store::TrajectoryReader r(path);
    const std::int64_t fpb = frames_per_block(r, 1 << 21);
    double guard = 0;
    for (std::int64_t f = 0; f < r.n_frames(); f += fpb) {
        const Trajectory t = r.read_frames(f, fpb);
        if (!t.rows.x.empty()) guard += t.rows.x[0];
    }
    const double s = seconds_since(t0);
    if (guard == -1) std::printf("#\n");
    return s;
}

struct Run {
    double seconds = NAN;
    double peak_mb = NAN;
    int status = -1;
};

/// Runs argv as a child; wall time and the child's peak resident set (wait4).
Run run_child(const std::vector<std::string>& args) {
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    const auto t0 = std::chrono::steady_clock::now();
    pid_t pid = 0;
    Run r;
    if (posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ) != 0) return r;
    int st = 0;
    struct rusage ru {};
    wait4(pid, &st, 0, &ru);
    r.seconds = seconds_since(t0);
    r.peak_mb = static_cast<double>(ru.ru_maxrss) / 1024.0;
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    posix_spawn_file_actions_destroy(&fa);
    return r;
}

const char* kNumpyMsd = R"PY(
import sys, time
try:
    import numpy as np, h5py
except ImportError as e:
    print("SKIP", e); sys.exit(0)
with h5py.File(sys.argv[1], "r") as f:
    g = f["trajectories"]
    pid = g["particle"][:]; x = g["x"][:]; y = g["y"][:]
    L = float(f["meta"].attrs["box_lx"]) if "box_lx" in f["meta"].attrs else float(sys.argv[2])
N = int(pid.max()) + 1; T = len(pid) // N
pos = np.stack([x.reshape(T, N), y.reshape(T, N)], axis=-1)   # frame-major, sorted ids
d = np.diff(pos, axis=0); d -= L * np.round(d / L)            # unwrap (minimum image)
pos = np.concatenate([pos[:1], pos[:1] + np.cumsum(d, axis=0)])
def msd_fft(r):                                               # tidynamics / MDAnalysis fft=True
    n = len(r); D = np.square(r).sum(axis=1); D = np.append(D, 0); Q = 2 * D.sum()
    S2 = sum(np.fft.irfft(np.abs(np.fft.rfft(r[:, i], 2 * n)) ** 2)[:n] for i in range(r.shape[1])) / (n - np.arange(n))
    S1 = np.zeros(n)
    for m in range(n):
        Q = Q - D[m - 1] - D[n - m]; S1[m] = Q / (n - m)
    return S1 - 2 * S2
t0 = time.perf_counter()
acc = np.zeros(T)
for i in range(N): acc += msd_fft(pos[:, i, :])
t = time.perf_counter() - t0
print("TIME", t, acc[10] / N)
)PY";

}  // namespace

int main(int argc, char** argv) {
    std::int64_t N = 10000;
    std::vector<std::int64_t> frames{1000, 4000, 16000};
    std::vector<std::string> only;
    std::string threads = "2", memory = "", tmp;
    bool numpy = false, scale = true;
    std::string vibra_cli = VIBRA_CLI;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "bench_scale: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--particles")
            N = std::stoll(next());
        else if (a == "--frames") {
            frames.clear();
            for (const auto& s : split(next())) frames.push_back(std::stoll(s));
        } else if (a == "--only")
            only = split(next());
        else if (a == "--threads")
            threads = next();
        else if (a == "--memory")
            memory = next();
        else if (a == "--tmp")
            tmp = next();
        else if (a == "--numpy")
            numpy = true;
        else if (a == "--vibra")
            vibra_cli = next();
        else if (a == "--no-scale")
            scale = false;
        else {
            std::fprintf(stderr, "bench_scale: unknown argument '%s'\n", a.c_str());
            return 2;
        }
    }
    if (only.empty()) {
        for (const auto& s : analysis::all_analyses())
            if (s.default_on) only.push_back(s.name);
        only.push_back("defects");
        only.push_back("spectra");
    }
    const fs::path dir = fs::path(tmp.empty() ? fs::temp_directory_path().string() : tmp) /
                         ("vibra-bench-scale-" + std::to_string(getpid()));
    fs::create_directories(dir);
    auto analyze = [&](const std::string& in, const std::string& name,
                       const std::vector<std::string>& extra) {
        std::vector<std::string> args{
            vibra_cli, "--quiet", "analyze",   in,     "-o", (dir / (name + ".h5")).string(),
            "--only",  name,      "--threads", threads};
        if (!memory.empty()) args.insert(args.end(), {"--memory", memory});
        args.insert(args.end(), extra.begin(), extra.end());
        fs::remove(dir / (name + ".h5"));
        return run_child(args);
    };

    if (scale) {
        std::printf("# bench_scale: %lld Brownian disks, periodic box, threads %s%s\n",
                    static_cast<long long>(N), threads.c_str(),
                    memory.empty() ? "" : (", --memory " + memory).c_str());
        std::map<std::string, std::vector<Run>> runs;
        std::vector<double> read_s;
        for (std::int64_t T : frames) {
            const std::string in = (dir / ("traj_" + std::to_string(T) + ".h5")).string();
            const auto tg = std::chrono::steady_clock::now();
            generate(in, N, T, 42);
            const double rows = static_cast<double>(N * T);
            std::printf("\n## %lld frames (%.3g rows; generated in %.1f s, %.0f MB)\n",
                        static_cast<long long>(T), rows, seconds_since(tg),
                        static_cast<double>(fs::file_size(in)) / 1e6);
            read_s.push_back(read_columns(in));
            std::printf("%-24s %9.2f s  %8s      %6.1f Mrows/s\n", "read columns", read_s.back(), "",
                        rows / read_s.back() / 1e6);
            std::fflush(stdout);
            for (const auto& name : only) {
                const Run r = analyze(in, name, {});
                runs[name].push_back(r);
                std::printf("%-24s %9.2f s  %8.0f MB  %6.2f Mrows/s  %5.1f× read%s\n", name.c_str(),
                            r.seconds, r.peak_mb, rows / r.seconds / 1e6, r.seconds / read_s.back(),
                            r.status == 0 ? "" : ("  (exit " + std::to_string(r.status) + ")").c_str());
                std::fflush(stdout);
            }
            fs::remove(in);
        }
        if (frames.size() >= 2) {
            std::printf("\n## growth of the time between consecutive sizes (linear = frame ratio)\n%-24s",
                        "analysis");
            for (std::size_t k = 1; k < frames.size(); ++k)
                std::printf("  %lld→%lld", static_cast<long long>(frames[k - 1]),
                            static_cast<long long>(frames[k]));
            std::printf("   extrapolated to 1e5 frames\n%-24s", "read columns");
            for (std::size_t k = 1; k < frames.size(); ++k)
                std::printf("  %10.2f×", read_s[k] / read_s[k - 1]);
            std::printf("\n");
            for (const auto& name : only) {
                const auto& v = runs[name];
                std::printf("%-24s", name.c_str());
                for (std::size_t k = 1; k < v.size(); ++k)
                    std::printf("  %10.2f×", v[k].seconds / v[k - 1].seconds);
                // power law through the last two sizes
                const double e = std::log(v.back().seconds / v[v.size() - 2].seconds) /
                                 std::log(static_cast<double>(frames.back()) /
                                          static_cast<double>(frames[frames.size() - 2]));
                const double t5 =
                    v.back().seconds * std::pow(1e5 / static_cast<double>(frames.back()), std::max(1.0, e));
                std::printf("   %.0f s (%.2f h; exponent %.2f)\n", t5, t5 / 3600, e);
            }
        }
    }

    if (numpy) {
        std::printf(
            "\n## msd / vacf against a numpy FFT MSD per particle (tidynamics algorithm), 2000 × 1600 "
            "frames\n");
        const std::string in = (dir / "traj_numpy.h5").string();
        generate(in, 2000, 1600, 7);
        const double L = std::sqrt(2000.0) * 2.0;
        fs::path script = dir / "numpy_msd.py";
        std::ofstream(script) << kNumpyMsd;
        const std::string out = (dir / "numpy.txt").string();
        const std::string cmd = "/usr/bin/python3 '" + script.string() + "' '" + in + "' " +
                                std::to_string(L) + " > '" + out + "' 2>&1";
        double t_np = NAN;
        if (std::system(cmd.c_str()) == 0) {
            std::ifstream f(out);
            std::string tag;
            double t = NAN, m10 = NAN;
            f >> tag >> t >> m10;
            if (tag == "TIME") {
                t_np = t;
                std::printf("%-32s %8.2f s   (MSD(10 frames) = %.5f, expected 2·0.05²·10 = 0.05)\n",
                            "numpy FFT MSD (compute only)", t, m10);
            } else
                std::printf("numpy reference skipped: %s\n", tag.c_str());
        } else
            std::printf("numpy reference skipped: /usr/bin/python3 failed (see %s)\n", out.c_str());
        struct Case {
            const char* label;
            std::string name;
            std::vector<std::string> extra;
        };
        const Case cases[] = {{"vibra msd (whole process)", "msd", {}},
                              {"vibra msd, no van Hove", "msd", {"--msd-vanhove-lags", "none"}},
                              {"vibra vacf (whole process)", "vacf", {}}};
        for (const auto& c : cases) {
            const Run r = analyze(in, c.name, c.extra);
            std::printf("%-32s %8.2f s   %6.0f MB   %s\n", c.label, r.seconds, r.peak_mb,
                        std::isfinite(t_np)
                            ? (std::to_string(t_np / r.seconds).substr(0, 5) + "× faster than numpy").c_str()
                            : "");
        }
        fs::remove(in);
    }
    fs::remove_all(dir);
    return 0;
}
