// SPDX-License-Identifier: GPL-3.0-or-later
// LAMMPS dump and CSV import/export: every column style gives the same table; round trips.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>
#include <sstream>

#include "test_support.hpp"
#include "vibra/core/error.hpp"
#include "vibra/store/text_formats.hpp"
#include "vibra/store/trajectory_file.hpp"

using namespace vibra;
namespace fs = std::filesystem;

namespace {

// A small periodic 2-D trajectory whose particles cross the box edges (box [−2, 8) × [1, 9)).
struct Truth {
    double xlo = -2, xhi = 8, ylo = 1, yhi = 9;
    int frames = 5, atoms = 12;
    std::vector<std::vector<double>> xu, yu, vx, vy;  // [frame][atom], atom id = index + 1
    std::vector<int> type;
};

Truth make_truth() {
    Truth t;
    std::mt19937_64 rng(42);
    std::uniform_real_distribution<double> u(0, 1);
    t.type.resize(static_cast<std::size_t>(t.atoms));
    std::vector<double> x(static_cast<std::size_t>(t.atoms)), y(x.size()), vx(x.size()), vy(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
        x[i] = t.xlo + 10 * u(rng), y[i] = t.ylo + 8 * u(rng);
        vx[i] = 6 * (u(rng) - 0.5), vy[i] = 6 * (u(rng) - 0.5);  // fast: several crossings
        t.type[i] = 1 + static_cast<int>(i % 2);
    }
    for (int f = 0; f < t.frames; ++f) {
        t.xu.push_back(x), t.yu.push_back(y), t.vx.push_back(vx), t.vy.push_back(vy);
        for (std::size_t i = 0; i < x.size(); ++i) x[i] += vx[i], y[i] += vy[i];
    }
    return t;
}

enum class Style { unwrapped, wrapped_image, scaled_image, scaled_unwrapped };

std::string dump(const Truth& t, Style style, bool shuffle, bool velocities = true) {
    std::ostringstream s;
    s.precision(17);
    std::mt19937_64 rng(9);
    const double lx = t.xhi - t.xlo, ly = t.yhi - t.ylo;
    for (int f = 0; f < t.frames; ++f) {
        s << "ITEM: TIMESTEP\n" << 100 * f << "\nITEM: NUMBER OF ATOMS\n" << t.atoms << "\n";
        s << "ITEM: BOX BOUNDS pp pp pp\n"
          << t.xlo << " " << t.xhi << "\n"
          << t.ylo << " " << t.yhi << "\n-0.5 0.5\n";
        std::vector<std::string> cols{"id", "type"};
        switch (style) {
            case Style::unwrapped:
                cols.insert(cols.end(), {"xu", "yu"});
                break;
            case Style::wrapped_image:
                cols.insert(cols.end(), {"x", "y", "ix", "iy"});
                break;
            case Style::scaled_image:
                cols.insert(cols.end(), {"xs", "ys", "ix", "iy"});
                break;
            case Style::scaled_unwrapped:
                cols.insert(cols.end(), {"xsu", "ysu"});
                break;
        }
        if (velocities) cols.insert(cols.end(), {"vx", "vy"});
        cols.push_back("z");
        if (shuffle) std::shuffle(cols.begin(), cols.end(), rng);
        s << "ITEM: ATOMS";
        for (auto& c : cols) s << " " << c;
        s << "\n";
        std::vector<int> order(static_cast<std::size_t>(t.atoms));
        for (int i = 0; i < t.atoms; ++i) order[static_cast<std::size_t>(i)] = i;
        if (shuffle) std::shuffle(order.begin(), order.end(), rng);
        for (int i : order) {
            const auto k = static_cast<std::size_t>(i);
            const double xu = t.xu[static_cast<std::size_t>(f)][k], yu = t.yu[static_cast<std::size_t>(f)][k];
            const double ix = std::floor((xu - t.xlo) / lx), iy = std::floor((yu - t.ylo) / ly);
            const double xw = xu - ix * lx, yw = yu - iy * ly;
            std::vector<std::string> vals;
            for (auto& c : cols) {
                std::ostringstream v;
                v.precision(17);
                if (c == "id")
                    v << i + 1;
                else if (c == "type")
                    v << t.type[k];
                else if (c == "xu")
                    v << xu;
                else if (c == "yu")
                    v << yu;
                else if (c == "x")
                    v << xw;
                else if (c == "y")
                    v << yw;
                else if (c == "ix")
                    v << static_cast<long>(ix);
                else if (c == "iy")
                    v << static_cast<long>(iy);
                else if (c == "xs")
                    v << (xw - t.xlo) / lx;
                else if (c == "ys")
                    v << (yw - t.ylo) / ly;
                else if (c == "xsu")
                    v << (xu - t.xlo) / lx;
                else if (c == "ysu")
                    v << (yu - t.ylo) / ly;
                else if (c == "vx")
                    v << t.vx[static_cast<std::size_t>(f)][k];
                else if (c == "vy")
                    v << t.vy[static_cast<std::size_t>(f)][k];
                else if (c == "z")
                    v << 0.0;
                vals.push_back(v.str());
            }
            for (std::size_t c = 0; c < vals.size(); ++c) s << (c ? " " : "") << vals[c];
            s << "\n";
        }
    }
    return s.str();
}

}  // namespace

TEST_CASE("LAMMPS dumps in every position style and column/atom order give the same table", "[unit]") {
    test::TempDir dir("lammps_styles");
    const Truth t = make_truth();
    store::ImportOptions opt;
    opt.diameters = {1.0, 1.4};
    opt.dt = 0.5;
    const std::vector<std::pair<Style, bool>> cases{{Style::unwrapped, false},
                                                    {Style::unwrapped, true},
                                                    {Style::wrapped_image, true},
                                                    {Style::scaled_image, true},
                                                    {Style::scaled_unwrapped, false}};
    for (auto [style, shuffle] : cases) {
        test::write_text(dir.file("d.dump"), dump(t, style, shuffle));
        const auto s = store::import_lammps(dir.file("d.dump"), dir.file("d.h5"), opt);
        REQUIRE(s.frames == t.frames);
        REQUIRE(s.rows == t.frames * t.atoms);
        store::TrajectoryReader r(dir.file("d.h5"));
        const auto tr = r.read_all();
        REQUIRE(r.meta().geometry == Geometry::periodic(t.xlo, t.ylo, t.xhi, t.yhi));
        REQUIRE(r.meta().frame_interval == 0.5);
        REQUIRE(r.meta().time_unit == "tau");
        REQUIRE(r.meta().length_unit == "sigma");
        REQUIRE(r.meta().species_diameters == std::vector<double>{1.0, 1.4});
        REQUIRE(r.frame_columns().timestep == std::vector<std::int64_t>{0, 100, 200, 300, 400});
        for (std::size_t row = 0; row < tr.rows.size(); ++row) {
            const auto f = static_cast<std::size_t>(tr.rows.frame[row]);
            const auto k = static_cast<std::size_t>(tr.rows.particle[row] - 1);
            REQUIRE(tr.rows.particle[row] ==
                    static_cast<std::int64_t>(row % static_cast<std::size_t>(t.atoms)) + 1);
            REQUIRE_THAT(tr.rows.x[row], Catch::Matchers::WithinAbs(t.xu[f][k], 1e-12));
            REQUIRE_THAT(tr.rows.y[row], Catch::Matchers::WithinAbs(t.yu[f][k], 1e-12));
            REQUIRE(tr.rows.vx[row] == t.vx[f][k]);
            REQUIRE(tr.rows.species[row] == (t.type[k] == 1 ? kSpeciesSmall : kSpeciesLarge));
        }
    }
}

TEST_CASE("LAMMPS non-periodic box becomes a rectangular window", "[unit]") {
    test::TempDir dir("lammps_window");
    test::write_text(
        dir.file("w.dump"),
        "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n1\nITEM: BOX BOUNDS ff ff pp\n0 4\n0 3\n-1 1\n"
        "ITEM: ATOMS id type x y\n1 1 1.5 2.5\n");
    store::import_lammps(dir.file("w.dump"), dir.file("w.h5"), {});
    REQUIRE(store::TrajectoryReader(dir.file("w.h5")).meta().geometry == Geometry::rect(0, 0, 4, 3));
}

TEST_CASE("LAMMPS refusals: changing box, triclinic box, unmapped type — with file and line", "[unit]") {
    test::TempDir dir("lammps_refuse");
    const std::string frame0 =
        "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n1\nITEM: BOX BOUNDS pp pp pp\n0 4\n0 3\n-1 1\nITEM: ATOMS "
        "id type x y\n1 1 1 1\n";
    test::write_text(
        dir.file("c.dump"),
        frame0 +
            "ITEM: TIMESTEP\n1\nITEM: NUMBER OF ATOMS\n1\nITEM: BOX BOUNDS pp pp pp\n0 5\n0 3\n-1 1\n"
            "ITEM: ATOMS id type x y\n1 1 1 1\n");
    REQUIRE_THROWS_WITH(store::import_lammps(dir.file("c.dump"), dir.file("c.h5"), {}),
                        Catch::Contains("c.dump: line 15") && Catch::Contains("box changes"));
    test::write_text(dir.file("t.dump"),
                     "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n1\nITEM: BOX BOUNDS xy xz yz pp pp pp\n0 4 "
                     "0\n0 3 0\n-1 1 0\n"
                     "ITEM: ATOMS id type x y\n1 1 1 1\n");
    REQUIRE_THROWS_WITH(store::import_lammps(dir.file("t.dump"), dir.file("t.h5"), {}),
                        Catch::Contains("triclinic"));
    test::write_text(
        dir.file("u.dump"),
        frame0 +
            "ITEM: TIMESTEP\n1\nITEM: NUMBER OF ATOMS\n1\nITEM: BOX BOUNDS pp pp pp\n0 4\n0 3\n-1 1\n"
            "ITEM: ATOMS id type x y\n1 3 1 1\n");
    REQUIRE_THROWS_WITH(store::import_lammps(dir.file("u.dump"), dir.file("u.h5"), {}),
                        Catch::Contains("u.dump: line 20") && Catch::Contains("atom type 3"));
    for (const char* f : {"c.h5", "t.h5", "u.h5"}) {
        REQUIRE_FALSE(fs::exists(dir.file(f)));
        REQUIRE_FALSE(fs::exists(dir.file(std::string(f) + ".partial")));
    }
}

TEST_CASE("CSV -> HDF5 -> CSV is value-identical", "[unit]") {
    test::TempDir dir("csv_roundtrip");
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<double> u(-1000, 1000);
    std::ostringstream in;
    in.precision(17);
    in << "frame,particle,x,y,species,vx,vy\n";
    struct Row {
        std::int64_t f, p;
        double x, y;
        int s;
        double vx, vy;
    };
    std::vector<Row> rows;
    for (std::int64_t f = 0; f < 4; ++f)
        for (std::int64_t p = 0; p < 7; ++p)
            rows.push_back({f, p, u(rng), u(rng) * 1e-7, int(p % 3) - 1, u(rng), u(rng)});
    // within a frame any order is accepted
    std::shuffle(rows.begin() + 7, rows.begin() + 14, rng);
    for (const auto& r : rows)
        in << r.f << "," << r.p << "," << r.x << "," << r.y << "," << r.s << "," << r.vx << "," << r.vy
           << "\n";
    test::write_text(dir.file("in.csv"), in.str());
    store::import_csv(dir.file("in.csv"), dir.file("t.h5"), {});
    store::export_csv(dir.file("t.h5"), dir.file("out.csv"));
    std::istringstream out(test::read_text(dir.file("out.csv")));
    std::string line;
    std::getline(out, line);
    REQUIRE(line == "frame,particle,x,y,species,vx,vy");
    std::sort(rows.begin(), rows.end(),
              [](const Row& a, const Row& b) { return std::tie(a.f, a.p) < std::tie(b.f, b.p); });
    for (const auto& r : rows) {
        REQUIRE(std::getline(out, line));
        Row b{};
        REQUIRE(std::sscanf(line.c_str(), "%ld,%ld,%lf,%lf,%d,%lf,%lf", &b.f, &b.p, &b.x, &b.y, &b.s, &b.vx,
                            &b.vy) == 7);
        REQUIRE(b.f == r.f);
        REQUIRE(b.p == r.p);
        REQUIRE(b.x == r.x);  // exact: shortest round-trip representation
        REQUIRE(b.y == r.y);
        REQUIRE(b.s == r.s);
        REQUIRE(b.vx == r.vx);
        REQUIRE(b.vy == r.vy);
    }
    REQUIRE_FALSE(std::getline(out, line));
}

TEST_CASE("CSV with trackpy's extra columns and unlinked rows", "[unit]") {
    test::TempDir dir("csv_trackpy");
    test::write_text(dir.file("tp.csv"),
                     ",y,x,mass,size,ecc,signal,raw_mass,ep,frame,particle\n"
                     "0,10.5,20.25,100,2.6,0.1,5,300,0.1,0,3\n"
                     "1,11.5,21.25,100,2.6,0.1,5,300,0.1,0,1\n"
                     "2,12.5,22.25,100,2.6,0.1,5,300,0.1,2,1\n");
    const auto s = store::import_csv(dir.file("tp.csv"), dir.file("tp.h5"), {});
    REQUIRE(s.frames == 3);
    const auto t = store::TrajectoryReader(dir.file("tp.h5")).read_all();
    REQUIRE(t.rows.particle == std::vector<std::int64_t>{1, 3, 1});
    REQUIRE(t.rows.x == std::vector<double>{21.25, 20.25, 22.25});
    REQUIRE(t.index.count(1) == 0);
    REQUIRE(t.rows.species == std::vector<std::int8_t>{0, 0, 0});  // single-size data: all 0
}

TEST_CASE("species map and diameter parsing", "[unit]") {
    const auto m = store::parse_species_map("1:small,2:large,5:unknown");
    REQUIRE(m.at(1) == kSpeciesSmall);
    REQUIRE(m.at(2) == kSpeciesLarge);
    REQUIRE(m.at(5) == kSpeciesUnknown);
    REQUIRE_THROWS_AS(store::parse_species_map("1-small"), ParameterError);
    REQUIRE(store::parse_diameters("small=1.0,large=1.4") == std::vector<double>{1.0, 1.4});
    REQUIRE_THROWS_AS(store::parse_diameters("large=1.4"), ParameterError);
    REQUIRE_THROWS_AS(store::parse_diameters("small=-1"), ParameterError);
}

TEST_CASE(
    "CSV: a frame number or sidecar n_frames implying over 10 million empty frames is an error, not an index "
    "of that size",
    "[unit]") {
    // Seed tests/fuzz/seeds/fuzz_csv_import/regress-frame-gap{,-sidecar}: "0,0,1,2" then
    // "100000000000,0,1,2" (or a sidecar with n_frames = 10^15) made an index of
    // 10^11 frames (std::bad_alloc, or the kernel's OOM killer).
    test::TempDir dir("csv_frame_gap");
    const std::string in = dir.file("gap.csv"), out = dir.file("gap.h5");
    test::write_text(in, "frame,particle,x,y\n0,0,1,2\n100000000000,0,1,2\n");
    try {
        store::import_csv(in, out, {});
        FAIL("no error");
    } catch (const FormatError& e) {
        const std::string what = e.what();
        CHECK(what.find(in + ": line 3") != std::string::npos);
        CHECK(what.find("more than 10000000 empty frames") != std::string::npos);
    }
    CHECK_FALSE(fs::exists(out));
    // The largest allowed jump still imports (frames 1 … 10^7 empty).
    test::write_text(in, "frame,particle,x,y\n0,0,1,2\n10000001,0,1,2\n");
    CHECK(store::import_csv(in, out, {}).frames == 10000002);
    // A sidecar promising 10^15 frames after the last row.
    fs::remove(out);
    test::write_text(in, "frame,particle,x,y\n0,0,1,2\n");
    test::write_text(
        store::csv_metadata_path(in),
        R"({"schema": "vibra-csv-metadata", "schema_version": "1.0", "n_frames": 1000000000000000,
                         "meta": {"length_unit": "px", "time_unit": "frame", "frame_interval": 1}})");
    try {
        store::import_csv(in, out, {});
        FAIL("no error");
    } catch (const FormatError& e) {
        const std::string what = e.what();
        CHECK(what.find(store::csv_metadata_path(in)) != std::string::npos);
        CHECK(what.find("n_frames") != std::string::npos);
    }
    CHECK_FALSE(fs::exists(out));
}

TEST_CASE("LAMMPS: a dump of only ITEM: TIME / UNITS items is an error naming the file, not a crash",
          "[unit]") {
    // Found by fuzz_lammps_dump (tests/fuzz/seeds/fuzz_lammps_dump/regress-no-atoms): the writer,
    // created at the first ITEM: ATOMS, was used without one (a null dereference).
    test::TempDir dir("lammps_no_atoms");
    const std::string in = dir.file("time_only.dump"), out = dir.file("t.h5");
    for (const std::string text : {"ITEM: TIME\n0.5\n", "ITEM: UNITS\nlj\nITEM: TIME\n1\n\n"}) {
        test::write_text(in, text);
        try {
            store::import_lammps(in, out, {});
            FAIL("no error");
        } catch (const FormatError& e) {
            const std::string what = e.what();
            CHECK(what.find(in) != std::string::npos);
            CHECK(what.find("no 'ITEM: ATOMS' block") != std::string::npos);
        }
        CHECK_FALSE(fs::exists(out));
    }
}

TEST_CASE("LAMMPS: a negative atom id is an error naming the line, not a file the reader refuses", "[unit]") {
    // Found by fuzz_lammps_dump in the long run (tests/fuzz/seeds/fuzz_lammps_dump/regress-negative-id):
    // the importer wrote id -5 as a particle id, which the trajectory reader then refused.
    test::TempDir dir("lammps_negative_id");
    const std::string in = dir.file("neg.dump"), out = dir.file("t.h5");
    test::write_text(in,
                     "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n2\nITEM: BOX BOUNDS pp pp pp\n0 10\n0 10\n"
                     "-0.5 0.5\nITEM: ATOMS id type xu yu\n1 1 1 1\n-5 1 2 2\n");
    try {
        store::import_lammps(in, out, {});
        FAIL("no error");
    } catch (const FormatError& e) {
        const std::string what = e.what();
        CHECK(what.find(in + ": line 11") != std::string::npos);
        CHECK(what.find("atom id -5 is negative") != std::string::npos);
    }
    CHECK_FALSE(fs::exists(out));
}
