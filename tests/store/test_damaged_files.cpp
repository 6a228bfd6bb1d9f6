// SPDX-License-Identifier: GPL-3.0-or-later
// Damaged and hostile HDF5 files (the fuzz targets fuzz_trajectory_h5 / fuzz_results_h5 of
// tests/fuzz, whose findings these are): each must be refused with a vibra error naming the file
// and the field, never a crash, an endless read, or an allocation of the size a header claims.
#include <catch2/catch.hpp>
#include <hdf5.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "../../store/src/detail/h5.hpp"  // ScopedFileImage
#include "test_support.hpp"
#include "vibra/core/error.hpp"
#include "vibra/store/results_file.hpp"
#include "vibra/store/table_file.hpp"
#include "vibra/store/trajectory_file.hpp"

using namespace vibra;
namespace fs = std::filesystem;

namespace {

Trajectory small_trajectory() {
    Trajectory t;
    for (std::int64_t f = 0; f < 3; ++f)
        for (std::int64_t p = 0; p < 2; ++p) t.rows.push(f, p, double(p), double(f), kSpeciesSmall);
    t.index.offsets = {0, 2, 4, 6};
    return t;
}

// Opens `path` read-write and changes it with the HDF5 C API.
void edit(const std::string& path, const std::function<void(hid_t)>& f) {
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    REQUIRE(file >= 0);
    f(file);
    H5Fclose(file);
}

// A chunked dataset declaring `n` elements that stores no chunk (reads as fill values).
void huge_dataset(hid_t f, const char* path, hid_t type, hsize_t n) {
    H5Ldelete(f, path, H5P_DEFAULT);
    const hsize_t maxd = H5S_UNLIMITED, chunk = 1024;
    const hid_t s = H5Screate_simple(1, &n, &maxd);
    const hid_t pl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(pl, 1, &chunk);
    const hid_t d = H5Dcreate2(f, path, type, s, H5P_DEFAULT, pl, H5P_DEFAULT);
    REQUIRE(d >= 0);
    H5Dclose(d);
    H5Pclose(pl);
    H5Sclose(s);
}

void string_attr(hid_t obj, const char* name, const std::string& v) {
    H5Adelete(obj, name);
    const hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, v.size() + 1);
    const hid_t s = H5Screate(H5S_SCALAR);
    const hid_t a = H5Acreate2(obj, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, t, v.c_str());
    H5Aclose(a);
    H5Sclose(s);
    H5Tclose(t);
}

template <class E>
void require_error(const std::function<void()>& f, const std::string& path, const std::string& words) {
    try {
        f();
        FAIL("no error for a damaged file");
    } catch (const E& e) {
        const std::string what = e.what();
        INFO(what);
        CHECK(what.find(path) != std::string::npos);
        CHECK(what.find(words) != std::string::npos);
    }
}

std::string results_file(const test::TempDir& dir) {
    ResultGroup g;
    g.name = "msd";
    g.add("lag", {1, 2, 3}, "frame");
    ResultGroup sub;
    sub.name = "pole";
    sub.add("k", {0.1}, "1/px");
    g.groups.push_back(sub);
    const std::string path = dir.file("results.h5");
    store::write_results(path, {g}, {"traj.h5", "sha256:00", "vibra analyze", {}, false}, Metadata{});
    return path;
}

}  // namespace

TEST_CASE(
    "damaged trajectory file: a schema_version major beyond any integer is a newer version, not a crash",
    "[unit]") {
    test::TempDir dir("damaged_schema_version");
    const std::string path = dir.file("t.h5");
    store::write_trajectory(path, small_trajectory());
    edit(path, [](hid_t f) { string_attr(f, "schema_version", "99999999999999999999.0"); });
    require_error<FormatError>([&] { store::TrajectoryReader r(path); }, path, "newer than this vibra reads");
}

TEST_CASE("damaged trajectory file: huge declared dimensions are refused before any allocation", "[unit]") {
    test::TempDir dir("damaged_huge_dims");
    const std::string path = dir.file("t.h5");
    SECTION("frame index of 2^40 entries") {
        store::write_trajectory(path, small_trajectory());
        edit(path,
             [](hid_t f) { huge_dataset(f, "index/frame_offsets", H5T_NATIVE_INT64, hsize_t{1} << 40); });
        require_error<FormatError>([&] { store::TrajectoryReader r(path); }, path, "index/frame_offsets");
        require_error<FormatError>([&] { store::TrajectoryReader r(path); }, path, "damaged file");
    }
    SECTION("per-frame column of 2^36 entries") {
        store::write_trajectory(path, small_trajectory());
        edit(path, [](hid_t f) { huge_dataset(f, "index/frame_time", H5T_NATIVE_DOUBLE, hsize_t{1} << 36); });
        require_error<FormatError>([&] { store::TrajectoryReader r(path); }, path, "frame_time");
    }
    SECTION("columns of 2^40 rows with a matching index of 2 frames") {
        store::write_trajectory(path, small_trajectory());
        edit(path, [](hid_t f) {
            for (const char* c :
                 {"trajectories/frame", "trajectories/particle", "trajectories/x", "trajectories/y"})
                huge_dataset(f, c, H5T_NATIVE_INT64, hsize_t{1} << 40);
            huge_dataset(f, "trajectories/species", H5T_NATIVE_INT8, hsize_t{1} << 40);
            H5Ldelete(f, "index/frame_offsets", H5P_DEFAULT);
            const std::int64_t o[3] = {0, 1, std::int64_t{1} << 40};
            const hsize_t n = 3;
            const hid_t s = H5Screate_simple(1, &n, nullptr);
            const hid_t d = H5Dcreate2(f, "index/frame_offsets", H5T_NATIVE_INT64, s, H5P_DEFAULT,
                                       H5P_DEFAULT, H5P_DEFAULT);
            H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, o);
            H5Dclose(d);
            H5Sclose(s);
        });
        store::TrajectoryReader r(path);  // the shapes agree: opening reads only the index
        CHECK(r.n_rows() == std::int64_t{1} << 40);
        require_error<FormatError>([&] { r.read_frames(1, 1); }, path, "damaged file");
        CHECK(r.read_frames(0, 1).rows.size() == 1);  // frame 0 is one real (fill-value) row
    }
}

TEST_CASE(
    "damaged results file: hard links forming a cycle, or two links to one group, end the read with an error",
    "[unit]") {
    test::TempDir dir("damaged_results_cycle");
    const std::string path = results_file(dir);
    SECTION("a group linked below itself") {
        edit(path, [](hid_t f) {
            REQUIRE(H5Lcreate_hard(f, "/analysis/msd", f, "analysis/msd/pole/up", H5P_DEFAULT, H5P_DEFAULT) >=
                    0);
        });
    }
    SECTION("two links to one sub-group") {
        edit(path, [](hid_t f) {
            REQUIRE(H5Lcreate_hard(f, "/analysis/msd/pole", f, "analysis/msd/pole2", H5P_DEFAULT,
                                   H5P_DEFAULT) >= 0);
        });
    }
    require_error<FormatError>([&] { store::read_results(path, "msd"); }, path, "already read");
    CHECK(store::list_results(path) == std::vector<std::string>{"msd"});
}

TEST_CASE("damaged results file: dangling and cyclic soft links are errors naming the link", "[unit]") {
    test::TempDir dir("damaged_results_soft");
    const std::string path = results_file(dir);
    SECTION("dangling") {
        edit(path,
             [](hid_t f) { H5Lcreate_soft("/nowhere", f, "analysis/msd/gone", H5P_DEFAULT, H5P_DEFAULT); });
        require_error<IoError>([&] { store::read_results(path, "msd"); }, path, "'gone'");
    }
    SECTION("two soft links to each other") {
        edit(path, [](hid_t f) {
            H5Lcreate_soft("/analysis/msd/s2", f, "analysis/msd/s1", H5P_DEFAULT, H5P_DEFAULT);
            H5Lcreate_soft("/analysis/msd/s1", f, "analysis/msd/s2", H5P_DEFAULT, H5P_DEFAULT);
        });
        require_error<IoError>([&] { store::read_results(path, "msd"); }, path, "'s1'");
    }
}

TEST_CASE("damaged results and table files: huge declared arrays are refused before any allocation",
          "[unit]") {
    test::TempDir dir("damaged_results_huge");
    const std::string path = results_file(dir);
    edit(path, [](hid_t f) { huge_dataset(f, "analysis/msd/lag", H5T_NATIVE_DOUBLE, hsize_t{1} << 40); });
    require_error<FormatError>([&] { store::read_results(path, "msd"); }, path, "lag");

    store::Table t;
    t.schema = "vibra-campaign";
    t.group = "campaign";
    t.columns.push_back({"name", "", std::vector<std::string>{"a", "b"}, "video"});
    t.columns.push_back({"frames", "1", std::vector<std::int64_t>{100, 200}, "frames"});
    const std::string table = dir.file("campaign.h5");
    store::write_table_h5(table, t);
    SECTION("strings") {
        edit(table, [](hid_t f) {
            const hid_t s = H5Tcopy(H5T_C_S1);
            H5Tset_size(s, H5T_VARIABLE);
            huge_dataset(f, "campaign/name", s, hsize_t{1} << 36);
            H5Tclose(s);
        });
        require_error<FormatError>([&] { store::read_table_h5(table, "vibra-campaign", "campaign"); }, table,
                                   "name");
    }
    SECTION("numbers") {
        edit(table, [](hid_t f) { huge_dataset(f, "campaign/frames", H5T_NATIVE_INT64, hsize_t{1} << 40); });
        require_error<FormatError>([&] { store::read_table_h5(table, "vibra-campaign", "campaign"); }, table,
                                   "frames");
    }
}

// The fuzz targets open their inputs in memory (detail::ScopedFileImage, HDF5's core driver): the
// readers must see the bytes exactly as they would the file, with the same checks and messages.
TEST_CASE("file images: readers open HDF5 bytes held in memory as they would the file", "[unit]") {
    test::TempDir dir("file_image");
    const std::string path = dir.file("t.h5");
    Trajectory t = small_trajectory();
    t.meta.user["note"] = "in memory";
    store::write_trajectory(path, t);
    const std::string results = results_file(dir);
    auto bytes = [](const std::string& p) {
        std::ifstream is(p, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(is), {});
    };
    const std::string traj_bytes = bytes(path), results_bytes = bytes(results);
    const std::string name = dir.file("not_on_disk.h5");  // only names the file in messages
    {
        const store::detail::ScopedFileImage image(traj_bytes.data(), traj_bytes.size());
        store::TrajectoryReader r(name);
        CHECK(r.n_frames() == 3);
        const Trajectory back = r.read_all();
        CHECK(back.rows.x == t.rows.x);
        CHECK(back.rows.y == t.rows.y);
        CHECK(back.meta.user.at("note") == "in memory");
        require_error<FormatError>([&] { store::read_results_root(name); }, name, "expected 'vibra-results'");
    }
    {
        const store::detail::ScopedFileImage image(results_bytes.data(), results_bytes.size());
        CHECK(store::list_results(name) == std::vector<std::string>{"msd"});
        CHECK(store::read_results(name, "msd").arrays.at(0).name == "lag");
    }
    {
        const std::string text = "not an HDF5 file at all";
        const store::detail::ScopedFileImage image(text.data(), text.size());
        require_error<FormatError>([&] { store::TrajectoryReader r(name); }, name, "not an HDF5 file");
    }
    {
        const std::string cut = traj_bytes.substr(0, 600);  // the signature kept, the rest cut off
        const store::detail::ScopedFileImage image(cut.data(), cut.size());
        require_error<IoError>([&] { store::TrajectoryReader r(name); }, name, "cannot open");
    }
    // Gone with the scope: the name is a path again, and there is no such file.
    CHECK(!fs::exists(name));
    require_error<IoError>([&] { store::TrajectoryReader r(name); }, name, "no such file");
}
