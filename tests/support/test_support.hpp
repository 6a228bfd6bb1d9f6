// SPDX-License-Identifier: GPL-3.0-or-later
// Shared test helpers: scratch directories, running the CLI, reading files.
#pragma once

#include <filesystem>
#include <string>

namespace vibra::test {

/// A fresh directory under the build tree's test scratch area, removed on destruction.
class TempDir {
public:
    explicit TempDir(const std::string& name);
    ~TempDir();
    const std::filesystem::path& path() const { return path_; }
    std::string file(const std::string& name) const { return (path_ / name).string(); }

private:
    std::filesystem::path path_;
};

struct CommandResult {
    int exit_code;
    std::string output;  ///< stdout + stderr
};
/// Runs a shell command, capturing stdout and stderr together.
CommandResult run(const std::string& command);
/// Runs the vibra CLI with arguments (a shell-quoted string).
CommandResult run_vibra(const std::string& args);

/// Runs a shell command (output discarded) and returns its exit code; `peak_rss_kb` receives the
/// child's peak resident set size (getrusage via wait4), for memory-bound checks.
int run_measured(const std::string& command, long& peak_rss_kb);

std::string read_text(const std::string& path);
void write_text(const std::string& path, const std::string& text);

/// ../shared (beside the clone) if present, else empty.
std::filesystem::path shared_dir();

/// Peak resident set size of this process so far (kB), from /proc/self/status (VmHWM).
long peak_rss_kb();

}  // namespace vibra::test
