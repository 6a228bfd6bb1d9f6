// SPDX-License-Identifier: GPL-3.0-or-later
// Units the analyses see. A tracked file keeps what was measured (pixels) and records the image
// scale (Metadata::px_per_mm) and the frame rate (time_unit "s", frame_interval); a UnitSource
// converts at the source, before any analysis runs — positions, radii, velocities, geometry
// and diameters × 1/px_per_mm, times × frame_interval — so that every analysis stays unit-
// agnostic and labels its results from the converted Metadata (mm, s, mm²/s, rad/mm, …).
#pragma once

#include <string>

#include "vibra/core/trajectory_source.hpp"

namespace vibra {

/// What `vibra analyze --units` asks for.
enum class UnitSystem {
    automatic,  ///< "auto": mm when the file records px_per_mm, s when it records a rate; else as recorded
    physical,   ///< "mm": mm and s, an error when the file lacks the scale or the rate
    image,      ///< "px": pixels and frames, what was measured
};
const char* to_string(UnitSystem u);
UnitSystem unit_system_from_string(const std::string& s);  ///< "auto", "mm", "px"; throws ParameterError

/// The conversion from a file's units to the analysed ones: length × length_factor, time ×
/// time_factor (velocities × length_factor / time_factor).
struct UnitConversion {
    std::string length_unit, time_unit;  ///< after the conversion
    double length_factor = 1, time_factor = 1;
    bool identity() const { return length_factor == 1 && time_factor == 1; }
};

/// The conversion `u` gives for metadata `m`. Throws FormatError naming `source` when `u` cannot
/// be met (mm without px_per_mm or without a rate; px for lengths that are neither px nor mm).
UnitConversion unit_conversion(const Metadata& m, UnitSystem u, const std::string& source);

/// `m` in the converted units (geometry, diameters, frame_interval, unit names; px_per_mm and
/// the image size stay as recorded).
Metadata convert_metadata(const Metadata& m, const UnitConversion& c);
/// Positions, radii and velocities of `t` in the converted units (in place).
void convert_rows(TrajectoryTable& t, const UnitConversion& c);

/// `inner` seen in the converted units (it must outlive the UnitSource). Converted to frames, the
/// per-frame time stamps are left out (frame f is at time f).
class UnitSource final : public TrajectorySource {
public:
    UnitSource(const TrajectorySource& inner, const UnitConversion& c);
    const Metadata& meta() const override { return meta_; }
    std::int64_t n_frames() const override { return inner_.n_frames(); }
    std::int64_t n_rows() const override { return inner_.n_rows(); }
    Trajectory read_frames(std::int64_t first, std::int64_t count) const override;
    const FrameColumns& frame_columns() const override { return frames_; }
    std::int64_t rows_in(std::int64_t first, std::int64_t count) const override {
        return inner_.rows_in(first, count);
    }
    std::int64_t max_block_rows() const override { return inner_.max_block_rows(); }
    const UnitConversion& conversion() const { return c_; }

private:
    const TrajectorySource& inner_;
    UnitConversion c_;
    Metadata meta_;
    FrameColumns frames_;  // the inner ones; in frames: without the time stamps
};

}  // namespace vibra
