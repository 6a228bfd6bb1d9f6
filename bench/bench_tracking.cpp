// SPDX-License-Identifier: GPL-3.0-or-later
// Tracking speed on the moderate case of issue 3: 1024×1024, ringed disks of radius 6 and 8 px
// at packing fraction 0.6 (~4000 disks), noise 5%, 10% illumination gradient. Prints
// decode-only frames/s (uncompressed 8-bit AVI and FFV1 AVI), detect+refine frames/s on
// decoded frames (1 thread and all cores), link ms/frame (and per 2000 disks), end-to-end
// frames/s of `vibra track`'s pipeline from the uncompressed AVI, and end-to-end / decode time.
// Usage: bench_tracking [FRAMES=60] [WORK_DIR=/tmp/vibra_bench_tracking]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "vibra/tracking/detect.hpp"
#include "vibra/tracking/link.hpp"
#include "track_store.hpp"  // apps/vibra: pipeline → HDF5 glue
#include "vibra/tracking/pipeline.hpp"
#include "vibra/tracking/synth.hpp"
#include "vibra/tracking/video.hpp"

using namespace vibra;
using namespace vibra::tracking;
using clk = std::chrono::steady_clock;

static double since(clk::time_point t) { return std::chrono::duration<double>(clk::now() - t).count(); }

static double decode_fps(const std::string& path, std::int64_t& n) {
    auto src = open_video(path);
    Frame f;
    n = 0;
    const auto t = clk::now();
    while (true) {
        const auto st = src->next(f);
        if (st == ReadStatus::end || st == ReadStatus::truncated) break;
        ++n;
    }
    return static_cast<double>(n) / since(t);
}

int main(int argc, char** argv) {
    const int frames = argc > 1 ? std::atoi(argv[1]) : 60;
    const std::string dir = argc > 2 ? argv[2] : "/tmp/vibra_bench_tracking";
    std::filesystem::create_directories(dir);
    const std::string raw = dir + "/moderate_raw.avi", ffv1 = dir + "/moderate_ffv1.avi", out = dir + "/moderate.h5";

    SynthParams sp;
    sp.render.width = sp.render.height = 1024;
    sp.render.look = DiskLook::dark_ring;
    sp.render.noise_sigma = 0.05;
    sp.render.gradient = 0.1;
    sp.packing_fraction = 0.6;
    sp.frames = frames;
    sp.seed = 42;
    std::printf("moderate case: 1024x1024, radii 6 & 8 px, ringed, phi 0.6, %d frames; cores: %u\n", frames,
                std::thread::hardware_concurrency());
    {
        const auto t = clk::now();
        SynthGenerator gen(sp);
        FrameSink a(raw, VideoFormat::avi_raw, 100), b(ffv1, VideoFormat::avi_ffv1, 100);
        cv::Mat img;
        TrajectoryTable truth;
        while (gen.next(img, truth)) {
            a.write(img);
            b.write(img);
        }
        a.close();
        b.close();
        std::printf("  (generated %lld disks x %d frames in %.1f s)\n", static_cast<long long>(gen.n_disks()), frames, since(t));
    }
    std::int64_t n_raw = 0, n_ffv1 = 0;
    const double fps_raw = decode_fps(raw, n_raw);
    const double fps_ffv1 = decode_fps(ffv1, n_ffv1);
    std::printf("decode-only, uncompressed 8-bit AVI: %8.1f frames/s (%lld frames)\n", fps_raw, static_cast<long long>(n_raw));
    std::printf("decode-only, FFV1 AVI:               %8.1f frames/s (%lld frames)\n", fps_ffv1, static_cast<long long>(n_ffv1));

    // Decoded frames in memory (at most 20) for detect+refine and linking.
    std::vector<cv::Mat> imgs;
    {
        auto src = open_video(raw);
        Frame f;
        while (static_cast<int>(imgs.size()) < std::min(frames, 20) && src->next(f) == ReadStatus::ok) imgs.push_back(f.image.clone());
    }
    DetectParams dp;
    dp.radii = {6, 8};
    std::vector<std::vector<Particle>> found(imgs.size());
    auto t = clk::now();
    for (std::size_t k = 0; k < imgs.size(); ++k) found[k] = locate(imgs[k], dp);
    const double det1 = static_cast<double>(imgs.size()) / since(t);
    const unsigned nt = std::max(1u, std::thread::hardware_concurrency());
    t = clk::now();
    {
        std::vector<std::thread> th;
        for (unsigned w = 0; w < nt; ++w)
            th.emplace_back([&, w] {
                for (std::size_t k = w; k < imgs.size(); k += nt) (void)locate(imgs[k], dp);
            });
        for (auto& x : th) x.join();
    }
    const double detn = static_cast<double>(imgs.size()) / since(t);
    double mean_n = 0;
    for (const auto& f : found) mean_n += static_cast<double>(f.size()) / static_cast<double>(found.size());
    std::printf("detect+refine on decoded frames:     %8.1f frames/s (1 thread), %.1f frames/s (%u threads); %.0f disks/frame\n",
                det1, detn, nt, mean_n);

    // Linking: the detections of the decoded frames, repeated forwards and backwards.
    LinkParams lp;
    lp.max_step = 3;
    Linker L(lp);
    double link_s = 0;
    int linked = 0;
    for (int rep = 0; rep < 5; ++rep)
        for (std::size_t k = 0; k < found.size(); ++k) {
            const auto& f = found[rep % 2 ? found.size() - 1 - k : k];
            std::vector<double> x, y;
            std::vector<std::int8_t> s;
            for (const auto& q : f) x.push_back(q.x), y.push_back(q.y), s.push_back(q.species);
            const auto t0 = clk::now();
            L.link(x, y, s);
            link_s += since(t0);
            ++linked;
        }
    const double link_ms = 1e3 * link_s / linked;
    std::printf("link:                                %8.2f ms/frame (%.2f ms per 2000 disks)\n", link_ms, link_ms * 2000.0 / mean_n);

    TrackParams tp;
    tp.detect = dp;
    tp.link.max_step = 3;
    t = clk::now();
    const auto sum = track_video(raw, out, tp);
    const double e2e_s = since(t);
    const double e2e = static_cast<double>(sum.frames) / e2e_s;
    std::printf("end-to-end (vibra track pipeline), uncompressed AVI: %8.1f frames/s (%lld frames, %lld detections)\n", e2e,
                static_cast<long long>(sum.frames), static_cast<long long>(sum.detections));
    std::printf("end-to-end time / decode-only time:  %8.1f\n", fps_raw / e2e);
    std::printf("required: end-to-end >= 100 frames/s, link <= 2 ms per 2000 disks\n");
    return 0;
}
