// SPDX-License-Identifier: GPL-3.0-or-later
// Atomic publication of a finished file, for the store's writers: vibra::AtomicOutput
// (vibra/core/output_file.hpp: target.partial under the target's lock, fsync, rename).
#pragma once

#include <string>

#include "vibra/core/output_file.hpp"

namespace vibra::store::detail {
/// fsync(partial), rename(partial → target), fsync(dir). Throws IoError naming the target.
inline void publish(const std::string& partial, const std::string& target) { publish_file(partial, target); }
/// Fail early, with the path in the message, when `path`'s directory is missing or unwritable.
inline void check_writable_dir(const std::string& path) { check_writable_folder(path); }

/// `path.partial` under the target's lock, removed on destruction unless published: a failed write
/// leaves nothing behind, and a second writer of the same target is refused ("in use by PID n").
class PartialFile {
public:
    /// `wait_seconds` > 0: wait for another writer of the target instead of failing (merges).
    explicit PartialFile(const std::string& target, double wait_seconds = 0)
        : out_(target, AtomicOutput::Options{AtomicOutput::Kind::file, false, wait_seconds}) {}
    const std::string& path() const { return out_.path(); }
    /// fsync + rename into place.
    void publish() { out_.commit(); }

private:
    AtomicOutput out_;
};

/// Current UTC time as ISO 8601 ("2026-11-30T05:00:00Z"), for `created` attributes.
std::string iso_now();
}  // namespace vibra::store::detail
