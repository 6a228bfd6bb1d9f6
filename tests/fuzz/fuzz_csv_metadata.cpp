// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: a CSV metadata sidecar (`<csv>.meta.json`) → read_csv_metadata (vibra's JSON
// parser, then the schema: meta, geometry, species, per-frame columns). What it accepts must
// survive write_csv_metadata → read_csv_metadata with the same frame count and columns.
#include <cstdint>

#include "fuzz_common.hpp"
#include "vibra/store/text_formats.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace vibra;
    const std::string dir = fuzz::scratch();
    const std::string in = dir + "/in.csv.meta.json", again = dir + "/again.csv.meta.json";
    fuzz::write_file(in, data, size);
    store::CsvMetadata m;
    if (!fuzz::accepts([&] { m = store::read_csv_metadata(in); })) return 0;
    store::write_csv_metadata(again, m, store::ColumnSet{}, in);
    const store::CsvMetadata b = store::read_csv_metadata(again);
    fuzz::require(b.n_frames == m.n_frames, "n_frames changed in a write/read round trip");
    fuzz::require(b.frames.timestep == m.frames.timestep && b.frames.image_number == m.frames.image_number &&
                      b.frames.time_s.size() == m.frames.time_s.size(),
                  "per-frame columns changed in a write/read round trip");
    fuzz::require(b.meta.user == m.meta.user && b.meta.species_names == m.meta.species_names,
                  "metadata changed in a write/read round trip");
    return 0;
}
