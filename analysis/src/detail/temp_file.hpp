// SPDX-License-Identifier: GPL-3.0-or-later
// Private: an anonymous temporary file for data that do not fit the memory budget (the
// particle-major copy of TrackCache, spilled current series). Created in `dir` ($TMPDIR when
// empty) and unlinked at once, so it disappears when closed, even after a crash. Positioned
// reads and writes (pread/pwrite) are safe from several threads.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>

#include "vibra/core/error.hpp"

namespace vibra::analysis::detail {

class TempFile {
public:
    /// `what` names the content in error messages ("the particle-major copy of the trajectory").
    TempFile(const std::string& dir, const std::string& prefix, std::string what) : what_(std::move(what)) {
        namespace fs = std::filesystem;
        const fs::path d = dir.empty() ? fs::temp_directory_path() : fs::path(dir);
        std::string tmpl = (d / (prefix + "-XXXXXX")).string();
        fd_ = ::mkstemp(tmpl.data());
        if (fd_ < 0)
            throw IoError(tmpl + ": cannot create a temporary file for " + what_ + ": " +
                          std::strerror(errno));
        path_ = tmpl;
        ::unlink(tmpl.c_str());
    }
    ~TempFile() {
        if (fd_ >= 0) ::close(fd_);
    }
    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;
    const std::string& path() const { return path_; }

    void write(std::int64_t offset, const void* data, std::size_t bytes) const {
        const char* b = static_cast<const char*>(data);
        auto off = static_cast<off_t>(offset);
        while (bytes > 0) {
            const ssize_t w = ::pwrite(fd_, b, bytes, off);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) throw IoError(path_ + ": cannot write " + what_ + ": " + std::strerror(errno));
            b += w, off += w, bytes -= static_cast<std::size_t>(w);
        }
    }
    void read(std::int64_t offset, void* data, std::size_t bytes) const {
        char* b = static_cast<char*>(data);
        auto off = static_cast<off_t>(offset);
        while (bytes > 0) {
            const ssize_t r = ::pread(fd_, b, bytes, off);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0)
                throw IoError(path_ + ": cannot read " + what_ + ": " +
                              (r == 0 ? "unexpected end" : std::strerror(errno)));
            b += r, off += r, bytes -= static_cast<std::size_t>(r);
        }
    }

private:
    int fd_ = -1;
    std::string path_, what_;
};

}  // namespace vibra::analysis::detail
