// SPDX-License-Identifier: GPL-3.0-or-later
// `vibra` — command-line front end. Exit codes: 0 ok, 1 runtime or data error, 2 usage error.
#include <cstdio>
#include <exception>
#include <new>
#include <stdexcept>
#include <system_error>
#include <iostream>

#include "commands.hpp"
#include "vibra/core/error.hpp"
#include "vibra/core/interrupt.hpp"
#include "vibra/core/memory.hpp"
#include "vibra/core/progress.hpp"
#include "vibra/core/version.hpp"

namespace vibra::app {
bool GlobalOptions::progress() const { return !quiet && Progress::stderr_is_interactive(); }

void on_interrupt(GlobalOptions& g, std::function<std::string()> note) {
    vibra::install_interrupt_handlers();
    g.interrupt_note = std::move(note);
}

namespace {
/// CLI11's "INI was not able to parse analyze.radius-smal" → "--config FILE: unknown key
/// 'radius-smal' in section [analyze] (keys are the long flag names of that subcommand)".
std::string config_error_message(const std::string& what, const std::string& file) {
    const std::string extras = "INI was not able to parse ";
    if (what.rfind(extras, 0) != 0) return "--config " + file + ": " + what;
    const std::string item = what.substr(extras.size());
    const auto dot = item.rfind('.');
    if (dot == std::string::npos)
        return "--config " + file + ": unknown key '" + item +
               "' (top-level keys are the global flags: quiet, verbose)";
    return "--config " + file + ": unknown key '" + item.substr(dot + 1) + "' in section [" +
           item.substr(0, dot) + "] (keys are the long flag names of that subcommand, without --)";
}
}  // namespace
}  // namespace vibra::app

int main(int argc, char** argv) {
    using namespace vibra::app;
    vibra::
        keep_freed_memory();  // frame after frame, the same large arrays: no page faults for each (core/memory.hpp)
    CLI::App app{"vibra — high-speed video of vibrated granular matter → trajectories → physics"};
    app.set_version_flag("--version", std::string("vibra ") + vibra::version());
    auto* config = app.set_config("--config", "", "TOML file with settings; keys are the long flag names");
    // A misspelt key must not be ignored silently: it is an error naming the key and the file.
    app.allow_config_extras(CLI::config_extras_mode::error);
    app.require_subcommand(1);
    app.fallthrough();  // global flags (-q, -v, --config) may follow the subcommand
    GlobalOptions g;
    for (int i = 0; i < argc; ++i) g.command_line += (i ? " " : "") + std::string(argv[i]);
    app.add_flag("-q,--quiet", g.quiet, "No progress or summaries, errors only");
    app.add_flag("-v,--verbose", g.verbose, "More detail (repeat for more)");

    register_import(app, g);
    register_export(app, g);
    register_info(app, g);
    register_analyze(app, g);
    register_simulate(app, g);
    register_extra_commands(app, g);

    // CLI11 2.1 converts a flag's value with std::stoll and lets its std::out_of_range escape
    // (`verbose = 99999999999999999999` in a --config file): before the command runs, that is a usage error.
    bool parsed = false;
    app.parse_complete_callback([&parsed] { parsed = true; });
    try {
        app.parse(argc, argv);
    } catch (const std::out_of_range& e) {
        if (parsed) {
            std::cerr << "vibra: error: " << e.what() << "\n";
            return 1;
        }
        std::cerr << "vibra: error: a flag's value is a number out of range (on the command line"
                  << (config->count() ? " or in --config " + config->as<std::string>() : std::string())
                  << ")\n";
        return 2;
    } catch (const CLI::ConfigError& e) {
        std::cerr << "vibra: error: " << config_error_message(e.what(), config->as<std::string>()) << "\n";
        return 2;
    } catch (const CLI::ParseError& e) {
        const int rc = app.exit(e);  // prints help / version / the usage error
        return rc == 0 ? 0 : 2;
    } catch (const vibra::Interrupted& s) {
        // One line: what was interrupted and what was kept; temporaries are already removed.
        const auto subs = app.get_subcommands();
        const std::string cmd = subs.empty() ? std::string("vibra") : "vibra " + subs.front()->get_name();
        std::cerr << cmd << ": interrupted (" << s.name() << ")"
                  << (g.interrupt_note ? " " + g.interrupt_note() : std::string()) << "\n";
        return s.exit_code();
    } catch (const std::bad_alloc&) {
        std::cerr << "vibra: error: out of memory (the machine's memory or a ulimit -v limit is too small "
                     "for this input; "
                     "fewer --threads may help)\n";
        return 1;
    } catch (const std::system_error& e) {
        if (e.code() == std::errc::resource_unavailable_try_again) {  // std::thread under ulimit -u / -v
            std::cerr << "vibra: error: cannot start a thread: " << e.what()
                      << " (a process or memory limit: ulimit -u / ulimit -v; try --threads 1)\n";
            return 1;
        }
        std::cerr << "vibra: error: " << e.what() << "\n";
        return 1;
    } catch (const ExitStatus& s) {
        if (!s.message.empty()) std::cerr << "vibra: " << s.message << "\n";
        return s.code;
    } catch (const vibra::ParameterError& e) {
        std::cerr << "vibra: error: " << e.what() << "\n";
        return 2;
    } catch (const std::invalid_argument& e) {
        std::cerr << "vibra: error: " << e.what() << "\n";
        return 2;
    } catch (const vibra::Error& e) {
        std::cerr << "vibra: error: " << e.what() << "\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "vibra: error: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
