// SPDX-License-Identifier: GPL-3.0-or-later
#include "python_package.hpp"

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "vibra/core/error.hpp"

#ifndef VIBRA_SOURCE_PYTHON_DIR
#define VIBRA_SOURCE_PYTHON_DIR ""
#endif

namespace vibra::app {

namespace fs = std::filesystem;

std::string python_package_dir() {
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
    throw Error(
        "cannot find vibra's Python package (vibra/report.py); set VIBRA_PYTHON_DIR to the "
        "directory that holds it (the repository's python/). Looked in:" +
        where);
}

std::string use_python_package() {
    const std::string dir = python_package_dir();
    const char* old = std::getenv("PYTHONPATH");
    const std::string path = dir + (old && *old ? std::string(":") + old : std::string());
    setenv("PYTHONPATH", path.c_str(), 1);
    setenv("MPLBACKEND", "Agg", 0);  // no display needed; a user's own choice stays
    return dir;
}

}  // namespace vibra::app
