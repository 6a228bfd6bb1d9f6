// SPDX-License-Identifier: GPL-3.0-or-later
#include "detail/text.hpp"

#include <cmath>

namespace vibra::store::detail {

LineReader::LineReader(const std::string& path) : in_(path), path_(path) {
    if (!in_) throw IoError(path + ": cannot open for reading");
}

bool LineReader::next(std::string& line) {
    if (!std::getline(in_, line)) {
        if (in_.bad()) throw IoError(at_line(path_, line_ + 1, "read error"));
        return false;
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    ++line_;
    return true;
}

void split_ws(std::string_view s, std::vector<std::string_view>& out) {
    out.clear();
    std::size_t i = 0;
    while (i < s.size()) {
        while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
        std::size_t j = i;
        while (j < s.size() && s[j] != ' ' && s[j] != '\t') ++j;
        if (j > i) out.push_back(s.substr(i, j - i));
        i = j;
    }
}

void split_csv(std::string_view s, std::vector<std::string_view>& out) {
    out.clear();
    std::size_t i = 0;
    while (true) {
        std::size_t j = s.find(',', i);
        std::string_view f = s.substr(i, j == std::string_view::npos ? std::string_view::npos : j - i);
        while (!f.empty() && (f.front() == ' ' || f.front() == '\t')) f.remove_prefix(1);
        while (!f.empty() && (f.back() == ' ' || f.back() == '\t')) f.remove_suffix(1);
        if (f.size() >= 2 && f.front() == '"' && f.back() == '"') f = f.substr(1, f.size() - 2);
        out.push_back(f);
        if (j == std::string_view::npos) break;
        i = j + 1;
    }
}

double parse_double(std::string_view tok, const std::string& file, std::int64_t line,
                    std::string_view field) {
    double v = 0;
    std::string_view t = tok;
    if (!t.empty() && t.front() == '+') t.remove_prefix(1);
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc() || p != t.data() + t.size() || t.empty())
        throw FormatError(at_line(
            file, line, "field '" + std::string(field) + "': '" + std::string(tok) + "' is not a number"));
    return v;
}

float parse_float(std::string_view tok, const std::string& file, std::int64_t line, std::string_view field) {
    float v = 0;
    std::string_view t = tok;
    if (!t.empty() && t.front() == '+') t.remove_prefix(1);
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec == std::errc::result_out_of_range && p == t.data() + t.size())
        throw FormatError(at_line(file, line,
                                  "field '" + std::string(field) + "': '" + std::string(tok) +
                                      "' is out of the range of a 32-bit float"));
    if (ec != std::errc() || p != t.data() + t.size() || t.empty())
        throw FormatError(at_line(
            file, line, "field '" + std::string(field) + "': '" + std::string(tok) + "' is not a number"));
    return v;
}

std::int64_t parse_int(std::string_view tok, const std::string& file, std::int64_t line,
                       std::string_view field) {
    std::int64_t v = 0;
    std::string_view t = tok;
    if (!t.empty() && t.front() == '+') t.remove_prefix(1);
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc() || p != t.data() + t.size() || t.empty()) {
        // Accept integral floats such as "3.0" (pandas writes ints of float columns that way).
        double d = 0;
        auto [p2, ec2] = std::from_chars(t.data(), t.data() + t.size(), d);
        if (ec2 == std::errc() && p2 == t.data() + t.size() && !t.empty() && std::floor(d) == d &&
            std::abs(d) < 9.0e15)
            return static_cast<std::int64_t>(d);
        throw FormatError(at_line(
            file, line, "field '" + std::string(field) + "': '" + std::string(tok) + "' is not an integer"));
    }
    return v;
}

void append_number(std::string& out, double v) {
    char buf[32];
    auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, p);
}
void append_number(std::string& out, float v) {
    char buf[24];
    auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, p);
}
void append_number(std::string& out, std::int64_t v) {
    char buf[24];
    auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, p);
}

}  // namespace vibra::store::detail
