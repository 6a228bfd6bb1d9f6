// SPDX-License-Identifier: GPL-3.0-or-later
// Small shared pieces of the camera-file readers: bounds-checked little-endian loads from a byte
// span, and a read-only file opened once and read with pread (no whole-file reads).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "vibra/core/error.hpp"
#include "detail/camera_formats.hpp"

#ifndef VIBRA_CAMERA_PARSERS_ONLY
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#endif

namespace vibra::tracking::detail {

/// Little-endian load of T at `off`; `off + sizeof(T)` must be ≤ b.size() (the caller checks).
template <class T>
inline T load_le(ByteSpan b, std::uint64_t off) {
    static_assert(sizeof(T) <= 8);
    std::uint64_t v = 0;
    for (std::size_t k = 0; k < sizeof(T); ++k) v |= std::uint64_t(b[off + k]) << (8 * k);
    T out;
    if constexpr (sizeof(T) == 8) {
        std::memcpy(&out, &v, 8);
    } else {
        using U = std::conditional_t<sizeof(T) == 1, std::uint8_t,
                                     std::conditional_t<sizeof(T) == 2, std::uint16_t, std::uint32_t>>;
        const U u = static_cast<U>(v);
        std::memcpy(&out, &u, sizeof(T));
    }
    return out;
}

/// True when [off, off + n) lies inside [0, size) without overflow.
inline bool fits(std::uint64_t off, std::uint64_t n, std::uint64_t size) {
    return off <= size && n <= size - off;
}

#ifndef VIBRA_CAMERA_PARSERS_ONLY
/// A read-only file: opened once, read with pread at given offsets.
class InputFile {
public:
    explicit InputFile(const std::string& path) : path_(path) {
        fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd_ < 0) throw IoError(path + ": cannot open: " + std::strerror(errno));
        struct stat st {};
        if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
            ::close(fd_);
            throw IoError(path + ": not a regular file");
        }
        size_ = static_cast<std::uint64_t>(st.st_size);
    }
    ~InputFile() {
        if (fd_ >= 0) ::close(fd_);
    }
    InputFile(const InputFile&) = delete;
    InputFile& operator=(const InputFile&) = delete;

    std::uint64_t size() const { return size_; }
    const std::string& path() const { return path_; }

    /// Reads exactly n bytes at off into dst; false if the file ends first (or a read fails).
    bool read_at(std::uint64_t off, void* dst, std::uint64_t n) const {
        auto* p = static_cast<char*>(dst);
        while (n > 0) {
            const ssize_t got = ::pread(fd_, p, n > (1u << 30) ? (1u << 30) : n, static_cast<off_t>(off));
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) return false;
            p += got;
            off += static_cast<std::uint64_t>(got);
            n -= static_cast<std::uint64_t>(got);
        }
        return true;
    }
    std::vector<std::uint8_t> read_vec(std::uint64_t off, std::uint64_t n) const {
        std::vector<std::uint8_t> v(n);
        if (!read_at(off, v.data(), n))
            throw FormatError(path_ + ": file ends before byte " + std::to_string(off + n));
        return v;
    }

private:
    std::string path_;
    int fd_ = -1;
    std::uint64_t size_ = 0;
};
#endif

}  // namespace vibra::tracking::detail
