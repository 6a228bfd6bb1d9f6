// SPDX-License-Identifier: GPL-3.0-or-later
// Accuracy of detection + refinement + species on the synthetic acceptance cases (docs/tracking.md section
// 10), against the
// exact truth of the renderer, at the frame size (the tests run smaller frames). Prints,
// per case: recall, precision, RMS centre error per axis (all, isolated disks, disks touching a
// neighbour: surface gap < 1 px), the 99th percentile of |error|, the largest mean x-error in
// ten bins of the true fractional x position (pixel locking), species correct per detection,
// and the time per frame of locate() on one thread.
// Usage: accuracy_tracking [SIZE=1024] [FRAMES=2] [CASE=all|moderate|dense|noisy|discs]
// Environment (profiling): ACC_VIDEO=k (frames dealt to k DiskLocators, as k vibra track workers),
// ACC_FRAMES=1 (per-frame CPU time, phases, page faults), ACC_CACHE=DIR (keep generated frames),
// ACC_REPLAY=k, ACC_REPEAT=k, ACC_PHASES=1, ACC_FROM_TRUTH=σ, ACC_WORST=px; parameter overrides
// JF_* (joint fit; JF_NODES = template_nodes), RF_* (refinement), WARM_* (DiskLocator), SNAP, NEWSEP, DROPAMP
// (see main()).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <sys/resource.h>
#include <random>
#include <string>
#include <vector>

#include <opencv2/imgcodecs.hpp>

#include "vibra/core/cell_list.hpp"
#include "vibra/core/memory.hpp"
#include "vibra/tracking/detect.hpp"
#include "vibra/tracking/synth.hpp"

using namespace vibra;
using namespace vibra::tracking;
using clk = std::chrono::steady_clock;

// CPU time of the calling thread (s): robust against other jobs on this shared 2-core machine.
static double thread_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

namespace {

struct Stats {
    std::int64_t truth = 0, detected = 0, matched = 0, species_ok = 0;
    double se = 0, se_touch = 0, se_iso = 0;
    std::int64_t n_touch = 0, n_iso = 0;
    std::vector<double> err;
    double bin_sum[10] = {0};
    std::int64_t bin_n[10] = {0};
    double seconds = 0;
    std::int64_t frames = 0;
};

void score(const std::vector<Particle>& parts, const TrajectoryTable& t, std::size_t row0, Stats& s) {
    std::vector<double> px, py;
    for (const auto& q : parts) px.push_back(q.x), py.push_back(q.y);
    CellList cl(px, py, 3.0, Geometry{});
    std::vector<double> tx(t.x.begin() + long(row0), t.x.end()), ty(t.y.begin() + long(row0), t.y.end());
    CellList tl(tx, ty, 20.0, Geometry{});
    std::vector<char> used(parts.size(), 0);
    s.detected += std::int64_t(parts.size());
    for (std::size_t i = row0; i < t.size(); ++i) {
        ++s.truth;
        std::int64_t best = -1;
        double bd = 9.0;
        cl.for_each_near(t.x[i], t.y[i], [&](std::size_t j, double, double, double r2) {
            if (r2 < bd && !used[j]) bd = r2, best = std::int64_t(j);
        });
        if (best < 0) continue;
        double gap = 1e9;
        tl.for_each_near(t.x[i], t.y[i], [&](std::size_t j, double, double, double r2) {
            if (j + row0 != i) gap = std::min(gap, std::sqrt(r2) - t.radius[i] - t.radius[j + row0]);
        });
        const auto& q = parts[std::size_t(best)];
        used[std::size_t(best)] = 1;
        ++s.matched;
        const double ex = q.x - t.x[i], ey = q.y - t.y[i], e2 = ex * ex + ey * ey;
        s.se += e2;
        (gap < 1.0 ? s.se_touch : s.se_iso) += e2;
        ++(gap < 1.0 ? s.n_touch : s.n_iso);
        s.err.push_back(std::sqrt(e2));
        s.species_ok += q.species == t.species[i];
        if (std::getenv("ACC_WORST") && std::sqrt(e2) > std::atof(std::getenv("ACC_WORST")))
            std::fprintf(stderr,
                         "  err %.3f at truth (%.2f, %.2f) r %.1f sp %d -> det r %.2f sp %d, gap %.2f\n",
                         std::sqrt(e2), t.x[i], t.y[i], double(t.radius[i]), int(t.species[i]),
                         double(q.radius), int(q.species), gap);
        const int b = std::min(9, int((t.x[i] - std::floor(t.x[i])) * 10));
        s.bin_sum[b] += ex;
        ++s.bin_n[b];
    }
}

// ACC_CACHE=DIR (profiling): the generated frames and their truth are kept in DIR and read back
// on the next run with the same case, size and frame count (generation takes ~1 s per frame).
struct FrameSource {
    std::optional<SynthGenerator> gen;  // made only when the frames are not cached (it equilibrates first)
    std::vector<cv::Mat> frames;
    TrajectoryTable truth;
    std::size_t next_frame = 0;
    bool cached = false;
    FrameSource(const char* name, const SynthParams& sp) {
        const char* dir = std::getenv("ACC_CACHE");
        if (!dir) {
            gen.emplace(sp);
            return;
        }
        const std::string path = std::string(dir) + "/" + name + "_" + std::to_string(sp.render.width) + "_" +
                                 std::to_string(sp.frames) + ".bin";
        if (std::FILE* f = std::fopen(path.c_str(), "rb")) {
            std::int64_t nf = 0, rows = 0;
            bool ok = std::fread(&nf, 8, 1, f) == 1;
            for (std::int64_t k = 0; ok && k < nf; ++k) {
                int hdr[3];
                ok = std::fread(hdr, sizeof hdr, 1, f) == 1;
                if (!ok) break;
                cv::Mat m(hdr[0], hdr[1], hdr[2]);
                ok = std::fread(m.data, m.elemSize(), m.total(), f) == m.total();
                frames.push_back(m);
            }
            ok = ok && std::fread(&rows, 8, 1, f) == 1;
            for (std::int64_t r = 0; ok && r < rows; ++r) {
                std::int64_t fr;
                double xy[2];
                std::int8_t sp8;
                float rad;
                ok = std::fread(&fr, 8, 1, f) == 1 && std::fread(xy, 16, 1, f) == 1 &&
                     std::fread(&sp8, 1, 1, f) == 1 && std::fread(&rad, 4, 1, f) == 1;
                truth.push(fr, 0, xy[0], xy[1], sp8);
                truth.radius.push_back(rad);
            }
            std::fclose(f);
            cached = ok;
            if (cached) return;
            frames.clear(), truth.clear();
        }
        cv::Mat img;
        gen.emplace(sp);
        while (gen->next(img, truth)) frames.push_back(img.clone());
        cached = true;
        if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
            const std::int64_t nf = std::int64_t(frames.size()), rows = std::int64_t(truth.size());
            std::fwrite(&nf, 8, 1, f);
            for (const auto& m : frames) {
                const int hdr[3] = {m.rows, m.cols, m.type()};
                std::fwrite(hdr, sizeof hdr, 1, f);
                std::fwrite(m.data, m.elemSize(), m.total(), f);
            }
            std::fwrite(&rows, 8, 1, f);
            for (std::size_t r = 0; r < truth.size(); ++r) {
                const double xy[2] = {truth.x[r], truth.y[r]};
                std::fwrite(&truth.frame[r], 8, 1, f), std::fwrite(xy, 16, 1, f),
                    std::fwrite(&truth.species[r], 1, 1, f), std::fwrite(&truth.radius[r], 4, 1, f);
            }
            std::fclose(f);
        }
    }
    // Next frame and its truth rows appended to `t` (as SynthGenerator::next).
    bool next(cv::Mat& img, TrajectoryTable& t) {
        if (!cached) return gen->next(img, t);
        if (next_frame >= frames.size()) return false;
        img = frames[next_frame];
        for (std::size_t r = 0; r < truth.size(); ++r)
            if (truth.frame[r] == std::int64_t(next_frame))
                t.push(truth.frame[r], 0, truth.x[r], truth.y[r], truth.species[r]),
                    t.radius.push_back(truth.radius[r]);
        ++next_frame;
        return true;
    }
};

void run(const char* name, SynthParams sp, const DetectParams& dp, const LocatorParams& lp) {
    FrameSource gen(name, sp);
    Stats s;
    cv::Mat img;
    TrajectoryTable truth;
    // ACC_VIDEO=k: frames go to k DiskLocators in turn (as k pipeline workers would see them)
    const int stride = std::getenv("ACC_VIDEO") ? std::max(1, std::atoi(std::getenv("ACC_VIDEO"))) : 0;
    std::vector<DiskLocator> locators;
    for (int k = 0; k < stride; ++k) locators.emplace_back(dp, lp);
    while (true) {
        const std::size_t row0 = truth.size();
        if (!gen.next(img, truth)) break;
        const double t0 = thread_seconds();
        std::vector<Particle> parts;
        if (const char* e = std::getenv("ACC_FROM_TRUTH")) {  // joint fit alone, from truth + N(0, e²) px
            std::mt19937_64 rng(7);
            std::normal_distribution<double> g(0.0, std::atof(e));
            for (std::size_t i = row0; i < truth.size(); ++i) {
                Particle q;
                q.x = truth.x[i] + g(rng), q.y = truth.y[i] + g(rng);
                q.species = truth.species[i], q.radius = truth.radius[i];
                parts.push_back(q);
            }
            joint_fit(img, parts, dp.radii, dp.joint_fit);
        } else if (std::getenv(
                       "ACC_PHASES")) {  // locate without the joint fit, then the joint fit timed by phase
            DetectParams d0 = dp;
            d0.joint = false;
            const double ta = thread_seconds();
            parts = locate(img, d0);
            const double tb = thread_seconds();
            const auto r = joint_fit(img, parts, dp.radii, dp.joint_fit);
            std::printf(
                "  locate without joint fit %.1f ms; joint fit: templates %.1f, sweeps %.1f, repair %.1f, "
                "extra %.1f ms (%zu disks, %zu added, %zu searched afresh, relative residual %.3f)\n",
                1e3 * (tb - ta), 1e3 * r.seconds[0], 1e3 * r.seconds[1], 1e3 * r.seconds[2],
                1e3 * r.seconds[3], parts.size(), r.added, r.rescued, r.relative_residual);
        } else if (stride > 0) {
            auto& L = locators[static_cast<std::size_t>(s.frames % stride)];
            parts = L.next(img);
            const auto& ls = L.last();
            if (std::getenv("ACC_FRAMES") && ls.warm)
                std::printf(
                    "  warm: candidates %.1f ms, new disks %.1f ms (%zu), fit: sweeps %.1f, repair %.1f, "
                    "extra %.1f ms (%zu sweeps, %zu steps); %zu added, %zu searched afresh; fit set-up %.1f "
                    "ms\n",
                    1e3 * ls.seconds_candidates, 1e3 * ls.seconds_new, ls.new_from_candidates,
                    1e3 * ls.seconds_fit[1], 1e3 * ls.seconds_fit[2], 1e3 * ls.seconds_fit[3],
                    ls.extra_sweeps, ls.extra_steps, ls.added_from_residual, ls.rescued,
                    1e3 * ls.seconds_fit[0]);
        } else {
            parts = locate(img, dp);
        }
        s.seconds += thread_seconds() - t0;
        if (std::getenv("ACC_FRAMES")) {
            rusage ru{};
            getrusage(RUSAGE_THREAD, &ru);
            static long faults0 = 0;
            std::printf("  frame %lld: %.1f ms CPU, %zu disks, %ld page faults\n", (long long)s.frames,
                        1e3 * (thread_seconds() - t0), parts.size(), ru.ru_minflt - faults0);
            faults0 = ru.ru_minflt;
        }
        ++s.frames;
        score(parts, truth, row0, s);
    }
    if (const char* e = std::getenv("ACC_REPLAY");
        e && stride > 0) {  // profiling: the video again, k times (frames regenerated once)
        FrameSource g2(name, sp);
        std::vector<cv::Mat> frames;
        TrajectoryTable t2;
        cv::Mat im2;
        while (g2.next(im2, t2)) frames.push_back(im2.clone());
        const double t0 = thread_seconds();
        const int k = std::atoi(e);
        for (int r = 0; r < k; ++r) {
            std::vector<DiskLocator> ls;
            for (int j = 0; j < stride; ++j) ls.emplace_back(dp, lp);
            for (std::size_t f = 0; f < frames.size(); ++f)
                (void)ls[f % static_cast<std::size_t>(stride)].next(frames[f]);
        }
        std::printf("%s: video replayed %d times: %.1f ms CPU per frame\n", name, k,
                    1e3 * (thread_seconds() - t0) / (k * double(frames.size())));
    }
    if (const char* e = std::getenv("ACC_REPEAT")) {  // profiling: locate() again on the last frame
        const double t0 = thread_seconds();
        const int k = std::atoi(e);
        for (int r = 0; r < k; ++r) (void)locate(img, dp);
        std::printf("%s: %d more locate() on the last frame: %.1f ms CPU each\n", name, k,
                    1e3 * (thread_seconds() - t0) / std::max(1, k));
    }
    std::sort(s.err.begin(), s.err.end());
    double bias = 0;
    for (int b = 0; b < 10; ++b)
        bias = std::max(bias, std::abs(s.bin_sum[b] / double(std::max<std::int64_t>(1, s.bin_n[b]))));
    auto rms = [](double se, std::int64_t n) {
        return std::sqrt(se / (2.0 * double(std::max<std::int64_t>(n, 1))));
    };
    std::printf(
        "%-9s truth %7lld  recall %.5f  precision %.5f  RMS %.4f px (isolated %.4f, touching %.4f; %lld "
        "touching)  "
        "p99 |err| %.3f  bin bias %.4f  species %.5f  %.1f ms CPU/frame\n",
        name, (long long)s.truth, double(s.matched) / double(s.truth),
        double(s.matched) / double(std::max<std::int64_t>(1, s.detected)), rms(s.se, s.matched),
        rms(s.se_iso, s.n_iso), rms(s.se_touch, s.n_touch), (long long)s.n_touch,
        s.err.empty() ? 0.0 : s.err[std::size_t(0.99 * double(s.err.size() - 1))], bias,
        double(s.species_ok) / double(std::max<std::int64_t>(1, s.matched)),
        1e3 * s.seconds / double(std::max<std::int64_t>(1, s.frames)));
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
    vibra::keep_freed_memory();  // as vibra does (core/memory.hpp)
    const int size = argc > 1 ? std::atoi(argv[1]) : 1024;
    const int frames = argc > 2 ? std::atoi(argv[2]) : 2;
    const std::string which = argc > 3 ? argv[3] : "all";
    DetectParams dp;
    dp.radii = {6, 8};
    LocatorParams lp;
    if (const char* e = std::getenv("JF_SWEEPS")) dp.joint_fit.sweeps = std::atoi(e);
    if (const char* e = std::getenv("JF_COARSE")) dp.joint_fit.coarse_sweeps = std::atoi(e);
    if (const char* e = std::getenv("JF_INNER")) dp.joint_fit.inner = std::atof(e);
    if (const char* e = std::getenv("JF_OUTER")) dp.joint_fit.outer = std::atof(e);
    if (const char* e = std::getenv("RF_IT"))
        dp.refine.iterations = std::atoi(e),
        dp.refine.coarse_iterations = std::min(dp.refine.coarse_iterations, dp.refine.iterations);
    if (const char* e = std::getenv("RF_COARSE")) dp.refine.coarse_iterations = std::atoi(e);
    if (const char* e = std::getenv("RF_SETTLE")) dp.refine.settle = std::atof(e);
    if (const char* e = std::getenv("JF_EXTRA")) dp.joint_fit.max_extra_sweeps = std::atoi(e);
    if (const char* e = std::getenv("JF_BIN")) dp.joint_fit.template_bin = std::atof(e);
    if (const char* e = std::getenv("JF_NODES")) dp.joint_fit.template_nodes = std::atoi(e);
    if (const char* e = std::getenv("JF_TOL")) dp.joint_fit.tolerance = std::atof(e);
    if (const char* e = std::getenv("JF_WAKE")) dp.joint_fit.wake = std::atof(e);
    if (const char* e = std::getenv("JF_EARLY_RESCUE")) dp.joint_fit.early_rescue = std::atoi(e) != 0;
    if (const char* e = std::getenv("JF_RESCUE_MSE")) dp.joint_fit.rescue_mse = std::atof(e);
    if (const char* e = std::getenv("JF_COARSE_CENTRE")) dp.joint_fit.coarse_centre_only = std::atoi(e) != 0;
    if (const char* e = std::getenv("JF_NEWTON")) dp.joint_fit.newton_steps = std::atoi(e);
    if (const char* e = std::getenv("JF_NEWTON_INNER")) dp.joint_fit.newton_inner = std::atoi(e);
    if (const char* e = std::getenv("JF_NEWTON_GAP")) dp.joint_fit.newton_gap = std::atof(e);
    if (const char* e = std::getenv("WARM_SWEEPS")) lp.warm_sweeps = std::atoi(e);
    if (const char* e = std::getenv("WARM_MISSING")) lp.warm_missing_every = std::atoi(e);
    if (const char* e = std::getenv("WARM_CAND")) lp.warm_candidates_every = std::atoi(e);
    if (const char* e = std::getenv("WARM_MAX")) lp.warm_search_max_every = std::atoi(e);
    if (const char* e = std::getenv("WARM_REFRESH")) lp.warm_refresh = std::atoi(e);
    if (const char* e = std::getenv("WARM_HESS")) lp.warm_hessian_every = std::atoi(e);
    if (const char* e = std::getenv("WARM_TOL")) lp.warm_tolerance = std::atof(e);
    if (const char* e = std::getenv("WARM_COARSE")) lp.warm_coarse_sweeps = std::atoi(e);
    if (const char* e = std::getenv("WARM_ONE_COARSE")) lp.warm_one_coarse_below = std::atof(e);
    if (const char* e = std::getenv("SNAP")) lp.snap_distance = std::atof(e);
    if (const char* e = std::getenv("NEWSEP")) lp.new_disk_separation = std::atof(e);
    if (const char* e = std::getenv("DROPAMP")) lp.drop_amplitude = std::atof(e);
    if (const char* e = std::getenv("JF_OFF")) dp.joint = std::atoi(e) == 0;
    if (which == "all" || which == "moderate")
        run("moderate", reference_case(ReferenceCase::moderate, size, frames, 21), dp, lp);
    if (which == "all" || which == "dense")
        run("dense", reference_case(ReferenceCase::dense, size, frames, 22), dp, lp);
    if (which == "all" || which == "noisy")
        run("noisy", reference_case(ReferenceCase::noisy, size, frames, 23), dp, lp);
    if (which == "discs") {  // ../shared real discs (not part of "all")
        DetectParams rp = dp;
        rp.radii = {46, 55};
        rp.edge_threshold = 0.06;
        rp.min_edge = 0.1;
        for (int f = 0; f < 9; ++f) {
            char name[128];
            std::snprintf(name, sizeof name,
                          "/work/shared/data/real/particletracker_discs/discs_luma_%03d.png", f);
            const cv::Mat img = cv::imread(name, cv::IMREAD_GRAYSCALE);
            if (img.empty()) return 1;
            int nn = 0, small = 0;
            if (std::getenv("ACC_PHASES")) {
                DetectParams r0 = rp;
                r0.joint = false;
                auto ps = locate(img, r0);
                const auto jr = joint_fit(img, ps, rp.radii, rp.joint_fit);
                std::printf("  frame %d: joint fit relative residual %.3f, template radii %.1f %.1f\n", f,
                            jr.relative_residual,
                            jr.template_radius.empty() ? 0.0 : jr.template_radius.front(),
                            jr.template_radius.empty() ? 0.0 : jr.template_radius.back());
            }
            for (const auto& q : locate(img, rp)) {
                if (q.x < 142 || q.x > 1082 || q.y < 30 || q.y > 846) continue;
                ++nn;
                small += q.species == 0;
                if (f == 0 && std::getenv("ACC_LIST"))
                    std::printf("   %.2f %.2f r %.2f sp %d s %.2f\n", q.x, q.y, double(q.radius),
                                int(q.species), double(q.strength));
            }
            std::printf("discs frame %d: %d in ROI, %d small\n", f, nn, small);
        }
    }
    return 0;
}
