// SPDX-License-Identifier: GPL-3.0-or-later
// Plain containers for analysis results: named N-d arrays with units and attributes, grouped.
// Analyses fill them; vibra::store writes them under /analysis/<name> without knowing any
// particular observable (see docs/hdf5-layout.md for the naming rule).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace vibra {

using AttrValue = std::variant<double, std::int64_t, std::string, std::vector<double>,
                               std::vector<std::int64_t>, std::vector<std::string>>;
using Attributes = std::map<std::string, AttrValue>;

/// One dataset: row-major data of the given shape (empty shape = 1-D of data size).
struct ResultArray {
    std::string name;
    std::string units;  ///< unit grammar of docs/hdf5-layout.md: "px^2", "rad/s", "1", …
    std::vector<std::size_t> shape;
    std::variant<std::vector<double>, std::vector<std::int64_t>, std::vector<std::int8_t>> data;
    Attributes attrs;
};

/// One group of results: /analysis/<name> for a top-level analysis.
struct ResultGroup {
    std::string name;
    Attributes attrs;  ///< the analysis parameters and scalar results
    std::vector<ResultArray> arrays;
    std::vector<ResultGroup> groups;  ///< sub-groups (e.g. /analysis/kgap/pole)

    /// Convenience: add a 1-D double array.
    ResultArray& add(std::string name, std::vector<double> v, std::string units) {
        ResultArray a;
        a.name = std::move(name);
        a.units = std::move(units);
        a.shape = {v.size()};
        a.data = std::move(v);
        arrays.push_back(std::move(a));
        return arrays.back();
    }
    /// Convenience: add a 2-D row-major double array (rows × cols).
    ResultArray& add2d(std::string name, std::vector<double> v, std::size_t rows, std::size_t cols,
                       std::string units) {
        ResultArray& a = add(std::move(name), std::move(v), std::move(units));
        a.shape = {rows, cols};
        return a;
    }
    ResultArray& add_int(std::string name, std::vector<std::int64_t> v, std::string units) {
        ResultArray a;
        a.name = std::move(name);
        a.units = std::move(units);
        a.shape = {v.size()};
        a.data = std::move(v);
        arrays.push_back(std::move(a));
        return arrays.back();
    }
    const ResultArray* find(const std::string& n) const {
        for (const auto& a : arrays)
            if (a.name == n) return &a;
        return nullptr;
    }
};

}  // namespace vibra
