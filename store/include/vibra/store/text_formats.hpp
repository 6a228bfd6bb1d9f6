// SPDX-License-Identifier: GPL-3.0-or-later
// Text trajectory formats: LAMMPS text dumps and trackpy-style CSV in, CSV out. Readers stream
// frame by frame into a TrajectoryWriter, so memory is bounded by one block of frames however
// large the input; errors name the file and line. A CSV carries no units: `export_csv` writes
// the metadata (units, frame interval, species names and diameters, geometry, per-frame times)
// into a JSON sidecar, `<csv>.meta.json`, that `import_csv` reads back (docs/formats.md).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "vibra/core/trajectory.hpp"
#include "vibra/store/trajectory_file.hpp"

namespace vibra::store {

struct ImportOptions {
    /// LAMMPS atom type → species code (default 1 → small, 2 → large). An unmapped type is an error.
    std::map<std::int64_t, std::int8_t> species_map{{1, kSpeciesSmall}, {2, kSpeciesLarge}};
    std::vector<double> diameters;           ///< per species code; empty = unknown
    std::optional<double> dt;                ///< time between dumped frames (time_unit); default 1
    std::optional<std::string> time_unit;    ///< default: "tau" (LAMMPS), "frame" (CSV)
    std::optional<std::string> length_unit;  ///< default: "sigma" (LAMMPS), "px" (CSV)
    std::int64_t block_rows = 1 << 20;       ///< rows buffered before a write (memory bound)
    bool progress = false;                   ///< progress line on stderr
    /// import_csv: read the metadata sidecar `<in>.meta.json` when it exists (the options above
    /// that are set take precedence over it).
    bool use_metadata = true;
};

struct ImportSummary {
    std::int64_t frames = 0;
    std::int64_t rows = 0;
    std::int64_t lines = 0;
    std::string metadata_file;  ///< the sidecar import_csv read; empty when none
};

/// LAMMPS text dump → vibra trajectory file (atomic; nothing at `out` on error).
/// Positions from xu yu, else x y + ix iy, else x y, else xs ys; velocities from vx vy.
ImportSummary import_lammps(const std::string& in, const std::string& out, const ImportOptions& opt);

/// CSV with a header holding at least frame,particle,x,y (trackpy's output) and optionally
/// species, vx, vy, radius, brightness, quality, species_confidence → vibra trajectory file.
/// Rows must come in non-decreasing frame order; within a frame any order. With the sidecar
/// `<in>.meta.json` (and opt.use_metadata) the file gets its metadata, frame count and per-frame
/// columns; the original provenance goes to the user attributes `origin_source_*`.
ImportSummary import_csv(const std::string& in, const std::string& out, const ImportOptions& opt);

/// vibra trajectory file → CSV `frame,particle,x,y,species[,vx,vy][,radius][,brightness]
/// [,quality][,species_confidence]` (the optional columns the file has), shortest round-trip
/// representation of every number, plus (with `metadata`) the sidecar csv_metadata_path(out);
/// both atomic.
void export_csv(const std::string& in, const std::string& out, bool progress = false, bool metadata = true);

/// The metadata sidecar of a CSV: `<csv>.meta.json`.
std::string csv_metadata_path(const std::string& csv);

/// What a sidecar holds (schema "vibra-csv-metadata" 1.0, docs/formats.md).
struct CsvMetadata {
    Metadata meta;              ///< the /meta attributes of the exported file
    std::int64_t n_frames = 0;  ///< frames of the exported file (trailing empty frames included)
    FrameColumns frames;        ///< per-frame columns (frame_time, timestep, image_number)
};
/// Reads a sidecar. Throws IoError (cannot read) or FormatError naming the file and the key.
CsvMetadata read_csv_metadata(const std::string& path);
/// Writes a sidecar for a CSV with the columns of `columns` (atomic).
void write_csv_metadata(const std::string& path, const CsvMetadata& m, const ColumnSet& columns,
                        const std::string& exported_from);

/// Parse "1:small,2:large" into a type → species map (names small/large or codes 0/1/-1).
std::map<std::int64_t, std::int8_t> parse_species_map(const std::string& s);
/// Parse "small=1.0,large=1.4" into per-code diameters.
std::vector<double> parse_diameters(const std::string& s);

}  // namespace vibra::store
