// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: a trackpy-style CSV, optionally with its metadata sidecar → import_csv.
// The input is the CSV; when it holds a NUL byte, the bytes after the first NUL are the sidecar
// `<csv>.meta.json` (so the fuzzer mutates both and their interplay: frame counts, per-frame
// columns). Rows flush in blocks of 3. On success the file written must read back with the rows
// the summary counts; on failure nothing may be left at the output name.
#include <cstdint>
#include <cstring>
#include <filesystem>

#include "fuzz_common.hpp"
#include "fuzz_hdf5.hpp"
#include "vibra/store/text_formats.hpp"
#include "vibra/store/trajectory_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace vibra;
    const std::string dir = fuzz::scratch();
    const std::string in = dir + "/in.csv", out = dir + "/out.h5";
    const auto* nul = static_cast<const std::uint8_t*>(std::memchr(data, 0, size));
    const std::size_t csv_size = nul ? static_cast<std::size_t>(nul - data) : size;
    fuzz::write_file(in, data, csv_size);
    if (nul) fuzz::write_file(store::csv_metadata_path(in), nul + 1, size - csv_size - 1);
    store::ImportOptions opt;
    opt.block_rows = 3;
    store::ImportSummary sum;
    if (!fuzz::accepts([&] { sum = store::import_csv(in, out, opt); })) {
        fuzz::require(!std::filesystem::exists(out), "import_csv failed but left a file at the output name");
        fuzz::require(!std::filesystem::exists(out + ".partial"), "import_csv failed but left OUT.partial");
        return 0;
    }
    store::TrajectoryReader r(out);
    const Trajectory t = r.read_all();
    fuzz::require(r.n_frames() == sum.frames, "frames read back differ from the import summary");
    fuzz::require(static_cast<std::int64_t>(t.rows.size()) == sum.rows,
                  "rows read back differ from the import summary");
    return 0;
}
