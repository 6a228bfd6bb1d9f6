// SPDX-License-Identifier: GPL-3.0-or-later
// Hard footage (docs/tracking.md, "Static background"): a static plate texture, vignetting,
// light blobs, defocus, 8% noise, exposure motion blur and hot/dead pixels. The static
// background and the stuck pixels are measured from frames spread over the video and taken out
// of every frame; `vibra track` (track_video, defaults) then meets the hard case's targets
// against the exact truth: precision and recall ≥ 99.5%, RMS ≤ 0.08 px per axis, ≥ 99% of the
// disks followed by one track over every frame — and stays bit-identical for any thread count.
// Clean footage (the moderate case) is left as it is.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "../../tracking/src/detail/static_background.hpp"
#include "test_support.hpp"
#include "vibra/core/cell_list.hpp"
#include "vibra/core/trajectory.hpp"
#include "vibra/tracking/pipeline.hpp"
#include "vibra/tracking/synth.hpp"
#include "vibra/tracking/video_writer.hpp"

using namespace vibra;
using namespace vibra::tracking;

namespace {

struct MemorySink final : TrajectorySink {
    Metadata meta;
    TrajectoryTable rows;
    bool done = false;
    void open(const Metadata& m) override { meta = m; }
    void append(const TrajectoryTable& t, std::int64_t) override { rows.append(t); }
    void append_species(const std::vector<std::int8_t>&, const std::vector<float>&) override {}
    void set_diagnostic(const std::string&, std::vector<std::int64_t>, const std::string&) override {}
    void commit(const Metadata& m, const FrameColumns&) override {
        meta = m;
        done = true;
    }
};

struct Clip {
    std::string path;
    TrajectoryTable truth;
    std::vector<cv::Mat> frames;
};

Clip write_clip(const SynthParams& sp, const std::string& path) {
    Clip c;
    c.path = path;
    SynthGenerator gen(sp);
    FrameSink sink(path, VideoFormat::avi_raw, 1000);
    cv::Mat img;
    while (gen.next(img, c.truth)) {
        sink.write(img);
        c.frames.push_back(img.clone());
    }
    sink.close();
    return c;
}

struct Score {
    std::int64_t truth = 0, detected = 0, matched = 0, complete = 0, particles = 0, tracks = 0;
    double se = 0;
    double recall() const { return double(matched) / double(truth); }
    double precision() const { return double(matched) / double(detected); }
    double rms() const { return std::sqrt(se / (2.0 * double(matched))); }
    double complete_fraction() const { return double(complete) / double(particles); }
};

// Per frame: detections matched one-to-one to the truth within 3 px, nearest first. A truth disk
// is followed completely when one track id matches it in every frame.
Score score_tracks(const TrajectoryTable& rows, const TrajectoryTable& truth, std::int64_t n_frames) {
    Score s;
    std::map<std::int64_t, std::vector<std::size_t>> det_by_frame, truth_by_frame;
    for (std::size_t i = 0; i < rows.size(); ++i) det_by_frame[rows.frame[i]].push_back(i);
    for (std::size_t i = 0; i < truth.size(); ++i) truth_by_frame[truth.frame[i]].push_back(i);
    std::map<std::int64_t, std::set<std::int64_t>> ids;  // truth particle → matched track ids
    std::map<std::int64_t, std::int64_t> seen;           // truth particle → frames matched
    std::set<std::int64_t> all_tracks(rows.particle.begin(), rows.particle.end());
    s.tracks = static_cast<std::int64_t>(all_tracks.size());
    for (std::int64_t f = 0; f < n_frames; ++f) {
        const auto& d = det_by_frame[f];
        const auto& t = truth_by_frame[f];
        s.detected += static_cast<std::int64_t>(d.size());
        s.truth += static_cast<std::int64_t>(t.size());
        std::vector<std::tuple<double, std::size_t, std::size_t>> pairs;
        std::vector<double> px, py;
        for (auto i : d) px.push_back(rows.x[i]), py.push_back(rows.y[i]);
        CellList cl(px, py, 3.0, Geometry{});
        for (std::size_t a = 0; a < t.size(); ++a)
            cl.for_each_near(truth.x[t[a]], truth.y[t[a]], [&](std::size_t j, double, double, double r2) {
                if (r2 < 9.0) pairs.emplace_back(r2, a, j);
            });
        std::sort(pairs.begin(), pairs.end());
        std::vector<char> used_t(t.size(), 0), used_d(d.size(), 0);
        for (const auto& [r2, a, j] : pairs) {
            if (used_t[a] || used_d[j]) continue;
            used_t[a] = used_d[j] = 1;
            ++s.matched;
            const auto ti = t[a], di = d[j];
            const double ex = rows.x[di] - truth.x[ti], ey = rows.y[di] - truth.y[ti];
            s.se += ex * ex + ey * ey;
            ids[truth.particle[ti]].insert(rows.particle[di]);
            ++seen[truth.particle[ti]];
        }
    }
    std::set<std::int64_t> particles(truth.particle.begin(), truth.particle.end());
    s.particles = static_cast<std::int64_t>(particles.size());
    for (auto q : particles) s.complete += seen[q] == n_frames && ids[q].size() == 1;
    return s;
}

MemorySink track(const std::string& input, TrackParams p, int threads, const test::TempDir& dir) {
    p.threads = threads;
    MemorySink sink;
    (void)track_video(input, sink, dir.file("spool_" + std::to_string(threads)), p);
    REQUIRE(sink.done);
    return sink;
}

}  // namespace

TEST_CASE(
    "static background: the hard case's texture and stuck pixels are found, clean footage is left alone",
    "[unit]") {
    test::TempDir dir("static_background_measure");
    detail::StaticBackgroundParams bp;
    SECTION("hard case: texture subtracted, the hot and dead pixels found") {
        SynthParams sp = reference_case(ReferenceCase::hard, 384, 48, 31);
        const auto clip = write_clip(sp, dir.file("hard.avi"));
        bp.r_large = 7.7;
        const auto bg = detail::measure_static_background(clip.frames, bp);
        INFO(bg.describe());
        REQUIRE(bg.correct_background);
        REQUIRE(bg.correlation > 0.7);
        // the rendered texture: 6% of the 64-level contrast ≈ 3.8 levels RMS at gain 1
        REQUIRE(bg.texture_rms > 2.0);
        REQUIRE(bg.texture_rms < 6.0);
        // ≈ 0.03% hot + 0.03% dead of 384² ≈ 44 + 44 (a few coincide or sit in a saturated spot)
        REQUIRE(bg.stuck.size() >= 70);
        REQUIRE(bg.stuck.size() <= 92);
    }
    SECTION("moderate case: nothing to correct") {
        const auto clip =
            write_clip(reference_case(ReferenceCase::moderate, 384, 24, 32), dir.file("moderate.avi"));
        bp.r_large = 8;
        const auto bg = detail::measure_static_background(clip.frames, bp);
        INFO(bg.describe());
        REQUIRE_FALSE(bg.active());
    }
    SECTION("the frames read: spread over the range, the same for every run") {
        REQUIRE(detail::static_background_frames(10, 20, 48).size() == 10);
        const auto f = detail::static_background_frames(0, 1000, 48);
        REQUIRE(f.size() == 48);
        REQUIRE(f.front() == 0);
        REQUIRE(f.back() == 999);
    }
}

TEST_CASE("static background: 8-bit block quantiles from a histogram equal those of a partial sort",
          "[unit]") {
    std::mt19937 rng(5);
    for (const float sign : {1.f, -1.f})
        for (const int width : {7, 32, 33}) {
            INFO("sign " << sign << ", row of " << width);
            std::vector<std::uint8_t> row(static_cast<std::size_t>(width));
            detail::OrderStatistics8 hist(sign);
            std::vector<float> u;
            // a few values repeated (a flat background), the rest spread: ties at every quantile
            std::uniform_int_distribution<int> level(0, 255), pick(0, 3);
            for (int r = 0; r < 40; ++r) {
                for (auto& v : row)
                    v = static_cast<std::uint8_t>(pick(rng) == 0 ? level(rng) : 100 + pick(rng));
                for (int i0 : {0, 1}) {
                    hist.add_every_other(row.data(), i0, width);
                    for (int i = i0; i < width; i += 2)
                        u.push_back(sign * float(row[static_cast<std::size_t>(i)]));
                }
            }
            REQUIRE(hist.size() == u.size());
            for (const std::size_t k :
                 {std::size_t{0}, u.size() / 8, u.size() / 4, u.size() / 2, u.size() - 1}) {
                auto sorted = u;
                std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(k),
                                 sorted.end());
                CHECK(hist.kth(k) == sorted[k]);
            }
            hist.clear();
            CHECK(hist.size() == 0);
        }
}

TEST_CASE(
    "track on hard footage (texture, vignetting, light blobs, defocus, noise 8%, hot/dead pixels) meets "
    "its targets, the same for any thread count",
    "[unit]") {
    test::TempDir dir("static_background_track");
    // 512², 40 frames: the 1024² case's disks and imaging, a quarter of its area (docs/tracking.md
    // gives the 1024² figures and the commands).
    const auto clip = write_clip(reference_case(ReferenceCase::hard, 512, 40, 41), dir.file("hard.avi"));
    TrackParams p;
    p.detect.radii = {6, 7.7};
    const auto one = track(clip.path, p, 1, dir);
    const auto s = score_tracks(one.rows, clip.truth, 40);
    INFO("recall " << s.recall() << ", precision " << s.precision() << ", RMS " << s.rms() << " px, complete "
                   << s.complete_fraction() << " (" << s.tracks << " tracks for " << s.particles
                   << " disks)");
    REQUIRE(one.meta.user.count("static_background") == 1);
    CHECK(s.recall() >= 0.995);
    CHECK(s.precision() >= 0.995);
    CHECK(s.rms() <= 0.08);
    CHECK(s.complete_fraction() >= 0.99);
    const auto two = track(clip.path, p, 2, dir);
    REQUIRE(two.rows.size() == one.rows.size());
    REQUIRE(std::memcmp(two.rows.x.data(), one.rows.x.data(), one.rows.x.size() * sizeof(double)) == 0);
    REQUIRE(std::memcmp(two.rows.y.data(), one.rows.y.data(), one.rows.y.size() * sizeof(double)) == 0);
    REQUIRE(two.rows.particle == one.rows.particle);
}
