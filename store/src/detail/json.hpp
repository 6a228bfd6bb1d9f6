// SPDX-License-Identifier: GPL-3.0-or-later
// A small JSON reader and writer helpers for the CSV metadata sidecar (csv_metadata.cpp): plain
// RFC 8259 JSON, a document tree of values; errors name the file, line and column. Internal.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vibra::store::detail {

struct Json {
    enum class Kind { null, boolean, number, string, array, object };
    Kind kind = Kind::null;
    bool boolean = false;
    double number = 0;
    std::string string;
    std::vector<Json> array;
    struct Member;
    std::vector<Member> object;  ///< in file order; a repeated key is an error

    /// The member `key` of an object, nullptr when absent (or not an object).
    const Json* find(std::string_view key) const;
};

/// One member of an object (`first` its name, `second` its value: as a std::pair, which cannot hold
/// the incomplete Json inside Json itself with every standard library — clang 14 + libstdc++ 12).
struct Json::Member {
    Member(std::string k, Json v) : first(std::move(k)), second(std::move(v)) {}
    std::string first;
    Json second;
};

/// Parses a whole JSON document. Throws FormatError "FILE: line L: column C: …".
Json parse_json(std::string_view text, const std::string& file);

/// Appends `s` as a JSON string literal (quotes, escapes; UTF-8 passes through).
void append_json_string(std::string& out, std::string_view s);

}  // namespace vibra::store::detail
