// SPDX-License-Identifier: GPL-3.0-or-later
// The particle-major copy (TrackCache) against the path it replaced (re-reading the frames for
// every particle block): identical tracks, in memory and in a temporary file; msd and vacf
// identical for any thread count and equal to the old path.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "dynamics_synth.hpp"
#include "vibra/analysis/msd.hpp"
#include "vibra/analysis/registry.hpp"
#include "vibra/analysis/track_cache.hpp"
#include "vibra/analysis/vacf.hpp"
#include "vibra/analysis/velocities.hpp"
#include "vibra/core/periodic.hpp"

using namespace vibra;
using namespace vibra::analysis;
namespace fs = std::filesystem;

namespace {

/// Experiment-like: tracks that start and end anywhere, with gaps, in a periodic box (positions
/// wrapped), given velocities with a common drift; species small, large and unknown.
InMemorySource gappy_source(bool velocities, std::uint64_t seed = 5) {
    std::mt19937_64 rng(seed);
    const std::size_t N = 60, T = 150;
    const double L = 20.0;
    std::normal_distribution<double> g(0.0, 0.4);
    std::uniform_int_distribution<std::size_t> start(0, T - 2);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    test::Series s;
    s.x.assign(N, std::vector<double>(T, test::kNaN));
    s.y = s.x;
    if (velocities) s.vx = s.vy = s.x;
    s.species.resize(N);
    for (std::size_t i = 0; i < N; ++i) {
        const std::size_t a = start(rng), b = std::min(T, a + 3 + start(rng));
        double x = L * u(rng), y = L * u(rng);
        for (std::size_t t = a; t < b; ++t) {
            x += g(rng) + 0.05, y += g(rng);
            if (u(rng) < 0.1) continue;  // a gap
            s.x[i][t] = std::fmod(x + 100 * L, L);
            s.y[i][t] = std::fmod(y + 100 * L, L);
            if (velocities) s.vx[i][t] = g(rng) + 0.05, s.vy[i][t] = g(rng);
        }
        s.species[i] = static_cast<std::int8_t>(i % 3 == 0 ? -1 : i % 3 == 1 ? 0 : 1);
    }
    Metadata m;
    m.geometry = Geometry::periodic(0, 0, L, L);
    return test::make_source(s, m);
}

/// The same rows with id i → i · 10^12 + 7: ids too sparse for a table over their span.
InMemorySource sparse_ids(const InMemorySource& src) {
    Trajectory t = src.trajectory();
    for (auto& id : t.rows.particle)
        if (id >= 0) id = id * 1'000'000'000'000 + 7;
    return InMemorySource(std::move(t));
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
    return a.size() == b.size() &&
           (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

std::vector<Track> collect(const TrajectorySource& src, TrackStreamParams p) {
    std::vector<Track> out;
    stream_tracks(src, p, [&](const Track& t) { out.push_back(t); });
    return out;
}

void check_same_tracks(const std::vector<Track>& a, const std::vector<Track>& b) {
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        INFO("track " << a[i].id);
        CHECK(a[i].id == b[i].id);
        CHECK(a[i].species == b[i].species);
        CHECK(a[i].first_frame == b[i].first_frame);
        CHECK(same_bits(a[i].x, b[i].x));
        CHECK(same_bits(a[i].y, b[i].y));
        CHECK(same_bits(a[i].vx, b[i].vx));
        CHECK(same_bits(a[i].vy, b[i].vy));
    }
}

/// Every floating-point array and attribute bit for bit (NaN = NaN), integers exactly.
void check_same_group(const ResultGroup& a, const ResultGroup& b) {
    INFO("group " << a.name);
    REQUIRE(a.arrays.size() == b.arrays.size());
    for (std::size_t k = 0; k < a.arrays.size(); ++k) {
        INFO("array " << a.arrays[k].name);
        CHECK(a.arrays[k].name == b.arrays[k].name);
        if (const auto* v = std::get_if<std::vector<double>>(&a.arrays[k].data))
            CHECK(same_bits(*v, std::get<std::vector<double>>(b.arrays[k].data)));
        else
            CHECK(a.arrays[k].data == b.arrays[k].data);
    }
    for (const auto& [key, v] : a.attrs) {
        INFO("attribute " << key);
        REQUIRE(b.attrs.count(key));
        if (const auto* d = std::get_if<double>(&v)) {
            const double e = std::get<double>(b.attrs.at(key));
            CHECK(std::memcmp(d, &e, sizeof e) == 0);
        } else
            CHECK(v == b.attrs.at(key));
    }
    REQUIRE(a.groups.size() == b.groups.size());
    for (std::size_t k = 0; k < a.groups.size(); ++k) check_same_group(a.groups[k], b.groups[k]);
}

}  // namespace

TEST_CASE("track cache: the same tracks as re-reading the frames, in memory and in a temporary file",
          "[unit]") {
    for (bool vel : {false, true})
        for (auto drift : {DriftMode::none, DriftMode::lowpass, DriftMode::com}) {
            INFO("velocities " << vel << ", drift " << to_string(drift));
            const auto src = drift == DriftMode::com ? sparse_ids(gappy_source(vel)) : gappy_source(vel);
            TrackStreamParams p;
            p.drift = drift;
            p.drift_window = 7;
            p.max_cells = 300;  // many particle blocks
            p.rescan = true;
            const auto old = collect(src, p);
            REQUIRE(old.size() > 40);

            p.rescan = false;  // a private copy, in memory
            check_same_tracks(old, collect(src, p));

            const fs::path dir =
                fs::temp_directory_path() / ("vibra-test-track-cache-" + std::to_string(::getpid()));
            fs::create_directories(dir);
            TrackCacheParams cp;
            cp.memory_bytes = 0;  // always a file, written by the scan
            cp.chunk_bytes = 1;   // the smallest chunks: one per block of frames
            cp.block_rows = 100;
            cp.temp_dir = dir.string();
            TrackCache disk(src, cp);
            CHECK_FALSE(disk.built());
            p.cache = &disk;
            p.threads = 2;
            check_same_tracks(old, collect(src, p));
            CHECK(disk.built());
            CHECK(disk.on_disk());
            CHECK(disk.bytes() > 0);
            CHECK(fs::is_empty(dir));  // the temporary file is unlinked as soon as it is opened
            check_same_tracks(old, collect(src, p));  // reused
            fs::remove_all(dir);

            TrackCacheParams cm;  // the default budget: the scan keeps the rows, one pass
            TrackCache mem(src, cm);
            mem.build();
            CHECK_FALSE(mem.on_disk());
            p.cache = &mem;
            check_same_tracks(old, collect(src, p));

            TrackCacheParams c2;  // the copy fits, the kept rows too would not: a second pass
            c2.memory_bytes = mem.bytes();
            REQUIRE(src.n_rows() * 80 > c2.memory_bytes);
            TrackCache two(src, c2);
            p.cache = &two;
            check_same_tracks(old, collect(src, p));
            CHECK_FALSE(two.on_disk());
            CHECK(two.spill_bytes() == src.n_rows() * (vel ? 48 : 32));  // every row linked here
            CHECK(mem.spill_bytes() == 0);
            CHECK(disk.spill_bytes() == 0);  // the copy goes to a file, written by the scan: one pass

            CHECK(disk.file_bytes() > 0);
            CHECK(mem.file_bytes() == 0);

            // The copy's rows fit (16 bytes a row) but its gaps do not: chunks made from the spill,
            // the first ones in memory, the rest in a file.
            fs::create_directories(dir);
            TrackCacheParams c4;
            c4.memory_bytes = src.n_rows() * 16;
            c4.chunk_bytes = 4096;
            c4.block_rows = 100;  // chunks of about 64 rows: of a block or two
            c4.temp_dir = dir.string();
            REQUIRE(mem.bytes() > c4.memory_bytes);
            TrackCache gaps(src, c4);
            p.cache = &gaps;
            check_same_tracks(old, collect(src, p));
            CHECK(gaps.on_disk());
            CHECK(gaps.spill_bytes() == src.n_rows() * (vel ? 48 : 32));
            CHECK(gaps.file_bytes() > 0);
            CHECK(gaps.file_bytes() < gaps.bytes());  // the first chunks in memory

            // Not even the rows fit: the scan writes the chunks itself, again partly in memory.
            TrackCacheParams c5 = c4;
            c5.memory_bytes = src.n_rows() * 16 - 1;
            TrackCache direct(src, c5);
            p.cache = &direct;
            check_same_tracks(old, collect(src, p));
            CHECK(direct.on_disk());
            CHECK(direct.spill_bytes() == 0);
            CHECK(direct.file_bytes() > 0);
            CHECK(direct.file_bytes() < direct.bytes());
            CHECK(fs::is_empty(dir));
            fs::remove_all(dir);

            TrackCacheParams c3 = c2;  // the rows cannot be spilled: the second pass reads the file
            c3.temp_dir = (dir / "absent").string();
            TrackCache reread(src, c3);
            p.cache = &reread;
            check_same_tracks(old, collect(src, p));
            CHECK(reread.spill_bytes() == 0);
            CHECK_FALSE(reread.on_disk());

            TrackCacheParams c6 = cp;  // the copy needs a file that cannot be made: an error naming it
            c6.temp_dir = c3.temp_dir;
            TrackCache nowhere(src, c6);
            CHECK_THROWS_WITH(
                nowhere.build(),
                Catch::Contains("absent/vibra-tracks-") &&
                    Catch::Contains("cannot create a temporary file for the particle-major copy"));
        }
}

TEST_CASE("track cache: a copy of another source is not used", "[unit]") {
    const auto a = gappy_source(false, 1), b = gappy_source(false, 2);
    TrackCache ca(a);
    TrackStreamParams p;
    p.cache = &ca;
    const auto tb = collect(b, p);
    CHECK_FALSE(ca.built());
    p.cache = nullptr;
    p.rescan = true;
    check_same_tracks(collect(b, p), tb);
}

TEST_CASE("msd and vacf: identical for any --threads and equal to the frame re-reading path", "[unit]") {
    for (bool vel : {false, true}) {
        const auto src = gappy_source(vel, 11);
        MsdParams mp;
        mp.max_cells = 250;
        mp.vanhove_lags = {1, 3, 10};
        mp.rescan = true;
        const auto msd_old = to_group(compute_msd(src, mp), mp, src.meta());
        VacfParams vp;
        vp.max_cells = 250;
        vp.rescan = true;
        const auto vacf_old = to_group(compute_vacf(src, vp), vp, src.meta());
        mp.rescan = vp.rescan = false;
        TrackCache shared(src);
        for (int threads : {1, 2, 3}) {
            INFO("threads " << threads << ", velocities " << vel);
            mp.threads = vp.threads = threads;
            mp.cache = vp.cache = threads == 3 ? nullptr : &shared;
            check_same_group(msd_old, to_group(compute_msd(src, mp), mp, src.meta()));  // with van_hove
            check_same_group(vacf_old, to_group(compute_vacf(src, vp), vp, src.meta()));
        }
        CHECK(std::get<std::int64_t>(msd_old.attrs.at("particle_blocks")) > 3);
        CHECK(shared.built());
    }
}

TEST_CASE("the per-track analyses of a run share one copy through the registry", "[unit]") {
    const auto src = gappy_source(true, 3);
    const auto specs = all_analyses();
    TrackCache shared(src);
    for (const char* name : {"vacf", "vdos", "temperature", "velocity_distribution", "fs", "msd"}) {
        INFO(name);
        const AnalysisSpec* s = nullptr;
        for (const auto& sp : specs)
            if (sp.name == name) s = &sp;
        REQUIRE(s);
        std::map<std::string, std::string> opts;
        for (const auto& o : s->options) opts[o.flag] = o.default_value;
        if (std::string(name) == "fs") opts["fs-k"] = "1.0";
        AnalysisContext solo{src, opts, false, 1, nullptr};
        AnalysisContext with{src, opts, false, 2, nullptr, &shared};
        const auto a = s->run(solo), b = s->run(with);
        REQUIRE(a.size() == b.size());
        for (std::size_t k = 0; k < a.size(); ++k) check_same_group(a[k], b[k]);
        CHECK(shared.built());
    }
}

TEST_CASE("drift of a uniform half-box jump: the scan and the unwrapping take the same image", "[unit]") {
    // Every particle moves by exactly +L/2 between frames 1 and 2 (a tie of the minimum image).
    // The scan's per-frame drift increment and each track's unwrapping both use core's
    // minimum_image (ties to even: +L/2 stays +L/2), so subtracting the centre-of-mass drift
    // leaves every track still. (With std::round in the scan, as before, the drift was −L/2 and
    // the tracks jumped by a whole box.)
    const double L = 20.0;
    test::Series s;
    const std::size_t N = 4, T = 4;
    s.x.assign(N, std::vector<double>(T));
    s.y = s.x;
    for (std::size_t i = 0; i < N; ++i)
        for (std::size_t t = 0; t < T; ++t) {
            s.x[i][t] = 1.0 + 2.0 * static_cast<double>(i) + (t >= 2 ? L / 2 : 0.0);
            s.y[i][t] = 3.0 + static_cast<double>(i);
        }
    Metadata m;
    m.geometry = Geometry::periodic(0, 0, L, L);
    const auto src = test::make_source(s, m);
    for (bool rescan : {true, false}) {
        INFO("rescan " << rescan);
        TrackStreamParams p;
        p.drift = DriftMode::com;
        p.rescan = rescan;
        const auto tracks = collect(src, p);
        REQUIRE(tracks.size() == N);
        for (const auto& tk : tracks) {
            REQUIRE(tk.x.size() == T);
            for (std::size_t t = 1; t < T; ++t) CHECK(tk.x[t] == tk.x[0]);
        }
    }
    CHECK(minimum_image(L / 2, L) == L / 2);  // the tie rule itself
    CHECK(minimum_image(-L / 2, L) == -L / 2);
    CHECK(minimum_image(1.5 * L, L) == -L / 2);  // nearbyint(1.5) = 2: to even
}
