// SPDX-License-Identifier: GPL-3.0-or-later
// The catalogue of analyses `vibra analyze` can run. Each analysis has a name (its `--only`
// token and its group /analysis/<name>), its flags (prefixed with its name, e.g. --gr-rmax),
// and a function from a TrajectorySource to result groups. The CLI knows no analysis by name:
// adding one means adding an AnalysisSpec to one of the *_analyses() lists (docs/architecture.md).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "vibra/core/result.hpp"
#include "vibra/core/trajectory_source.hpp"

namespace vibra::analysis {

/// One command-line flag of an analysis: "--<flag>" with a default value as text.
struct AnalysisOption {
    std::string flag;           ///< without dashes, prefixed with the analysis name: "gr-rmax"
    std::string help;           ///< one line, with the unit
    std::string default_value;  ///< text; "" = unset (the analysis picks, and records, a value)
};

/// What an analysis run gets.
struct AnalysisContext {
    const TrajectorySource& source;
    std::map<std::string, std::string> options;  ///< flag → value (defaults filled in)
    bool progress = false;                       ///< may draw a progress line on stderr
    int threads = 1;
    /// Results of analyses run earlier in the same invocation, by group name (e.g. S(k) for
    /// F_s's default k, currents for the k-gap fit).
    const std::map<std::string, ResultGroup>* earlier = nullptr;

    /// Typed option access; a malformed value throws ParameterError naming the flag.
    double number(const std::string& flag) const;
    std::int64_t integer(const std::string& flag) const;
    const std::string& text(const std::string& flag) const;
    std::vector<double> numbers(const std::string& flag) const;  ///< comma-separated list
    bool is_set(const std::string& flag) const;  ///< non-empty value
};

struct AnalysisSpec {
    std::string name;  ///< --only token = /analysis/<name>
    std::string help;
    std::vector<AnalysisOption> options;
    /// Runs the analysis; returns its group(s). The first group must be named `name`.
    std::function<std::vector<ResultGroup>(const AnalysisContext&)> run;
    bool default_on = true;  ///< run when --only is not given
};

/// All analyses, in the order they run (dependencies first).
std::vector<AnalysisSpec> all_analyses();

// Lists contributed by each analysis family (one file each).
std::vector<AnalysisSpec> structure_analyses();   ///< gr, sk, psi6, voronoi, clusters, number_fluctuations
std::vector<AnalysisSpec> dynamics_analyses();    ///< msd, vacf, vdos, fs, temperature, velocity_distribution
std::vector<AnalysisSpec> modes_analyses();       ///< currents, kgap, tvdos, covariance_vdos
std::vector<AnalysisSpec> collective_analyses();  ///< field, defects, correlations, spectra, evolution

}  // namespace vibra::analysis
