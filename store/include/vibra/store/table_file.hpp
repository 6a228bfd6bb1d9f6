// SPDX-License-Identifier: GPL-3.0-or-later
// A table of named columns (one row per item, e.g. one per video of a batch campaign) as an HDF5
// group of equal-length 1-D datasets — numbers (float64, int64) or UTF-8 strings — each with a
// `units` attribute, and as CSV beside it. Both writes are atomic (temporary + rename), so a
// reader sees the old table or the new one, never a mix. Layout: docs/hdf5-layout.md.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "vibra/core/result.hpp"

namespace vibra::store {

struct TableColumn {
    std::string name;
    std::string units;  ///< unit grammar of docs/hdf5-layout.md; "1" for counts and ratios, "" for text
    std::variant<std::vector<double>, std::vector<std::int64_t>, std::vector<std::string>> data;
    std::string description;  ///< one line, written as the `description` attribute
    std::size_t size() const;
};

struct Table {
    std::string schema;                ///< root attribute `schema` (e.g. "vibra-campaign")
    std::string group;                 ///< group holding the columns (e.g. "campaign")
    Attributes attrs;                  ///< root attributes besides schema, vibra_version, created
    std::vector<TableColumn> columns;  ///< in display order (also written as the group's `columns` attribute)
    std::size_t rows() const { return columns.empty() ? 0 : columns.front().size(); }
    const TableColumn* find(const std::string& name) const;
};

/// Writes `t` to an HDF5 file at `path` (atomic). Throws ParameterError for columns of unequal
/// length, IoError naming `path` on write failure (an existing file is then untouched).
void write_table_h5(const std::string& path, const Table& t);
/// Reads the table written by write_table_h5 (columns in their recorded order). Throws
/// FormatError when `path` is not such a file or its schema differs from `schema`.
Table read_table_h5(const std::string& path, const std::string& schema, const std::string& group);
/// CSV (RFC 4180 quoting, a header row of names, numbers with 17 significant digits, NaN as
/// empty) — atomic.
void write_table_csv(const std::string& path, const Table& t);

}  // namespace vibra::store
