// SPDX-License-Identifier: GPL-3.0-or-later
// The catalogue of analyses `vibra analyze` can run. Each analysis has a name (its `--only`
// token and its group /analysis/<name>), its flags (prefixed with its name, e.g. --gr-rmax),
// and a function from a TrajectorySource to result groups. The CLI knows no analysis by name:
// adding one means adding an AnalysisSpec to one of the *_analyses() lists (docs/architecture.md).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "vibra/core/result.hpp"
#include "vibra/core/trajectory_source.hpp"

namespace vibra::analysis {

class TrackCache;

inline constexpr double kInf = std::numeric_limits<double>::infinity();  ///< "no limit" of AnalysisOption

/// The value type of an analysis option: shown in `--help` (INT, FLOAT, LIST, BOOL, TEXT) and
/// checked when the command line (or the --config file) is parsed, before any file is read.
enum class OptionType {
    text,     ///< free text, or one of `choices` when given
    integer,  ///< a whole number
    number,   ///< a floating-point number
    list,     ///< comma-separated numbers
    boolean,  ///< 0/1 (also true/false, yes/no, on/off)
};
const char* type_name(OptionType t);  ///< "TEXT", "INT", "FLOAT", "LIST", "BOOL"

/// One command-line flag of an analysis: "--<flag>" with a default value as text.
struct AnalysisOption {
    AnalysisOption() = default;
    AnalysisOption(std::string flag_, std::string help_, std::string default_value_,
                   OptionType type_ = OptionType::text,
                   double min_ = -std::numeric_limits<double>::infinity(),
                   double max_ = std::numeric_limits<double>::infinity(),
                   std::vector<std::string> choices_ = {})
        : flag(std::move(flag_)),
          help(std::move(help_)),
          default_value(std::move(default_value_)),
          type(type_),
          min(min_),
          max(max_),
          choices(std::move(choices_)) {}
    std::string flag;  ///< without dashes, prefixed with the analysis name, words joined by '-': "gr-rmax"
    std::string help;  ///< one line, with the unit
    std::string default_value;  ///< text; "" = unset (the analysis picks, and records, a value)
    OptionType type = OptionType::text;
    double min = -std::numeric_limits<double>::infinity();  ///< numbers (each entry of a list) must be >= min
    double max = std::numeric_limits<double>::infinity();   ///< … and <= max
    std::vector<std::string>
        choices;  ///< text: the accepted values (empty = any); list: extra accepted words ("none")
};

/// Checks one option's value against its type, range and choices; returns "" when valid, else
/// the reason, naming the flag as the user types it ("--kgap-bootstrap: 5 is below the minimum 10").
/// An empty value is valid (= unset).
std::string check_option_value(const AnalysisOption& o, const std::string& value);

/// The flag's spelling before every flag used '-' between words (`velocity_distribution-bins`),
/// accepted as a hidden alias for one release; "" when the spelling did not change.
std::string legacy_flag(const std::string& analysis_name, const std::string& flag);

/// What an analysis run gets.
struct AnalysisContext {
    const TrajectorySource& source;
    std::map<std::string, std::string> options;  ///< flag → value (defaults filled in)
    bool progress = false;                       ///< may draw a progress line on stderr
    int threads = 1;
    /// Results of analyses run earlier in the same invocation, by group name (e.g. S(k) for
    /// F_s's default k, currents for the k-gap fit).
    const std::map<std::string, ResultGroup>* earlier = nullptr;
    /// Particle-major copy of `source` shared by the per-track analyses of the run (built on first
    /// use; track_cache.hpp); null = each analysis builds its own.
    TrackCache* tracks = nullptr;
    /// Memory budget of analyses that can trade memory for a temporary file (currents' series).
    std::int64_t memory_bytes = std::int64_t{2} << 30;

    /// Typed option access; a malformed value throws ParameterError naming the flag.
    double number(const std::string& flag) const;
    std::int64_t integer(const std::string& flag) const;
    const std::string& text(const std::string& flag) const;
    std::vector<double> numbers(const std::string& flag) const;  ///< comma-separated list
    bool is_set(const std::string& flag) const;                  ///< non-empty value
};

struct AnalysisSpec {
    using Run = std::function<std::vector<ResultGroup>(const AnalysisContext&)>;
    AnalysisSpec() = default;
    AnalysisSpec(std::string name_, std::string help_, std::vector<AnalysisOption> options_, Run run_,
                 bool default_on_ = true, std::vector<std::string> needs_ = {})
        : name(std::move(name_)),
          help(std::move(help_)),
          options(std::move(options_)),
          run(std::move(run_)),
          default_on(default_on_),
          needs(std::move(needs_)) {}
    std::string name;  ///< --only token = /analysis/<name>
    std::string help;
    std::vector<AnalysisOption> options;
    /// Runs the analysis; returns its group(s). The first group must be named `name`.
    Run run;
    bool default_on = true;  ///< run when --only is not given
    /// Analyses whose groups `run` reads from AnalysisContext::earlier (e.g. kgap → currents).
    /// `vibra analyze --only X` runs them first, with their own defaults, when not asked for.
    std::vector<std::string> needs;
};

/// The analyses to run for `wanted` (empty = the default set), in registry order, with every
/// analysis they need added. Unknown names throw ParameterError naming `--only`.
std::vector<const AnalysisSpec*> resolve_selection(const std::vector<AnalysisSpec>& specs,
                                                   const std::vector<std::string>& wanted);

/// The analysis name with '_' replaced by '-', the prefix of its flags ("velocity-distribution").
std::string flag_prefix(const std::string& analysis_name);

/// All analyses, in the order they run (dependencies first).
std::vector<AnalysisSpec> all_analyses();

// Lists contributed by each analysis family (one file each).
std::vector<AnalysisSpec> structure_analyses();   ///< gr, sk, psi6, voronoi, clusters, number_fluctuations
std::vector<AnalysisSpec> dynamics_analyses();    ///< msd, vacf, vdos, fs, temperature, velocity_distribution
std::vector<AnalysisSpec> modes_analyses();       ///< currents, kgap, tvdos, covariance_vdos
std::vector<AnalysisSpec> collective_analyses();  ///< field, defects, correlations, spectra, evolution

}  // namespace vibra::analysis
