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
}  // namespace vibra::store::detail
