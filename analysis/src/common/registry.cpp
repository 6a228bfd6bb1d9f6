// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/analysis/registry.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <sstream>

#include "vibra/core/error.hpp"

namespace vibra::analysis {

std::vector<AnalysisSpec> all_analyses() {
    std::vector<AnalysisSpec> all;
    for (auto list : {structure_analyses(), dynamics_analyses(), modes_analyses(), collective_analyses()})
        for (auto& s : list) all.push_back(std::move(s));
    return all;
}

const char* type_name(OptionType t) {
    switch (t) {
        case OptionType::integer:
            return "INT";
        case OptionType::number:
            return "FLOAT";
        case OptionType::list:
            return "LIST";
        case OptionType::boolean:
            return "BOOL";
        case OptionType::text:
            break;
    }
    return "TEXT";
}

namespace {

bool parse_double(std::string_view s, double& v) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

std::string fmt(double v) {
    std::ostringstream os;
    os << v;
    return os.str();
}

std::string check_range(const AnalysisOption& o, double v, const std::string& shown) {
    if (!std::isfinite(v)) return "--" + o.flag + ": '" + shown + "' is not a finite number";
    if (v < o.min) return "--" + o.flag + ": " + shown + " is below the minimum " + fmt(o.min);
    if (v > o.max) return "--" + o.flag + ": " + shown + " is above the maximum " + fmt(o.max);
    return "";
}

std::string joined(const std::vector<std::string>& v, const std::string& sep) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
    return s;
}

}  // namespace

std::string check_option_value(const AnalysisOption& o, const std::string& value) {
    if (value.empty()) return "";
    const std::string f = "--" + o.flag + ": '" + value + "'";
    switch (o.type) {
        case OptionType::text:
            if (!o.choices.empty() && std::find(o.choices.begin(), o.choices.end(), value) == o.choices.end())
                return f + " is not one of " + joined(o.choices, ", ");
            return "";
        case OptionType::boolean:
            for (const char* b : {"0", "1", "true", "false", "yes", "no", "on", "off"})
                if (value == b) return "";
            return f + " is not a boolean (0 or 1)";
        case OptionType::integer: {
            std::int64_t v = 0;
            auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
            if (ec != std::errc() || p != value.data() + value.size()) return f + " is not an integer";
            return check_range(o, static_cast<double>(v), value);
        }
        case OptionType::number: {
            double v = 0;
            if (!parse_double(value, v)) return f + " is not a number";
            return check_range(o, v, value);
        }
        case OptionType::list: {
            if (std::find(o.choices.begin(), o.choices.end(), value) != o.choices.end()) return "";
            std::size_t i = 0;
            while (i <= value.size()) {
                std::size_t j = value.find(',', i);
                if (j == std::string::npos) j = value.size();
                double v = 0;
                const std::string item = value.substr(i, j - i);
                if (!parse_double(item, v)) return f + " is not a comma-separated list of numbers";
                if (auto e = check_range(o, v, item); !e.empty()) return e;
                i = j + 1;
            }
            return "";
        }
    }
    return "";
}

std::string flag_prefix(const std::string& analysis_name) {
    std::string s = analysis_name;
    std::replace(s.begin(), s.end(), '_', '-');
    return s;
}

std::string legacy_flag(const std::string& analysis_name, const std::string& flag) {
    // The analyses whose flags carried their name verbatim (with '_') until 2026-12-01.
    if (analysis_name != "velocity_distribution" && analysis_name != "number_fluctuations") return "";
    const std::string pre = flag_prefix(analysis_name);
    if (flag.rfind(pre + "-", 0) != 0) return "";
    return analysis_name + flag.substr(pre.size());
}

std::vector<const AnalysisSpec*> resolve_selection(const std::vector<AnalysisSpec>& specs,
                                                   const std::vector<std::string>& wanted) {
    auto find = [&](const std::string& n) -> const AnalysisSpec* {
        for (const auto& s : specs)
            if (s.name == n) return &s;
        return nullptr;
    };
    std::set<std::string> chosen;
    std::vector<std::string> todo;
    for (const auto& w : wanted) {
        if (!find(w)) {
            std::string names;
            for (const auto& s : specs) names += (names.empty() ? "" : ", ") + s.name;
            throw ParameterError("--only: unknown analysis '" + w + "' (available: " + names + ")");
        }
        todo.push_back(w);
    }
    if (wanted.empty())
        for (const auto& s : specs)
            if (s.default_on) todo.push_back(s.name);
    while (!todo.empty()) {
        const std::string n = todo.back();
        todo.pop_back();
        if (!chosen.insert(n).second) continue;
        for (const auto& d : find(n)->needs) {
            if (!find(d)) throw ParameterError("analysis " + n + " needs unknown analysis " + d);
            todo.push_back(d);
        }
    }
    std::vector<const AnalysisSpec*> out;
    for (const auto& s : specs)
        if (chosen.count(s.name)) out.push_back(&s);
    return out;
}

const std::string& AnalysisContext::text(const std::string& flag) const {
    const auto it = options.find(flag);
    if (it == options.end()) throw ParameterError("analysis option --" + flag + " is not defined");
    return it->second;
}

bool AnalysisContext::is_set(const std::string& flag) const {
    const auto it = options.find(flag);
    return it != options.end() && !it->second.empty();
}

double AnalysisContext::number(const std::string& flag) const {
    const auto& s = text(flag);
    double v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || s.empty())
        throw ParameterError("--" + flag + ": '" + s + "' is not a number");
    return v;
}

std::int64_t AnalysisContext::integer(const std::string& flag) const {
    const auto& s = text(flag);
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || s.empty())
        throw ParameterError("--" + flag + ": '" + s + "' is not an integer");
    return v;
}

std::vector<double> AnalysisContext::numbers(const std::string& flag) const {
    const auto& s = text(flag);
    std::vector<double> out;
    std::size_t i = 0;
    while (i < s.size()) {
        std::size_t j = s.find(',', i);
        if (j == std::string::npos) j = s.size();
        double v = 0;
        auto [p, ec] = std::from_chars(s.data() + i, s.data() + j, v);
        if (ec != std::errc() || p != s.data() + j || j == i)
            throw ParameterError("--" + flag + ": '" + s + "' is not a comma-separated list of numbers");
        out.push_back(v);
        i = j + 1;
    }
    return out;
}

}  // namespace vibra::analysis
