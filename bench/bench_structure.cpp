// SPDX-License-Identifier: GPL-3.0-or-later
// Benchmark of the streaming g(r) (vibra::analysis::PairCorrelation over a TrajectorySource):
// 2000 particles × 1600 frames of a periodic ideal gas generated on the fly frame by frame (so the
// trajectory itself never sits in memory), against a straightforward O(N²) all-pairs histogram
// written here. Prints seconds, the speed ratio, the largest difference between the two g(r),
// and peak memory after 160 and after 1600 frames (flat = streaming bound).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>

#include "vibra/analysis/bond_order.hpp"
#include "vibra/analysis/pair_correlation.hpp"
#include "vibra/analysis/structure_factor.hpp"
#include "vibra/analysis/voronoi.hpp"
#include "vibra/core/trajectory_source.hpp"

using namespace vibra;
using namespace vibra::analysis;

namespace {

long peak_rss_kb() {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
    return -1;
}

/// Frames generated on demand from (seed, frame): uniform points in a periodic box.
class GeneratedSource final : public TrajectorySource {
public:
    GeneratedSource(std::int64_t n, std::int64_t frames, double box) : n_(n), T_(frames), box_(box) {
        meta_.length_unit = "sigma";
        meta_.time_unit = "tau";
        meta_.geometry = Geometry::periodic(0, 0, box, box);
        meta_.species_diameters = {1.0, 1.4};
    }
    const Metadata& meta() const override { return meta_; }
    std::int64_t n_frames() const override { return T_; }
    std::int64_t n_rows() const override { return n_ * T_; }
    const FrameColumns& frame_columns() const override { return fc_; }
    std::int64_t rows_in(std::int64_t first, std::int64_t count) const override {
        return n_ * std::max<std::int64_t>(0, std::min(T_, first + count) - first);
    }
    Trajectory read_frames(std::int64_t first, std::int64_t count) const override {
        count = std::max<std::int64_t>(0, std::min(T_, first + count) - first);
        Trajectory t;
        t.meta = meta_;
        t.rows.reserve(static_cast<std::size_t>(n_ * count));
        for (std::int64_t f = first; f < first + count; ++f) {
            std::mt19937_64 rng(1000003ULL * static_cast<std::uint64_t>(f) + 17);
            std::uniform_real_distribution<double> u(0, box_);
            for (std::int64_t i = 0; i < n_; ++i)
                t.rows.push(f, i, u(rng), u(rng), static_cast<std::int8_t>(i % 2));
        }
        t.index = build_frame_index(t.rows, first, count);
        return t;
    }

private:
    std::int64_t n_, T_;
    double box_;
    Metadata meta_;
    FrameColumns fc_;
};

/// The baseline: every pair of every frame, minimum image, plain histogram, N(N−1)/A normalisation.
std::vector<double> brute_force_gr(const TrajectorySource& src, std::int64_t frames, double rmax,
                                   std::int64_t bins) {
    const auto& g = src.meta().geometry;
    const double L = g.lx(), dr = rmax / static_cast<double>(bins);
    std::vector<double> h(static_cast<std::size_t>(bins), 0.0);
    double norm = 0;
    for (std::int64_t f = 0; f < frames; ++f) {
        const auto t = src.read_frames(f, 1);
        const auto& x = t.rows.x;
        const auto& y = t.rows.y;
        const std::size_t n = x.size();
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = i + 1; j < n; ++j) {
                double dx = x[j] - x[i], dy = y[j] - y[i];
                dx -= L * std::nearbyint(dx / L);
                dy -= L * std::nearbyint(dy / L);
                const double r = std::sqrt(dx * dx + dy * dy);
                if (r < rmax) h[static_cast<std::size_t>(r / dr)] += 2;
            }
        norm += static_cast<double>(n) * static_cast<double>(n - 1) / (L * L);
    }
    for (std::size_t k = 0; k < h.size(); ++k) {
        const double r0 = dr * static_cast<double>(k), r1 = r0 + dr;
        h[k] /= norm * M_PI * (r1 * r1 - r0 * r0);
    }
    return h;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
    const std::int64_t N = 2000, T = argc > 1 ? std::stoll(argv[1]) : 1600;
    const double box = std::sqrt(N / 0.6);  // number density 0.6 (a dense bidisperse liquid's)
    const std::int64_t bins = 100;
    const std::int64_t baseline_frames = std::max<std::int64_t>(1, T / 10);
    std::printf("bench_structure: g(r), N = %lld, T = %lld, periodic box %.2f, density 0.6, %lld bins\n",
                static_cast<long long>(N), static_cast<long long>(T), box, static_cast<long long>(bins));
    {
        // memory: blocks of 2^18 rows (131 frames); 160 then 1600 frames — peak RSS must stay flat
        PairCorrelationParams p;
        p.r_max = 5, p.bins = bins;
        const std::int64_t block_rows = std::int64_t{1} << 18;
        long rss[2];
        std::int64_t fr[2] = {baseline_frames, T};
        for (int k = 0; k < 2; ++k) {
            const GeneratedSource src(N, fr[k], box);
            PairCorrelation acc(p);
            for_each_structure_frame(
                src, 1, [&](const StructureFrame& f) { acc.accumulate(f); }, false, "gr", block_rows);
            rss[k] = peak_rss_kb();
        }
        std::printf(
            "memory (blocks of %lld rows): peak RSS after %lld frames %ld kB, after %lld frames %ld kB\n",
            static_cast<long long>(block_rows), static_cast<long long>(fr[0]), rss[0],
            static_cast<long long>(fr[1]), rss[1]);
    }
    for (double rmax : {5.0, 10.0}) {
        PairCorrelationParams p;
        p.r_max = rmax, p.bins = bins;
        // small run (T/10 frames) then the full run: peak memory must not grow with frames
        const GeneratedSource small(N, baseline_frames, box);
        auto t0 = std::chrono::steady_clock::now();
        PairCorrelation a(p);
        for_each_structure_frame(small, 1, [&](const StructureFrame& f) { a.accumulate(f); });
        const double t_small = seconds_since(t0);
        const long rss_small = peak_rss_kb();
        const GeneratedSource full(N, T, box);
        t0 = std::chrono::steady_clock::now();
        PairCorrelation b(p);
        for_each_structure_frame(full, 1, [&](const StructureFrame& f) { b.accumulate(f); });
        const double t_full = seconds_since(t0);
        const long rss_full = peak_rss_kb();
        // baseline on the first T/10 frames (O(N²) per frame), compared with the same frames
        t0 = std::chrono::steady_clock::now();
        const auto ref = brute_force_gr(small, baseline_frames, rmax, bins);
        const double t_base = seconds_since(t0);
        const auto ra = a.result();
        double maxdiff = 0;
        for (std::size_t k = 0; k < ref.size(); ++k) maxdiff = std::max(maxdiff, std::abs(ref[k] - ra.g[k]));
        std::printf(
            "r_max = %4.1f: vibra %lld frames %.3f s (%.2f ms/frame); %lld frames %.3f s (%.2f ms/frame)\n",
            rmax, static_cast<long long>(baseline_frames), t_small,
            1e3 * t_small / static_cast<double>(baseline_frames), static_cast<long long>(T), t_full,
            1e3 * t_full / static_cast<double>(T));
        std::printf(
            "              O(N^2) baseline %lld frames %.3f s (%.2f ms/frame); speed-up x%.1f; max |g - "
            "g_ref| = %.2e\n",
            static_cast<long long>(baseline_frames), t_base,
            1e3 * t_base / static_cast<double>(baseline_frames), t_base / t_small, maxdiff);
        // the same full run split over 2 threads (the machine may be shared: the figure is indicative)
        t0 = std::chrono::steady_clock::now();
        std::vector<PairCorrelation> accs(kStructureLanes, PairCorrelation(p));
        for_each_structure_frame_parallel(full, 1, 2, [&](const StructureFrame& f, int lane) {
            accs[static_cast<std::size_t>(lane)].accumulate(f);
        });
        for (std::size_t l = 1; l < accs.size(); ++l) accs[0].merge(accs[l]);
        const double t_par = seconds_since(t0);
        std::printf("              2 threads: %lld frames %.3f s (x%.2f vs 1 thread)\n",
                    static_cast<long long>(T), t_par, t_full / t_par);
        std::printf(
            "              default blocks (2^21 rows): peak RSS after %lld frames %ld kB, after %lld frames "
            "%ld kB\n",
            static_cast<long long>(baseline_frames), rss_small, static_cast<long long>(T), rss_full);
    }
    {
        // the other per-frame structure costs on the same frames (first 50)
        const GeneratedSource src(N, 50, box);
        std::vector<StructureFrame> frames;
        for_each_structure_frame(src, 1, [&](const StructureFrame& f) { frames.push_back(f); });
        auto t0 = std::chrono::steady_clock::now();
        double area = 0;
        for (const auto& f : frames) area += radical_voronoi(f).area[0];
        const double t_vor = seconds_since(t0) / 50;
        t0 = std::chrono::steady_clock::now();
        BondOrderAccumulatorParams bp;
        BondOrderAccumulator bo(bp);
        for (const auto& f : frames) bo.accumulate(f);
        const double t_psi = seconds_since(t0) / 50;
        t0 = std::chrono::steady_clock::now();
        StructureFactorParams sp;
        sp.k_max = 3 * 2 * M_PI / std::sqrt(box * box / N);
        StructureFactor sk(sp);
        for (const auto& f : frames) sk.accumulate(f);
        const double t_sk = seconds_since(t0) / 50;
        std::printf(
            "per frame (N = %lld): radical Voronoi %.2f ms, psi6 + g6 (Voronoi neighbours, r_max 5) %.2f ms, "
            "S(k) (k_max %.1f, %lld shells x <= 100 vectors) %.2f ms  [check %.3f]\n",
            static_cast<long long>(N), 1e3 * t_vor, 1e3 * t_psi, sp.k_max, static_cast<long long>(sp.bins),
            1e3 * t_sk, area > 0 ? 1.0 : 0.0);
    }
    return 0;
}
