// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: a `--config FILE` (TOML) → CLI11's config reader with vibra's settings
// (apps/vibra/main.cpp: set_config("--config"), allow_config_extras(error), require_subcommand(1),
// fallthrough) and two subcommands shaped as `analyze` and `track` (a required positional list,
// required -o, double / int / string options, flags, a flag callback, an option with a validator,
// a hidden option). The real register_analyze / register_track are not linked (they pull in the
// analysis and tracking modules): what is fuzzed is the TOML parsing and the conversion of its
// values into typed options. Contract: the command line parses, or CLI11 throws CLI::ParseError
// (main() prints it and exits 2), or a vibra error; nothing else.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "fuzz_common.hpp"

namespace {

struct Opts {
    std::vector<std::string> inputs;
    std::string output, only, radii, frames, roi, report;
    int threads = 0, channel = -1, memory = 3;
    double radius = 0, radius_small = 0, max_step = 0, fps = 0, min_score = 0.3;
    bool force = false, invert = false, predict = false, warm = true;
    std::int64_t restart_every = 0;
    std::string lag_max = "100";
};

void define(CLI::App& app, Opts& o) {
    app.set_config("--config", "", "TOML file with settings; keys are the long flag names");
    app.allow_config_extras(CLI::config_extras_mode::error);
    app.require_subcommand(1);
    app.fallthrough();
    static bool quiet = false;
    static int verbose = 0;
    app.add_flag("-q,--quiet", quiet);
    app.add_flag("-v,--verbose", verbose);
    auto* an = app.add_subcommand("analyze", "");
    an->add_option("input", o.inputs)->required();
    an->add_option("-o,--output", o.output)->required();
    an->add_option("--only", o.only)->type_name("LIST");
    an->add_option("--threads", o.threads);
    an->add_flag("--force", o.force);
    an->add_option("--report", o.report)->group("");
    CLI::Validator positive_int(
        [](std::string& v) -> std::string {
            try {
                std::size_t pos = 0;
                const long long x = std::stoll(v, &pos);
                if (pos != v.size() || x <= 0) return "must be a positive integer, got '" + v + "'";
            } catch (const std::exception&) {
                return "must be a positive integer, got '" + v + "'";
            }
            return "";
        },
        "", "INT");
    an->add_option("--lag-max", o.lag_max)->check(positive_int)->capture_default_str();
    an->add_option("--lag_max", o.lag_max)->check(positive_int)->group("");
    auto* tr = app.add_subcommand("track", "");
    tr->add_option("INPUT", o.inputs)->required();
    tr->add_option("-o,--output", o.output)->required();
    tr->add_option("--radius", o.radius);
    tr->add_option("--radius-small", o.radius_small);
    tr->add_option("--radii", o.radii);
    tr->add_flag("--invert", o.invert);
    tr->add_option("--min-score", o.min_score)->capture_default_str();
    tr->add_option("--max-step", o.max_step)->capture_default_str();
    tr->add_option("--memory", o.memory)->capture_default_str();
    tr->add_flag("--predict", o.predict);
    tr->add_flag_callback("--cold", [&o] { o.warm = false; });
    tr->add_option("--fps", o.fps);
    tr->add_option("--channel", o.channel)->capture_default_str();
    tr->add_option("--frames", o.frames);
    tr->add_option("--roi", o.roi);
    tr->add_option("--restart-every", o.restart_every)->capture_default_str();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace vibra;
    const std::string dir = fuzz::scratch();
    const std::string cfg = dir + "/config.toml";
    fuzz::write_file(cfg, data, size);
    for (const char* sub : {"analyze", "track"}) {
        Opts o;
        CLI::App app{"vibra"};
        define(app, o);
        std::vector<std::string> args = {"vibra", sub, "in.h5", "-o", "out.h5", "--config", cfg};
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        bool parsed = false;
        app.parse_complete_callback([&parsed] { parsed = true; });
        fuzz::accepts([&] {
            try {
                app.parse(static_cast<int>(argv.size()), argv.data());
            } catch (const CLI::ParseError&) {
                // main(): "vibra: error: --config FILE: …", exit 2
            } catch (const std::out_of_range&) {
                // CLI11 2.1's std::stoll on a flag's value (`verbose = 999…9`, regress-flag-out-of-range):
                // main(): "a flag's value is a number out of range", exit 2. Only while parsing.
                if (parsed) throw;
            }
        });
    }
    return 0;
}
