// SPDX-License-Identifier: GPL-3.0-or-later
// Text trajectory formats: LAMMPS text dumps and trackpy-style CSV in, CSV out. Readers stream
// frame by frame into a TrajectoryWriter, so memory is bounded by one block of frames however
// large the input; errors name the file and line.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "vibra/core/trajectory.hpp"

namespace vibra::store {

struct ImportOptions {
    /// LAMMPS atom type → species code (default 1 → small, 2 → large). An unmapped type is an error.
    std::map<std::int64_t, std::int8_t> species_map{{1, kSpeciesSmall}, {2, kSpeciesLarge}};
    std::vector<double> diameters;          ///< per species code; empty = unknown
    std::optional<double> dt;               ///< time between dumped frames (time_unit); default 1
    std::optional<std::string> time_unit;   ///< default: "tau" (LAMMPS), "frame" (CSV)
    std::optional<std::string> length_unit; ///< default: "sigma" (LAMMPS), "px" (CSV)
    std::int64_t block_rows = 1 << 20;      ///< rows buffered before a write (memory bound)
    bool progress = false;                  ///< progress line on stderr
};

struct ImportSummary {
    std::int64_t frames = 0;
    std::int64_t rows = 0;
    std::int64_t lines = 0;
};

/// LAMMPS text dump → vibra trajectory file (atomic; nothing at `out` on error).
/// Positions from xu yu, else x y + ix iy, else x y, else xs ys; velocities from vx vy.
ImportSummary import_lammps(const std::string& in, const std::string& out, const ImportOptions& opt);

/// CSV with a header holding at least frame,particle,x,y (trackpy's output) and optionally
/// species, vx, vy, radius, brightness, quality, species_confidence → vibra trajectory file.
/// Rows must come in non-decreasing frame order; within a frame any order.
ImportSummary import_csv(const std::string& in, const std::string& out, const ImportOptions& opt);

/// vibra trajectory file → CSV `frame,particle,x,y,species[,vx,vy]`, shortest round-trip
/// representation of every number; atomic.
void export_csv(const std::string& in, const std::string& out, bool progress = false);

/// Parse "1:small,2:large" into a type → species map (names small/large or codes 0/1/-1).
std::map<std::int64_t, std::int8_t> parse_species_map(const std::string& s);
/// Parse "small=1.0,large=1.4" into per-code diameters.
std::vector<double> parse_diameters(const std::string& s);

}  // namespace vibra::store
