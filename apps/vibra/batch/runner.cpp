// SPDX-License-Identifier: GPL-3.0-or-later
#include "runner.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "vibra/core/error.hpp"
#include "vibra/core/output_file.hpp"

namespace vibra::app::batch {

namespace fs = std::filesystem;

namespace {
std::atomic<int> g_stop{0};
std::atomic<pid_t> g_child{0};

void on_stop(int sig) {
    g_stop = sig;
    const pid_t c = g_child.load();
    if (c > 0) ::kill(c, sig);  // a child not in our terminal's process group (e.g. under Slurm) hears it too
}

std::string last_error_line(const std::string& log_path, std::streamoff from) {
    std::ifstream in(log_path, std::ios::binary);
    in.seekg(from);
    std::string line, last, last_any;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        last_any = line;
        if (line.find("error") != std::string::npos || line.find("Error") != std::string::npos ||
            line.find("Traceback") != std::string::npos)
            last = line;
    }
    if (last.empty()) last = last_any;
    if (last.rfind("vibra: error: ", 0) == 0)
        last = last.substr(14);
    else if (last.rfind("vibra: ", 0) == 0)
        last = last.substr(7);
    return last;
}
}  // namespace

void install_stop_handlers() {
    struct sigaction sa {};
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
}

int stop_signal() { return g_stop.load(); }

std::string self_executable() {
    std::error_code ec;
    auto p = fs::read_symlink("/proc/self/exe", ec);
    if (ec) throw IoError("cannot find the running program (/proc/self/exe): " + ec.message());
    return p.string();
}

StageRun run_stage(const std::vector<std::string>& argv, const std::string& log_path) {
    StageRun r;
    const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) throw IoError(log_path + ": cannot open the log: " + std::strerror(errno));
    const std::streamoff log_start = static_cast<std::streamoff>(::lseek(log_fd, 0, SEEK_END));
    {
        std::string line = "$";
        for (const auto& a : argv) line += " " + a;
        line += "\n";
        if (::write(log_fd, line.data(), line.size()) < 0) { /* the log is best effort */
        }
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const pid_t parent = ::getpid();
    const auto t0 = std::chrono::steady_clock::now();
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(log_fd);
        throw IoError("cannot start " + argv[0] + ": " + std::strerror(errno));
    }
    if (pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // the batch died (even by kill -9): so does this stage
        if (::getppid() != parent) ::_exit(137);
        struct sigaction dfl {};
        dfl.sa_handler = SIG_DFL;
        sigaction(SIGINT, &dfl, nullptr);
        sigaction(SIGTERM, &dfl, nullptr);
        ::dup2(log_fd, 1);
        ::dup2(log_fd, 2);
        const int devnull = ::open("/dev/null", O_RDONLY);
        if (devnull >= 0) ::dup2(devnull, 0);
        ::execv(args[0], args.data());
        const std::string msg =
            std::string("vibra: error: cannot run ") + args[0] + ": " + std::strerror(errno) + "\n";
        if (::write(2, msg.data(), msg.size()) < 0) { /* nothing more to do */
        }
        ::_exit(127);
    }
    g_child = pid;
    if (g_stop.load()) ::kill(pid, g_stop.load());
    int status = 0;
    struct rusage ru {};
    while (::wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {}
    g_child = 0;
    ::close(log_fd);
    r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.cpu_seconds = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                    1e-6 * static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
    r.peak_rss_mb = static_cast<double>(ru.ru_maxrss) / 1024.0;
    if (WIFEXITED(status)) {
        r.exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        r.exit_code = 128 + WTERMSIG(status);
        r.error = std::string("killed by signal ") + strsignal(WTERMSIG(status));
    }
    if (r.exit_code != 0 && r.error.empty()) r.error = last_error_line(log_path, log_start);
    return r;
}

// ---- locks ------------------------------------------------------------------------------------
FileLock::~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // releases the flock
}

bool FileLock::try_lock() {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw IoError(path_ + ": cannot open the lock file: " + std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
        ::close(fd_);
        fd_ = -1;
        return false;
    }
    const std::string pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd_, 0) == 0 &&
        ::pwrite(fd_, pid.data(), pid.size(), 0) < 0) { /* the PID is informative only */
    }
    return true;
}

void FileLock::lock() {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw IoError(path_ + ": cannot open the lock file: " + std::strerror(errno));
    while (::flock(fd_, LOCK_EX) != 0)
        if (errno != EINTR) throw IoError(path_ + ": cannot lock: " + std::strerror(errno));
}

std::string FileLock::holder() const {
    std::ifstream in(path_);
    std::string pid;
    in >> pid;
    return pid.empty() ? "another process" : "PID " + pid;
}

// ---- state ------------------------------------------------------------------------------------
State read_state(const std::string& path) {
    State s;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        const auto eq = line.find(" = ");
        if (eq == std::string::npos) continue;
        std::string v = line.substr(eq + 3);
        std::string out;
        for (std::size_t i = 0; i < v.size(); ++i) {  // \n and \\ escaped
            if (v[i] == '\\' && i + 1 < v.size())
                out += v[++i] == 'n' ? '\n' : v[i];
            else
                out += v[i];
        }
        s[line.substr(0, eq)] = out;
    }
    return s;
}

void write_state(const std::string& path, const State& s) {
    const std::string tmp = path + ".partial";
    {
        std::ofstream os(tmp, std::ios::trunc);
        for (const auto& [k, v] : s) {
            std::string e;
            for (char c : v)
                e += c == '\n' ? std::string("\\n") : c == '\\' ? std::string("\\\\") : std::string(1, c);
            os << k << " = " << e << "\n";
        }
        os.flush();
        if (!os) throw IoError(path + ": " + write_failure(tmp, errno));
    }
    std::error_code ec;
    fs::rename(tmp, path, ec);
    if (ec) throw IoError(path + ": cannot rename " + tmp + " into place: " + ec.message());
}

}  // namespace vibra::app::batch
