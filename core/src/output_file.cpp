// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/core/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "vibra/core/error.hpp"
#include "vibra/core/interrupt.hpp"

namespace vibra {

namespace fs = std::filesystem;

namespace {

struct HeldLock {
    int fd = -1;
    int count = 0;
    pid_t pid = 0;  // a forked child inherits the map, not the right to write
};
// Locks held by this process, by absolute target path: a command and the writer it calls may both
// lock one target (OFD locks of one process conflict with each other, so they nest here).
std::mutex g_mutex;
std::map<std::string, HeldLock>& held() {
    static std::map<std::string, HeldLock> m;
    return m;
}

std::string key_of(const std::string& target) {
    return fs::absolute(fs::path(target)).lexically_normal().string();
}

std::string read_holder(int fd) {
    char buf[128] = {};
    const auto n = ::pread(fd, buf, sizeof buf - 1, 0);
    std::string s = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s.empty() ? std::string("another process") : s;
}

/// Open + OFD-lock the lock file; retry when the file was replaced between open and lock.
int acquire(const std::string& target, const std::string& path, double wait_seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_seconds);
    for (int attempt = 0; attempt < 20;) {
        const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) {
            const int e = errno;
            throw IoError(target + ": cannot create the lock file " + path + ": " + write_failure(path, e));
        }
        struct flock fl {};
        fl.l_type = F_WRLCK;
        fl.l_whence = SEEK_SET;
        if (::fcntl(fd, F_OFD_SETLK, &fl) != 0) {
            const int e = errno;
            const std::string who = read_holder(fd);
            ::close(fd);
            if ((e == EAGAIN || e == EACCES) && std::chrono::steady_clock::now() < deadline) {
                throw_if_interrupted();
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
                continue;
            }
            if (e == EAGAIN || e == EACCES)
                throw IoError(target + ": in use by " + who + " (lock " + path +
                              "); wait for that run to finish, or stop it");
            throw IoError(target + ": cannot lock " + path + ": " + std::strerror(e));
        }
        struct stat a {
        }, b{};
        if (::fstat(fd, &a) == 0 && ::stat(path.c_str(), &b) == 0 && a.st_ino == b.st_ino &&
            a.st_dev == b.st_dev) {
            char host[256] = {};
            ::gethostname(host, sizeof host - 1);
            const std::string who = "PID " + std::to_string(::getpid()) + " on " + host + "\n";
            if (::ftruncate(fd, 0) != 0 ||
                ::pwrite(fd, who.data(), who.size(), 0) != static_cast<ssize_t>(who.size())) {
                const int e = errno;
                ::unlink(path.c_str());
                ::close(fd);
                throw IoError(target + ": cannot write the lock file " + path + ": " +
                              write_failure(path, e));
            }
            return fd;
        }
        ::close(fd);  // the file we locked was unlinked by its previous holder: take the new one
        ++attempt;
    }
    throw IoError(target + ": cannot take the lock " + path + " (it keeps being replaced)");
}

}  // namespace

std::string OutputLock::lock_path(const std::string& target) { return target + ".lock"; }

OutputLock::OutputLock(std::string target, std::initializer_list<const char*> temporary_suffixes,
                       double wait_seconds)
    : target_(std::move(target)) {
    check_writable_folder(target_);
    const std::string key = key_of(target_);
    std::lock_guard<std::mutex> guard(g_mutex);
    auto& h = held()[key];
    if (h.count > 0 && h.pid != ::getpid()) {  // inherited over fork(): the parent's lock, not ours
        ::close(h.fd);                         // (the lock stays with the parent's descriptor)
        h = HeldLock{};
    }
    if (h.count > 0) {
        ++h.count;
        return;
    }
    try {
        h.fd = acquire(target_, lock_path(target_), wait_seconds);
    } catch (...) {
        held().erase(key);
        throw;
    }
    h.count = 1;
    h.pid = ::getpid();
    // Nobody else writes this target now: what its temporaries hold was left by a killed run.
    for (const char* suffix : temporary_suffixes) {
        std::error_code ec;
        fs::remove_all(target_ + suffix, ec);
    }
}

OutputLock::~OutputLock() {
    const std::string key = key_of(target_);
    std::lock_guard<std::mutex> guard(g_mutex);
    auto it = held().find(key);
    if (it == held().end() || --it->second.count > 0) return;
    ::unlink(lock_path(target_).c_str());  // unlink first, then release: see acquire()'s inode check
    ::close(it->second.fd);
    held().erase(it);
}

namespace {
std::string partial_name(const std::string& target, bool keep_extension) {
    if (!keep_extension) return target + ".partial";
    const fs::path p(target);
    return (p.parent_path() / (p.stem().string() + ".partial" + p.extension().string())).string();
}
}  // namespace

AtomicOutput::AtomicOutput(std::string target, Options options)
    : lock_(target, {}, options.wait_seconds),
      target_(std::move(target)),
      partial_(partial_name(target_, options.keep_extension)),
      kind_(options.kind) {
    std::error_code ec;
    fs::remove_all(partial_, ec);  // left by a killed run (we hold the lock, so it is not in use)
    if (kind_ == Kind::folder) {
        fs::create_directory(partial_, ec);
        if (ec)
            throw IoError(target_ + ": cannot create the temporary folder " + partial_ + ": " +
                          write_failure(partial_, ec.value()));
    }
}

AtomicOutput::~AtomicOutput() {
    if (committed_) return;
    std::error_code ec;
    fs::remove_all(partial_, ec);
}

void AtomicOutput::commit() {
    if (committed_) return;
    if (kind_ == Kind::file) {
        publish_file(partial_, target_);
        committed_ = true;
        return;
    }
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(partial_)) {  // fsync every file of the folder
        const int fd = ::open(e.path().c_str(), O_RDONLY);
        if (fd < 0) continue;
        const int rc = ::fsync(fd);
        const int err = errno;
        ::close(fd);
        if (rc != 0) throw IoError(e.path().string() + ": " + write_failure(e.path().string(), err));
    }
    if (!fs::exists(target_, ec)) {
        fs::rename(partial_, target_, ec);
        if (ec) throw IoError(target_ + ": cannot rename " + partial_ + " into place: " + ec.message());
    } else {
        if (!fs::is_directory(target_, ec)) throw IoError(target_ + ": exists and is not a folder");
        for (const auto& e : fs::directory_iterator(partial_)) {
            fs::rename(e.path(), fs::path(target_) / e.path().filename(), ec);
            if (ec)
                throw IoError((fs::path(target_) / e.path().filename()).string() +
                              ": cannot move into place: " + ec.message());
        }
        fs::remove(partial_, ec);
    }
    const auto dir = fs::absolute(fs::path(target_)).parent_path();
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        ::fsync(dfd);
        ::close(dfd);
    }
    committed_ = true;
}

void publish_file(const std::string& partial, const std::string& target) {
    const int fd = ::open(partial.c_str(), O_RDONLY);
    if (fd < 0) throw IoError(target + ": cannot reopen " + partial + " to fsync: " + std::strerror(errno));
    if (::fsync(fd) != 0) {
        const int e = errno;
        ::close(fd);
        throw IoError(target + ": " + write_failure(target, e));
    }
    ::close(fd);
    if (std::rename(partial.c_str(), target.c_str()) != 0)
        throw IoError(target + ": cannot rename " + partial + " into place: " + std::strerror(errno));
    const auto dir = fs::absolute(fs::path(target)).parent_path();
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        ::fsync(dfd);
        ::close(dfd);
    }
}

void check_writable_folder(const std::string& path) {
    auto dir = fs::path(path).parent_path();
    if (dir.empty()) dir = ".";
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        throw IoError(path + ": cannot write: folder " + dir.string() + " does not exist");
    if (::access(dir.c_str(), W_OK) != 0)
        throw IoError(path + ": cannot write: folder " + dir.string() + " is not writable");
}

bool file_system_full(const std::string& path) {
    struct statvfs s {};
    fs::path p(path);
    std::error_code ec;
    while (!p.empty() && !fs::exists(p, ec)) p = p.parent_path();
    if (p.empty()) p = ".";
    if (::statvfs(p.c_str(), &s) != 0) return false;
    // Libraries that hide errno (HDF5, libpng, FFmpeg) fail a write that does not fit while some
    // space is still free: below 4 MiB the file system counts as full.
    const auto free_bytes = static_cast<unsigned long long>(s.f_bavail) * s.f_frsize;
    return free_bytes < (4ull << 20) || (s.f_favail == 0 && s.f_files > 0);
}

std::string write_failure(const std::string& path, int err) {
    if (err == ENOSPC || err == EDQUOT || file_system_full(path)) {
        auto dir = fs::absolute(fs::path(path)).parent_path();
        return "no space left on " + dir.string() + (err == EDQUOT ? " (disk quota exceeded)" : "");
    }
    return err ? std::string(std::strerror(err)) : std::string("write failed");
}

void write_all(int fd, const void* data, std::size_t n, const std::string& path) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
        const auto w = ::write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) throw IoError(path + ": " + write_failure(path, w < 0 ? errno : ENOSPC));
        p += w;
        n -= static_cast<std::size_t>(w);
    }
}

}  // namespace vibra
