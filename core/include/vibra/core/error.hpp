// SPDX-License-Identifier: GPL-3.0-or-later
// One error hierarchy for vibra. Every message names the file and the field, frame or line,
// so a batch log says what went wrong where. CLI maps: vibra::Error → exit 1, usage → exit 2.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace vibra {

/// Root of vibra's runtime errors (I/O, bad data). Derives from std::runtime_error.
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// A file could not be opened, read, written or renamed.
class IoError : public Error {
public:
    using Error::Error;
};

/// A file was readable but its content is not what the format promises.
class FormatError : public Error {
public:
    using Error::Error;
};

/// The data cannot support an analysis (too few frames, no velocities, no tracks long enough):
/// `vibra analyze` skips that analysis and records this message in `skipped_analyses`.
class InsufficientData : public Error {
public:
    using Error::Error;
};

/// The input would need more memory than the process may allocate (vibra/core/memory.hpp).
class ResourceError : public Error {
public:
    using Error::Error;
};

/// A parameter is outside its allowed range (the CLI reports it as a usage error, exit 2).
class ParameterError : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

/// "file: line N: what" — the one formatting funnel for data errors found at a text line.
std::string at_line(const std::string& file, std::int64_t line, const std::string& what);
/// "file: frame N: what".
std::string at_frame(const std::string& file, std::int64_t frame, const std::string& what);
/// "file: field 'name': what".
std::string at_field(const std::string& file, const std::string& field, const std::string& what);

}  // namespace vibra
