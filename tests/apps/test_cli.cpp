// SPDX-License-Identifier: GPL-3.0-or-later
// The `vibra` CLI end to end: import/export/info, exit codes, bad input, bounded memory.
#include <catch2/catch.hpp>

#include <filesystem>
#include <sstream>

#include "test_support.hpp"
#include "vibra/store/trajectory_file.hpp"

using namespace vibra;
namespace fs = std::filesystem;

namespace {
const std::string kDump = std::string(VIBRA_SOURCE_DIR) + "/data/lammps/tiny_lj2d.dump";
std::string q(const std::string& s) { return "'" + s + "'"; }
}  // namespace

TEST_CASE("help, version and usage errors", "[integration]") {
    REQUIRE(test::run_vibra("--help").exit_code == 0);
    const auto v = test::run_vibra("--version");
    REQUIRE(v.exit_code == 0);
    REQUIRE_THAT(v.output, Catch::Contains("vibra 0."));
    REQUIRE(test::run_vibra("").exit_code == 2);
    REQUIRE(test::run_vibra("import").exit_code == 2);
    REQUIRE(test::run_vibra("no-such-command").exit_code == 2);
    const auto bad_map = test::run_vibra("import " + q(kDump) + " -o /tmp/x.h5 --species-map 1-small");
    REQUIRE(bad_map.exit_code == 2);
    REQUIRE_THAT(bad_map.output, Catch::Contains("--species-map"));
}

TEST_CASE("the vibra program does not load OpenCV's codecs at start-up", "[integration]") {
    // imgcodecs and videoio pull in ≈ 190 more shared libraries (≈ 0.17 s before main()); vibra loads
    // them as a module only when a command needs them (tracking/src/detail/opencv_codecs.hpp).
    const auto deps = test::run("ldd " + q(VIBRA_CLI));
    INFO(deps.output);
    REQUIRE(deps.exit_code == 0);
    REQUIRE_THAT(deps.output, Catch::Contains("libopencv_core"));  // the listing is real
    // HDF5 linked statically (VIBRA_STATIC_HDF5, the default where the archive exists) must not
    // bring libcurl back: it is what the static link is for (store/CMakeLists.txt).
    if (deps.output.find("libhdf5") == std::string::npos)
        REQUIRE_THAT(deps.output, !Catch::Contains("libcurl"));
    REQUIRE_THAT(deps.output, !Catch::Contains("libopencv_imgcodecs"));
    REQUIRE_THAT(deps.output, !Catch::Contains("libopencv_videoio"));
    REQUIRE_THAT(deps.output, !Catch::Contains("libavcodec"));

    // a command that needs them and cannot load them: exit 1, the module named, no output
    test::TempDir dir("cli_codecs");
    const auto png = dir.file("png");
    REQUIRE(test::run_vibra("synth -o " + q(png) + " --format png --frames 2 --width 64 --height 64 -q")
                .exit_code == 0);
    REQUIRE(fs::exists(png + "/frame_000001.png"));
    const auto out = dir.file("t.h5");
    const auto r = test::run("VIBRA_OPENCV_CODECS=" + q(dir.file("missing.so")) + " '" + VIBRA_CLI +
                             "' track " + q(png) + " -o " + q(out) + " --radius 6");
    INFO(r.output);
    REQUIRE(r.exit_code == 1);
    REQUIRE_THAT(r.output,
                 Catch::Contains("libvibra_opencv_codecs.so") && Catch::Contains("missing.so: no such file"));
    REQUIRE_FALSE(fs::exists(out));
    REQUIRE(test::run_vibra("track " + q(png) + " -o " + q(out) + " --radius 6 -q").exit_code ==
            0);  // with it: fine
    REQUIRE(fs::exists(out));
}

TEST_CASE("a dump written by LAMMPS imports — info summarises it", "[integration]") {
    test::TempDir dir("cli_lammps");
    const auto out = dir.file("lj.h5");
    const auto r =
        test::run_vibra("import " + q(kDump) + " -o " + q(out) + " --diameter small=1.0,large=1.4 --dt 0.1");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    store::TrajectoryReader rd(out);
    REQUIRE(rd.n_frames() == 5);
    REQUIRE(rd.n_rows() == 40);
    REQUIRE(rd.frame_columns().timestep == std::vector<std::int64_t>{0, 20, 40, 60, 80});
    REQUIRE(rd.meta().geometry == Geometry::periodic(0, 0, 5.6568542494923806, 2.8284271247461903));
    const auto t = rd.read_frames(0, 1);
    REQUIRE(t.rows.x[1] == 1.41421);  // atom 2: "2 1 1.41421 0 0.825468 -1.77283"
    REQUIRE(t.rows.vy[1] == -1.77283);
    REQUIRE(t.rows.species[2] == kSpeciesLarge);  // atom 3 has type 2
    REQUIRE(rd.meta().source.checksum.rfind("sha256:", 0) == 0);

    const auto info = test::run_vibra("info " + q(out));
    INFO(info.output);
    REQUIRE(info.exit_code == 0);
    REQUIRE_THAT(info.output, Catch::Contains("frames:      5 (frame interval 0.1 tau)"));
    REQUIRE_THAT(info.output, Catch::Contains("rows:        40 (0 unlinked)"));
    REQUIRE_THAT(info.output, Catch::Contains("particles:   8"));
    // types in the dump: 1 1 2 2 2 1 2 2 → 3 small, 5 large particles
    REQUIRE_THAT(info.output, Catch::Contains("small 15 rows / 3 particles, large 25 rows / 5 particles"));
    REQUIRE_THAT(info.output, Catch::Contains("track length (detections): min 5, median 5, max 5"));
    REQUIRE_THAT(info.output, Catch::Contains("periodic_box"));
    REQUIRE_THAT(info.output, Catch::Contains("length sigma, time tau"));
}

TEST_CASE("export writes CSV that imports back to the same file content", "[integration]") {
    test::TempDir dir("cli_export");
    REQUIRE(test::run_vibra("import " + q(kDump) + " -o " + q(dir.file("a.h5"))).exit_code == 0);
    REQUIRE(test::run_vibra("export " + q(dir.file("a.h5")) + " -o " + q(dir.file("a.csv"))).exit_code == 0);
    REQUIRE(test::run_vibra("import " + q(dir.file("a.csv")) + " -o " + q(dir.file("b.h5"))).exit_code == 0);
    const auto a = store::TrajectoryReader(dir.file("a.h5")).read_all();
    const auto b = store::TrajectoryReader(dir.file("b.h5")).read_all();
    REQUIRE(a.rows.x == b.rows.x);
    REQUIRE(a.rows.y == b.rows.y);
    REQUIRE(a.rows.vx == b.rows.vx);
    REQUIRE(a.rows.particle == b.rows.particle);
    REQUIRE(a.rows.species == b.rows.species);
    REQUIRE(test::read_text(dir.file("a.csv")).rfind("frame,particle,x,y,species,vx,vy\n", 0) == 0);
}

TEST_CASE("bad input: exit 1, a message naming the file and line, and no output file", "[integration]") {
    test::TempDir dir("cli_bad");
    const std::string good_frame =
        "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n2\nITEM: BOX BOUNDS pp pp pp\n0 4\n0 3\n-1 1\nITEM: ATOMS "
        "id type x y\n";
    struct Case {
        std::string name, content, expect;
        std::string extra = "";
    };
    const std::vector<Case> cases{
        {"truncated.dump", good_frame + "1 1 1 1\n", "line 10: truncated dump"},
        {"nonnumeric.dump", good_frame + "1 1 1 1\n2 1 abc 1\n", "line 11: field 'x': 'abc' is not a number"},
        {"missingcol.dump",
         "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n1\nITEM: BOX BOUNDS pp pp pp\n0 4\n0 3\n-1 1\nITEM: "
         "ATOMS id x y\n1 1 1\n",
         "line 9: ITEM: ATOMS has no 'type' column"},
        {"duplicate.dump", good_frame + "1 1 1 1\n1 1 2 2\n",
         "line 9: frame 0 (TIMESTEP 0) has atom id 1 twice"},
        {"empty.dump", "", "empty file"},
        {"unmapped.dump", good_frame + "1 1 1 1\n2 7 2 2\n", "line 11: atom type 7"},
        {"missing.csv", "frame,particle,x\n0,1,2\n", "line 1: header has no 'y' column"},
        {"dup.csv", "frame,particle,x,y\n0,1,2,3\n0,1,4,5\n", "frame 0: duplicate particle 1"},
        {"nonnumeric.csv", "frame,particle,x,y\n0,1,2,3\n0,2,x,5\n",
         "line 3: field 'x': 'x' is not a number"},
        {"empty.csv", "", "empty file"},
    };
    for (const auto& c : cases) {
        const auto in = dir.file(c.name);
        test::write_text(in, c.content);
        const auto out = dir.file(c.name + ".h5");
        const auto r = test::run_vibra("import " + q(in) + " -o " + q(out));
        INFO(c.name << ": " << r.output);
        REQUIRE(r.exit_code == 1);
        REQUIRE_THAT(r.output, Catch::Contains(c.name) && Catch::Contains(c.expect));
        REQUIRE_FALSE(fs::exists(out));
        REQUIRE_FALSE(fs::exists(out + ".partial"));
    }
    // unwritable output path
    const auto r = test::run_vibra("import " + q(kDump) + " -o /nonexistent-dir/out.h5");
    REQUIRE(r.exit_code == 1);
    REQUIRE_THAT(r.output, Catch::Contains("/nonexistent-dir/out.h5"));
    // info / export on something that is not a vibra file
    test::write_text(dir.file("junk.h5"), "junk");
    const auto i = test::run_vibra("info " + q(dir.file("junk.h5")));
    REQUIRE(i.exit_code == 1);
    REQUIRE_THAT(i.output, Catch::Contains("junk.h5"));
    const auto e = test::run_vibra("export " + q(dir.file("junk.h5")) + " -o " + q(dir.file("junk.csv")));
    REQUIRE(e.exit_code == 1);
    REQUIRE_FALSE(fs::exists(dir.file("junk.csv")));
}

TEST_CASE("import streams: a 10x larger dump does not take 10x the memory", "[integration]") {
    test::TempDir dir("cli_memory");
    auto write_dump = [&](const std::string& path, int frames, int atoms) {
        std::ostringstream s;
        for (int f = 0; f < frames; ++f) {
            s << "ITEM: TIMESTEP\n"
              << f << "\nITEM: NUMBER OF ATOMS\n"
              << atoms
              << "\nITEM: BOX BOUNDS pp pp pp\n0 100\n0 100\n-1 1\nITEM: ATOMS id type xu yu vx vy\n";
            for (int a = 1; a <= atoms; ++a)
                s << a << " " << 1 + a % 2 << " " << (a % 100) + 0.001 * f << " " << (a / 100) + 0.5
                  << " 0.25 -0.5\n";
        }
        test::write_text(path, s.str());
    };
    write_dump(dir.file("small.dump"), 60, 1000);   //  60k rows
    write_dump(dir.file("large.dump"), 600, 1000);  // 600k rows
    long rss_small = 0, rss_large = 0;
    const std::string opts = " --block-rows 20000 -q";
    REQUIRE(test::run_measured(std::string("'") + VIBRA_CLI + "' import " + q(dir.file("small.dump")) +
                                   " -o " + q(dir.file("small.h5")) + opts,
                               rss_small) == 0);
    REQUIRE(test::run_measured(std::string("'") + VIBRA_CLI + "' import " + q(dir.file("large.dump")) +
                                   " -o " + q(dir.file("large.h5")) + opts,
                               rss_large) == 0);
    REQUIRE(store::TrajectoryReader(dir.file("large.h5")).n_rows() == 600000);
    WARN("peak RSS: 60k rows " << rss_small << " kB, 600k rows " << rss_large << " kB, ratio "
                               << double(rss_large) / double(rss_small));
    // 10x the input; holding it all would add ~30 MB (≥ 52 bytes per row).
    REQUIRE(double(rss_large) < 1.3 * double(rss_small));
}

TEST_CASE("a TOML config file sets subcommand options by their long names", "[integration]") {
    test::TempDir dir("cli_config");
    test::write_text(dir.file("cfg.toml"),
                     "quiet = true\n[import]\ndt = 0.25\ndiameter = \"small=2.0,large=2.8\"\n");
    const auto r = test::run_vibra("--config " + q(dir.file("cfg.toml")) + " import " + q(kDump) + " -o " +
                                   q(dir.file("c.h5")));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    REQUIRE(r.output.empty());  // quiet from the config
    store::TrajectoryReader rd(dir.file("c.h5"));
    REQUIRE(rd.meta().frame_interval == 0.25);
    REQUIRE(rd.meta().species_diameters == std::vector<double>{2.0, 2.8});
}

TEST_CASE("a flag value out of range in a config file or on the command line is a usage error, not a crash",
          "[integration]") {
    // Found by fuzz_config_toml (regress-flag-out-of-range): CLI11 2.1's std::stoll escaped as "stoll", exit 1.
    test::TempDir dir("cli_config_range");
    test::write_text(dir.file("v.toml"), "verbose = 55555555555555555555555555\n");
    auto r = test::run_vibra("--config " + q(dir.file("v.toml")) + " import " + q(kDump) + " -o " +
                             q(dir.file("c.h5")));
    INFO(r.output);
    REQUIRE(r.exit_code == 2);
    REQUIRE_THAT(r.output,
                 Catch::Contains("a flag's value is a number out of range (on the command line or in "
                                 "--config " +
                                 dir.file("v.toml") + ")"));
    REQUIRE_FALSE(fs::exists(dir.file("c.h5")));
    r = test::run_vibra("import " + q(kDump) + " -o " + q(dir.file("c.h5")) +
                        " --verbose=99999999999999999999");
    INFO(r.output);
    REQUIRE(r.exit_code == 2);
    REQUIRE_THAT(r.output, Catch::Contains("a flag's value is a number out of range (on the command line)"));
}

TEST_CASE("simulate writes a periodic bi-disperse trajectory with velocities", "[integration]") {
    test::TempDir dir("cli_simulate");
    const auto r =
        test::run_vibra("simulate -o " + q(dir.file("s.h5")) +
                        " --n-small 30 --n-large 20 --frames 12 --equilibrate 5 --steps-per-frame 5 -q");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    store::TrajectoryReader rd(dir.file("s.h5"));
    REQUIRE(rd.n_frames() == 12);
    REQUIRE(rd.n_rows() == 12 * 50);
    REQUIRE(rd.columns().velocity);
    REQUIRE(rd.meta().geometry.periodic());
    REQUIRE_THAT(rd.meta().frame_interval, Catch::Matchers::WithinRel(5e-3, 1e-12));
    const auto t = rd.read_frames(0, 1);
    REQUIRE(std::count(t.rows.species.begin(), t.rows.species.end(), kSpeciesLarge) == 20);
    REQUIRE(test::run_vibra("simulate -o " + q(dir.file("bad.h5")) + " --dt -1").exit_code == 2);
    REQUIRE_FALSE(fs::exists(dir.file("bad.h5")));
}

TEST_CASE("simulate -> export -> import restores metadata and columns through the sidecar", "[integration]") {
    test::TempDir dir("cli_csv_metadata");
    for (const std::string walls : {"", " --walls"}) {
        CAPTURE(walls);
        REQUIRE(test::run_vibra("simulate -o " + q(dir.file("s.h5")) +
                                " --n-small 12 --n-large 8 --frames 6" +
                                " --equilibrate 2 --steps-per-frame 3 --diameter-large 1.3 -q" + walls)
                    .exit_code == 0);
        const auto e = test::run_vibra("export " + q(dir.file("s.h5")) + " -o " + q(dir.file("s.csv")));
        REQUIRE(e.exit_code == 0);
        REQUIRE_THAT(e.output, Catch::Contains("s.csv.meta.json"));
        const auto i = test::run_vibra("import " + q(dir.file("s.csv")) + " -o " + q(dir.file("t.h5")));
        REQUIRE(i.exit_code == 0);
        REQUIRE_THAT(i.output, Catch::Contains("(metadata from " + dir.file("s.csv.meta.json") + ")"));
        const store::TrajectoryReader rs(dir.file("s.h5")), rt(dir.file("t.h5"));
        const auto a = rs.read_all(), b = rt.read_all();
        REQUIRE(a.rows.x == b.rows.x);
        REQUIRE(a.rows.y == b.rows.y);
        REQUIRE(a.rows.vx == b.rows.vx);
        REQUIRE(a.rows.vy == b.rows.vy);
        REQUIRE(a.rows.particle == b.rows.particle);
        REQUIRE(a.rows.species == b.rows.species);
        REQUIRE(a.index.offsets == b.index.offsets);
        REQUIRE(a.frames == b.frames);
        REQUIRE(rt.columns() == rs.columns());
        Metadata expect = a.meta;  // all of it but the provenance, which now names the CSV
        expect.source = b.meta.source;
        expect.user = b.meta.user;
        REQUIRE(b.meta == expect);
        REQUIRE(b.meta.species_diameters == std::vector<double>{1.0, 1.3});
        REQUIRE(b.meta.geometry.kind ==
                (walls.empty() ? GeometryKind::periodic_box : GeometryKind::window_rect));
        REQUIRE(b.meta.user.at("origin_source_parameters") == a.meta.source.parameters);

        // --no-metadata: the CSV alone, with the CSV defaults (px, frame)
        REQUIRE(test::run_vibra("import --no-metadata " + q(dir.file("s.csv")) + " -o " +
                                q(dir.file("u.h5")) + " -q")
                    .exit_code == 0);
        const store::TrajectoryReader ru(dir.file("u.h5"));
        REQUIRE(ru.meta().length_unit == "px");
        REQUIRE(ru.meta().time_unit == "frame");
        REQUIRE(ru.meta().species_diameters.empty());
    }
    // A broken sidecar: exit 1, the message names it, no output.
    test::write_text(dir.file("s.csv.meta.json"), "{\"schema\": \"vibra-csv-metadata\",");
    const auto bad = test::run_vibra("import " + q(dir.file("s.csv")) + " -o " + q(dir.file("v.h5")));
    REQUIRE(bad.exit_code == 1);
    REQUIRE_THAT(bad.output, Catch::Contains("s.csv.meta.json: line 1"));
    REQUIRE_FALSE(fs::exists(dir.file("v.h5")));
}

TEST_CASE("synth sizes are checked at parse time, naming the flag", "[integration]") {
    test::TempDir dir("cli_synth_range");
    for (const char* flag : {"--frames", "--width", "--height"}) {
        const auto r = test::run_vibra("synth -o " + q(dir.file("x.avi")) + " " + flag + " 0");
        INFO(r.output);
        CHECK(r.exit_code == 2);
        CHECK_THAT(r.output, Catch::Contains(std::string(flag) + ": "));
        CHECK_FALSE(std::filesystem::exists(dir.file("x.avi")));
    }
}
