// SPDX-License-Identifier: GPL-3.0-or-later
#include "detail/atomic.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "vibra/core/error.hpp"

namespace vibra::store::detail {

namespace fs = std::filesystem;

void publish(const std::string& partial, const std::string& target) {
    int fd = ::open(partial.c_str(), O_RDONLY);
    if (fd < 0) throw IoError(target + ": cannot reopen " + partial + " to fsync: " + std::strerror(errno));
    if (::fsync(fd) != 0) {
        const int e = errno;
        ::close(fd);
        throw IoError(target + ": fsync failed: " + std::strerror(e));
    }
    ::close(fd);
    if (std::rename(partial.c_str(), target.c_str()) != 0)
        throw IoError(target + ": cannot rename " + partial + " into place: " + std::strerror(errno));
    const auto dir = fs::absolute(fs::path(target)).parent_path();
    int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        ::fsync(dfd);
        ::close(dfd);
    }
}

void check_writable_dir(const std::string& path) {
    auto dir = fs::path(path).parent_path();
    if (dir.empty()) dir = ".";
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) throw IoError(path + ": cannot write: directory " + dir.string() + " does not exist");
    if (::access(dir.c_str(), W_OK) != 0)
        throw IoError(path + ": cannot write: directory " + dir.string() + " is not writable");
}

PartialFile::~PartialFile() {
    if (!published_) std::remove(partial_.c_str());
}

void PartialFile::publish() {
    detail::publish(partial_, target_);
    published_ = true;
}

std::string iso_now() {
    const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

}  // namespace vibra::store::detail
