// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: the bytes of an HDF5 file → vibra::store::TrajectoryReader (schema, metadata,
// column shapes, frame index, per-frame columns), then everything it exposes: read_all, the
// frames in blocks of 2 (hyperslab reads, rebased index, sorting/duplicate checks), read_columns
// of every column, rows_in, and every /diagnostics dataset. Seeds (make_h5_seeds): small valid
// files, and truncated, bit-flipped, wrong-type, wrong-shape, huge-dimension and cyclic-link ones.
// The bytes are opened in memory (detail::ScopedFileImage: HDF5's core driver), not written to a file.
#include <cstdint>
#include <string>
#include <vector>

#include "detail/h5.hpp"
#include "fuzz_common.hpp"
#include "fuzz_hdf5.hpp"
#include "vibra/store/trajectory_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace vibra;
    if (!fuzz::global_heap_sound(data, size)) return -1;  // HDF5 1.10 loops or overreads: not fuzzed
    const std::string in = fuzz::scratch() + "/in.h5";    // a name only: the file is never written
    const store::detail::ScopedFileImage image(data, size);
    fuzz::accepts([&] {
        store::TrajectoryReader r(in);
        const std::int64_t T = r.n_frames();
        fuzz::require(T >= 0 && r.n_rows() >= 0, "negative frame or row count accepted");
        const Trajectory all = r.read_all();
        fuzz::require(static_cast<std::int64_t>(all.rows.size()) == r.n_rows(), "read_all rows != n_rows");
        for (std::int64_t f = 0; f < T && f < 64; f += 2) {
            const Trajectory part = r.read_frames(f, 2);
            fuzz::require(static_cast<std::int64_t>(part.rows.size()) == r.rows_in(f, 2),
                          "read_frames rows != rows_in");
        }
        const std::vector<std::string> names = {
            "frame", "particle", "x",          "y",       "species",           "vx",
            "vy",    "radius",   "brightness", "quality", "species_confidence"};
        r.read_columns(names, 0, T);
        for (const auto& d : r.diagnostics()) r.read_diagnostic(d);
    });
    return 0;
}
