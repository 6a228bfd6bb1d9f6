// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/core/units.hpp"

#include "vibra/core/error.hpp"

namespace vibra {

const char* to_string(UnitSystem u) {
    switch (u) {
        case UnitSystem::automatic:
            return "auto";
        case UnitSystem::physical:
            return "mm";
        case UnitSystem::image:
            return "px";
    }
    return "auto";
}

UnitSystem unit_system_from_string(const std::string& s) {
    if (s == "auto") return UnitSystem::automatic;
    if (s == "mm") return UnitSystem::physical;
    if (s == "px") return UnitSystem::image;
    throw ParameterError("--units: '" + s + "' is not one of auto, mm, px");
}

UnitConversion unit_conversion(const Metadata& m, UnitSystem u, const std::string& source) {
    UnitConversion c;
    c.length_unit = m.length_unit;
    c.time_unit = m.time_unit;
    const bool scale = m.px_per_mm && *m.px_per_mm > 0;
    const bool rate = m.time_unit == "s" && m.frame_interval > 0;
    if (u == UnitSystem::image) {
        if (m.length_unit == "mm" && scale) {
            c.length_unit = "px";
            c.length_factor = *m.px_per_mm;
        } else if (m.length_unit != "px") {
            throw FormatError(source + ": --units px: lengths are in " + m.length_unit +
                              (m.length_unit == "mm" ? " and the file records no px_per_mm" : "") +
                              ", not pixels");
        }
        if (m.time_unit != "frame") {
            c.time_unit = "frame";
            c.time_factor = 1.0 / m.frame_interval;
        }
        return c;
    }
    if (m.length_unit == "px") {
        if (scale) {
            c.length_unit = "mm";
            c.length_factor = 1.0 / *m.px_per_mm;
        } else if (u == UnitSystem::physical) {
            throw FormatError(source +
                              ": --units mm: the file records no image scale (px_per_mm); track with "
                              "--px-per-mm, or analyse with --units auto or px");
        }
    } else if (u == UnitSystem::physical && m.length_unit != "mm") {
        throw FormatError(source + ": --units mm: lengths are in " + m.length_unit + ", not pixels or mm");
    }
    if (u == UnitSystem::physical && !rate)
        throw FormatError(source + ": --units mm: the file records no frame rate (times in " + m.time_unit +
                          "); track with --fps, or analyse with --units auto or px");
    return c;
}

Metadata convert_metadata(const Metadata& m, const UnitConversion& c) {
    Metadata out = m;
    out.length_unit = c.length_unit;
    out.time_unit = c.time_unit;
    if (c.time_factor != 1)
        out.frame_interval = c.time_unit == "frame" ? 1.0 : m.frame_interval * c.time_factor;
    const double a = c.length_factor;
    if (a != 1) {
        Geometry& g = out.geometry;
        g.x0 *= a, g.y0 *= a, g.x1 *= a, g.y1 *= a, g.cx *= a, g.cy *= a, g.r *= a;
        for (double& d : out.species_diameters) d *= a;
    }
    return out;
}

void convert_rows(TrajectoryTable& t, const UnitConversion& c) {
    const double a = c.length_factor, v = c.length_factor / c.time_factor;
    if (a != 1) {
        for (double& x : t.x) x *= a;
        for (double& y : t.y) y *= a;
        for (float& r : t.radius) r = static_cast<float>(r * a);
    }
    if (v != 1) {
        for (double& x : t.vx) x *= v;
        for (double& y : t.vy) y *= v;
    }
}

UnitSource::UnitSource(const TrajectorySource& inner, const UnitConversion& c)
    : inner_(inner), c_(c), meta_(convert_metadata(inner.meta(), c)), frames_(inner.frame_columns()) {
    if (meta_.time_unit != "s") frames_.time_s.clear();
}

Trajectory UnitSource::read_frames(std::int64_t first, std::int64_t count) const {
    Trajectory t = inner_.read_frames(first, count);
    t.meta = meta_;
    if (meta_.time_unit != "s") t.frames.time_s.clear();
    convert_rows(t.rows, c_);
    return t;
}

}  // namespace vibra
