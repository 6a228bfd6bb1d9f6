// SPDX-License-Identifier: GPL-3.0-or-later
// Line reading and number parsing for the text formats, with file:line error messages.
#pragma once

#include <charconv>
#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "vibra/core/error.hpp"

namespace vibra::store::detail {

/// Reads lines and counts them (1-based line number of the last line read).
class LineReader {
public:
    explicit LineReader(const std::string& path);
    bool next(std::string& line);
    std::int64_t line_no() const { return line_; }
    const std::string& path() const { return path_; }

private:
    std::ifstream in_;
    std::string path_;
    std::int64_t line_ = 0;
};

/// Whitespace-separated tokens (views into `s`).
void split_ws(std::string_view s, std::vector<std::string_view>& out);
/// Comma-separated fields (no quoting beyond stripping surrounding double quotes and spaces).
void split_csv(std::string_view s, std::vector<std::string_view>& out);

double parse_double(std::string_view tok, const std::string& file, std::int64_t line, std::string_view field);
/// A float column's value, parsed as a float (correctly rounded: append_number(float) reads back exactly).
float parse_float(std::string_view tok, const std::string& file, std::int64_t line, std::string_view field);
std::int64_t parse_int(std::string_view tok, const std::string& file, std::int64_t line,
                       std::string_view field);

/// Shortest representation that reads back to the same double (std::to_chars).
void append_number(std::string& out, double v);
void append_number(std::string& out, float v);  ///< shortest that reads back to the same float
void append_number(std::string& out, std::int64_t v);

}  // namespace vibra::store::detail
