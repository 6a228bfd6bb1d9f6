// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/core/frame_range.hpp"

#include <cctype>

#include "vibra/core/error.hpp"

namespace vibra {

namespace {

/// A non-negative decimal integer, all of `s` (no sign, no spaces); false otherwise.
bool parse_count(const std::string& s, std::int64_t& out) {
    if (s.empty() || s.size() > 18) return false;
    std::int64_t v = 0;
    for (char c : s) {
        if (!std::isdigit(static_cast<unsigned char>(c))) return false;
        v = v * 10 + (c - '0');
    }
    out = v;
    return true;
}

}  // namespace

FrameRange parse_frame_range(const std::string& text, const std::string& flag) {
    const auto bad = [&] {
        return ParameterError(flag + ": '" + text +
                              "' is not A:B, A:, :B or A with 0 <= A < B (frames, 0-based, B exclusive)");
    };
    FrameRange r;
    const auto colon = text.find(':');
    if (colon == std::string::npos) {
        if (!parse_count(text, r.first)) throw bad();
        r.last = r.first + 1;
        return r;
    }
    const std::string a = text.substr(0, colon), b = text.substr(colon + 1);
    if (a.empty() && b.empty()) throw bad();
    if (!a.empty() && !parse_count(a, r.first)) throw bad();
    if (!b.empty() && !parse_count(b, r.last)) throw bad();
    if (r.last >= 0 && r.last <= r.first) throw bad();
    return r;
}

}  // namespace vibra
