// SPDX-License-Identifier: GPL-3.0-or-later
// `vibra analyze IN.h5 [IN2.h5 …] -o RESULTS.h5|DIR [--only LIST]` — runs analyses from the
// registry and merges their groups into RESULTS (atomic), one results file per input. The flags of
// every analysis are registered from the registry (typed, checked at parse time), so this file
// never names an analysis. An analysis the data cannot support is skipped with its reason in
// `skipped_analyses`, never written half; each group records its own input and parameters.
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <new>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "commands.hpp"
#include "vibra/analysis/registry.hpp"
#include "vibra/analysis/track_cache.hpp"
#include "vibra/core/checksum.hpp"
#include "vibra/core/error.hpp"
#include "vibra/core/interrupt.hpp"
#include "vibra/core/memory.hpp"
#include "vibra/core/units.hpp"
#include "vibra/store/results_file.hpp"
#include "vibra/store/trajectory_file.hpp"

namespace vibra::app {

namespace {

namespace fs = std::filesystem;
using analysis::AnalysisSpec;

double process_cpu_seconds() {
    struct rusage ru {};
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           1e-6 * static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

struct Opts {
    std::vector<std::string> inputs;
    std::string output, only, report, units = "auto";
    int threads = 0;
    std::int64_t memory_mb = 2048;
    bool force = false;
    std::map<std::string, std::string> values;
};

std::vector<std::string> split_list(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string tok;
    while (std::getline(ss, tok, ','))
        if (!tok.empty()) out.push_back(tok);
    return out;
}

/// Why a group must not be written although its analysis returned: no data at all, or no finite
/// value in any of its floating-point arrays (an analysis run on too few frames). "" = fine.
std::string half_written(const ResultGroup& g) {
    if (g.arrays.empty() && g.groups.empty()) return "the analysis produced no arrays";
    bool any_double = false;
    for (const auto& a : g.arrays)
        if (const auto* v = std::get_if<std::vector<double>>(&a.data)) {
            any_double = true;
            for (double x : *v)
                if (std::isfinite(x)) return "";
        }
    return any_double ? "no finite value in any array (too few frames or velocities for this analysis)" : "";
}

/// `--flag=value` of every option of `s` (defaults included): the group's parameters.
std::vector<std::string> option_values(const AnalysisSpec& s,
                                       const std::map<std::string, std::string>& values) {
    std::vector<std::string> out;
    for (const auto& opt : s.options) out.push_back("--" + opt.flag + "=" + values.at(opt.flag));
    return out;
}

std::string input_stem(const std::string& input) {
    const std::string stem = fs::path(input).stem().string();
    return stem.empty() ? std::string("input") : stem;
}

std::string mib(std::int64_t bytes) {
    std::ostringstream os;
    os.precision(1);
    os << std::fixed << static_cast<double>(bytes) / double(1 << 20);
    return os.str();
}

/// Bytes one row takes as read: frame, particle, x, y, species and the optional columns present.
std::int64_t bytes_per_row(const store::ColumnSet& c) {
    return 8 + 8 + 16 + 1 + (c.velocity ? 16 : 0) + (c.radius ? 4 : 0) + (c.brightness ? 4 : 0) +
           (c.quality ? 4 : 0) + (c.species_confidence ? 4 : 0) + (c.edge ? 1 : 0);
}

/// The least any analysis holds is one frame's rows. A file whose largest frame does not fit
/// --memory (or what the process may allocate) is refused before any work, naming the frame.
void check_largest_frame(const store::TrajectoryReader& file, std::int64_t memory_mb,
                         const std::string& input) {
    const auto& idx = file.index();
    std::int64_t largest = 0, at = idx.first_frame;
    for (std::int64_t f = idx.first_frame; f < idx.first_frame + idx.n_frames(); ++f)
        if (idx.count(f) > largest) largest = idx.count(f), at = f;
    const std::int64_t bytes = largest * bytes_per_row(file.columns());
    const std::string what = input + ": frame " + std::to_string(at) + " holds " + std::to_string(largest) +
                             " rows (" + mib(bytes) + " MiB as read)";
    if (bytes > (memory_mb << 20))
        throw ResourceError(what + ", more than --memory " + std::to_string(memory_mb) +
                            " MiB allows for one frame; raise --memory");
    check_memory(static_cast<std::uint64_t>(bytes), what);
}

struct RunOutcome {
    std::size_t groups = 0;
    std::vector<std::string> skipped;
    std::string timings;
};

/// Runs the selected analyses on one input and writes (merges) one results file.
RunOutcome analyze_one(const std::string& input, const std::string& output,
                       const std::vector<const AnalysisSpec*>& plan, const std::set<std::string>& wanted,
                       const Opts& o, const GlobalOptions& g) {
    store::TrajectoryReader file(input);
    check_largest_frame(file, o.memory_mb, input);
    // The analyses see the file in the units of --units (core/units.hpp): mm and s when it
    // records the scale and the rate, by default; they label their results from its metadata.
    const UnitSource in_units(file, unit_conversion(file.meta(), unit_system_from_string(o.units), input));
    // Frame blocks read by the analyses hold at most a quarter of --memory (at least one frame):
    // the block as read plus the analyses' own per-row arrays stay within the budget.
    const RowBudgetSource reader(
        in_units, std::max<std::int64_t>(1, (o.memory_mb << 20) / 4 / bytes_per_row(file.columns())));
    const int threads =
        o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    // The input's checksum (provenance): needed at once to refuse a merge into results of another
    // input (before the analyses run, not after); otherwise hashed beside the analyses — unless
    // the address space is limited (ulimit -v), where one more thread's stack and malloc arena
    // (tens of MB of address space) could be what the analyses then miss.
    std::string checksum;
    std::optional<BackgroundChecksum> hashing;
    rlimit as{};
    const bool as_limited = getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY;
    if (threads > 1 && !as_limited && !fs::exists(output)) {
        hashing.emplace(input);
    } else {
        checksum = file_checksum(input);
        store::check_merge(output, {input, checksum, "", {}, o.force});
    }
    const auto input_checksum = [&]() -> const std::string& {
        if (hashing) checksum = hashing->get(), hashing.reset();
        return checksum;
    };
    std::map<std::string, ResultGroup> done;
    std::vector<ResultGroup> groups;
    // One particle-major copy of the input for every per-track analysis of this run (built by the
    // first one that needs it; in memory within --memory, else a temporary file in $TMPDIR).
    analysis::TrackCacheParams cache_params;
    cache_params.memory_bytes = o.memory_mb << 20;
    cache_params.progress = g.progress();
    analysis::TrackCache tracks(reader, cache_params);
    RunOutcome r;
    std::set<std::string> skipped_names;
    auto skip = [&](const AnalysisSpec& s, const std::string& why) {
        if (!g.quiet)
            std::cerr << "vibra: warning: analyze: " << input << ": skipped " << s.name << ": " << why
                      << "\n";
        r.skipped.push_back(s.name + ": " + why);
        skipped_names.insert(s.name);
    };
    for (const AnalysisSpec* sp : plan) {
        const AnalysisSpec& s = *sp;
        std::string missing;
        for (const auto& d : s.needs)
            if (skipped_names.count(d)) missing = d;
        if (!missing.empty()) {
            skip(s, "needs " + missing + ", which was skipped");
            continue;
        }
        throw_if_interrupted();  // between analyses
        analysis::AnalysisContext ctx{reader, o.values, g.progress(),     threads,
                                      &done,  &tracks,  o.memory_mb << 20};
        if (!g.quiet)
            std::cerr << "analyze: " << s.name << (wanted.empty() || wanted.count(s.name) ? "" : " (needed)")
                      << "\n";
        std::vector<ResultGroup> out;
        const auto t0 = std::chrono::steady_clock::now();
        const double c0 = process_cpu_seconds();
        try {
            out = s.run(ctx);
        } catch (const InsufficientData& e) {
            skip(s, e.what());  // asked for or not: the data cannot support it
            continue;
        } catch (const ResourceError& e) {
            // Not the data's fault but this machine's: never recorded as "skipped"; nothing is written.
            throw ResourceError(s.name + ": " + e.what() + "; nothing written to " + output);
        } catch (const std::bad_alloc&) {
            throw ResourceError(s.name + ": out of memory (free memory or ulimit -v) while analysing " +
                                input + "; nothing written to " + output);
        } catch (const std::exception& e) {
            // Asked for by name (or needed by what was): the error is the answer. Part of the
            // default set: reported and skipped so the others still get written.
            if (!wanted.empty()) throw;
            skip(s, e.what());
            continue;
        }
        if (out.empty()) {
            skip(s, "the analysis produced no group");
            continue;
        }
        if (const auto why = half_written(out.front()); !why.empty()) {
            skip(s, why);
            continue;
        }
        r.timings +=
            "time." + s.name + " = " +
            std::to_string(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()) +
            "\ncpu." + s.name + " = " + std::to_string(process_cpu_seconds() - c0) + "\n";
        for (auto& grp : out) {
            // Per-group provenance: a merged results file may hold groups of several runs.
            grp.attrs["input_path"] = input;
            grp.attrs["input_checksum"] = input_checksum();
            grp.attrs["parameters"] = g.command_line;
            grp.attrs["options"] = option_values(s, o.values);
            done[grp.name] = grp;
            groups.push_back(std::move(grp));
        }
    }
    if (groups.empty()) {
        std::string why;
        for (const auto& s : r.skipped) why += "\n  " + s;
        throw InsufficientData(input + ": no analysis could be computed (" +
                               std::to_string(reader.n_frames()) + " frame(s)); nothing written:" + why);
    }
    store::ResultsProvenance prov{input, input_checksum(), g.command_line, r.skipped, o.force};
    store::write_results(output, groups, prov, reader.meta());
    r.groups = groups.size();
    return r;
}

}  // namespace

void register_analyze(CLI::App& app, GlobalOptions& g) {
    auto o = std::make_shared<Opts>();
    auto specs = std::make_shared<std::vector<AnalysisSpec>>(analysis::all_analyses());
    auto* cmd = app.add_subcommand(
        "analyze", "Run analyses on trajectory files; results go to /analysis/<name> of RESULTS.h5");
    cmd->add_option("input", o->inputs,
                    "vibra HDF5 trajectory file(s); several: one results file each in the -o folder")
        ->required()
        ->check(CLI::ExistingFile);
    cmd->add_option(
           "-o,--output", o->output,
           "Results HDF5 file (merged into if it exists); a folder (several inputs, an existing folder or a "
           "path ending in /): <folder>/<input name>_results.h5 per input")
        ->required();
    std::string names;
    for (const auto& s : *specs) names += (names.empty() ? "" : ",") + s.name;
    cmd->add_option("--only", o->only,
                    "Comma-separated analyses to run (default: all default ones); what they need is run too "
                    "(kgap → currents). Available: " +
                        names)
        ->type_name("LIST");
    cmd->add_option("--units", o->units,
                    "Units of the results: auto = mm when the file records its image scale (px_per_mm), s "
                    "when it records a frame rate, else as recorded; mm = mm and s (an error when the file "
                    "lacks either); px = pixels and frames, as measured. Length flags of the analyses "
                    "(e.g. --gr-rmax) are in these units")
        ->check(CLI::IsMember({"auto", "mm", "px"}))
        ->capture_default_str();
    cmd->add_option("--threads", o->threads, "Worker threads (default: all cores)");
    cmd->add_option(
           "--memory", o->memory_mb,
           "Memory budget, MiB, for the particle-major copy of the input shared by the per-track analyses "
           "(msd, vacf, vdos, fs, temperature, velocity_distribution); a larger copy goes to a temporary "
           "file in $TMPDIR, removed at the end. `currents` keeps its series j(k,t) in memory within the "
           "budget, else "
           "streams them in chunks of frames; `defects` samples every frame while its tables fit half the "
           "budget; the blocks of frames every analysis reads hold at most a quarter of it. A file whose "
           "largest "
           "frame does not fit it is refused before any work")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 30))
        ->type_name("MIB");
    cmd->add_flag(
        "--force", o->force,
        "Merge into a results file computed from another input (each group keeps its own input_path)");
    // For `vibra batch`: each analysis' wall and CPU time as `key = value` lines.
    cmd->add_option("--report", o->report, "Write each analysis' wall and CPU time to this file")->group("");
    for (const auto& s : *specs) {
        for (const auto& opt : s.options) {
            o->values[opt.flag] = opt.default_value;
            auto add = [&](const std::string& flag, bool hidden) {
                analysis::AnalysisOption shown = opt;
                shown.flag = flag;
                CLI::Validator check(
                    [shown, hidden](std::string& v) {
                        auto msg = analysis::check_option_value(shown, v);
                        // CLI11 prefixes the flag's name itself (not for hidden options)
                        const std::string pre = "--" + shown.flag + ": ";
                        if (!hidden && msg.rfind(pre, 0) == 0) msg = msg.substr(pre.size());
                        return msg;
                    },
                    "", analysis::type_name(opt.type));
                auto* op = cmd->add_option("--" + flag, o->values[opt.flag], "[" + s.name + "] " + opt.help);
                op->type_name(analysis::type_name(opt.type))->check(check);
                if (hidden)
                    op->group("");
                else if (!opt.default_value.empty())
                    op->capture_default_str();
            };
            add(opt.flag, false);
            // The spelling before every flag used '-' between words, for one release.
            if (const auto old = analysis::legacy_flag(s.name, opt.flag); !old.empty()) add(old, true);
        }
    }
    cmd->callback([o, specs, &g] {
        const auto wanted_list = split_list(o->only);
        const std::set<std::string> wanted(wanted_list.begin(), wanted_list.end());
        const auto plan = analysis::resolve_selection(*specs, wanted_list);
        const bool folder = o->inputs.size() > 1 || fs::is_directory(o->output) ||
                            (!o->output.empty() && o->output.back() == '/');
        if (folder) {
            std::error_code ec;
            fs::create_directories(o->output, ec);
            if (!fs::is_directory(o->output)) throw IoError(o->output + ": cannot create the output folder");
        }
        std::vector<std::string> failed, timings;
        std::set<std::string> outputs;
        for (const auto& in : o->inputs) {
            const std::string out =
                folder ? (fs::path(o->output) / (input_stem(in) + "_results.h5")).string() : o->output;
            if (!outputs.insert(out).second)
                throw ParameterError("two inputs named '" + input_stem(in) +
                                     "' would share the results file " + out);
        }
        std::string report;
        // For the line printed on Ctrl-C: the input being analysed and the results files finished.
        struct Status {
            std::string input, output;
            std::vector<std::string> written;
        };
        auto status = std::make_shared<Status>();
        on_interrupt(g, [status] {
            std::string kept;
            for (const auto& w : status->written) kept += (kept.empty() ? "" : ", ") + w;
            return "while analysing " + status->input + "; kept: " + (kept.empty() ? "" : kept + "; ") +
                   status->output + (fs::exists(status->output) ? " unchanged" : " not written");
        });
        for (const auto& in : o->inputs) {
            const std::string out =
                folder ? (fs::path(o->output) / (input_stem(in) + "_results.h5")).string() : o->output;
            status->input = in;
            status->output = out;
            try {
                const auto r = analyze_one(in, out, plan, wanted, *o, g);
                status->written.push_back(out);
                if (o->inputs.size() == 1)
                    report = r.timings;
                else {
                    std::istringstream lines(r.timings);
                    for (std::string line; std::getline(lines, line);)
                        report += input_stem(in) + "." + line + "\n";
                }
                if (!g.quiet) {
                    std::cout << "wrote " << r.groups << " result group(s) to " << out << "\n";
                    if (!r.skipped.empty())
                        std::cout << "skipped " << r.skipped.size()
                                  << " analysis(es) the data cannot support (see skipped_analyses)\n";
                }
            } catch (const vibra::Error& e) {
                if (o->inputs.size() == 1) throw;
                std::cerr << "vibra: error: " << e.what() << " (skipped)\n";
                failed.push_back(in);
            }
        }
        if (!o->report.empty()) std::ofstream(o->report, std::ios::trunc) << report;
        if (!failed.empty()) {
            std::string msg =
                std::to_string(failed.size()) + " of " + std::to_string(o->inputs.size()) + " inputs failed:";
            for (const auto& f : failed) msg += " " + f;
            throw ExitStatus{1, msg};
        }
    });
}

}  // namespace vibra::app
