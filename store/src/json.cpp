// SPDX-License-Identifier: GPL-3.0-or-later
// Recursive-descent JSON parser (RFC 8259) for the CSV metadata sidecar.
#include "detail/json.hpp"

#include <charconv>
#include <cmath>

#include "vibra/core/error.hpp"

namespace vibra::store::detail {

const Json* Json::find(std::string_view key) const {
    for (const auto& [k, v] : object)
        if (k == key) return &v;
    return nullptr;
}

namespace {

constexpr int kMaxDepth = 64;

class Parser {
public:
    Parser(std::string_view text, const std::string& file) : s_(text), file_(file) {}

    Json document() {
        Json v = value(0);
        skip_ws();
        if (i_ != s_.size()) fail("unexpected text after the JSON value");
        return v;
    }

private:
    std::string_view s_;
    const std::string& file_;
    std::size_t i_ = 0;

    [[noreturn]] void fail(const std::string& what) const {
        std::size_t line = 1, col = 1;
        for (std::size_t k = 0; k < i_ && k < s_.size(); ++k) {
            if (s_[k] == '\n')
                ++line, col = 1;
            else
                ++col;
        }
        throw FormatError(
            at_line(file_, static_cast<std::int64_t>(line), "column " + std::to_string(col) + ": " + what));
    }
    void skip_ws() {
        while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
    }
    bool eat(char c) {
        skip_ws();
        if (i_ < s_.size() && s_[i_] == c) return ++i_, true;
        return false;
    }
    void expect(char c, const char* context) {
        if (!eat(c)) fail(std::string("expected '") + c + "' " + context);
    }
    void literal(std::string_view word) {
        if (s_.substr(i_, word.size()) != word)
            fail("invalid value (expected a string, number, object, array, true, false or null)");
        i_ += word.size();
    }

    Json value(int depth) {
        if (depth > kMaxDepth) fail("nested deeper than " + std::to_string(kMaxDepth) + " levels");
        skip_ws();
        if (i_ >= s_.size()) fail("unexpected end of file (expected a value)");
        Json v;
        const char c = s_[i_];
        if (c == '{') {
            ++i_;
            v.kind = Json::Kind::object;
            if (eat('}')) return v;
            do {
                skip_ws();
                if (i_ >= s_.size() || s_[i_] != '"') fail("expected a member name in double quotes");
                std::string key = string();
                if (v.find(key)) fail("member \"" + key + "\" appears twice");
                expect(':', "after a member name");
                Json member = value(depth + 1);
                v.object.emplace_back(std::move(key), std::move(member));
            } while (eat(','));
            expect('}', "or ',' in an object");
        } else if (c == '[') {
            ++i_;
            v.kind = Json::Kind::array;
            if (eat(']')) return v;
            do v.array.push_back(value(depth + 1));
            while (eat(','));
            expect(']', "or ',' in an array");
        } else if (c == '"') {
            v.kind = Json::Kind::string;
            v.string = string();
        } else if (c == 't') {
            literal("true");
            v.kind = Json::Kind::boolean;
            v.boolean = true;
        } else if (c == 'f') {
            literal("false");
            v.kind = Json::Kind::boolean;
        } else if (c == 'n') {
            literal("null");
        } else {
            v.kind = Json::Kind::number;
            v.number = number();
        }
        return v;
    }

    double number() {
        const std::size_t start = i_;
        if (i_ < s_.size() && s_[i_] == '-') ++i_;
        auto digits = [&] {
            const std::size_t d = i_;
            while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
            return i_ - d;
        };
        const std::size_t int_start = i_;
        if (digits() == 0)
            fail("invalid value (expected a string, number, object, array, true, false or null)");
        if (s_[int_start] == '0' && i_ - int_start > 1) fail("number with a leading zero");
        if (i_ < s_.size() && s_[i_] == '.') {
            ++i_;
            if (digits() == 0) fail("number with no digits after '.'");
        }
        if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
            ++i_;
            if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
            if (digits() == 0) fail("number with no digits in its exponent");
        }
        double x = 0;
        const auto [p, ec] = std::from_chars(s_.data() + start, s_.data() + i_, x);
        if (ec != std::errc() || p != s_.data() + i_ || !std::isfinite(x)) {
            i_ = start;
            fail("number out of range");
        }
        return x;
    }

    unsigned hex4() {
        if (i_ + 4 > s_.size()) fail("truncated \\u escape");
        unsigned u = 0;
        for (int k = 0; k < 4; ++k) {
            const char h = s_[i_++];
            u <<= 4;
            if (h >= '0' && h <= '9')
                u |= static_cast<unsigned>(h - '0');
            else if (h >= 'a' && h <= 'f')
                u |= static_cast<unsigned>(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F')
                u |= static_cast<unsigned>(h - 'A' + 10);
            else
                fail("invalid \\u escape");
        }
        return u;
    }

    static void append_utf8(std::string& out, unsigned cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }

    std::string string() {
        ++i_;  // opening quote
        std::string out;
        while (true) {
            if (i_ >= s_.size()) fail("unterminated string");
            const char c = s_[i_++];
            if (c == '"') return out;
            if (static_cast<unsigned char>(c) < 0x20) {
                --i_;
                fail("control character in a string (write it as an escape)");
            }
            if (c != '\\') {
                out += c;
                continue;
            }
            if (i_ >= s_.size()) fail("unterminated string");
            switch (const char e = s_[i_++]) {
                case '"':
                    out += '"';
                    break;
                case '\\':
                    out += '\\';
                    break;
                case '/':
                    out += '/';
                    break;
                case 'b':
                    out += '\b';
                    break;
                case 'f':
                    out += '\f';
                    break;
                case 'n':
                    out += '\n';
                    break;
                case 'r':
                    out += '\r';
                    break;
                case 't':
                    out += '\t';
                    break;
                case 'u': {
                    unsigned cp = hex4();
                    if (cp >= 0xD800 && cp < 0xDC00) {
                        if (s_.substr(i_, 2) != "\\u") fail("lone high surrogate in a \\u escape");
                        i_ += 2;
                        const unsigned lo = hex4();
                        if (lo < 0xDC00 || lo >= 0xE000) fail("invalid low surrogate in a \\u escape");
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    } else if (cp >= 0xDC00 && cp < 0xE000) {
                        fail("lone low surrogate in a \\u escape");
                    }
                    append_utf8(out, cp);
                    break;
                }
                default:
                    --i_;
                    fail(std::string("invalid escape '\\") + e + "'");
            }
        }
    }
};

}  // namespace

Json parse_json(std::string_view text, const std::string& file) { return Parser(text, file).document(); }

void append_json_string(std::string& out, std::string_view s) {
    static constexpr char kHex[] = "0123456789abcdef";
    out += '"';
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"')
            out += "\\\"";
        else if (c == '\\')
            out += "\\\\";
        else if (c == '\n')
            out += "\\n";
        else if (c == '\t')
            out += "\\t";
        else if (c == '\r')
            out += "\\r";
        else if (u < 0x20) {
            out += "\\u00";
            out += kHex[u >> 4];
            out += kHex[u & 15];
        } else {
            out += c;
        }
    }
    out += '"';
}

}  // namespace vibra::store::detail
