// SPDX-License-Identifier: GPL-3.0-or-later
// `vibra report IN -o report.html`: one self-contained HTML page for a results file or a batch
// output directory. The page is made by the Python package (python/vibra/report.py: matplotlib
// figures, h5py), so this command runs `python3 -m vibra.report` in place of itself, with
// PYTHONPATH set to the package's directory: $VIBRA_PYTHON_DIR when set, else <prefix>/share/vibra/python
// beside an installed vibra, else the source tree's python/ recorded at build time.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <vector>

#include "commands.hpp"
#include "python_package.hpp"
#include "vibra/core/error.hpp"

namespace vibra::app {

void register_report(CLI::App& app, GlobalOptions& g) {
    struct Opts {
        std::string input, output, trajectories;
        int dpi = 90;
    };
    auto o = std::make_shared<Opts>();
    auto* cmd = app.add_subcommand(
        "report",
        "One self-contained HTML page (figures embedded, no external resources) for a results file or a "
        "batch output directory: provenance, key numbers with uncertainties, tracking diagnostics, figures");
    cmd->add_option("input", o->input, "Results file (vibra analyze) or batch output directory")
        ->required()
        ->check(CLI::ExistingPath);
    cmd->add_option("-o,--output", o->output, "HTML file to write")->required();
    cmd->add_option("--trajectories", o->trajectories,
                    "The input trajectory file, when it is no longer where the results file records it")
        ->check(CLI::ExistingFile);
    cmd->add_option("--dpi", o->dpi, "Resolution of the embedded figures")
        ->capture_default_str()
        ->check(CLI::Range(20, 600));
    cmd->callback([o, &g] {
        use_python_package();
        const char* env_python = std::getenv("VIBRA_PYTHON");
        const std::string python = env_python && *env_python ? env_python : "/usr/bin/python3";
        std::vector<std::string> args{python, "-m",      "vibra.report", o->input,
                                      "-o",   o->output, "--dpi",        std::to_string(o->dpi)};
        if (!o->trajectories.empty()) args.insert(args.end(), {"--trajectories", o->trajectories});
        if (g.quiet) args.emplace_back("-q");
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        std::cout.flush();
        std::cerr.flush();
        execv(python.c_str(), argv.data());
        throw Error("cannot run " + python + " (for vibra.report): " + std::strerror(errno) +
                    "; set VIBRA_PYTHON to a Python 3 with h5py, numpy, pandas and matplotlib");
    });
}

}  // namespace vibra::app
