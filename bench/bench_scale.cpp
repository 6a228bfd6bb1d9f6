// SPDX-License-Identifier: GPL-3.0-or-later
// How `vibra analyze` scales with the length of a run. Generates (into a temporary folder) a
// vibra-layout trajectory of N Brownian disks in a periodic box for each number of frames, then
// runs every analysis of the default set (plus defects and spectra) as its own
// `vibra analyze --only X` child process and reports its wall time, CPU time (user + system) and
// peak RSS (wait4's rusage); then the growth ratio of each analysis between consecutive sizes, and its rows per
// second against reading the columns alone (TrajectoryReader over all frames) in the same run.
// Optionally (--numpy) the speed of msd/vacf against a plain numpy FFT MSD per particle (the
// algorithm of tidynamics, MDAnalysis' fft=True) on 2000 × 1600 frames, timed in the same run
// with Debian's /usr/bin/python3 (skipped with a message when numpy or h5py is absent); with
// --only, the per-track analyses named there alone.
//
//   bench_scale [--particles 10000] [--frames 1000,4000,16000] [--only msd,vacf,...]
//               [--threads 2] [--memory MIB] [--tmp DIR] [--numpy] [--no-scale] [--vibra PATH]
//               [--keep]  (leave the generated trajectories in the temporary folder, path printed)
//               [--repeat N]  (each timing the fastest of N runs, peak RSS the largest: growth
//                              ratios less sensitive to other load on the machine)
// (--vibra: another build of the CLI, e.g. an older one for a before/after comparison)
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
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
#include <type_traits>
#include <variant>
#include <vector>

#include "vibra/analysis/registry.hpp"
#include "vibra/analysis/track_cache.hpp"
#include "vibra/core/memory.hpp"
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
    double cpu_seconds = NAN;  ///< user + system time of the child (its threads added)
    double peak_mb = NAN;
    int status = -1;
};

double seconds(const timeval& t) {
    return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec);
}

/// Runs argv as a child; wall time, CPU time (user + system) and peak resident set (wait4). The
/// CPU time is the one to compare between sizes on a shared machine: other load lengthens the wall
/// time, not the child's own CPU time.
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
    r.cpu_seconds = seconds(ru.ru_utime) + seconds(ru.ru_stime);
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
t0 = time.perf_counter()
with h5py.File(sys.argv[1], "r") as f:
    g = f["trajectories"]
    pid = g["particle"][:]; x = g["x"][:]; y = g["y"][:]
L = float(sys.argv[2]); max_lag = int(sys.argv[3])
N = int(pid.max()) + 1; T = len(pid) // N
pos = np.stack([x.reshape(T, N), y.reshape(T, N)], axis=-1)   # frame-major, sorted ids
d = np.diff(pos, axis=0); d -= L * np.round(d / L)            # unwrap (minimum image)
pos = np.concatenate([pos[:1], pos[:1] + np.cumsum(d, axis=0)])
pos = np.ascontiguousarray(pos.transpose(1, 0, 2))            # particle-major, as the reference wants it
print("READ", time.perf_counter() - t0)
def msd_fft(r):                                               # tidynamics.msd (MDAnalysis fft=True)
    n = len(r); D = np.square(r).sum(axis=1); D = np.append(D, 0); Q = 2 * D.sum()
    S2 = sum(np.fft.irfft(np.abs(np.fft.rfft(r[:, i], 2 * n)) ** 2)[:n] for i in range(r.shape[1])) / (n - np.arange(n))
    S1 = np.zeros(n)
    for m in range(n):
        Q = Q - D[m - 1] - D[n - m]; S1[m] = Q / (n - m)
    return S1 - 2 * S2
t0 = time.perf_counter()
acc = np.zeros(T)
for i in range(N): acc += msd_fft(pos[i])
print("TIME", time.perf_counter() - t0)
# the same sums without the per-lag Python loop, all particles in one batched FFT (information)
t0 = time.perf_counter()
n = T; D = np.square(pos).sum(axis=2)                         # (N, T)
c = np.cumsum(D, axis=1); cr = np.cumsum(D[:, ::-1], axis=1)
head = np.concatenate([np.zeros((N, 1)), c[:, :-1]], axis=1)
tail = np.concatenate([np.zeros((N, 1)), cr[:, :-1]], axis=1)
S1 = (2 * c[:, -1:] - head - tail) / (n - np.arange(n))
F = np.fft.rfft(pos, 2 * n, axis=1)
S2 = np.fft.irfft((np.abs(F) ** 2).sum(axis=2), axis=1)[:, :n] / (n - np.arange(n))
acc2 = (S1 - 2 * S2).sum(axis=0)
print("BATCHED", time.perf_counter() - t0)
for k in (1, 10, 100, max_lag): print("MSD", k, acc[k] / N, acc2[k] / N)
)PY";

/// Every name, unit, shape, value and attribute of a group as bytes (bit-for-bit comparisons, NaN included).
template <class V>
void put_bytes(std::string& s, const std::vector<V>& v) {
    s.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(V));
}
std::string group_bytes(const ResultGroup& g) {
    std::string s = g.name + "|";
    for (const auto& [k, v] : g.attrs) {
        s += k + "=";
        std::visit(
            [&](const auto& x) {
                using X = std::decay_t<decltype(x)>;
                if constexpr (std::is_same_v<X, std::string>)
                    s += x;
                else if constexpr (std::is_same_v<X, std::vector<std::string>>)
                    for (const auto& e : x) s += e + ",";
                else if constexpr (std::is_arithmetic_v<X>)
                    s.append(reinterpret_cast<const char*>(&x), sizeof x);
                else
                    put_bytes(s, x);
            },
            v);
    }
    for (const auto& a : g.arrays) {
        s += a.name + "|" + a.units + "|";
        put_bytes(s, a.shape);
        std::visit([&](const auto& d) { put_bytes(s, d); }, a.data);
    }
    for (const auto& sub : g.groups) s += group_bytes(sub);
    return s;
}

/// Time of one in-process run of a registry analysis with its default options (as
/// `vibra analyze --only name` sets them) plus `extra`, on `src` with the shared copy `cache`.
struct InProcess {
    double seconds = NAN;
    std::vector<ResultGroup> groups;
};
InProcess run_in_process(const TrajectorySource& src, analysis::TrackCache& cache, const std::string& name,
                         int threads, const std::map<std::string, std::string>& extra) {
    const auto specs = analysis::all_analyses();
    for (const auto& spec : specs) {
        if (spec.name != name) continue;
        analysis::AnalysisContext ctx{src, {}};
        for (const auto& o : spec.options) ctx.options[o.flag] = o.default_value;
        for (const auto& [k, v] : extra) ctx.options[k] = v;
        ctx.threads = threads;
        ctx.tracks = &cache;
        const auto t0 = std::chrono::steady_clock::now();
        InProcess r;
        r.groups = spec.run(ctx);
        r.seconds = seconds_since(t0);
        return r;
    }
    std::fprintf(stderr, "bench_scale: no analysis '%s'\n", name.c_str());
    std::exit(2);
}

/// --numpy: every per-track analysis against the tidynamics FFT MSD in numpy, same data, same run.
template <class Analyze>
void compare_numpy(const fs::path& dir, Analyze& analyze, bool keep, const std::vector<std::string>& only) {
    const std::int64_t N = 2000, T = 1600, max_lag = T / 2;
    std::printf(
        "\n## per-track analyses against a numpy FFT MSD per particle (tidynamics), %lld × %lld frames\n",
        static_cast<long long>(N), static_cast<long long>(T));
    const std::string in = (dir / "traj_numpy.h5").string();
    generate(in, N, T, 7);
    const double L = std::sqrt(static_cast<double>(N)) * 2.0;
    const fs::path script = dir / "numpy_msd.py";
    std::ofstream(script) << kNumpyMsd;
    const std::string out = (dir / "numpy.txt").string();
    const std::string cmd = "/usr/bin/python3 '" + script.string() + "' '" + in + "' " + std::to_string(L) +
                            " " + std::to_string(max_lag) + " > '" + out + "' 2>&1";
    double t_np = NAN, t_batched = NAN, t_read = NAN;
    std::map<std::int64_t, double> np_msd;
    if (std::system(cmd.c_str()) == 0) {
        std::ifstream f(out);
        std::string tag;
        while (f >> tag) {
            if (tag == "TIME")
                f >> t_np;
            else if (tag == "BATCHED")
                f >> t_batched;
            else if (tag == "READ")
                f >> t_read;
            else if (tag == "MSD") {
                std::int64_t k = 0;
                double a = NAN, b = NAN;
                f >> k >> a >> b;
                np_msd[k] = a;
            } else {
                std::string rest;
                std::getline(f, rest);
                std::printf("numpy reference skipped: %s%s\n", tag.c_str(), rest.c_str());
                break;
            }
        }
    } else
        std::printf("numpy reference skipped: /usr/bin/python3 failed (see %s)\n", out.c_str());
    auto ratio = [&](double t) {
        char b[64];
        std::snprintf(b, sizeof b, "%6.2f×", t_np / t);
        return std::isfinite(t_np) ? std::string(b) : std::string("     —");
    };
    std::printf("numpy, reading the file and unwrapping (not counted)   %7.2f s\n", t_read);
    std::printf("numpy FFT MSD per particle, compute only (reference)   %7.2f s\n", t_np);
    std::printf("numpy, same sums batched over all particles (info)     %7.2f s\n", t_batched);

    // in process: the file read into memory once, the particle-major copy built once (as
    // `vibra analyze` shares it between its analyses), then each analysis' own work
    auto t0 = std::chrono::steady_clock::now();
    const InMemorySource src(store::TrajectoryReader(in).read_all());
    const double t_load = seconds_since(t0);
    analysis::TrackCache cache(src);
    t0 = std::chrono::steady_clock::now();
    cache.build();
    const double t_copy = seconds_since(t0);
    std::printf("vibra, reading the file into memory (not counted)      %7.2f s\n", t_load);
    std::printf("vibra, particle-major copy, once per run (not counted) %7.2f s\n", t_copy);
    struct Case {
        const char* label;
        std::string name;
        std::map<std::string, std::string> extra;
    };
    std::vector<Case> cases{{"msd (+ alpha2, van Hove)", "msd", {}},
                            {"msd, no van Hove", "msd", {{"msd-vanhove-lags", "none"}}},
                            {"vacf", "vacf", {}},
                            {"fs", "fs", {}},
                            {"vdos", "vdos", {}},
                            {"temperature", "temperature", {}},
                            {"velocity_distribution", "velocity_distribution", {}}};
    if (!only.empty())  // --only: those analyses alone
        std::erase_if(
            cases, [&](const Case& c) { return std::find(only.begin(), only.end(), c.name) == only.end(); });
    std::printf(
        "\nin process, compute only (trajectory and copy in memory; tracks unwrapped, velocities "
        "differenced):\n");
    std::printf("%-28s %9s %9s %10s %12s\n", "analysis", "1 thread", "2 threads", "2 vs 1", "vs numpy");
    for (const auto& c : cases) {
        const InProcess a = run_in_process(src, cache, c.name, 1, c.extra);
        const InProcess b = run_in_process(src, cache, c.name, 2, c.extra);
        bool same = a.groups.size() == b.groups.size();
        for (std::size_t q = 0; same && q < a.groups.size(); ++q)
            same = group_bytes(a.groups[q]) == group_bytes(b.groups[q]);
        std::printf("%-28s %8.3f s %8.3f s %9.2f× %10s  %s\n", c.label, a.seconds, b.seconds,
                    a.seconds / b.seconds, ratio(b.seconds).c_str(),
                    same ? "(1 and 2 threads identical)" : "(1 and 2 threads DIFFER)");
        if (c.name == "msd" && c.extra.empty() && !np_msd.empty()) {
            const auto& m = std::get<std::vector<double>>(b.groups.at(0).find("msd")->data);
            double worst = 0;
            for (const auto& [k, v] : np_msd)
                worst = std::max(worst, std::abs(m.at(static_cast<std::size_t>(k)) / v - 1));
            std::printf("%-28s max relative difference to numpy at lags 1, 10, 100, %lld: %.1e\n", "",
                        static_cast<long long>(max_lag), worst);
        }
    }
    std::printf("\nwhole process (vibra analyze --only X: start, read the file, copy, analysis, write):\n");
    for (const auto& c : cases) {
        std::vector<std::string> extra;
        for (const auto& [k, v] : c.extra) extra.insert(extra.end(), {"--" + k, v});
        const Run r = analyze(in, c.name, extra);
        std::printf("%-28s %8.2f s %6.2f s cpu %6.0f MB %10s%s\n", c.label, r.seconds, r.cpu_seconds,
                    r.peak_mb, ratio(r.seconds).c_str(),
                    r.status == 0 ? "" : ("  (exit " + std::to_string(r.status) + ")").c_str());
    }
    if (!keep)
        fs::remove(in);
    else
        std::printf("kept %s\n", in.c_str());
}

}  // namespace

int main(int argc, char** argv) {
    vibra::keep_freed_memory();  // as vibra does (core/memory.hpp): the in-process timings match the CLI's
    std::int64_t N = 10000;
    std::vector<std::int64_t> frames{1000, 4000, 16000};
    std::vector<std::string> only;
    std::string threads = "2", memory = "", tmp;
    bool numpy = false, scale = true, keep = false;
    int repeat = 1;
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
        else if (a == "--keep")
            keep = true;
        else if (a == "--repeat")
            repeat = std::max(1, std::stoi(next()));
        else {
            std::fprintf(stderr, "bench_scale: unknown argument '%s'\n", a.c_str());
            return 2;
        }
    }
    const std::vector<std::string> only_given = only;
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
        std::printf("# bench_scale: %lld Brownian disks, periodic box, threads %s%s%s\n",
                    static_cast<long long>(N), threads.c_str(),
                    memory.empty() ? "" : (", --memory " + memory).c_str(),
                    repeat > 1 ? (", fastest of " + std::to_string(repeat) + " runs").c_str() : "");
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
            double read_best = read_columns(in);
            for (int k = 1; k < repeat; ++k) read_best = std::min(read_best, read_columns(in));
            read_s.push_back(read_best);
            std::printf("%-24s %9.2f s  %8s      %6.1f Mrows/s\n", "read columns", read_s.back(), "",
                        rows / read_s.back() / 1e6);
            std::fflush(stdout);
            for (const auto& name : only) {
                Run r = analyze(in, name, {});
                for (int k = 1; k < repeat; ++k) {
                    const Run again = analyze(in, name, {});
                    const double peak = std::max(r.peak_mb, again.peak_mb);
                    const int status = r.status != 0 ? r.status : again.status;
                    if (again.seconds < r.seconds) r = again;
                    r.peak_mb = peak, r.status = status;
                }
                runs[name].push_back(r);
                std::printf("%-24s %9.2f s %7.2f s cpu  %8.0f MB  %6.2f Mrows/s  %5.1f× read%s\n",
                            name.c_str(), r.seconds, r.cpu_seconds, r.peak_mb, rows / r.seconds / 1e6,
                            r.seconds / read_s.back(),
                            r.status == 0 ? "" : ("  (exit " + std::to_string(r.status) + ")").c_str());
                std::fflush(stdout);
            }
            if (!keep) fs::remove(in);
        }
        if (frames.size() >= 2) {
            std::printf("\n## growth of the time between consecutive sizes (linear = frame ratio)\n%-24s",
                        "analysis");
            for (std::size_t k = 1; k < frames.size(); ++k)
                std::printf("  %lld→%lld", static_cast<long long>(frames[k - 1]),
                            static_cast<long long>(frames[k]));
            std::printf("  (wall, cpu)   extrapolated to 1e5 frames (wall)\n%-24s", "read columns");
            for (std::size_t k = 1; k < frames.size(); ++k)
                std::printf("  %5.2f×%14s", read_s[k] / read_s[k - 1], "");
            std::printf("\n");
            for (const auto& name : only) {
                const auto& v = runs[name];
                std::printf("%-24s", name.c_str());
                for (std::size_t k = 1; k < v.size(); ++k)
                    std::printf("  %5.2f× (cpu %5.2f×)", v[k].seconds / v[k - 1].seconds,
                                v[k].cpu_seconds / v[k - 1].cpu_seconds);
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

    if (numpy) compare_numpy(dir, analyze, keep, only_given);
    if (!keep) fs::remove_all(dir);
    return 0;
}
