// SPDX-License-Identifier: GPL-3.0-or-later
#include "test_support.hpp"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace vibra::test {

namespace fs = std::filesystem;

TempDir::TempDir(const std::string& name) {
    path_ = fs::path(VIBRA_BINARY_DIR) / "test-scratch" / (name + "-" + std::to_string(::getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
}
TempDir::~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
}

CommandResult run(const std::string& command) {
    CommandResult r{-1, ""};
    FILE* p = ::popen((command + " 2>&1").c_str(), "r");
    if (!p) throw std::runtime_error("cannot run: " + command);
    std::array<char, 4096> buf;
    std::size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
    const int st = ::pclose(p);
    r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
}

CommandResult run_vibra(const std::string& args) { return run(std::string("'") + VIBRA_CLI + "' " + args); }

int run_measured(const std::string& command, long& peak_rss_kb) {
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
        const std::string cmd = command + " >/dev/null 2>&1";
        ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    int status = 0;
    struct rusage ru {};
    ::wait4(pid, &status, 0, &ru);
    peak_rss_kb = ru.ru_maxrss;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}
void write_text(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
}

fs::path shared_dir() {
    const fs::path p = fs::path(VIBRA_SOURCE_DIR).parent_path() / "shared";
    return fs::is_directory(p) ? p : fs::path();
}

long peak_rss_kb() {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
    return -1;
}

}  // namespace vibra::test
