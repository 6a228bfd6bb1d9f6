// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/analysis/registry.hpp"

#include <charconv>

#include "vibra/core/error.hpp"

namespace vibra::analysis {

std::vector<AnalysisSpec> all_analyses() {
    std::vector<AnalysisSpec> all;
    for (auto list : {structure_analyses(), dynamics_analyses(), modes_analyses(), collective_analyses()})
        for (auto& s : list) all.push_back(std::move(s));
    return all;
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
