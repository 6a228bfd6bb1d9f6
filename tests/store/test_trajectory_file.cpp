// SPDX-License-Identifier: GPL-3.0-or-later
// HDF5 trajectory file: round trips, frame-range reads, streaming writes, validation errors.
#include <catch2/catch.hpp>
#include <hdf5.h>

#include <filesystem>
#include <random>

#include "test_support.hpp"
#include "vibra/core/error.hpp"
#include "vibra/store/trajectory_file.hpp"

using namespace vibra;
namespace fs = std::filesystem;

namespace {
Trajectory sample(bool velocities, bool extras) {
    Trajectory t;
    std::mt19937_64 rng(1);
    std::uniform_real_distribution<double> u(0, 100);
    for (std::int64_t f = 0; f < 6; ++f) {
        if (f == 3) continue;  // an empty frame
        for (std::int64_t p = 0; p < 5; ++p) {
            if ((f + p) % 4 == 0) continue;  // gaps
            t.rows.push(f, p, u(rng), u(rng), static_cast<std::int8_t>(p % 2));
            if (velocities) {
                t.rows.vx.push_back(u(rng) - 50);
                t.rows.vy.push_back(u(rng) - 50);
            }
            if (extras) {
                t.rows.radius.push_back(static_cast<float>(3 + p));
                t.rows.brightness.push_back(static_cast<float>(u(rng)));
                t.rows.quality.push_back(0.5f);
                t.rows.species_confidence.push_back(0.99f);
            }
        }
        t.rows.push(f, -1, 1.0, 2.0, -1);  // an unlinked detection
        if (velocities) t.rows.vx.push_back(0), t.rows.vy.push_back(0);
        if (extras) {
            t.rows.radius.push_back(1), t.rows.brightness.push_back(1), t.rows.quality.push_back(0.1f);
            t.rows.species_confidence.push_back(0.2f);
        }
    }
    t.rows.sort_rows();
    t.index = build_frame_index(t.rows, 0, 6);
    t.frames.time_s = {0.0, 0.001, 0.002, 0.004, 0.005, 0.006};  // a dropped frame
    t.meta.length_unit = "px";
    t.meta.time_unit = "s";
    t.meta.frame_interval = 0.001;
    t.meta.px_per_mm = 12.5;
    t.meta.image_width = 640;
    t.meta.image_height = 480;
    t.meta.geometry = Geometry::circle(320, 240, 200);
    t.meta.species_diameters = {6.0, 8.0};
    t.meta.drive_frequency_hz = 50;
    t.meta.drive_gamma = 2.5;
    t.meta.source = {"in.avi", "sha256:00", "0.1.0", "vibra track in.avi"};
    t.meta.user["operator"] = "test";
    return t;
}
// Every column identical (the optional ones empty on both sides or equal).
void require_same_rows(const TrajectoryTable& a, const TrajectoryTable& b) {
    REQUIRE(a.frame == b.frame);
    REQUIRE(a.particle == b.particle);
    REQUIRE(a.x == b.x);
    REQUIRE(a.y == b.y);
    REQUIRE(a.species == b.species);
    REQUIRE(a.vx == b.vx);
    REQUIRE(a.vy == b.vy);
    REQUIRE(a.radius == b.radius);
    REQUIRE(a.brightness == b.brightness);
    REQUIRE(a.quality == b.quality);
    REQUIRE(a.species_confidence == b.species_confidence);
}
}  // namespace

TEST_CASE("trajectory file round trip keeps every column, index, per-frame time and metadata", "[unit]") {
    test::TempDir dir("store_roundtrip");
    for (bool vel : {false, true}) {
        for (bool extras : {false, true}) {
            const auto t = sample(vel, extras);
            const auto path = dir.file("t.h5");
            store::write_trajectory(path, t);
            REQUIRE_FALSE(fs::exists(path + ".partial"));
            store::TrajectoryReader r(path);
            const auto back = r.read_all();
            require_same_rows(back.rows, t.rows);
            REQUIRE(back.index.offsets == t.index.offsets);
            REQUIRE(back.frames == t.frames);
            auto m = back.meta;
            REQUIRE(m == t.meta);
            REQUIRE(r.schema_version() == "1.0");
        }
    }
}

TEST_CASE("geometry kinds survive the round trip", "[unit]") {
    test::TempDir dir("store_geometry");
    for (const auto& g : {Geometry::periodic(-5, -5, 5, 5), Geometry::rect(0, 0, 10, 20),
                          Geometry::circle(1, 2, 3), Geometry{}}) {
        auto t = sample(false, false);
        t.meta.geometry = g;
        store::write_trajectory(dir.file("g.h5"), t);
        REQUIRE(store::TrajectoryReader(dir.file("g.h5")).meta().geometry == g);
    }
}

TEST_CASE("frame-range reads return exactly those frames with a rebased index", "[unit]") {
    test::TempDir dir("store_range");
    const auto t = sample(true, false);
    store::write_trajectory(dir.file("t.h5"), t);
    store::TrajectoryReader r(dir.file("t.h5"));
    const auto part = r.read_frames(2, 3);  // frames 2, 3 (empty), 4
    REQUIRE(part.index.first_frame == 2);
    REQUIRE(part.index.n_frames() == 3);
    REQUIRE(part.index.count(3) == 0);
    const auto b = t.index.begin(2), e = t.index.end(4);
    REQUIRE(part.rows.size() == static_cast<std::size_t>(e - b));
    for (std::size_t i = 0; i < part.rows.size(); ++i)
        REQUIRE(part.rows.x[i] == t.rows.x[static_cast<std::size_t>(b) + i]);
    REQUIRE(part.frames.time_s == std::vector<double>{0.002, 0.004, 0.005});
    REQUIRE(r.rows_in(2, 3) == e - b);
    // Out-of-range requests are clamped, not errors.
    REQUIRE(r.read_frames(5, 100).index.n_frames() == 1);
}

TEST_CASE("streaming writer appends frame blocks — an uncommitted writer leaves nothing", "[unit]") {
    test::TempDir dir("store_stream");
    const auto t = sample(false, false);
    {
        store::TrajectoryWriter w(dir.file("s.h5"), t.meta, store::ColumnSet::of(t.rows));
        // frames 0-1, then 2-5 in a second block
        const auto split = static_cast<std::size_t>(t.index.end(1));
        FrameColumns a{{0.0, 0.001}, {}, {}}, b{{0.002, 0.004, 0.005, 0.006}, {}, {}};
        w.append(t.rows.slice(0, split), 2, a);
        w.append(t.rows.slice(split, t.rows.size()), 4, b);
        w.set_diagnostic("detections", {1, 2, 3, 4, 5, 6}, "1");
        REQUIRE(fs::exists(dir.file("s.h5.partial")));
        REQUIRE_FALSE(fs::exists(dir.file("s.h5")));
        w.commit();
    }
    store::TrajectoryReader r(dir.file("s.h5"));
    REQUIRE(r.read_all().rows.x == t.rows.x);
    REQUIRE(r.frame_columns().time_s.size() == 6);
    REQUIRE(r.diagnostics() == std::vector<std::string>{"detections"});
    REQUIRE(r.read_diagnostic("detections")[5] == 6);
    {
        store::TrajectoryWriter w(dir.file("abandoned.h5"), t.meta, {});
        w.append(t.rows.slice(0, 2), 1);
    }  // destroyed without commit
    REQUIRE_FALSE(fs::exists(dir.file("abandoned.h5")));
    REQUIRE_FALSE(fs::exists(dir.file("abandoned.h5.partial")));
}

TEST_CASE("writer rejects rows outside the block or duplicated", "[unit]") {
    test::TempDir dir("store_reject");
    store::TrajectoryWriter w(dir.file("r.h5"), Metadata{}, {});
    TrajectoryTable rows;
    rows.push(0, 1, 0, 0, 0);
    rows.push(0, 1, 1, 1, 0);
    REQUIRE_THROWS_WITH(w.append(rows, 1), Catch::Contains("duplicate particle 1"));
    TrajectoryTable later;
    later.push(5, 1, 0, 0, 0);
    REQUIRE_THROWS_WITH(w.append(later, 2), Catch::Contains("outside the frame range"));
}

namespace {
// Writes a file with the given datasets by hand (raw HDF5), to provoke reader errors.
void raw_file(const std::string& path, const std::string& schema, const std::string& version, bool drop_x,
              bool short_y, bool bad_offsets, bool unsorted) {
    hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    auto sattr = [&](hid_t o, const char* name, const std::string& v) {
        hid_t t = H5Tcopy(H5T_C_S1);
        H5Tset_size(t, v.size() + 1);
        hid_t s = H5Screate(H5S_SCALAR);
        hid_t a = H5Acreate2(o, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(a, t, v.c_str());
        H5Aclose(a), H5Sclose(s), H5Tclose(t);
    };
    sattr(f, "schema", schema);
    sattr(f, "schema_version", version);
    hid_t g = H5Gcreate2(f, "trajectories", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    auto ds = [&](hid_t loc, const char* name, hid_t type, const void* data, hsize_t n) {
        hid_t s = H5Screate_simple(1, &n, nullptr);
        hid_t d = H5Dcreate2(loc, name, type, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
        H5Dclose(d), H5Sclose(s);
    };
    std::int64_t frame[3] = {0, 1, 1};
    if (unsorted) frame[0] = 1, frame[1] = 0;
    std::int64_t particle[3] = {0, 0, 1};
    double xy[3] = {1, 2, 3};
    std::int8_t sp[3] = {0, 0, 1};
    ds(g, "frame", H5T_NATIVE_INT64, frame, 3);
    ds(g, "particle", H5T_NATIVE_INT64, particle, 3);
    if (!drop_x) ds(g, "x", H5T_NATIVE_DOUBLE, xy, 3);
    ds(g, "y", H5T_NATIVE_DOUBLE, xy, short_y ? 2 : 3);
    ds(g, "species", H5T_NATIVE_INT8, sp, 3);
    H5Gclose(g);
    hid_t idx = H5Gcreate2(f, "index", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    std::int64_t off[3] = {0, 1, bad_offsets ? 5 : 3};
    ds(idx, "frame_offsets", H5T_NATIVE_INT64, off, 3);
    H5Gclose(idx);
    hid_t m = H5Gcreate2(f, "meta", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Gclose(m);
    H5Fclose(f);
}
}  // namespace

TEST_CASE("reader validation errors name the file and the field", "[unit]") {
    test::TempDir dir("store_errors");
    const auto p = dir.file("bad.h5");
    raw_file(p, "vibra-trajectories", "1.0", false, false, false, false);
    REQUIRE_NOTHROW(store::TrajectoryReader(p).read_all());
    raw_file(p, "vibra-trajectories", "1.0", true, false, false, false);
    REQUIRE_THROWS_WITH(store::TrajectoryReader(p), Catch::Contains("bad.h5") &&
                                                        Catch::Contains("/trajectories/x") &&
                                                        Catch::Contains("missing"));
    raw_file(p, "vibra-trajectories", "1.0", false, true, false, false);
    REQUIRE_THROWS_WITH(store::TrajectoryReader(p),
                        Catch::Contains("/trajectories/y") && Catch::Contains("rows"));
    raw_file(p, "vibra-trajectories", "2.0", false, false, false, false);
    REQUIRE_THROWS_WITH(store::TrajectoryReader(p), Catch::Contains("newer"));
    raw_file(p, "something-else", "1.0", false, false, false, false);
    REQUIRE_THROWS_WITH(store::TrajectoryReader(p), Catch::Contains("/schema"));
    raw_file(p, "vibra-trajectories", "1.0", false, false, true, false);
    REQUIRE_THROWS_WITH(store::TrajectoryReader(p), Catch::Contains("frame_offsets"));
    raw_file(p, "vibra-trajectories", "1.0", false, false, false, true);
    REQUIRE_THROWS_WITH(store::TrajectoryReader(p).read_all(), Catch::Contains("not sorted"));
    test::write_text(dir.file("text.h5"), "not hdf5");
    REQUIRE_THROWS_WITH(store::TrajectoryReader(dir.file("text.h5")), Catch::Contains("not an HDF5 file"));
    REQUIRE_THROWS_AS(store::TrajectoryReader(dir.file("absent.h5")), IoError);
}

TEST_CASE("writing into a missing directory fails up front, naming the path", "[unit]") {
    REQUIRE_THROWS_WITH(store::TrajectoryWriter("/nonexistent-dir/x.h5", Metadata{}, {}),
                        Catch::Contains("/nonexistent-dir/x.h5"));
}

TEST_CASE("empty array attributes and results round trip", "[unit]") {
    test::TempDir dir("store_empty_attrs");
    auto t = sample(false, false);
    t.meta.species_names = {};
    store::write_trajectory(dir.file("e.h5"), t);
    REQUIRE(store::TrajectoryReader(dir.file("e.h5")).meta().species_names.empty());
}

// The columns' chunks are shuffled and deflated on several threads and stored whole
// (H5Dwrite_chunk): HDF5's own filter pipeline must read them back exactly, over several full
// chunks and a partial edge chunk, and the datasets must declare shuffle + deflate so that any
// reader (h5py) decodes them.
TEST_CASE("many-chunk columns written by the threaded packer read back exactly through HDF5's filters",
          "[unit]") {
    test::TempDir dir("store_packed");
    Trajectory t;
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<double> u(0, 1024);
    const std::int64_t n_frames = 100,
                       per_frame = 3001;  // 300,100 rows: x is 9 full 256 KiB chunks + an edge chunk
    for (std::int64_t f = 0; f < n_frames; ++f)
        for (std::int64_t p = 0; p < per_frame; ++p) {
            t.rows.push(f, p, u(rng), u(rng), static_cast<std::int8_t>(p % 2));
            t.rows.radius.push_back(static_cast<float>(u(rng) / 100));
        }
    t.index = build_frame_index(t.rows, 0, n_frames);
    t.meta.length_unit = "px";
    {
        store::TrajectoryWriter w(dir.file("big.h5"), t.meta, store::ColumnSet::of(t.rows));
        // Uneven blocks, so that chunks fill across appends.
        std::size_t at = 0;
        for (std::int64_t f0 = 0; f0 < n_frames;) {
            const std::int64_t nb = std::min<std::int64_t>(n_frames - f0, 1 + f0 % 7);
            const auto end = static_cast<std::size_t>(t.index.end(f0 + nb - 1));
            w.append(t.rows.slice(at, end), nb);
            at = end, f0 += nb;
        }
        w.commit();
    }
    store::TrajectoryReader r(dir.file("big.h5"));
    const auto back = r.read_all();
    REQUIRE(back.rows.size() == t.rows.size());
    require_same_rows(back.rows, t.rows);
    // The filters a reader sees: shuffle, then deflate.
    const hid_t f = H5Fopen(dir.file("big.h5").c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    const hid_t d = H5Dopen2(f, "/trajectories/x", H5P_DEFAULT);
    const hid_t dcpl = H5Dget_create_plist(d);
    REQUIRE(H5Pget_nfilters(dcpl) == 2);
    unsigned flags = 0;
    std::size_t nelem = 0;
    REQUIRE(H5Pget_filter2(dcpl, 0, &flags, &nelem, nullptr, 0, nullptr, nullptr) == H5Z_FILTER_SHUFFLE);
    nelem = 0;  // in: room in cd_values (none asked for)
    REQUIRE(H5Pget_filter2(dcpl, 1, &flags, &nelem, nullptr, 0, nullptr, nullptr) == H5Z_FILTER_DEFLATE);
    hsize_t stored = H5Dget_storage_size(d);
    REQUIRE(stored > 0);
    REQUIRE(stored < t.rows.size() * sizeof(double));  // deflated (the top bytes of the x values repeat)
    H5Pclose(dcpl);
    H5Dclose(d);
    H5Fclose(f);
}

// A tracker streams its rows while the video runs and learns the species (a vote over each
// whole trajectory) and the camera time stamps only at the end: the species columns are
// deferred and the per-frame columns set before commit. The file must read back exactly as if
// it had been written in one go, over many chunks (the species columns then start later than
// the others).
TEST_CASE("deferred species and late per-frame columns read back as written in one go", "[unit]") {
    test::TempDir dir("store_deferred");
    Trajectory t;
    std::mt19937_64 rng(9);
    std::uniform_real_distribution<double> u(0, 1024);
    const std::int64_t n_frames = 40, per_frame = 2001;  // 80,040 rows: several 256 KiB chunks per column
    for (std::int64_t f = 0; f < n_frames; ++f)
        for (std::int64_t p = 0; p < per_frame; ++p) {
            t.rows.push(f, p, u(rng), u(rng), static_cast<std::int8_t>((p * 7 + f) % 3 == 0));
            t.rows.radius.push_back(static_cast<float>(u(rng) / 100));
            t.rows.quality.push_back(static_cast<float>(u(rng) / 1024));
            t.rows.species_confidence.push_back(static_cast<float>(0.5 + u(rng) / 2048));
        }
    t.index = build_frame_index(t.rows, 0, n_frames);
    for (std::int64_t f = 0; f < n_frames; ++f) t.frames.time_s.push_back(0.002 * static_cast<double>(f));
    t.meta.length_unit = "px";
    {
        store::TrajectoryWriter w(dir.file("d.h5"), Metadata{}, store::ColumnSet::of(t.rows));
        w.meta().length_unit = "px";
        w.defer_species();
        std::size_t at = 0;
        for (std::int64_t f0 = 0; f0 < n_frames;) {
            const std::int64_t nb = std::min<std::int64_t>(n_frames - f0, 1 + f0 % 5);
            const auto end = static_cast<std::size_t>(t.index.end(f0 + nb - 1));
            auto block = t.rows.slice(at, end);
            for (auto& s : block.species) s = 7;  // the rows' own species are not what the file keeps
            for (auto& c : block.species_confidence) c = -1;
            w.append(block, nb);
            at = end, f0 += nb;
        }
        REQUIRE_THROWS_AS(w.defer_species(), ParameterError);  // too late: rows were appended
        // species in uneven pieces
        for (std::size_t a = 0; a < t.rows.size();) {
            const std::size_t b = std::min(t.rows.size(), a + 1 + (a * 13) % 30000);
            w.append_species({t.rows.species.begin() + static_cast<std::ptrdiff_t>(a),
                              t.rows.species.begin() + static_cast<std::ptrdiff_t>(b)},
                             {t.rows.species_confidence.begin() + static_cast<std::ptrdiff_t>(a),
                              t.rows.species_confidence.begin() + static_cast<std::ptrdiff_t>(b)});
            a = b;
        }
        REQUIRE_THROWS_AS(w.append_species({1}, {0.5f}), ParameterError);  // more species than rows
        w.set_frame_columns(t.frames);
        w.commit();
    }
    store::TrajectoryReader r(dir.file("d.h5"));
    const auto back = r.read_all();
    require_same_rows(back.rows, t.rows);
    REQUIRE(back.frames.time_s == t.frames.time_s);
    REQUIRE(back.meta.length_unit == "px");

    // Errors: species missing at commit, a per-frame column of the wrong length, species
    // without deferral, confidences of the wrong length; none leaves a file.
    const auto few = t.rows.slice(0, static_cast<std::size_t>(t.index.end(1)));
    {
        store::TrajectoryWriter w(dir.file("e1.h5"), t.meta, store::ColumnSet::of(few));
        w.defer_species();
        w.append(few, 2);
        w.append_species({few.species.begin(), few.species.begin() + 10},
                         {few.species_confidence.begin(), few.species_confidence.begin() + 10});
        try {
            w.commit();
            FAIL("commit with species missing");
        } catch (const ParameterError& e) {
            REQUIRE(std::string(e.what()).find("species of 10 rows given") != std::string::npos);
        }
    }
    REQUIRE_FALSE(fs::exists(dir.file("e1.h5")));
    {
        store::TrajectoryWriter w(dir.file("e2.h5"), t.meta, store::ColumnSet::of(few));
        w.append(few, 2);
        REQUIRE_THROWS_AS(w.append_species(few.species, few.species_confidence),
                          ParameterError);  // not deferred
        FrameColumns bad;
        bad.time_s = {0.0, 0.1, 0.2};
        w.set_frame_columns(bad);
        try {
            w.commit();
            FAIL("commit with a per-frame column of the wrong length");
        } catch (const ParameterError& e) {
            REQUIRE(std::string(e.what()).find("frame_time has 3 values for 2 frames") != std::string::npos);
        }
    }
    REQUIRE_FALSE(fs::exists(dir.file("e2.h5")));
    {
        store::TrajectoryWriter w(dir.file("e3.h5"), t.meta, store::ColumnSet::of(few));
        w.defer_species();
        w.append(few, 2);
        REQUIRE_THROWS_AS(w.append_species(few.species, {0.5f}), ParameterError);
        REQUIRE_THROWS_AS(w.append_species(few.species, {}),
                          ParameterError);  // the file has species_confidence
    }
    REQUIRE_FALSE(fs::exists(dir.file("e3.h5")));
}
