// SPDX-License-Identifier: GPL-3.0-or-later
// `vibra analyze IN.h5 -o RESULTS.h5 [--only LIST]` — runs analyses from the registry and merges
// their groups into RESULTS (atomic). The flags of every analysis are registered from the
// registry, so this file never names an analysis.
#include <sys/resource.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "commands.hpp"
#include "vibra/analysis/registry.hpp"
#include "vibra/core/checksum.hpp"
#include "vibra/core/error.hpp"
#include "vibra/store/results_file.hpp"
#include "vibra/store/trajectory_file.hpp"

namespace vibra::app {

namespace {
double process_cpu_seconds() {
    struct rusage ru {};
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + 1e-6 * static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}
}  // namespace

void register_analyze(CLI::App& app, GlobalOptions& g) {
    struct Opts {
        std::string input, output, only, report;
        int threads = 0;
        std::map<std::string, std::string> values;
    };
    auto o = std::make_shared<Opts>();
    auto specs = std::make_shared<std::vector<analysis::AnalysisSpec>>(analysis::all_analyses());
    auto* cmd = app.add_subcommand("analyze", "Run analyses on a trajectory file; results go to /analysis/<name> of RESULTS.h5");
    cmd->add_option("input", o->input, "vibra HDF5 trajectory file")->required()->check(CLI::ExistingFile);
    cmd->add_option("-o,--output", o->output, "Results HDF5 file (merged into if it exists)")->required();
    std::string names;
    for (const auto& s : *specs) names += (names.empty() ? "" : ",") + s.name;
    cmd->add_option("--only", o->only, "Comma-separated analyses to run (default: all default ones). Available: " + names);
    cmd->add_option("--threads", o->threads, "Worker threads (default: all cores)");
    // For `vibra batch`: each analysis' wall and CPU time as `key = value` lines.
    cmd->add_option("--report", o->report, "Write each analysis' wall and CPU time to this file")->group("");
    for (const auto& s : *specs) {
        for (const auto& opt : s.options) {
            o->values[opt.flag] = opt.default_value;
            auto* op = cmd->add_option("--" + opt.flag, o->values[opt.flag], "[" + s.name + "] " + opt.help);
            if (!opt.default_value.empty()) op->capture_default_str();
        }
    }
    cmd->callback([o, specs, &g] {
        std::set<std::string> wanted;
        if (!o->only.empty()) {
            std::stringstream ss(o->only);
            std::string tok;
            while (std::getline(ss, tok, ',')) {
                bool known = false;
                for (const auto& s : *specs) known |= s.name == tok;
                if (!known) throw ParameterError("--only: unknown analysis '" + tok + "'");
                wanted.insert(tok);
            }
        }
        store::TrajectoryReader reader(o->input);
        std::map<std::string, ResultGroup> done;
        std::vector<ResultGroup> groups;
        const int threads = o->threads > 0 ? o->threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
        std::vector<std::string> skipped;
        std::string timings;
        for (const auto& s : *specs) {
            if (wanted.empty() ? !s.default_on : !wanted.count(s.name)) continue;
            analysis::AnalysisContext ctx{reader, o->values, g.progress(), threads, &done};
            if (!g.quiet) std::cerr << "analyze: " << s.name << "\n";
            std::vector<ResultGroup> out;
            const auto t0 = std::chrono::steady_clock::now();
            const double c0 = process_cpu_seconds();
            try {
                out = s.run(ctx);
                timings += "time." + s.name + " = " +
                           std::to_string(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()) +
                           "\ncpu." + s.name + " = " + std::to_string(process_cpu_seconds() - c0) + "\n";
            } catch (const std::exception& e) {
                // Asked for by name: the error is the answer. Part of the default set: an analysis
                // the data cannot support (too short for a bootstrap, a liquid for the covariance
                // VDOS, …) is reported and skipped so the others still get written.
                if (!wanted.empty()) throw;
                std::cerr << "vibra: warning: analyze: skipped " << s.name << ": " << e.what() << "\n";
                skipped.push_back(s.name + ": " + e.what());
                continue;
            }
            for (auto& grp : out) {
                done[grp.name] = grp;
                groups.push_back(std::move(grp));
            }
        }
        if (groups.empty()) throw ParameterError("nothing to run: no analysis selected or none could run");
        store::ResultsProvenance prov{o->input, file_checksum(o->input), g.command_line, skipped};
        store::write_results(o->output, groups, prov, reader.meta());
        if (!o->report.empty()) std::ofstream(o->report, std::ios::trunc) << timings;
        if (!g.quiet) std::cout << "wrote " << groups.size() << " result group(s) to " << o->output << "\n";
        if (!skipped.empty() && !g.quiet)
            std::cout << "skipped " << skipped.size() << " analysis(es) the data cannot support (see warnings)\n";
    });
}

}  // namespace vibra::app
