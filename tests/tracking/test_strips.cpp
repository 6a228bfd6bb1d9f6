// SPDX-License-Identifier: GPL-3.0-or-later
// Frame strips (how `vibra track` shares a frame among its workers): the plan covers the frame
// with margins and refuses strips too low to pay; the merge keeps a disk seen by both strips of a
// seam once, from the strip that owns it, and keeps a disk only one of them saw; and a video
// tracked by three strip locators meets the moderate case's targets with no disk doubled or
// lost at the seams, against the exact truth of the renderer; and `track_video` by strips keeps
// the output rules: an undecodable frame is counted and skipped (the strips start again from
// scratch after it), a frame of another size stops the run.
#include <catch2/catch.hpp>

#include <opencv2/imgcodecs.hpp>

#include <cmath>
#include <filesystem>
#include <map>
#include <vector>

#include "detection_score.hpp"
#include "test_support.hpp"
#include "vibra/core/error.hpp"
#include "vibra/tracking/pipeline.hpp"
#include "vibra/core/trajectory.hpp"
#include "../../tracking/src/detail/strips.hpp"  // internal: how track shares a frame
#include "vibra/tracking/synth.hpp"

using namespace vibra;
using namespace vibra::tracking;
using namespace vibra::tracking::detail;

TEST_CASE("plan_strips: strips tile the frame, margins inside it, fewer strips on low frames", "[unit]") {
    const double r_large = 8;
    const int m = strip_margin(r_large);
    REQUIRE(m >= 4 * r_large);
    const auto s = plan_strips(1024, 2, r_large);
    REQUIRE(s.size() == 2);
    REQUIRE(s[0].own_begin == 0);
    REQUIRE(s[0].own_end == 512);
    REQUIRE(s[1].own_begin == 512);
    REQUIRE(s[1].own_end == 1024);
    REQUIRE(s[0].fit_begin == 0);
    REQUIRE(s[0].fit_end == 512 + m);
    REQUIRE(s[1].fit_begin == 512 - m);
    REQUIRE(s[1].fit_end == 1024);
    const auto t = plan_strips(1000, 7, r_large);
    REQUIRE(t.size() == 7);
    for (std::size_t k = 1; k < t.size(); ++k) REQUIRE(t[k].own_begin == t[k - 1].own_end);
    REQUIRE(t.back().own_end == 1000);
    // A strip must be ≥ max(8 r_large, 2 margins) high: 150 px holds 2 of 68, not 4.
    REQUIRE(plan_strips(150, 4, r_large).size() == 2);
    REQUIRE(plan_strips(100, 4, r_large).size() == 1);
    REQUIRE(plan_strips(100, 4, r_large)[0].fit_end == 100);
}

TEST_CASE("auto_strip_count: strips by the image alone, own rows at least 12 margins high", "[unit]") {
    // r_large 8: margin 34 px, strips of ≥ 408 own rows
    REQUIRE(strip_margin(8) == 34);
    REQUIRE(auto_strip_count(1024, 8) == 2);  // the moderate case: margins add 34 of 512 rows per strip
    REQUIRE(auto_strip_count(815, 8) == 1);
    REQUIRE(auto_strip_count(816, 8) == 2);
    REQUIRE(auto_strip_count(4096, 8) == 10);
    REQUIRE(auto_strip_count(100, 8) == 1);
    REQUIRE(auto_strip_count(960, 55) == 1);  // the real discs: one strip
    REQUIRE(auto_strip_count(384, 64) == 1);  // the falling ball
    for (const double r : {3.0, 8.0, 20.0})
        for (int h = 200; h <= 5000; h += 173) {
            const int n = auto_strip_count(h, r);
            const auto s = plan_strips(h, n, r);
            REQUIRE(static_cast<int>(s.size()) == n);  // plan_strips takes the count as it is
            if (n > 1)
                for (const auto& t : s) REQUIRE(t.own_end - t.own_begin >= 12 * strip_margin(r));
        }
}

TEST_CASE("merge_strips: a disk seen by both strips of a seam is kept once, from its owner", "[unit]") {
    const std::vector<FrameStrip> strips{{0, 100, 0, 140}, {100, 200, 60, 200}};
    auto disk = [](double x, double y, float r) {
        Particle q;
        q.x = x, q.y = y, q.radius = r;
        return q;
    };
    // The seam is at y = 99.5 (rows < 100 belong to strip 0). Disk A at y ≈ 98.9 (owned by strip 0),
    // seen by both; disk B at y ≈ 100.2 (strip 1), seen by both; disk C at y 99.7 seen by strip 0
    // only; disk D at 99.3 seen by strip 1 only; disk E on the zone's edge (zone 3 px: from 96.5),
    // outside it for strip 0 (96.49) and inside for strip 1 (96.51): still one disk (a 160-frame
    // video once broke a track there); ordinary disks away from the seam.
    std::vector<std::vector<Particle>> per(2);
    per[0] = {disk(10, 20, 1), disk(30, 98.9, 1), disk(60, 100.2, 1), disk(90, 99.7, 1), disk(150, 96.49, 1)};
    per[1] = {disk(30.01, 98.91, 2), disk(60.01, 100.21, 2), disk(120, 99.3, 2), disk(10, 180, 2),
              disk(150.01, 96.51, 2)};
    const auto m = merge_strips(per, strips, 3.0, 6.0);
    REQUIRE(m.size() == 7);
    auto find = [&](double x) {
        for (const auto& q : m)
            if (std::abs(q.x - x) < 0.05) return q;
        FAIL("disk at x " << x << " missing");
        return Particle{};
    };
    REQUIRE(find(30).radius == 1);                                             // A from strip 0
    REQUIRE(find(60).radius == 2);                                             // B from strip 1
    REQUIRE(find(90).radius == 1);                                             // C, only strip 0 saw it
    REQUIRE(find(120).radius == 2);                                            // D, only strip 1 saw it
    REQUIRE(find(150).radius == 1);                                            // E from strip 0, once
    for (std::size_t i = 1; i < m.size(); ++i) REQUIRE(m[i - 1].y <= m[i].y);  // sorted by y like locate()
}

TEST_CASE("strip locators: moderate case, three strips, no disk doubled or lost at the seams", "[unit]") {
    SynthParams sp = reference_case(ReferenceCase::moderate, 320, 8, 61);
    sp.render.width = 384;
    DetectParams dp;
    dp.radii = {6, 8};
    const auto strips = plan_strips(sp.render.height, 3, dp.r_large());
    REQUIRE(strips.size() == 3);
    const double zone = 0.5 * dp.r_small();
    std::vector<DiskLocator> loc(3, DiskLocator(dp));
    SynthGenerator gen(sp);
    test::Stats all, seams;
    cv::Mat img;
    TrajectoryTable truth;
    while (true) {
        const std::size_t row0 = truth.size();
        if (!gen.next(img, truth)) break;
        std::vector<std::vector<Particle>> per;
        for (std::size_t k = 0; k < 3; ++k) per.push_back(locate_in_strip(loc[k], img, strips, k, zone));
        const auto parts = merge_strips(per, strips, zone, dp.r_small());
        test::score(parts, truth, row0, all);
        // The disks within one large radius of a seam, scored alone.
        TrajectoryTable near;
        std::vector<Particle> near_parts;
        auto by_seam = [&](double y) {
            for (std::size_t k = 1; k < strips.size(); ++k)
                if (std::abs(y - (strips[k].own_begin - 0.5)) < dp.r_large()) return true;
            return false;
        };
        for (std::size_t i = row0; i < truth.size(); ++i)
            if (by_seam(truth.y[i]))
                near.push(truth.frame[i], truth.particle[i], truth.x[i], truth.y[i], truth.species[i]);
        for (const auto& q : parts)
            if (by_seam(q.y)) near_parts.push_back(q);
        test::score(near_parts, near, 0, seams);
    }
    WARN("3 strips, moderate 384x320, 8 frames: truth "
         << all.truth << ", recall " << all.recall() << ", precision " << all.precision() << ", RMS "
         << all.rms() << " px; at the seams " << seams.truth << " disks, RMS " << seams.rms() << " px");
    REQUIRE(loc[1].last().warm);  // the strips' locators carry their disks from frame to frame
    REQUIRE(all.matched == all.truth);
    REQUIRE(all.detected == all.truth);
    REQUIRE(all.rms() <= 0.03);
    REQUIRE(double(all.species_ok) / double(all.matched) >= 0.999);
    REQUIRE(seams.truth >= 40);  // enough disks straddle the seams to see a doubling or a loss
    REQUIRE(seams.matched == seams.truth);
    REQUIRE(seams.detected <=
            seams.truth + 1);  // a disk just outside the band may be counted by its detection
    REQUIRE(seams.rms() <= 0.03);
}

namespace {
// Rows and diagnostics kept in memory (the tracking module does not depend on the store).
struct MemorySink final : TrajectorySink {
    TrajectoryTable rows;
    std::size_t n_species = 0;  // rows whose final species came
    std::map<std::string, std::vector<std::int64_t>> diag;
    bool opened = false, committed = false;
    void open(const Metadata&) override { opened = true; }
    void append(const TrajectoryTable& t, std::int64_t) override {
        for (std::size_t i = 0; i < t.size(); ++i)
            rows.push(t.frame[i], t.particle[i], t.x[i], t.y[i], t.species[i]);
    }
    void append_species(const std::vector<std::int8_t>& s, const std::vector<float>&) override {
        for (auto x : s) rows.species.at(n_species++) = x;
    }
    void set_diagnostic(const std::string& name, std::vector<std::int64_t> v, const std::string&) override {
        diag[name] = std::move(v);
    }
    void commit(const Metadata&, const FrameColumns&) override {
        REQUIRE(n_species == rows.size());
        committed = true;
    }
};

// `sp` rendered into the PNG sequence `seq` (frame f → f_00f.png); frame `broken` (if ≥ 0) is a
// file that is not a PNG. The truth, and each frame's first row in it (one more: the end).
struct RenderedSequence {
    TrajectoryTable truth;
    std::vector<std::size_t> row0;
};
RenderedSequence write_png_sequence(const SynthParams& sp, const std::string& seq, int broken = -1) {
    SynthGenerator gen(sp);
    std::filesystem::create_directories(seq);
    RenderedSequence r;
    cv::Mat img;
    for (int f = 0;; ++f) {
        r.row0.push_back(r.truth.size());
        if (!gen.next(img, r.truth)) break;
        char name[32];
        std::snprintf(name, sizeof name, "/f_%03d.png", f);
        if (f == broken)
            test::write_text(seq + name, "not a png");
        else
            REQUIRE(cv::imwrite(seq + name, img));
    }
    return r;
}

TrackParams two_strips() {
    TrackParams p;
    p.detect.radii = {6, 8};
    p.threads = 2;
    p.n_strips = 2;  // the frames are lower than auto_strip_count's two strips need
    return p;
}
}  // namespace

TEST_CASE("track_video by strips: an undecodable frame is skipped, a size change stops the run", "[unit]") {
    test::TempDir dir("strips_pipeline");
    const std::string seq = dir.file("seq");
    const auto [truth, row0] = write_png_sequence(reference_case(ReferenceCase::moderate, 256, 8, 62), seq,
                                                  3);  // frame 3 cannot be decoded
    const TrackParams p = two_strips();
    REQUIRE(plan_strips(256, 2, 8).size() == 2);  // the run goes by strips
    MemorySink sink;
    const auto sum = track_video(seq, sink, dir.file("spool"), p);
    REQUIRE(sink.committed);
    REQUIRE(sum.frames == 8);
    REQUIRE(sum.decode_errors == 1);
    // the fixed costs the benchmark reports are parts of the run's time
    REQUIRE(sum.seconds_first_frame > 0);
    REQUIRE(sum.seconds_final > 0);
    REQUIRE(sum.seconds_first_frame + sum.seconds_final < sum.seconds);
    REQUIRE(sink.diag["decode_errors"] == std::vector<std::int64_t>{0, 0, 0, 1, 0, 0, 0, 0});
    const auto& det = sink.diag["detections"];
    REQUIRE(det[3] == 0);
    // every other frame: each disk exactly once, within 0.1 px
    test::Stats s;
    for (std::int64_t f = 0; f < 8; ++f) {
        if (f == 3) continue;
        std::vector<Particle> parts;
        for (std::size_t i = 0; i < sink.rows.size(); ++i)
            if (sink.rows.frame[i] == f) {
                Particle q;
                q.x = sink.rows.x[i], q.y = sink.rows.y[i], q.species = sink.rows.species[i];
                parts.push_back(q);
            }
        REQUIRE(static_cast<std::size_t>(det[static_cast<std::size_t>(f)]) == parts.size());
        const auto fu = static_cast<std::size_t>(f);
        test::score(parts, truth.slice(row0[fu], row0[fu + 1]), 0, s, 0.1);
    }
    WARN("strips through an undecodable frame: truth " << s.truth << ", matched " << s.matched
                                                       << ", detected " << s.detected << ", RMS " << s.rms()
                                                       << " px");
    REQUIRE(s.matched == s.truth);
    REQUIRE(s.detected == s.truth);
    REQUIRE(s.rms() <= 0.03);

    // A frame of another size: the run stops with an error naming the frame; nothing committed.
    cv::imwrite(seq + "/f_005.png", cv::Mat(200, 256, CV_8UC1, cv::Scalar(30)));
    MemorySink sink2;
    try {
        (void)track_video(seq, sink2, dir.file("spool2"), p);
        FAIL("a size change must stop the run");
    } catch (const FormatError& e) {
        INFO(e.what());
        REQUIRE(std::string(e.what()).find("frame 5") != std::string::npos);
    }
    REQUIRE_FALSE(sink2.committed);

    // The sink is opened while the workers locate the first frame: when it cannot be (an
    // output that cannot be created), the run stops with that error, the threads stopped.
    struct FailingSink final : TrajectorySink {
        void open(const Metadata&) override { throw IoError("out.h5: cannot create"); }
        void append(const TrajectoryTable&, std::int64_t) override { FAIL("append after a failed open"); }
        void append_species(const std::vector<std::int8_t>&, const std::vector<float>&) override {}
        void set_diagnostic(const std::string&, std::vector<std::int64_t>, const std::string&) override {}
        void commit(const Metadata&, const FrameColumns&) override { FAIL("commit after a failed open"); }
    } failing;
    REQUIRE_THROWS_WITH(track_video(seq, failing, dir.file("spool3"), p),
                        Catch::Contains("out.h5: cannot create"));
    // and a spool that cannot be created fails before any thread starts
    REQUIRE_THROWS_AS(track_video(seq, sink2, dir.file("no_such_dir") + "/spool", p), IoError);
}

TEST_CASE(
    "track_video by strips: the workers hand the frames on in order, and a sink that fails mid-run stops it",
    "[unit]") {
    // With strips the worker that is not behind links the complete frames and hands their rows to
    // the sink (pipeline.cpp): every frame must still arrive once, in order, and a sink error
    // raised on a worker must stop the run with that error, nothing committed.
    test::TempDir dir("strips_consume");
    const std::string seq = dir.file("seq");
    // ≈ 1000 disks a frame: the rows reach the sink in blocks of 8,192 during the run
    (void)write_png_sequence(reference_case(ReferenceCase::moderate, 512, 14, 63), seq);
    const TrackParams p = two_strips();
    REQUIRE(plan_strips(512, 2, 8).size() == 2);

    struct OrderSink final : TrajectorySink {
        std::int64_t next_frame = 0, appends = 0, rows = 0;
        std::int64_t fail_at = -1;  // the append call that fails (−1: none)
        bool committed = false;
        void open(const Metadata&) override {}
        void append(const TrajectoryTable& t, std::int64_t n_frames) override {
            if (appends++ == fail_at) throw IoError("out.h5: write failed (disk full?)");
            for (std::size_t i = 0; i < t.size(); ++i) {
                REQUIRE(t.frame[i] >= next_frame);  // frames in order, none twice
                REQUIRE(t.frame[i] < next_frame + n_frames);
            }
            next_frame += n_frames;
            rows += static_cast<std::int64_t>(t.size());
        }
        void append_species(const std::vector<std::int8_t>&, const std::vector<float>&) override {}
        void set_diagnostic(const std::string&, std::vector<std::int64_t>, const std::string&) override {}
        void commit(const Metadata&, const FrameColumns&) override { committed = true; }
    };
    OrderSink ok;
    const auto sum = track_video(seq, ok, dir.file("spool"), p);
    REQUIRE(ok.committed);
    REQUIRE(sum.frames == 14);
    REQUIRE(ok.next_frame == 14);
    REQUIRE(ok.rows == sum.detections);
    REQUIRE(ok.appends >= 2);  // at least one block went to the sink before the end
    REQUIRE(sum.detections >= 14 * 900);

    OrderSink failing;
    failing.fail_at = 0;  // the first block, handed on during the run
    REQUIRE_THROWS_WITH(track_video(seq, failing, dir.file("spool2"), p), Catch::Contains("disk full"));
    REQUIRE_FALSE(failing.committed);
}
