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
#include "vibra/core/error.hpp"

#ifndef VIBRA_SOURCE_PYTHON_DIR
#define VIBRA_SOURCE_PYTHON_DIR ""
#endif

namespace vibra::app {

namespace {

namespace fs = std::filesystem;

// The directory holding the package vibra/ (with report.py); throws naming where it looked.
std::string python_dir() {
    std::vector<std::string> tried;
    auto has_package = [&](const fs::path& d) {
        tried.push_back(d.string());
        std::error_code ec;
        return fs::is_regular_file(d / "vibra" / "report.py", ec);
    };
    if (const char* env = std::getenv("VIBRA_PYTHON_DIR"); env && *env) {
        if (has_package(env)) return env;
        throw Error(std::string("VIBRA_PYTHON_DIR=") + env + ": no vibra/report.py in it");
    }
    std::error_code ec;
    const auto exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec && has_package(exe.parent_path().parent_path() / "share" / "vibra" / "python"))
        return (exe.parent_path().parent_path() / "share" / "vibra" / "python").string();
    if (*VIBRA_SOURCE_PYTHON_DIR && has_package(VIBRA_SOURCE_PYTHON_DIR)) return VIBRA_SOURCE_PYTHON_DIR;
    std::string where;
    for (const auto& t : tried) where += "\n  " + t;
    throw Error("cannot find vibra's Python package (vibra/report.py); set VIBRA_PYTHON_DIR to the "
                "directory that holds it (the repository's python/). Looked in:" + where);
}

}  // namespace

void register_report(CLI::App& app, GlobalOptions& g) {
    struct Opts {
        std::string input, output, trajectories;
        int dpi = 90;
    };
    auto o = std::make_shared<Opts>();
    auto* cmd = app.add_subcommand(
        "report", "One self-contained HTML page (figures embedded, no external resources) for a results file or a "
                  "batch output directory: provenance, key numbers with uncertainties, tracking diagnostics, figures");
    cmd->add_option("input", o->input, "Results file (vibra analyze) or batch output directory")
        ->required()->check(CLI::ExistingPath);
    cmd->add_option("-o,--output", o->output, "HTML file to write")->required();
    cmd->add_option("--trajectories", o->trajectories,
                    "The input trajectory file, when it is no longer where the results file records it")
        ->check(CLI::ExistingFile);
    cmd->add_option("--dpi", o->dpi, "Resolution of the embedded figures")->capture_default_str()->check(CLI::Range(20, 600));
    cmd->callback([o, &g] {
        const std::string dir = python_dir();
        const char* env_python = std::getenv("VIBRA_PYTHON");
        const std::string python = env_python && *env_python ? env_python : "/usr/bin/python3";
        const char* old = std::getenv("PYTHONPATH");
        const std::string path = dir + (old && *old ? std::string(":") + old : std::string());
        setenv("PYTHONPATH", path.c_str(), 1);
        setenv("MPLBACKEND", "Agg", 0);  // no display needed; a user's own choice stays
        std::vector<std::string> args{python, "-m", "vibra.report", o->input, "-o", o->output,
                                      "--dpi", std::to_string(o->dpi)};
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
