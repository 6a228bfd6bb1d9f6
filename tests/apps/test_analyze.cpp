// SPDX-License-Identifier: GPL-3.0-or-later
// `vibra analyze`: results layout, provenance, merging, input untouched, bounded memory.
#include <catch2/catch.hpp>

#include <algorithm>
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
    REQUIRE(test::run_vibra("simulate -o " + q(sim) +
                            " --n-small 60 --n-large 60 --frames 40 --equilibrate 20 -q")
                .exit_code == 0);
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
    REQUIRE(std::get<std::vector<double>>(gr2.find("g")->data) ==
            std::get<std::vector<double>>(gr1.find("g")->data));
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
    // --memory 4: the particle-major copy of msd/vacf goes to a temporary file (in memory, it
    // would grow with the input: that is what the budget is for)
    const std::string only = " --only gr,msd,vacf -q --threads 1 --memory 4";
    long rss_small = 0, rss_large = 0;
    REQUIRE(test::run_measured(
                std::string("'") + VIBRA_CLI + "' analyze " + q(small) + " -o " + q(dir.file("rs.h5")) + only,
                rss_small) == 0);
    REQUIRE(test::run_measured(
                std::string("'") + VIBRA_CLI + "' analyze " + q(large) + " -o " + q(dir.file("rl.h5")) + only,
                rss_large) == 0);
    WARN("analyze peak RSS: 60 frames " << rss_small << " kB, 600 frames " << rss_large << " kB");
    // The 600-frame input holds 600k rows (≥ 30 MB as doubles); a bounded analysis stays well below.
    REQUIRE(double(rss_large) < 1.5 * double(rss_small) + 16000.0);
}

TEST_CASE("analyze --memory: the frame analyses read blocks within the budget, results unchanged",
          "[integration]") {
    test::TempDir dir("cli_analyze_frame_blocks");
    const auto sim = dir.file("sim.h5");
    // 5000 disks × 60 frames: 300 000 rows × 49 bytes = 14 MiB, one block by default; with --memory 4
    // a block holds at most 1 MiB (a quarter of the budget): 4 frames.
    REQUIRE(
        test::run_vibra("simulate -o " + q(sim) +
                        " --n-small 2500 --n-large 2500 --frames 60 --equilibrate 0 --steps-per-frame 2 -q")
            .exit_code == 0);
    const std::string only = " --only gr,clusters,number_fluctuations -q --threads 2";
    long rss_default = 0, rss_budget = 0;
    const std::string cli = std::string("'") + VIBRA_CLI + "' analyze " + q(sim) + " -o ";
    REQUIRE(test::run_measured(cli + q(dir.file("a.h5")) + only, rss_default) == 0);
    REQUIRE(test::run_measured(cli + q(dir.file("b.h5")) + only + " --memory 4", rss_budget) == 0);
    WARN("analyze peak RSS: default budget " << rss_default << " kB, --memory 4 " << rss_budget << " kB");
    REQUIRE(double(rss_budget) < double(rss_default) - 8000.0);
    for (const char* name : {"gr", "clusters", "number_fluctuations"}) {
        INFO(name);
        const ResultGroup a = store::read_results(dir.file("a.h5"), name),
                          b = store::read_results(dir.file("b.h5"), name);
        REQUIRE(a.arrays.size() == b.arrays.size());
        for (std::size_t k = 0; k < a.arrays.size(); ++k) {
            INFO(a.arrays[k].name);
            REQUIRE(a.arrays[k].data == b.arrays[k].data);
        }
    }
}

TEST_CASE("analyze --memory: a file whose largest frame does not fit is refused at once, naming the frame",
          "[integration]") {
    test::TempDir dir("cli_analyze_big_frame");
    const auto sim = dir.file("sim.h5"), res = dir.file("res.h5");
    // 2 × 20 000 disks in one frame: 40 000 rows × 49 bytes (frame, particle, x, y, species, vx, vy) = 1.87 MiB
    REQUIRE(test::run_vibra("simulate -o " + q(sim) +
                            " --n-small 20000 --n-large 20000 --frames 1 --equilibrate 0 -q")
                .exit_code == 0);
    const auto r = test::run_vibra("analyze " + q(sim) + " -o " + q(res) + " --only gr --memory 1");
    INFO(r.output);
    REQUIRE(r.exit_code == 1);
    REQUIRE_THAT(r.output,
                 Catch::Contains("frame 0 holds 40000 rows (1.9 MiB as read), more than --memory 1 MiB"));
    REQUIRE_FALSE(fs::exists(res));
    REQUIRE_FALSE(fs::exists(res + ".partial"));
    // 2 MiB holds it: the same run succeeds
    const auto ok = test::run_vibra("analyze " + q(sim) + " -o " + q(res) + " --only gr --memory 2 -q");
    INFO(ok.output);
    REQUIRE(ok.exit_code == 0);
    REQUIRE(store::list_results(res) == std::vector<std::string>{"gr"});
}

TEST_CASE(
    "analyze --memory: copies beyond the budget go to temporary files, currents streams, results unchanged",
    "[integration]") {
    test::TempDir dir("cli_analyze_budget");
    const auto sim = dir.file("sim.h5");
    REQUIRE(test::run_vibra("simulate -o " + q(sim) +
                            " --n-small 150 --n-large 150 --frames 400 --equilibrate 10 -q")
                .exit_code == 0);
    const std::string only = " --only msd,vacf,velocity_distribution,currents -q";
    REQUIRE(test::run_vibra("analyze " + q(sim) + " -o " + q(dir.file("a.h5")) + only + " --threads 1")
                .exit_code == 0);
    // 1 MiB: the track copy (300 × 400 × 32 bytes) and the current series exceed it; 2 threads
    REQUIRE(
        test::run_vibra("analyze " + q(sim) + " -o " + q(dir.file("b.h5")) + only + " --threads 2 --memory 1")
            .exit_code == 0);
    for (const char* name : {"msd", "vacf", "velocity_distribution", "currents"}) {
        INFO(name);
        const ResultGroup a = store::read_results(dir.file("a.h5"), name),
                          b = store::read_results(dir.file("b.h5"), name);
        REQUIRE(a.arrays.size() == b.arrays.size());
        for (std::size_t k = 0; k < a.arrays.size(); ++k) {
            INFO(a.arrays[k].name);
            const auto* x = std::get_if<std::vector<double>>(&a.arrays[k].data);
            const auto* y = std::get_if<std::vector<double>>(&b.arrays[k].data);
            if (x && y && std::string(name) == "currents") {
                // streamed in chunks of frames: direct lag sums instead of full-length FFTs, equal to rounding
                REQUIRE(x->size() == y->size());
                double scale = 0, diff = 0;
                for (std::size_t i = 0; i < x->size(); ++i) {
                    scale = std::max(scale, std::abs((*x)[i]));
                    diff = std::max(diff, std::abs((*x)[i] - (*y)[i]));
                }
                CHECK(diff <= 1e-12 * scale);
            } else if (x && y) {
                REQUIRE(x->size() == y->size());
                CHECK(std::memcmp(x->data(), y->data(), x->size() * sizeof(double)) ==
                      0);  // bit for bit, NaN included
            } else {
                CHECK(a.arrays[k].data == b.arrays[k].data);
            }
        }
    }
}

namespace {
bool has_finite_double(const ResultGroup& g) {
    for (const auto& a : g.arrays)
        if (const auto* v = std::get_if<std::vector<double>>(&a.data))
            for (double x : *v)
                if (std::isfinite(x)) return true;
    return false;
}

std::vector<std::string> skipped_names(const std::string& res) {
    auto root = store::read_results_root(res);
    std::vector<std::string> out;
    for (const auto& s : std::get<std::vector<std::string>>(root.at("skipped_analyses")))
        out.push_back(s.substr(0, s.find(':')));
    return out;
}
}  // namespace

TEST_CASE(
    "analyze on 1- and 2-frame inputs: what cannot be computed is skipped with a reason, never written half",
    "[integration]") {
    test::TempDir dir("cli_analyze_short");
    for (int frames : {1, 2}) {
        INFO(frames << " frame(s)");
        const auto sim = dir.file("short" + std::to_string(frames) + ".h5"),
                   res = dir.file("res" + std::to_string(frames) + ".h5");
        REQUIRE(test::run_vibra("simulate -o " + q(sim) + " --n-small 30 --n-large 30 --frames " +
                                std::to_string(frames) + " --equilibrate 5 -q")
                    .exit_code == 0);
        const auto r = test::run_vibra("analyze " + q(sim) + " -o " + q(res));
        INFO(r.output);
        REQUIRE(r.exit_code == 0);
        const auto groups = store::list_results(res);
        const auto skipped = skipped_names(res);
        CHECK_FALSE(skipped.empty());
        // the dynamics of a single frame cannot be computed: recorded as skipped, not written
        // (velocities are given: temperature and P(v) of one frame are fine)
        std::vector<std::string> expect{"vdos", "currents", "kgap", "tvdos"};  // spectra need runs of frames
        if (frames == 1)
            expect.insert(expect.end(), {"msd", "vacf", "fs"});  // functions of lag need a lag > 0
        for (const auto& n : expect) {
            INFO(n);
            CHECK(std::count(skipped.begin(), skipped.end(), n) == 1);
        }
        CHECK(std::count(groups.begin(), groups.end(), "gr") == 1);  // structure needs one frame
        for (const auto& n : groups) {
            INFO("group " << n);
            CHECK(std::count(skipped.begin(), skipped.end(), n) == 0);
            CHECK(has_finite_double(store::read_results(res, n)));
        }
        // asked for by name: still skipped with the reason, exit 0 while another group is written
        const auto r2 =
            test::run_vibra("analyze " + q(sim) + " -o " + q(dir.file("only.h5")) + " --only gr,vdos -q");
        INFO(r2.output);
        CHECK(r2.exit_code == 0);
        CHECK(skipped_names(dir.file("only.h5")) == std::vector<std::string>{"vdos"});
        // nothing computable at all: an error naming the input and the reasons, no file
        const auto none = dir.file("none" + std::to_string(frames) + ".h5");
        const auto r3 = test::run_vibra("analyze " + q(sim) + " -o " + q(none) + " --only vdos,kgap -q");
        CHECK(r3.exit_code == 1);
        CHECK_THAT(r3.output, Catch::Contains("no analysis could be computed") && Catch::Contains("vdos:") &&
                                  Catch::Contains("kgap: needs currents"));
        CHECK_FALSE(fs::exists(none));
        fs::remove(dir.file("only.h5"));
    }
}

TEST_CASE("an analysis pulls in what it needs: --only kgap runs currents with its own defaults",
          "[integration]") {
    test::TempDir dir("cli_analyze_needs");
    const auto sim = dir.file("sim.h5");
    REQUIRE(test::run_vibra("simulate -o " + q(sim) +
                            " --n-small 100 --n-large 100 --packing-fraction 0.75 --frames 600 "
                            "--equilibrate 20 --seed 3 -q")
                .exit_code == 0);
    const auto res = dir.file("k.h5");
    auto r = test::run_vibra("analyze " + q(sim) + " -o " + q(res) + " --only kgap --kgap-bootstrap 20");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(store::list_results(res) == std::vector<std::string>{"currents", "kgap"});
    CHECK(skipped_names(res).empty());
    const auto cur = store::read_results_attrs(res, "currents");
    const auto opts = std::get<std::vector<std::string>>(cur.at("options"));
    CHECK(std::count(opts.begin(), opts.end(), "--currents-blocks=10") == 1);  // the dependency's own default
    CHECK(std::get<std::string>(store::read_results_attrs(res, "kgap").at("currents_source")) ==
          "earlier currents group");
    // with collective-motion analyses in the same --only
    const auto res2 = dir.file("kc.h5");
    r = test::run_vibra("analyze " + q(sim) + " -o " + q(res2) +
                        " --only field,correlations,kgap --kgap-bootstrap 20 -q");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(store::list_results(res2) == std::vector<std::string>{"correlations", "currents", "field", "kgap"});
}

TEST_CASE("each group records its own input, and merging results of another input needs --force",
          "[integration]") {
    test::TempDir dir("cli_analyze_provenance");
    const auto a = dir.file("a.h5"), b = dir.file("b.h5"), res = dir.file("res.h5");
    const std::string sim = " --n-small 30 --n-large 30 --frames 30 --equilibrate 5 -q";
    REQUIRE(test::run_vibra("simulate -o " + q(a) + sim + " --seed 1").exit_code == 0);
    REQUIRE(test::run_vibra("simulate -o " + q(b) + sim + " --seed 2").exit_code == 0);
    REQUIRE(test::run_vibra("analyze " + q(a) + " -o " + q(res) + " --only gr --gr-bins 20 -q").exit_code ==
            0);
    const auto before = file_checksum(res);
    auto r = test::run_vibra("analyze " + q(b) + " -o " + q(res) + " --only msd");
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output,
               Catch::Contains("refusing to merge") && Catch::Contains("--force") && Catch::Contains(a));
    CHECK_THAT(r.output, !Catch::Contains("analyze: msd"));  // refused before the analyses ran
    CHECK(file_checksum(res) == before);                     // untouched
    r = test::run_vibra("analyze " + q(b) + " -o " + q(res) + " --only msd --force -q");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const auto root = store::read_results_root(res);
    CHECK(std::get<std::string>(root.at("input_path")) == b);
    const auto gr = store::read_results_attrs(res, "gr"), msd = store::read_results_attrs(res, "msd");
    CHECK(std::get<std::string>(gr.at("input_path")) == a);
    CHECK(std::get<std::string>(gr.at("input_checksum")) == file_checksum(a));
    CHECK(std::get<std::string>(msd.at("input_path")) == b);
    CHECK(std::get<std::string>(msd.at("input_checksum")) == file_checksum(b));
    CHECK_THAT(std::get<std::string>(gr.at("parameters")), Catch::Contains("--gr-bins 20"));
    const auto opts = std::get<std::vector<std::string>>(gr.at("options"));
    CHECK(std::count(opts.begin(), opts.end(), "--gr-bins=20") == 1);
    CHECK(std::count(opts.begin(), opts.end(), "--gr-stride=1") == 1);  // defaults recorded too
    // the same input merges without --force
    CHECK(test::run_vibra("analyze " + q(b) + " -o " + q(res) + " --only vacf -q").exit_code == 0);
}

TEST_CASE("analyze several inputs: one results file each in the -o folder, past a broken one",
          "[integration]") {
    test::TempDir dir("cli_analyze_many");
    const auto a = dir.file("a.h5"), b = dir.file("b.h5"), bad = dir.file("bad.h5"), out = dir.file("out");
    const std::string sim = " --n-small 20 --n-large 20 --frames 20 --equilibrate 5 -q";
    REQUIRE(test::run_vibra("simulate -o " + q(a) + sim + " --seed 1").exit_code == 0);
    REQUIRE(test::run_vibra("simulate -o " + q(b) + sim + " --seed 2").exit_code == 0);
    auto r = test::run_vibra("analyze " + q(a) + " " + q(b) + " -o " + q(out) + " --only gr,msd -q");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    for (const auto& [in, name] : {std::pair{a, "a"}, std::pair{b, "b"}}) {
        const auto res = (fs::path(out) / (std::string(name) + "_results.h5")).string();
        REQUIRE(fs::exists(res));
        CHECK(std::get<std::string>(store::read_results_root(res).at("input_checksum")) == file_checksum(in));
        CHECK(store::list_results(res) == std::vector<std::string>{"gr", "msd"});
    }
    test::write_text(bad, "not hdf5");
    r = test::run_vibra("analyze " + q(bad) + " " + q(a) + " -o " + q(dir.file("out2")) + " --only gr -q");
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Catch::Contains("1 of 2 inputs failed") && Catch::Contains(bad));
    CHECK(fs::exists(fs::path(dir.file("out2")) / "a_results.h5"));
}

TEST_CASE(
    "analysis options: typed in --help, checked at parse time with the flag's name, old spellings hidden",
    "[integration]") {
    test::TempDir dir("cli_analyze_options");
    const auto sim = dir.file("sim.h5"), res = dir.file("res.h5");
    REQUIRE(
        test::run_vibra("simulate -o " + q(sim) + " --n-small 20 --n-large 20 --frames 20 --equilibrate 5 -q")
            .exit_code == 0);
    const auto help = test::run_vibra("analyze --help");
    REQUIRE(help.exit_code == 0);
    for (const char* s : {"--kgap-bootstrap INT", "--gr-rmax FLOAT", "--fs-k LIST",
                          "--vdos-transfer-correction BOOL", "--vdos-window TEXT",
                          "--velocity-distribution-threshold FLOAT", "--number-fluctuations-sizes LIST"})
        CHECK_THAT(help.output, Catch::Contains(s));
    CHECK_THAT(help.output,
               !Catch::Contains("velocity_distribution-threshold"));  // the old spelling is hidden
    struct Bad {
        std::string args, flag, why;
    };
    for (const auto& c :
         {Bad{"--kgap-bootstrap 5", "--kgap-bootstrap", "below the minimum 10"},
          Bad{"--gr-bins abc", "--gr-bins", "not an integer"},
          Bad{"--gr-rmax -1", "--gr-rmax", "below the minimum 0"},
          Bad{"--fs-k 1,x", "--fs-k", "not a comma-separated list of numbers"},
          Bad{"--vdos-window hamming", "--vdos-window", "not one of hann, none"},
          Bad{"--vdos-transfer-correction maybe", "--vdos-transfer-correction", "not a boolean"},
          Bad{"--velocity_distribution-bins 0", "--velocity_distribution-bins", "below the minimum 1"}}) {
        const auto r = test::run_vibra("analyze " + q(sim) + " -o " + q(res) + " --only gr " + c.args);
        INFO(c.args << "\n" << r.output);
        CHECK(r.exit_code == 2);
        CHECK_THAT(r.output, Catch::Contains(c.flag + ": ") && Catch::Contains(c.why));
        CHECK_FALSE(fs::exists(res));  // refused before anything was read or written
    }
    // the old spelling still works, for one release, and sets the same option
    auto r = test::run_vibra("analyze " + q(sim) + " -o " + q(res) +
                             " --only velocity_distribution "
                             "--velocity_distribution-bins 31 --velocity-distribution-bootstrap 10 -q");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const auto opts = std::get<std::vector<std::string>>(
        store::read_results_attrs(res, "velocity_distribution").at("options"));
    CHECK(std::count(opts.begin(), opts.end(), "--velocity-distribution-bins=31") == 1);
}

TEST_CASE(
    "a config file: analysis keys are typed, and an unknown key is an error naming the key and the file",
    "[integration]") {
    test::TempDir dir("cli_analyze_config");
    const auto sim = dir.file("sim.h5"), res = dir.file("res.h5"), cfg = dir.file("cfg.toml");
    REQUIRE(
        test::run_vibra("simulate -o " + q(sim) + " --n-small 20 --n-large 20 --frames 20 --equilibrate 5 -q")
            .exit_code == 0);
    test::write_text(cfg, "[analyze]\nonly = \"gr\"\ngr-bins = 17\n");
    auto r = test::run_vibra("--config " + q(cfg) + " analyze " + q(sim) + " -o " + q(res) + " -q");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(store::read_results(res, "gr").find("r")->shape[0] == 17);
    test::write_text(cfg, "[analyze]\nonly = \"gr\"\ngr-bins = \"many\"\n");
    r = test::run_vibra("--config " + q(cfg) + " analyze " + q(sim) + " -o " + q(res) + " -q");
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Catch::Contains("--gr-bins") && Catch::Contains("not an integer"));
    test::write_text(cfg, "[track]\nradius-smal = 6\n");
    r = test::run_vibra("--config " + q(cfg) + " analyze " + q(sim) + " -o " + q(res) + " --only gr -q");
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Catch::Contains("unknown key 'radius-smal'") && Catch::Contains("[track]") &&
                             Catch::Contains(cfg));
    test::write_text(cfg, "quiet = true\nverbosity = 2\n");
    r = test::run_vibra("--config " + q(cfg) + " analyze " + q(sim) + " -o " + q(res) + " --only gr");
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Catch::Contains("unknown key 'verbosity'") && Catch::Contains(cfg));
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
                REQUIRE((std::isnan((*x)[k]) ? std::isnan(y[k])
                                             : std::memcmp(&(*x)[k], &y[k], sizeof(double)) == 0));
        } else {
            REQUIRE(a.arrays[i].data == b.arrays[i].data);
        }
    }
    for (const auto& [k, v] : a.attrs) {
        INFO("attribute " << k);
        if (k == "options" || k == "parameters" || k == "created") continue;  // these name the command line
        REQUIRE(b.attrs.count(k));
        if (const auto* d = std::get_if<double>(&v); d && std::isnan(*d))
            REQUIRE(std::isnan(std::get<double>(b.attrs.at(k))));
        else
            REQUIRE(b.attrs.at(k) == v);
    }
    REQUIRE(a.groups.size() == b.groups.size());
    for (std::size_t i = 0; i < a.groups.size(); ++i)
        require_same_group(a.groups[i], b.groups[i], path + "/" + a.groups[i].name);
}
}  // namespace

TEST_CASE(
    "analyze: every default analysis and the collective ones are bit-identical for --threads 1, 2 and 3",
    "[integration]") {
    test::TempDir dir("analyze_threads");
    const auto sim = dir.file("sim.h5");
    REQUIRE(test::run_vibra("simulate -o " + q(sim) +
                            " --n-small 200 --n-large 200 --packing-fraction 0.7 --frames 600 --seed 2 -q")
                .exit_code == 0);
    std::vector<std::string> outs;
    for (int t : {1, 2, 3}) {
        outs.push_back(dir.file("r" + std::to_string(t) + ".h5"));
        const auto r = test::run_vibra("analyze " + q(sim) + " -o " + q(outs.back()) + " --threads " +
                                       std::to_string(t) + " -q");
        INFO(r.output);
        REQUIRE(r.exit_code == 0);
        const auto c =
            test::run_vibra("analyze " + q(sim) + " -o " + q(outs.back()) + " --threads " +
                            std::to_string(t) + " --only kgap,defects,spectra,correlations,field -q");
        INFO(c.output);
        REQUIRE(c.exit_code == 0);
    }
    const auto names = store::list_results(outs[0]);
    REQUIRE(names.size() >= 15);
    for (std::size_t k = 1; k < outs.size(); ++k) {
        REQUIRE(store::list_results(outs[k]) == names);
        for (const auto& n : names)
            require_same_group(store::read_results(outs[0], n), store::read_results(outs[k], n), n);
    }
}
