// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: the bytes of an HDF5 file → the results-file readers (read_results_root,
// list_results, read_results and read_results_attrs of every group: attributes of every type,
// arrays of any rank, nested groups), the table reader (read_table_h5, the campaign table of
// vibra batch), and a merge into it (write_results, which validates and copies the old file).
// Seeds (make_h5_seeds): small valid results and campaign files and damaged variants. The readers
// open the bytes in memory (detail::ScopedFileImage: HDF5's core driver); only the merge, when a
// reader accepted the file (else the merge's own validation would refuse it too), writes it to disk.
#include <cstdint>
#include <filesystem>
#include <string>

#include "detail/h5.hpp"
#include "fuzz_common.hpp"
#include "fuzz_hdf5.hpp"
#include "vibra/store/results_file.hpp"
#include "vibra/store/table_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace vibra;
    if (!fuzz::global_heap_sound(data, size)) return -1;  // HDF5 1.10 loops or overreads: not fuzzed
    const std::string dir = fuzz::scratch();
    const std::string in = dir + "/in.h5";
    bool root_ok = false, list_ok = false;
    {
        const store::detail::ScopedFileImage image(data, size);
        root_ok = fuzz::accepts([&] { store::read_results_root(in); });
        list_ok = fuzz::accepts([&] {
            for (const auto& name : store::list_results(in)) {
                fuzz::accepts([&] { store::read_results(in, name); });
                fuzz::accepts([&] { store::read_results_attrs(in, name); });
            }
        });
        fuzz::accepts([&] { store::read_table_h5(in, "vibra-campaign", "campaign"); });
    }
    if (!root_ok && !list_ok) return 0;
    fuzz::write_file(in, data, size);
    // Merging into it: the old file is validated and copied; a failed merge leaves it untouched.
    const auto before = std::filesystem::file_size(in);
    ResultGroup g;
    g.name = "fuzz";
    g.add("v", {1.0, 2.0}, "1");
    store::ResultsProvenance prov;
    prov.input_path = "fuzz.h5";
    prov.input_checksum = "sha256:0";
    prov.force = true;
    if (!fuzz::accepts([&] { store::write_results(in, {g}, prov, Metadata{}); })) {
        fuzz::require(std::filesystem::file_size(in) == before,
                      "a failed merge changed the old results file");
        fuzz::require(!std::filesystem::exists(in + ".partial"), "a failed merge left IN.partial");
    }
    return 0;
}
