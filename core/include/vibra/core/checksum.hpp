// SPDX-License-Identifier: GPL-3.0-or-later
// SHA-256 of files and byte strings, so a results file can name exactly which input it came
// from ("sha256:<hex>", comparable with `sha256sum`).
#pragma once

#include <cstdint>
#include <atomic>
#include <future>
#include <string>
#include <string_view>

namespace vibra {

/// Incremental SHA-256 (FIPS 180-4).
class Sha256 {
public:
    Sha256();
    void update(const void* data, std::size_t n);
    /// Finishes and returns the lowercase hex digest; the object must not be updated afterwards.
    std::string hex_digest();

private:
    void block(const std::uint8_t* p);
    std::uint32_t h_[8];
    std::uint8_t buf_[64];
    std::size_t buf_len_ = 0;
    std::uint64_t total_ = 0;
};

std::string sha256_hex(std::string_view bytes);
/// "sha256:<hex>" of a file's bytes; throws IoError naming the file. With `stop`: returns ""
/// as soon as *stop is set (checked every 64 KiB).
std::string file_checksum(const std::string& path, const std::atomic<bool>* stop = nullptr);

/// file_checksum on a thread of its own while the caller goes on (`vibra analyze` hashes its
/// input beside the analyses: the hash is then no longer a serial step before them). get() waits
/// for the value (rethrowing the hashing's error); the destructor stops the hashing and waits for
/// the thread, so an error or a Ctrl-C in the caller never waits for the rest of a large file.
class BackgroundChecksum {
public:
    explicit BackgroundChecksum(std::string path);
    ~BackgroundChecksum();
    BackgroundChecksum(const BackgroundChecksum&) = delete;
    BackgroundChecksum& operator=(const BackgroundChecksum&) = delete;
    const std::string& get();

private:
    std::atomic<bool> stop_{false};
    std::future<std::string> result_;
    std::string value_;
};

}  // namespace vibra
