// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: a `vibra batch` manifest → load_dataset (apps/vibra/batch/dataset.cpp): the
// TOML subset ([defaults], [[video]], strings with escapes, numbers, booleans, comments) when the
// input starts with a byte whose low bit is 0, else the CSV manifest (RFC 4180 quoting, header
// with a path column). Settings become track/analyze flags, the rest control parameters; every
// entry must come out with a non-empty unique name and an absolute input path.
#include <cstdint>
#include <filesystem>
#include <set>

#include "dataset.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace vibra;
    if (size == 0) return 0;
    const std::string dir = fuzz::scratch();
    const std::string in = dir + ((data[0] & 1) ? "/manifest.csv" : "/manifest.toml");
    fuzz::write_file(in, data + 1, size - 1);
    fuzz::accepts([&] {
        app::batch::DatasetDefaults d;
        d.track = {{"--fps", "1000"}, {"--radius", "5"}};
        const auto ds = app::batch::load_dataset(in, d);
        fuzz::require(!ds.videos.empty(), "a dataset without videos was accepted");
        std::set<std::string> names;
        for (const auto& v : ds.videos) {
            fuzz::require(!v.name.empty() && names.insert(v.name).second, "empty or repeated video name");
            fuzz::require(std::filesystem::path(v.input).is_absolute(), "input path is not absolute");
        }
        app::batch::shard(ds.videos, 1, 3);
    });
    return 0;
}
