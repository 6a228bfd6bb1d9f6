// SPDX-License-Identifier: GPL-3.0-or-later
// make_h5_seeds OUTDIR: writes the seed corpora of the HDF5 fuzz targets,
//   OUTDIR/fuzz_trajectory_h5/*.h5 and OUTDIR/fuzz_results_h5/*.h5:
// small valid files written by vibra's own writers (a trajectory with every optional column,
// per-frame columns and a diagnostic; an empty one; a results file with 1-D / 2-D / integer /
// int8 arrays, attributes of every kind and a sub-group; a campaign table), and damaged copies of
// them: truncated, bit-flipped, a dataset of the wrong type or shape, huge declared dimensions
// (chunked datasets of 2^40 elements that store nothing), and cyclic links (a soft link to itself,
// two soft links to each other, a hard link from a group to its ancestor). Deterministic.
// The trajectory files in the writer's own layout (256 KiB deflated chunks, ~0.25 s per input under
// ASan) go to OUTDIR/fuzz_trajectory_h5.replay/: replayed by run_fuzz.sh, not mutated; the fuzzed
// seeds are copies with the same content in small chunks.
#include <hdf5.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "vibra/store/results_file.hpp"
#include "vibra/store/table_file.hpp"
#include "vibra/store/trajectory_file.hpp"

namespace fs = std::filesystem;
using namespace vibra;

namespace {

std::vector<char> slurp(const std::string& p) {
    std::ifstream is(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(is), {}};
}
void dump(const std::string& p, const std::vector<char>& b) {
    std::ofstream os(p, std::ios::binary | std::ios::trunc);
    os.write(b.data(), static_cast<std::streamsize>(b.size()));
}

// A copy of `src` at `dst`, opened read-write and changed by `edit` with the HDF5 C API.
void edited(const std::string& src, const std::string& dst, const std::function<void(hid_t)>& edit) {
    fs::copy_file(src, dst, fs::copy_options::overwrite_existing);
    const hid_t f = H5Fopen(dst.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    if (f < 0) {
        std::fprintf(stderr, "make_h5_seeds: cannot open %s\n", dst.c_str());
        std::exit(1);
    }
    edit(f);
    H5Fclose(f);
}

void replace_dataset(hid_t f, const char* path, hid_t type, std::vector<hsize_t> dims, const void* data) {
    H5Ldelete(f, path, H5P_DEFAULT);
    const hid_t s = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
    const hid_t d = H5Dcreate2(f, path, type, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (data) H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
    H5Dclose(d);
    H5Sclose(s);
}

// A chunked dataset declaring `n` elements (unlimited maximum) that stores no chunk at all.
void huge_dataset(hid_t f, const char* path, hid_t type, hsize_t n) {
    H5Ldelete(f, path, H5P_DEFAULT);
    const hsize_t maxd = H5S_UNLIMITED, chunk = 1024;
    const hid_t s = H5Screate_simple(1, &n, &maxd);
    const hid_t pl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(pl, 1, &chunk);
    const hid_t d = H5Dcreate2(f, path, type, s, H5P_DEFAULT, pl, H5P_DEFAULT);
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

// A copy of trajectory file `src` whose /trajectories columns are contiguous and unfiltered
// (chunk_rows 0), or chunked by `chunk_rows` rows with shuffle + deflate, vibra's filters. vibra's
// writer stores whole deflated chunks of 256 KiB, which the reader inflates on every read: under
// ASan ~0.25 s per input, against a few ms for these few-kB copies. Root attributes as strings,
// /meta, /index and /diagnostics copied as they are.
void plain_copy(const std::string& src, const std::string& dst, hsize_t chunk_rows = 0) {
    const hid_t in = H5Fopen(src.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    const hid_t out = H5Fcreate(dst.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    for (const char* name : {"schema", "schema_version", "vibra_version"}) {
        const hid_t a = H5Aopen(in, name, H5P_DEFAULT);
        const hid_t t = H5Tcopy(H5T_C_S1);
        H5Tset_size(t, H5T_VARIABLE);
        char* v = nullptr;
        H5Aread(a, t, &v);
        string_attr(out, name, v ? v : "");
        H5free_memory(v);
        H5Tclose(t);
        H5Aclose(a);
    }
    for (const char* g : {"meta", "index", "diagnostics"})
        if (H5Lexists(in, g, H5P_DEFAULT) > 0) H5Ocopy(in, g, out, g, H5P_DEFAULT, H5P_DEFAULT);
    const hid_t tg = H5Gcreate2(out, "trajectories", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    for (const char* c : {"frame", "particle", "x", "y", "species", "vx", "vy", "radius", "brightness",
                          "quality", "species_confidence"}) {
        const std::string path = std::string("trajectories/") + c;
        if (H5Lexists(in, path.c_str(), H5P_DEFAULT) <= 0) continue;
        const hid_t d = H5Dopen2(in, path.c_str(), H5P_DEFAULT);
        const hid_t t = H5Dget_type(d), sp = H5Dget_space(d);
        std::vector<char> buf(static_cast<std::size_t>(H5Sget_simple_extent_npoints(sp)) * H5Tget_size(t) +
                              1);
        H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data());
        const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        if (chunk_rows > 0) {
            H5Pset_chunk(dcpl, 1, &chunk_rows);
            H5Pset_shuffle(dcpl);
            H5Pset_deflate(dcpl, 1);
        }
        const hid_t o = H5Dcreate2(tg, c, t, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        H5Pclose(dcpl);
        H5Dwrite(o, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data());
        const hid_t u = H5Aopen(d, "units", H5P_DEFAULT);
        if (u >= 0) {
            const hid_t st = H5Tcopy(H5T_C_S1);
            H5Tset_size(st, H5T_VARIABLE);
            char* v = nullptr;
            H5Aread(u, st, &v);
            string_attr(o, "units", v ? v : "");
            H5free_memory(v);
            H5Tclose(st);
            H5Aclose(u);
        }
        H5Dclose(o);
        H5Sclose(sp);
        H5Tclose(t);
        H5Dclose(d);
    }
    H5Gclose(tg);
    H5Fclose(out);
    H5Fclose(in);
}

// Damaged byte copies: cut at several lengths and with bits flipped at spread-out offsets.
void byte_variants(const std::string& src, const std::string& dir, const std::string& stem) {
    const auto b = slurp(src);
    for (const double frac : {0.1, 0.5, 0.9}) {
        const auto n = static_cast<std::size_t>(frac * static_cast<double>(b.size()));
        dump(dir + "/" + stem + "_truncated" + std::to_string(int(frac * 100)) + ".h5",
             {b.begin(), b.begin() + static_cast<long>(n)});
    }
    std::uint32_t rng = 12345;
    for (int k = 0; k < 4; ++k) {
        auto c = b;
        for (int j = 0; j < 8; ++j) {
            rng = rng * 1664525u + 1013904223u;
            const std::size_t at =
                512 + rng % (c.size() - 512);  // past the superblock: HDF5 still opens most
            c[at] = static_cast<char>(c[at] ^ (1 << (rng >> 29)));
        }
        dump(dir + "/" + stem + "_bitflip" + std::to_string(k) + ".h5", c);
    }
}

void trajectory_seeds(const std::string& dir) {
    Trajectory t;
    t.meta.frame_interval = 0.5;
    t.meta.time_unit = "s";
    t.meta.px_per_mm = 12.5;
    t.meta.species_diameters = {10, 14};
    t.meta.user["note"] = "fuzz seed";
    for (std::int64_t f = 0; f < 3; ++f)
        for (std::int64_t p = 0; p < 2; ++p) {
            t.rows.push(f, p, 10.0 * double(p) + double(f), 5.0 + double(f), static_cast<std::int8_t>(p));
            t.rows.vx.push_back(1.0), t.rows.vy.push_back(-1.0);
            t.rows.radius.push_back(5.0f + float(p)), t.rows.brightness.push_back(100.0f);
            t.rows.quality.push_back(0.9f), t.rows.species_confidence.push_back(0.8f);
        }
    t.index.offsets = {0, 2, 4, 6};
    t.frames.time_s = {0.0, 0.5, 1.0};
    t.frames.timestep = {0, 10, 20};
    t.frames.image_number = {7, 8, 9};
    // Files in the writer's own layout (256 KiB deflated chunks) are slow inputs: replayed, not fuzzed.
    const std::string replay = dir + ".replay";
    fs::create_directories(replay);
    const std::string writer_full = replay + "/full.h5";
    store::write_trajectory(writer_full, t);
    {  // a diagnostic counter, as tracking writes
        store::TrajectoryWriter w(replay + "/diag.h5", Metadata{}, store::ColumnSet{});
        TrajectoryTable rows;
        rows.push(0, -1, 1.0, 2.0, kSpeciesUnknown);
        rows.push(1, 3, 1.5, 2.5, kSpeciesSmall);
        w.append(rows, 2);
        w.set_diagnostic("candidates", {4, 5}, "1");
        w.commit();
    }
    Trajectory empty;
    empty.index.offsets = {0, 0, 0};
    store::write_trajectory(dir + "/empty_frames.h5", empty);

    byte_variants(writer_full, replay, "full");
    // Small copies: contiguous columns, and deflated in chunks of 4 rows (the damaged variants
    // below start from it): the fuzzer's fast, mutable starting points.
    const std::string full = dir + "/full.h5";
    plain_copy(writer_full, full, 4);
    plain_copy(writer_full, dir + "/plain_full.h5");
    plain_copy(replay + "/diag.h5", dir + "/plain_diag.h5");
    plain_copy(replay + "/diag.h5", dir + "/diag.h5", 4);
    byte_variants(full, dir, "full");
    byte_variants(dir + "/plain_full.h5", dir, "plain_full");
    const double xs[3] = {1, 2, 3};
    const std::int64_t offsets_2d[4] = {0, 2, 4, 6};
    edited(full, dir + "/x_is_string.h5", [](hid_t f) {
        const hid_t t = H5Tcopy(H5T_C_S1);
        H5Tset_size(t, 8);
        const char s[6][8] = {"a", "b", "c", "d", "e", "f"};
        replace_dataset(f, "trajectories/x", t, {6}, s);
        H5Tclose(t);
    });
    edited(full, dir + "/frame_is_float.h5", [&](hid_t f) {
        const double fr[6] = {0, 0, 1, 1, 2.5, 2};
        replace_dataset(f, "trajectories/frame", H5T_NATIVE_DOUBLE, {6}, fr);
    });
    edited(full, dir + "/x_short.h5",
           [&](hid_t f) { replace_dataset(f, "trajectories/x", H5T_NATIVE_DOUBLE, {3}, xs); });
    edited(full, dir + "/x_2d.h5", [&](hid_t f) {
        const double x2[6] = {0, 10, 1, 11, 2, 12};
        replace_dataset(f, "trajectories/x", H5T_NATIVE_DOUBLE, {3, 2}, x2);
    });
    edited(full, dir + "/offsets_2d.h5", [&](hid_t f) {
        replace_dataset(f, "index/frame_offsets", H5T_NATIVE_INT64, {2, 2}, offsets_2d);
    });
    edited(full, dir + "/offsets_unsorted.h5", [&](hid_t f) {
        const std::int64_t o[4] = {0, 4, 2, 6};
        replace_dataset(f, "index/frame_offsets", H5T_NATIVE_INT64, {4}, o);
    });
    edited(full, dir + "/frame_disagrees.h5", [&](hid_t f) {
        const std::int64_t fr[6] = {0, 0, 2, 1, 1, 2};
        replace_dataset(f, "trajectories/frame", H5T_NATIVE_INT64, {6}, fr);
    });
    edited(full, dir + "/huge_offsets.h5",
           [](hid_t f) { huge_dataset(f, "index/frame_offsets", H5T_NATIVE_INT64, hsize_t{1} << 40); });
    edited(full, dir + "/huge_columns.h5", [](hid_t f) {
        for (const char* c :
             {"trajectories/frame", "trajectories/particle", "trajectories/x", "trajectories/y"})
            huge_dataset(f, c, H5T_NATIVE_INT64, hsize_t{1} << 40);
        huge_dataset(f, "trajectories/species", H5T_NATIVE_INT8, hsize_t{1} << 40);
    });
    edited(full, dir + "/huge_frame_time.h5",
           [](hid_t f) { huge_dataset(f, "index/frame_time", H5T_NATIVE_DOUBLE, hsize_t{1} << 36); });
    edited(full, dir + "/huge_attr.h5", [](hid_t f) {
        // species_names as a huge array attribute is impossible (attributes are stored whole):
        // a long one instead.
        H5Adelete(f, "schema_version");
        string_attr(f, "schema_version", "99999999999999999999.0");
    });
    edited(full, dir + "/schema_version_number.h5", [](hid_t f) {
        H5Adelete(f, "schema_version");
        const hid_t s = H5Screate(H5S_SCALAR);
        const hid_t a = H5Acreate2(f, "schema_version", H5T_NATIVE_DOUBLE, s, H5P_DEFAULT, H5P_DEFAULT);
        const double v = 1.0;
        H5Awrite(a, H5T_NATIVE_DOUBLE, &v);
        H5Aclose(a);
        H5Sclose(s);
    });
    edited(full, dir + "/cycle_soft_self.h5", [](hid_t f) {
        H5Ldelete(f, "trajectories/x", H5P_DEFAULT);
        H5Lcreate_soft("/trajectories/x", f, "trajectories/x", H5P_DEFAULT, H5P_DEFAULT);
    });
    edited(full, dir + "/cycle_soft_pair.h5", [](hid_t f) {
        H5Ldelete(f, "index/frame_offsets", H5P_DEFAULT);
        H5Lcreate_soft("/index/b", f, "index/frame_offsets", H5P_DEFAULT, H5P_DEFAULT);
        H5Lcreate_soft("/index/frame_offsets", f, "index/b", H5P_DEFAULT, H5P_DEFAULT);
    });
    edited(full, dir + "/cycle_hard.h5", [](hid_t f) {
        H5Lcreate_hard(f, "/", f, "trajectories/root", H5P_DEFAULT, H5P_DEFAULT);
        H5Lcreate_hard(f, "/trajectories", f, "index/loop", H5P_DEFAULT, H5P_DEFAULT);
        H5Lcreate_hard(f, "/trajectories/x", f, "diagnostics_x", H5P_DEFAULT, H5P_DEFAULT);
    });
    edited(full, dir + "/meta_wrong_types.h5", [](hid_t f) {
        const hid_t m = H5Gopen2(f, "meta", H5P_DEFAULT);
        if (m >= 0) {
            string_attr(m, "frame_interval", "fast");
            string_attr(m, "image_width", "wide");
            H5Gclose(m);
        }
    });
}

void results_seeds(const std::string& dir) {
    ResultGroup g;
    g.name = "msd";
    g.attrs["lag_max"] = std::int64_t{10};
    g.attrs["slope"] = 1.5;
    g.attrs["method"] = std::string("fft");
    g.attrs["species"] = std::vector<std::string>{"small", "large"};
    g.attrs["lags"] = std::vector<std::int64_t>{1, 2, 4};
    g.attrs["weights"] = std::vector<double>{0.5, 0.25};
    g.add("lag", {1, 2, 3}, "frame");
    g.add2d("msd", {1, 2, 3, 4, 5, 6}, 3, 2, "px^2");
    g.add_int("count", {3, 2, 1}, "1");
    ResultArray s;
    s.name = "species";
    s.units = "1";
    s.shape = {2};
    s.data = std::vector<std::int8_t>{0, 1};
    g.arrays.push_back(s);
    ResultGroup sub;
    sub.name = "pole";
    sub.add("k", {0.1, 0.2}, "1/px");
    g.groups.push_back(sub);
    ResultGroup g2;
    g2.name = "density";
    g2.add("rho", {0.5}, "1/px^2");
    store::ResultsProvenance prov{
        "traj.h5", "sha256:00", "vibra analyze traj.h5", {"kgap: too few frames"}, false};
    const std::string full = dir + "/results.h5";
    store::write_results(full, {g, g2}, prov, Metadata{});

    store::Table t;
    t.schema = "vibra-campaign";
    t.group = "campaign";
    t.attrs["dataset"] = std::string("manifest.toml");
    t.columns.push_back({"name", "", std::vector<std::string>{"a", "b"}, "video"});
    t.columns.push_back({"gamma", "1", std::vector<double>{2.5, 3.0}, "drive"});
    t.columns.push_back({"frames", "1", std::vector<std::int64_t>{100, 200}, "frames tracked"});
    const std::string table = dir + "/campaign.h5";
    store::write_table_h5(table, t);

    byte_variants(full, dir, "results");
    byte_variants(table, dir, "campaign");
    edited(full, dir + "/cycle_hard_group.h5", [](hid_t f) {
        H5Lcreate_hard(f, "/analysis/msd", f, "analysis/msd/pole/up", H5P_DEFAULT, H5P_DEFAULT);
    });
    edited(full, dir + "/cycle_soft.h5", [](hid_t f) {
        H5Lcreate_soft("/analysis/msd/s2", f, "analysis/msd/s1", H5P_DEFAULT, H5P_DEFAULT);
        H5Lcreate_soft("/analysis/msd/s1", f, "analysis/msd/s2", H5P_DEFAULT, H5P_DEFAULT);
        H5Lcreate_soft("/analysis/density/self", f, "analysis/density/self", H5P_DEFAULT, H5P_DEFAULT);
    });
    edited(full, dir + "/dangling_link.h5", [](hid_t f) {
        H5Lcreate_soft("/nowhere", f, "analysis/density/gone", H5P_DEFAULT, H5P_DEFAULT);
        H5Lcreate_external("other.h5", "/x", f, "analysis/density/ext", H5P_DEFAULT, H5P_DEFAULT);
    });
    edited(full, dir + "/huge_array.h5", [](hid_t f) {
        huge_dataset(f, "analysis/msd/lag", H5T_NATIVE_DOUBLE, hsize_t{1} << 40);
        huge_dataset(f, "analysis/density/rho", H5T_NATIVE_INT64, hsize_t{1} << 34);
    });
    edited(full, dir + "/wrong_types.h5", [](hid_t f) {
        const hid_t t = H5Tcopy(H5T_C_S1);
        H5Tset_size(t, 4);
        const char s[2][4] = {"ab", "cd"};
        replace_dataset(f, "analysis/density/rho", t, {2}, s);
        H5Tclose(t);
        const hid_t ct = H5Tcreate(H5T_COMPOUND, 16);
        H5Tinsert(ct, "a", 0, H5T_NATIVE_DOUBLE);
        H5Tinsert(ct, "b", 8, H5T_NATIVE_DOUBLE);
        const double c[4] = {1, 2, 3, 4};
        replace_dataset(f, "analysis/msd/count", ct, {2}, c);
        const hid_t g = H5Gopen2(f, "analysis/msd", H5P_DEFAULT);
        const hid_t sp = H5Screate(H5S_SCALAR);
        const hid_t a = H5Acreate2(g, "compound", ct, sp, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(a, ct, c);
        H5Aclose(a);
        H5Sclose(sp);
        H5Gclose(g);
        H5Tclose(ct);
    });
    edited(full, dir + "/array_4d.h5", [](hid_t f) {
        const double v[16] = {};
        replace_dataset(f, "analysis/msd/lag", H5T_NATIVE_DOUBLE, {2, 2, 2, 2}, v);
        replace_dataset(f, "analysis/density/rho", H5T_NATIVE_FLOAT, {0}, nullptr);
    });
    edited(table, dir + "/campaign_mismatch.h5", [](hid_t f) {
        const double v[5] = {1, 2, 3, 4, 5};
        replace_dataset(f, "campaign/gamma", H5T_NATIVE_DOUBLE, {5}, v);
        huge_dataset(f, "campaign/frames", H5T_NATIVE_INT64, hsize_t{1} << 40);
    });
    edited(table, dir + "/campaign_huge_strings.h5", [](hid_t f) {
        const hid_t t = H5Tcopy(H5T_C_S1);
        H5Tset_size(t, H5T_VARIABLE);
        huge_dataset(f, "campaign/name", t, hsize_t{1} << 36);
        H5Tclose(t);
    });
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: make_h5_seeds OUTDIR\n");
        return 2;
    }
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    const std::string out = argv[1];
    fs::create_directories(out + "/fuzz_trajectory_h5");
    fs::create_directories(out + "/fuzz_results_h5");
    trajectory_seeds(out + "/fuzz_trajectory_h5");
    results_seeds(out + "/fuzz_results_h5");
    return 0;
}
