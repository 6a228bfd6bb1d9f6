// SPDX-License-Identifier: GPL-3.0-or-later
// `vibra analyze`: results layout, provenance, merging, input untouched, bounded memory.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "test_support.hpp"
#include "vibra/core/checksum.hpp"
#include "vibra/store/results_file.hpp"

using namespace vibra;
namespace fs = std::filesystem;

namespace {
std::string q(const std::string& s) { return "'" + s + "'"; }

void require_units_everywhere(const ResultGroup& g, const std::string& path) {
    for (const auto& a : g.arrays) {
        INFO(path << "/" << a.name);
        REQUIRE_FALSE(a.units.empty());
    }
    for (const auto& sub : g.groups) require_units_everywhere(sub, path + "/" + sub.name);
}
}  // namespace

TEST_CASE("analyze writes provenance, merges groups, and never touches its input", "[integration]") {
    test::TempDir dir("cli_analyze");
    const auto sim = dir.file("sim.h5"), res = dir.file("res.h5");
    REQUIRE(test::run_vibra("simulate -o " + q(sim) + " --n-small 60 --n-large 60 --frames 40 --equilibrate 20 -q").exit_code == 0);
    const auto before = file_checksum(sim);

    auto r = test::run_vibra("analyze " + q(sim) + " -o " + q(res) + " --only gr -q");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    auto root = store::read_results_root(res);
    REQUIRE(std::get<std::string>(root["schema"]) == "vibra-results");
    REQUIRE(std::get<std::string>(root["input_checksum"]) == before);
    REQUIRE(std::get<std::string>(root["input_path"]) == sim);
    REQUIRE(store::list_results(res) == std::vector<std::string>{"gr"});
    const auto gr1 = store::read_results(res, "gr");
    REQUIRE(gr1.find("r") != nullptr);
    REQUIRE(gr1.find("g") != nullptr);
    REQUIRE(gr1.find("g_small_large") != nullptr);
    REQUIRE_FALSE(gr1.attrs.empty());  // parameters recorded
    require_units_everywhere(gr1, "gr");

    r = test::run_vibra("analyze " + q(sim) + " -o " + q(res) + " --only msd -q");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    REQUIRE(store::list_results(res) == std::vector<std::string>{"gr", "msd"});
    const auto gr2 = store::read_results(res, "gr");  // kept as it was
    REQUIRE(std::get<std::vector<double>>(gr2.find("g")->data) == std::get<std::vector<double>>(gr1.find("g")->data));
    const auto msd = store::read_results(res, "msd");
    REQUIRE(msd.find("lag") != nullptr);
    REQUIRE(msd.find("lag_frames") != nullptr);
    require_units_everywhere(msd, "msd");

    // Re-running gr with other parameters replaces only gr.
    r = test::run_vibra("analyze " + q(sim) + " -o " + q(res) + " --only gr --gr-bins 17 -q");
    REQUIRE(r.exit_code == 0);
    REQUIRE(store::read_results(res, "gr").find("r")->shape[0] == 17);
    REQUIRE(store::list_results(res) == std::vector<std::string>{"gr", "msd"});
    REQUIRE(file_checksum(sim) == before);
    REQUIRE_FALSE(fs::exists(res + ".partial"));

    // Usage errors and refusing to overwrite a file that is not a results file.
    REQUIRE(test::run_vibra("analyze " + q(sim) + " -o " + q(res) + " --only nonsense").exit_code == 2);
    const auto clobber = test::run_vibra("analyze " + q(sim) + " -o " + q(sim) + " --only gr");
    REQUIRE(clobber.exit_code == 1);
    REQUIRE_THAT(clobber.output, Catch::Contains("not a vibra results file"));
    REQUIRE(file_checksum(sim) == before);
}

TEST_CASE("analyze streams: 10x the frames does not take 10x the memory", "[integration]") {
    test::TempDir dir("cli_analyze_memory");
    const auto small = dir.file("small.h5"), large = dir.file("large.h5");
    const std::string sim = " --n-small 500 --n-large 500 --equilibrate 0 --steps-per-frame 2 -q";
    REQUIRE(test::run_vibra("simulate -o " + q(small) + " --frames 60" + sim).exit_code == 0);
    REQUIRE(test::run_vibra("simulate -o " + q(large) + " --frames 600" + sim).exit_code == 0);
    const std::string only = " --only gr,msd,vacf -q --threads 1";
    long rss_small = 0, rss_large = 0;
    REQUIRE(test::run_measured(std::string("'") + VIBRA_CLI + "' analyze " + q(small) + " -o " + q(dir.file("rs.h5")) + only,
                               rss_small) == 0);
    REQUIRE(test::run_measured(std::string("'") + VIBRA_CLI + "' analyze " + q(large) + " -o " + q(dir.file("rl.h5")) + only,
                               rss_large) == 0);
    WARN("analyze peak RSS: 60 frames " << rss_small << " kB, 600 frames " << rss_large << " kB");
    // The 600-frame input holds 600k rows (≥ 30 MB as doubles); a bounded analysis stays well below.
    REQUIRE(double(rss_large) < 1.5 * double(rss_small) + 16000.0);
}

namespace {
/// Arrays (NaN = NaN) and attributes of two result groups, bit for bit, recursively.
void require_same_group(const ResultGroup& a, const ResultGroup& b, const std::string& path) {
    INFO(path);
    REQUIRE(a.arrays.size() == b.arrays.size());
    for (std::size_t i = 0; i < a.arrays.size(); ++i) {
        INFO(a.arrays[i].name);
        REQUIRE(a.arrays[i].name == b.arrays[i].name);
        REQUIRE(a.arrays[i].shape == b.arrays[i].shape);
        if (const auto* x = std::get_if<std::vector<double>>(&a.arrays[i].data)) {
            const auto& y = std::get<std::vector<double>>(b.arrays[i].data);
            for (std::size_t k = 0; k < x->size(); ++k)
                REQUIRE((std::isnan((*x)[k]) ? std::isnan(y[k]) : std::memcmp(&(*x)[k], &y[k], sizeof(double)) == 0));
        } else {
            REQUIRE(a.arrays[i].data == b.arrays[i].data);
        }
    }
    for (const auto& [k, v] : a.attrs) {
        INFO("attribute " << k);
        if (k == "options" || k == "parameters" || k == "created") continue;  // these name the command line
        REQUIRE(b.attrs.count(k));
        if (const auto* d = std::get_if<double>(&v); d && std::isnan(*d)) REQUIRE(std::isnan(std::get<double>(b.attrs.at(k))));
        else REQUIRE(b.attrs.at(k) == v);
    }
    REQUIRE(a.groups.size() == b.groups.size());
    for (std::size_t i = 0; i < a.groups.size(); ++i) require_same_group(a.groups[i], b.groups[i], path + "/" + a.groups[i].name);
}
}  // namespace

TEST_CASE("analyze: every default analysis and the collective ones are bit-identical for --threads 1, 2 and 3", "[integration]") {
    test::TempDir dir("analyze_threads");
    const auto sim = dir.file("sim.h5");
    REQUIRE(test::run_vibra("simulate -o " + q(sim) + " --n-small 200 --n-large 200 --packing-fraction 0.7 --frames 600 --seed 2 -q")
                .exit_code == 0);
    std::vector<std::string> outs;
    for (int t : {1, 2, 3}) {
        outs.push_back(dir.file("r" + std::to_string(t) + ".h5"));
        const auto r = test::run_vibra("analyze " + q(sim) + " -o " + q(outs.back()) + " --threads " + std::to_string(t) + " -q");
        INFO(r.output);
        REQUIRE(r.exit_code == 0);
        const auto c = test::run_vibra("analyze " + q(sim) + " -o " + q(outs.back()) + " --threads " + std::to_string(t) +
                                       " --only kgap,defects,spectra,correlations,field -q");
        INFO(c.output);
        REQUIRE(c.exit_code == 0);
    }
    const auto names = store::list_results(outs[0]);
    REQUIRE(names.size() >= 15);
    for (std::size_t k = 1; k < outs.size(); ++k) {
        REQUIRE(store::list_results(outs[k]) == names);
        for (const auto& n : names) require_same_group(store::read_results(outs[0], n), store::read_results(outs[k], n), n);
    }
}
