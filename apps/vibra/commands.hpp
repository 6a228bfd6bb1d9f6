// SPDX-License-Identifier: GPL-3.0-or-later
// The `vibra` subcommands. Each registers itself on the CLI11 app and runs in its callback;
// errors propagate as exceptions to main(), which maps them to exit codes
// (0 ok, 1 runtime or data error, 2 usage error).
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

namespace vibra::app {

/// Options every subcommand sees.
struct GlobalOptions {
    bool quiet = false;
    int verbose = 0;
    std::string command_line;  ///< the whole argv, recorded as provenance
    /// Progress lines only when not quiet and stderr is a terminal.
    bool progress() const;
    /// Set by a command that writes: what it is doing and what an interruption keeps, for the one
    /// line main() prints on SIGINT/SIGTERM, e.g. "while computing msd of a.h5; kept: nothing
    /// (results.h5 unchanged)".
    std::function<std::string()> interrupt_note;
};

/// Installs the SIGINT/SIGTERM handlers (vibra/core/interrupt.hpp) and sets g.interrupt_note.
void on_interrupt(GlobalOptions& g, std::function<std::string()> note);

/// Thrown by a command that finished but must exit non-zero (e.g. a batch with a broken input,
/// a truncated video kept as incomplete). The message is printed as the summary.
struct ExitStatus {
    int code;
    std::string message;
};

void register_import(CLI::App& app, GlobalOptions& g);
void register_export(CLI::App& app, GlobalOptions& g);
void register_info(CLI::App& app, GlobalOptions& g);
void register_analyze(CLI::App& app, GlobalOptions& g);
void register_simulate(CLI::App& app, GlobalOptions& g);
// Later modules add their registration functions here (track, synth, render, analyze, convert).
void register_convert(CLI::App& app, GlobalOptions& g);  // cmd_video_convert.cpp (tracking only)
void register_synth(CLI::App& app, GlobalOptions& g);    // cmd_tracking_synth.cpp (tracking only)
void register_render(CLI::App& app, GlobalOptions& g);   // cmd_tracking_render.cpp (tracking only)
void register_track(CLI::App& app, GlobalOptions& g);    // cmd_tracking_track.cpp (tracking only)
void register_batch(CLI::App& app, GlobalOptions& g);    // cmd_tracking_batch.cpp (tracking only)
void register_report(CLI::App& app, GlobalOptions& g);   // cmd_report.cpp (runs python3 -m vibra.report)
void register_extra_commands(CLI::App& app, GlobalOptions& g);

}  // namespace vibra::app
