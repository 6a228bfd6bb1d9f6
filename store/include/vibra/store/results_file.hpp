// SPDX-License-Identifier: GPL-3.0-or-later
// The vibra results file (HDF5): root attributes schema="vibra-results", schema_version,
// vibra_version, created, input_path, input_checksum; one group per analysis under
// /analysis/<name>, each dataset with a `units` attribute, each group with its parameters as
// attributes and its own provenance (input_path, input_checksum, parameters). Writing merges into an existing
// file (groups given now replace their old
// versions, others stay) and is atomic (copy, write, rename). Layout: docs/hdf5-layout.md.
#pragma once

#include <string>
#include <vector>

#include "vibra/core/result.hpp"
#include "vibra/core/trajectory.hpp"

namespace vibra::store {

inline constexpr const char* kResultsSchema = "vibra-results";
inline constexpr const char* kResultsSchemaVersion = "1.0";

struct ResultsProvenance {
    std::string input_path;            ///< trajectory file the results were computed from
    std::string input_checksum;        ///< "sha256:<hex>" of it
    std::string parameters;            ///< command line
    std::vector<std::string> skipped;  ///< "name: reason" of analyses the data could not support
    bool force = false;                ///< merge into a file whose root records another input (checksum)
};

/// Merge `groups` into the results file at `path` (created if absent) as /analysis/<group.name>.
/// Throws FormatError if `path` exists but is not a vibra results file; ParameterError if it holds
/// results of another input (root input_checksum differs) and !prov.force; IoError on write
/// failure (the old file is then untouched). Old groups without their own input_path /
/// input_checksum attributes get those of the old root before the root is rewritten.
void write_results(const std::string& path, const std::vector<ResultGroup>& groups,
                   const ResultsProvenance& prov, const Metadata& input_meta);

/// The merge check of write_results alone, to run before the analyses: ParameterError if the results
/// file at `path` holds results of another input and !prov.force (FormatError if it is not a results
/// file); nothing when `path` does not exist.
void check_merge(const std::string& path, const ResultsProvenance& prov);

/// Names of the groups under /analysis.
std::vector<std::string> list_results(const std::string& path);
/// Read /analysis/<name> back (arrays, attributes, sub-groups).
ResultGroup read_results(const std::string& path, const std::string& name);
/// The attributes of /analysis/<name> only (parameters and scalar results), without its arrays.
Attributes read_results_attrs(const std::string& path, const std::string& name);
/// Root attributes (schema, input_path, input_checksum, …) of a results file.
Attributes read_results_root(const std::string& path);
/// The input's metadata as the analyses saw it (/input_meta: the units of the results, after
/// `vibra analyze --units`). FormatError naming the file when it is missing.
Metadata read_results_input_meta(const std::string& path);

}  // namespace vibra::store
