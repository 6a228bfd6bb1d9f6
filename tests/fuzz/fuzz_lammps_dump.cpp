// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: a LAMMPS text dump → vibra::store::import_lammps (the whole reader, streamed
// in blocks of 3 rows so the block flushes run too) → on success the trajectory file it wrote is
// opened and read back with TrajectoryReader and must hold the rows the summary counts; on failure
// nothing may be left at the output name (atomic writes).
#include <cstdint>
#include <filesystem>

#include "fuzz_common.hpp"
#include "fuzz_hdf5.hpp"
#include "vibra/store/text_formats.hpp"
#include "vibra/store/trajectory_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace vibra;
    const std::string dir = fuzz::scratch();
    const std::string in = dir + "/in.dump", out = dir + "/out.h5";
    fuzz::write_file(in, data, size);
    store::ImportOptions opt;
    opt.block_rows = 3;
    store::ImportSummary sum;
    if (!fuzz::accepts([&] { sum = store::import_lammps(in, out, opt); })) {
        fuzz::require(!std::filesystem::exists(out),
                      "import_lammps failed but left a file at the output name");
        fuzz::require(!std::filesystem::exists(out + ".partial"),
                      "import_lammps failed but left OUT.partial");
        return 0;
    }
    store::TrajectoryReader r(out);  // vibra's own output must read back: no error allowed here
    const Trajectory t = r.read_all();
    fuzz::require(r.n_frames() == sum.frames, "frames read back differ from the import summary");
    fuzz::require(static_cast<std::int64_t>(t.rows.size()) == sum.rows,
                  "rows read back differ from the import summary");
    return 0;
}
