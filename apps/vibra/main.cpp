// SPDX-License-Identifier: GPL-3.0-or-later
// `vibra` — command-line front end. Exit codes: 0 ok, 1 runtime or data error, 2 usage error.
#include <cstdio>
#include <exception>
#include <iostream>

#include "commands.hpp"
#include "vibra/core/error.hpp"
#include "vibra/core/memory.hpp"
#include "vibra/core/progress.hpp"
#include "vibra/core/version.hpp"

namespace vibra::app {
bool GlobalOptions::progress() const { return !quiet && Progress::stderr_is_interactive(); }
}  // namespace vibra::app

int main(int argc, char** argv) {
    using namespace vibra::app;
    vibra::keep_freed_memory();  // frame after frame, the same large arrays: no page faults for each (core/memory.hpp)
    CLI::App app{"vibra — high-speed video of vibrated granular matter → trajectories → physics"};
    app.set_version_flag("--version", std::string("vibra ") + vibra::version());
    app.set_config("--config", "", "TOML file with settings; keys are the long flag names");
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

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int rc = app.exit(e);  // prints help / version / the usage error
        return rc == 0 ? 0 : 2;
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
