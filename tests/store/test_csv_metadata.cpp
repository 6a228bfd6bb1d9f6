// SPDX-License-Identifier: GPL-3.0-or-later
// The CSV metadata sidecar: HDF5 → export (CSV + <csv>.meta.json) → import restores the metadata
// (units, frame interval, species names and diameters, geometry, drive, user attributes), every
// column and the per-frame columns; flags override the sidecar; a broken sidecar is an error
// naming the file and the key. The JSON reader on its own.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <limits>

#include "../../store/src/detail/json.hpp"
#include "test_support.hpp"
#include "vibra/core/error.hpp"
#include "vibra/store/text_formats.hpp"
#include "vibra/store/trajectory_file.hpp"

using namespace vibra;
namespace fs = std::filesystem;

namespace {

// 6 frames (frame 2 empty, frames 4 and 5 trailing empty), all optional columns, values with
// many digits, and metadata in every field.
Trajectory full_trajectory(const Geometry& geometry) {
    Trajectory t;
    Metadata& m = t.meta;
    m.length_unit = "mm";
    m.time_unit = "s";
    m.frame_interval = 1.0 / 2000;
    m.px_per_mm = 10.25;
    m.image_width = 640;
    m.image_height = 480;
    m.coordinate_convention = "image";
    m.geometry = geometry;
    m.species_names = {"small \"A\"", "large β"};
    m.species_diameters = {4.0, 5.6};
    m.drive_frequency_hz = 50;
    m.drive_gamma = 2.5;
    m.source = {"run 7.cine", "sha256:00ff", "0.0.9", "vibra track run 7.cine --fps 2000"};
    m.user = {{"operator", "M. Curie"}, {"note", "line 1\nline 2\ttab"}};
    m.incomplete = true;
    const std::int64_t per_frame[] = {3, 2, 0, 3, 0, 0};
    for (std::int64_t f = 0; f < 6; ++f)
        for (std::int64_t p = 0; p < per_frame[f]; ++p) {
            t.rows.push(f, p == 2 ? kUnlinked : p, 0.1 * (f + 1) + 1.0 / 3 * p, 7.0 / 3 - 1e-9 * f,
                        static_cast<std::int8_t>(p - 1));
            t.rows.vx.push_back(-1.0 / 7 * f);
            t.rows.vy.push_back(1e-300 * p);
            t.rows.radius.push_back(2.0f + 0.1f * static_cast<float>(p));
            t.rows.brightness.push_back(1.0f / 3);
            t.rows.quality.push_back(0.7f);
            t.rows.species_confidence.push_back(0.9f - 0.01f * static_cast<float>(f));
        }
    t.rows.sort_rows();
    t.index = build_frame_index(t.rows, 0, 6);
    t.frames.time_s = {0.0, 0.0005, 0.0010, 0.0025, 0.0030, 0.0035};  // a gap after frame 2
    t.frames.timestep = {100, 101, 102, 105, 106, 107};
    t.frames.image_number = {-5417, -5416, -5415, -5412, -5411, -5410};
    return t;
}

void require_same_rows(const TrajectoryTable& a, const TrajectoryTable& b) {
    REQUIRE(a.frame == b.frame);
    REQUIRE(a.particle == b.particle);
    REQUIRE(a.x == b.x);  // exact: shortest round-trip representation
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

TEST_CASE("export -> import restores metadata, every column and the per-frame columns", "[unit]") {
    test::TempDir dir("csv_meta_roundtrip");
    for (const auto& geometry : {Geometry::circle(320, 240, 200.5), Geometry::rect(1, 2, 600, 470),
                                 Geometry::periodic(-2, 1, 8, 9), Geometry{}}) {
        CAPTURE(to_string(geometry.kind));
        const Trajectory a = full_trajectory(geometry);
        store::write_trajectory(dir.file("a.h5"), a);
        store::export_csv(dir.file("a.h5"), dir.file("a.csv"));
        REQUIRE(fs::exists(dir.file("a.csv.meta.json")));
        REQUIRE_FALSE(fs::exists(dir.file("a.csv.meta.json.partial")));
        const auto s = store::import_csv(dir.file("a.csv"), dir.file("b.h5"), {});
        REQUIRE(s.metadata_file == dir.file("a.csv.meta.json"));
        REQUIRE(s.frames == 6);

        const store::TrajectoryReader rb(dir.file("b.h5"));
        REQUIRE(rb.columns() == store::ColumnSet::of(a.rows));
        const Trajectory b = rb.read_all();
        require_same_rows(a.rows, b.rows);
        REQUIRE(b.index.offsets == a.index.offsets);  // the empty and trailing empty frames too
        REQUIRE(b.frames == a.frames);

        // The new file's source is the CSV; the original provenance moves to origin_source_*.
        REQUIRE(b.meta.source.file == dir.file("a.csv"));
        REQUIRE(b.meta.source.checksum.rfind("sha256:", 0) == 0);
        REQUIRE(b.meta.user.at("origin_source_file") == "run 7.cine");
        REQUIRE(b.meta.user.at("origin_source_checksum") == "sha256:00ff");
        REQUIRE(b.meta.user.at("origin_source_vibra_version") == "0.0.9");
        REQUIRE(b.meta.user.at("origin_source_parameters") == "vibra track run 7.cine --fps 2000");
        Metadata expect = a.meta;
        expect.source = b.meta.source;
        expect.user = b.meta.user;
        REQUIRE(b.meta.user.at("operator") == "M. Curie");
        REQUIRE(b.meta.user.at("note") == "line 1\nline 2\ttab");
        REQUIRE(b.meta.user.size() == 6);
        REQUIRE(b.meta ==
                expect);  // units, interval, scale, image size, geometry, species, drive, incomplete
    }
}

TEST_CASE("a simulation's file (no optional columns, no per-frame columns) round-trips too", "[unit]") {
    test::TempDir dir("csv_meta_sim");
    Trajectory a;
    a.meta.length_unit = "sigma";
    a.meta.time_unit = "tau";
    a.meta.frame_interval = 0.01;
    a.meta.coordinate_convention = "simulation";
    a.meta.geometry = Geometry::periodic(0, 0, 20, 20);
    a.meta.species_diameters = {1.0, 1.4};
    for (std::int64_t f = 0; f < 3; ++f)
        for (std::int64_t p = 0; p < 4; ++p)
            a.rows.push(f, p, 1.5 * p + 0.01 * f, 2.5 * p, static_cast<std::int8_t>(p % 2));
    a.index = build_frame_index(a.rows, 0, 3);
    store::write_trajectory(dir.file("sim.h5"), a);
    store::export_csv(dir.file("sim.h5"), dir.file("sim.csv"));
    REQUIRE(test::read_text(dir.file("sim.csv")).rfind("frame,particle,x,y,species\n0,0,0,0,0\n", 0) == 0);
    store::import_csv(dir.file("sim.csv"), dir.file("b.h5"), {});
    const Trajectory b = store::TrajectoryReader(dir.file("b.h5")).read_all();
    require_same_rows(a.rows, b.rows);
    REQUIRE(b.frames == FrameColumns{});
    REQUIRE(b.meta.length_unit == "sigma");
    REQUIRE(b.meta.time_unit == "tau");
    REQUIRE(b.meta.frame_interval == 0.01);
    REQUIRE(b.meta.coordinate_convention == "simulation");
    REQUIRE(b.meta.geometry == Geometry::periodic(0, 0, 20, 20));
    REQUIRE(b.meta.species_diameters == std::vector<double>{1.0, 1.4});
}

TEST_CASE("import options override the sidecar, and use_metadata = false ignores it", "[unit]") {
    test::TempDir dir("csv_meta_override");
    store::write_trajectory(dir.file("a.h5"), full_trajectory(Geometry::circle(320, 240, 200)));
    store::export_csv(dir.file("a.h5"), dir.file("a.csv"));
    store::ImportOptions opt;
    opt.dt = 0.25;
    opt.time_unit = "ms";
    opt.diameters = {1, 2};
    store::import_csv(dir.file("a.csv"), dir.file("b.h5"), opt);
    const auto mb = store::TrajectoryReader(dir.file("b.h5")).meta();
    REQUIRE(mb.frame_interval == 0.25);
    REQUIRE(mb.time_unit == "ms");
    REQUIRE(mb.species_diameters == std::vector<double>{1, 2});
    REQUIRE(mb.length_unit == "mm");  // not overridden: from the sidecar
    REQUIRE(mb.geometry == Geometry::circle(320, 240, 200));

    store::ImportOptions off;
    off.use_metadata = false;
    const auto s = store::import_csv(dir.file("a.csv"), dir.file("c.h5"), off);
    REQUIRE(s.metadata_file.empty());
    REQUIRE(s.frames == 4);  // the trailing empty frames are not in the CSV
    const store::TrajectoryReader rc(dir.file("c.h5"));
    REQUIRE(rc.meta().length_unit == "px");
    REQUIRE(rc.meta().time_unit == "frame");
    REQUIRE(rc.meta().geometry.kind == GeometryKind::unbounded);
    REQUIRE(rc.frame_columns() == FrameColumns{});

    // export without the sidecar
    store::export_csv(dir.file("a.h5"), dir.file("plain.csv"), false, false);
    REQUIRE(fs::exists(dir.file("plain.csv")));
    REQUIRE_FALSE(fs::exists(dir.file("plain.csv.meta.json")));
}

TEST_CASE("a broken sidecar is an error naming the file and the key, with no output file", "[unit]") {
    test::TempDir dir("csv_meta_bad");
    store::write_trajectory(dir.file("a.h5"), full_trajectory(Geometry::rect(0, 0, 640, 480)));
    store::export_csv(dir.file("a.h5"), dir.file("a.csv"));
    const std::string good = test::read_text(dir.file("a.csv.meta.json"));
    auto replaced = [&](const std::string& from, const std::string& to) {
        CAPTURE(from);
        std::string s = good;
        const auto at = s.find(from);
        REQUIRE(at != std::string::npos);
        return s.replace(at, from.size(), to);
    };
    struct Case {
        std::string text, expect;
    };
    const std::vector<Case> cases{
        {good.substr(0, good.size() / 2), "a.csv.meta.json: line "},
        {replaced("\"frame_interval\": 5e-04", "\"frame_interval\": \"fast\""),
         "field 'meta.frame_interval': expected a number"},
        {replaced("\"frame_interval\": 5e-04", "\"frame_interval\": 0"),
         "field 'meta.frame_interval': must be > 0"},
        {replaced("\"window_rect\"", "\"hexagon\""), "field 'meta.geometry'"},
        {replaced("\"geometry_bounds\": [0, 0, 640, 480]", "\"geometry_bounds\": [0, 0, 640]"),
         "field 'meta.geometry_bounds': needs 4 values"},
        {replaced("\"vibra-csv-metadata\"", "\"something-else\""),
         "field 'schema': not a vibra CSV metadata file"},
        {replaced("\"schema_version\": \"1.0\"", "\"schema_version\": \"2.0\""),
         "field 'schema_version': \"2.0\" is not supported"},
        {replaced("\"timestep\": [100,", "\"timestep\": ["),
         "field 'frames.timestep': 5 values for n_frames = 6"},
        {replaced("\"timestep\": [100,", "\"timestep\": [100.5,"),
         "field 'frames.timestep': expected an array of integers"},
        {replaced("\"n_frames\": 6", "\"n_frames\": 6, \"n_frames\": 7"),
         "member \"n_frames\" appears twice"},
    };
    for (const auto& c : cases) {
        CAPTURE(c.expect);
        test::write_text(dir.file("a.csv.meta.json"), c.text);
        try {
            store::import_csv(dir.file("a.csv"), dir.file("b.h5"), {});
            FAIL("no error");
        } catch (const FormatError& e) {
            REQUIRE_THAT(e.what(), Catch::Contains(c.expect) && Catch::Contains("a.csv.meta.json"));
        }
        REQUIRE_FALSE(fs::exists(dir.file("b.h5")));
    }

    // The CSV was extended after export: its frames no longer match the per-frame columns.
    test::write_text(dir.file("a.csv.meta.json"), good);
    test::write_text(dir.file("a.csv"), test::read_text(dir.file("a.csv")) + "9,0,1,1,0,0,0,2,1,1,1\n");
    REQUIRE_THROWS_WITH(store::import_csv(dir.file("a.csv"), dir.file("b.h5"), {}),
                        Catch::Contains("has rows up to frame 9") && Catch::Contains("--no-metadata"));
    REQUIRE_FALSE(fs::exists(dir.file("b.h5")));
}

TEST_CASE("JSON reader: values, escapes, numbers and errors with line and column", "[unit]") {
    using store::detail::Json;
    using store::detail::parse_json;
    const Json v = parse_json(
        " {\"a\": [1, -2.5e3, 0, true, false, null],\n \"s\": "
        "\"q\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\", \"o\": {}} ",
        "t.json");
    REQUIRE(v.kind == Json::Kind::object);
    const Json& a = *v.find("a");
    REQUIRE(a.array.size() == 6);
    REQUIRE(a.array[0].number == 1);
    REQUIRE(a.array[1].number == -2500);
    REQUIRE(a.array[3].boolean);
    REQUIRE(a.array[4].kind == Json::Kind::boolean);
    REQUIRE_FALSE(a.array[4].boolean);
    REQUIRE(a.array[5].kind == Json::Kind::null);
    REQUIRE(v.find("s")->string == "q\"\\/\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80");
    REQUIRE(v.find("o")->object.empty());
    REQUIRE(v.find("missing") == nullptr);

    std::string out;
    store::detail::append_json_string(out, "q\"\\\n\x01 é");
    REQUIRE(out == "\"q\\\"\\\\\\n\\u0001 é\"");
    REQUIRE(parse_json(out, "t.json").string == "q\"\\\n\x01 é");

    const std::vector<std::pair<std::string, std::string>> bad{
        {"{\"a\": 1,\n \"b\" 2}", "t.json: line 2: column 6: expected ':' after a member name"},
        {"[1, 2", "column 6: expected ']' or ',' in an array"},
        {"[01]", "leading zero"},
        {"[1.]", "no digits after '.'"},
        {"[1e400]", "out of range"},
        {"\"a\nb\"", "control character"},
        {"\"\\x\"", "invalid escape"},
        {"\"\\ud800\"", "lone high surrogate"},
        {"{} x", "unexpected text after the JSON value"},
        {"nul", "invalid value"},
        {std::string(100, '['), "nested deeper than 64"},
        {"", "unexpected end of file"},
    };
    for (const auto& [text, expect] : bad) {
        CAPTURE(text);
        REQUIRE_THROWS_WITH(parse_json(text, "t.json"), Catch::Contains(expect));
    }
}

TEST_CASE("sidecar alone: a missing time stamp is null and reads back as NaN", "[unit]") {
    test::TempDir dir("csv_meta_nan");
    store::CsvMetadata m;
    m.n_frames = 3;
    m.frames.time_s = {0.0, std::numeric_limits<double>::quiet_NaN(), 0.002};
    m.meta.user["empty"] = "";
    store::write_csv_metadata(dir.file("x.csv.meta.json"), m, store::ColumnSet{}, "x.h5");
    REQUIRE_THAT(test::read_text(dir.file("x.csv.meta.json")),
                 Catch::Contains("\"frame_time\": [0, null, 0.002]"));
    const auto r = store::read_csv_metadata(dir.file("x.csv.meta.json"));
    REQUIRE(r.n_frames == 3);
    REQUIRE(r.frames.time_s.size() == 3);
    REQUIRE(r.frames.time_s[0] == 0.0);
    REQUIRE(std::isnan(r.frames.time_s[1]));
    REQUIRE(r.frames.time_s[2] == 0.002);
    REQUIRE(r.meta.user.at("empty").empty());
    REQUIRE(r.meta.species_names == m.meta.species_names);
    REQUIRE_THROWS_WITH(store::read_csv_metadata(dir.file("absent.json")),
                        Catch::Contains("absent.json: cannot open"));
}
