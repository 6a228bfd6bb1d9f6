// SPDX-License-Identifier: GPL-3.0-or-later
// Atomic publication of a finished file: fsync the partial file, rename over the target,
// fsync the directory.
#pragma once

#include <string>

namespace vibra::store::detail {
/// fsync(partial), rename(partial → target), fsync(dir). Throws IoError naming the target.
void publish(const std::string& partial, const std::string& target);
/// Fail early, with the path in the message, when `path`'s directory is missing or unwritable.
void check_writable_dir(const std::string& path);

/// `path.partial`, removed on destruction unless published: a failed write leaves nothing behind.
class PartialFile {
public:
    explicit PartialFile(const std::string& target) : target_(target), partial_(target + ".partial") {}
    ~PartialFile();
    PartialFile(const PartialFile&) = delete;
    PartialFile& operator=(const PartialFile&) = delete;
    const std::string& path() const { return partial_; }
    /// fsync + rename into place (see publish()).
    void publish();

private:
    std::string target_, partial_;
    bool published_ = false;
};

/// Current UTC time as ISO 8601 ("2026-11-30T05:00:00Z"), for `created` attributes.
std::string iso_now();
}  // namespace vibra::store::detail
