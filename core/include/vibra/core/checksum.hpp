// SPDX-License-Identifier: GPL-3.0-or-later
// SHA-256 of files and byte strings, so a results file can name exactly which input it came
// from ("sha256:<hex>", comparable with `sha256sum`).
#pragma once

#include <cstdint>
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
/// "sha256:<hex>" of a file's bytes; throws IoError naming the file.
std::string file_checksum(const std::string& path);

}  // namespace vibra
