// SPDX-License-Identifier: GPL-3.0-or-later
// Benchmark of the collective-motion analyses (docs/collective-motion.md): `defects` and `spectra` on N particles ×
// T frames generated on the fly (a smooth, slowly changing random flow advecting particles in a
// periodic box at density 1, plus small noise). Prints seconds, seconds per frame, peak memory
// and the ratio to a baseline measured in the same run: streaming the same frames through
// stream-only work (read_frames + matching of ids).
//
//   build/bench/bench_collective [N=5000] [frames=2000] [lag=1] [threads=1]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <numbers>
#include <random>
#include <string>

#include "vibra/analysis/registry.hpp"
#include "vibra/core/trajectory_source.hpp"

using namespace vibra;

namespace {

long peak_rss_kb() {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("VmHWM:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
    return -1;
}

/// Frames generated on demand, sequentially (a restart regenerates from frame 0).
class FlowSource final : public TrajectorySource {
public:
    FlowSource(std::size_t n, std::int64_t frames) : n_(n), T_(frames) {
        L_ = std::sqrt(static_cast<double>(n));
        meta_.length_unit = "sigma";
        meta_.time_unit = "frame";
        meta_.geometry = Geometry::periodic(0, 0, L_, L_);
        std::mt19937_64 rng(1);
        std::uniform_real_distribution<double> u(0, 1);
        for (int m = 0; m < 12; ++m) {  // stream-function modes ψ = Σ a cos(k·r + φ(t))
            const double th = 2 * std::numbers::pi * u(rng);
            const int kn = 1 + static_cast<int>(4 * u(rng));
            modes_.push_back({2 * std::numbers::pi * kn / L_ * std::cos(th),
                              2 * std::numbers::pi * kn / L_ * std::sin(th), 0.3 / kn,
                              2 * std::numbers::pi * u(rng), 0.002 * (u(rng) - 0.5)});
        }
        restart();
    }
    const Metadata& meta() const override { return meta_; }
    std::int64_t n_frames() const override { return T_; }
    std::int64_t n_rows() const override { return T_ * static_cast<std::int64_t>(n_); }
    const FrameColumns& frame_columns() const override { return fc_; }
    std::int64_t rows_in(std::int64_t first, std::int64_t count) const override {
        first = std::clamp<std::int64_t>(first, 0, T_);
        count = std::clamp<std::int64_t>(count, 0, T_ - first);
        return count * static_cast<std::int64_t>(n_);
    }
    Trajectory read_frames(std::int64_t first, std::int64_t count) const override {
        first = std::clamp<std::int64_t>(first, 0, T_);
        count = std::clamp<std::int64_t>(count, 0, T_ - first);
        if (first < next_) restart();
        while (next_ < first) step();
        Trajectory t;
        t.meta = meta_;
        t.rows.reserve(static_cast<std::size_t>(count) * n_);
        for (std::int64_t f = first; f < first + count; ++f) {
            for (std::size_t i = 0; i < n_; ++i)
                t.rows.push(f, static_cast<std::int64_t>(i), x_[i], y_[i], kSpeciesSmall);
            step();
        }
        t.index = build_frame_index(t.rows, first, count);
        return t;
    }

private:
    struct Mode {
        double kx, ky, a, phi, rate;
    };
    void restart() const {
        std::mt19937_64 rng(2);
        std::uniform_real_distribution<double> u(0, L_);
        x_.resize(n_), y_.resize(n_);
        for (std::size_t i = 0; i < n_; ++i) x_[i] = u(rng), y_[i] = u(rng);
        noise_.seed(3);
        next_ = 0;
    }
    void step() const {
        // Velocity v = (∂ψ/∂y, −∂ψ/∂x): incompressible, smooth; plus Gaussian noise.
        std::normal_distribution<double> g(0, 0.02);
        const double t = static_cast<double>(next_);
        for (std::size_t i = 0; i < n_; ++i) {
            double vx = 0, vy = 0;
            for (const auto& m : modes_) {
                const double s = -m.a * std::sin(m.kx * x_[i] + m.ky * y_[i] + m.phi + m.rate * t);
                vx += m.ky * s, vy -= m.kx * s;
            }
            x_[i] += 5 * vx + g(noise_), y_[i] += 5 * vy + g(noise_);
            x_[i] -= L_ * std::floor(x_[i] / L_), y_[i] -= L_ * std::floor(y_[i] / L_);
        }
        ++next_;
    }
    std::size_t n_;
    std::int64_t T_;
    double L_;
    Metadata meta_;
    FrameColumns fc_;
    std::vector<Mode> modes_;
    mutable std::vector<double> x_, y_;
    mutable std::mt19937_64 noise_;
    mutable std::int64_t next_ = 0;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
    const std::size_t N = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 5000;
    const std::int64_t T = argc > 2 ? std::strtoll(argv[2], nullptr, 10) : 2000;
    const std::string lag = argc > 3 ? argv[3] : "1";
    const int threads = argc > 4 ? std::atoi(argv[4]) : 1;
    FlowSource src(N, T);
    std::printf("bench_collective: N=%zu frames=%lld lag=%s threads=%d (periodic box, density 1)\n", N,
                static_cast<long long>(T), lag.c_str(), threads);

    // Baseline: stream the frames in the analyses' block size, touching every row.
    auto t0 = std::chrono::steady_clock::now();
    double checksum = 0;
    const auto block = frames_per_block(src, 1 << 20);
    for (std::int64_t f = 0; f < T; f += block) {
        const auto tr = src.read_frames(f, block);
        for (double v : tr.rows.x) checksum += v;
    }
    const double base = seconds_since(t0);
    std::printf("baseline (generate + stream frames): %.2f s (%.2f ms/frame) [checksum %.3g]\n", base,
                1e3 * base / static_cast<double>(T), checksum);

    const auto all = analysis::collective_analyses();
    for (const char* name : {"defects", "spectra"}) {
        const analysis::AnalysisSpec* spec = nullptr;
        for (const auto& s : all)
            if (s.name == name) spec = &s;
        std::map<std::string, std::string> opts;
        for (const auto& o : spec->options) opts[o.flag] = o.default_value;
        opts[std::string(name) + "-lags"] = lag;
        opts[std::string(name) + "-stride"] = "1";
        analysis::AnalysisContext ctx{src, opts, false, threads, nullptr};
        t0 = std::chrono::steady_clock::now();
        const auto groups = spec->run(ctx);
        const double s = seconds_since(t0);
        std::size_t values = 0;
        for (const auto& a : groups.front().arrays)
            std::visit([&](const auto& v) { values += v.size(); }, a.data);
        std::printf(
            "%-8s: %.2f s (%.2f ms/frame), %.2f x baseline, result %zu values, peak RSS so far %.1f MB\n",
            name, s, 1e3 * s / static_cast<double>(T), s / base, values,
            static_cast<double>(peak_rss_kb()) / 1024);
        if (std::string(name) == "defects") {
            const auto* c = groups.front().find("counts");
            const auto& cv = std::get<std::vector<std::int64_t>>(c->data);
            double m = 0;
            for (auto v : cv) m += static_cast<double>(v);
            std::printf("          mean defects per frame %.1f\n", m / static_cast<double>(cv.size()));
        }
    }
    std::printf("peak RSS: %.1f MB\n", static_cast<double>(peak_rss_kb()) / 1024);
    return 0;
}
