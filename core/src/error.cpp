// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/core/error.hpp"

namespace vibra {

std::string at_line(const std::string& file, std::int64_t line, const std::string& what) {
    return file + ": line " + std::to_string(line) + ": " + what;
}
std::string at_frame(const std::string& file, std::int64_t frame, const std::string& what) {
    return file + ": frame " + std::to_string(frame) + ": " + what;
}
std::string at_field(const std::string& file, const std::string& field, const std::string& what) {
    return file + ": field '" + field + "': " + what;
}

}  // namespace vibra
