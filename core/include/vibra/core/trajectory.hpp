// SPDX-License-Identifier: GPL-3.0-or-later
// The trajectory data model: one long frame-major table of detections (structure of arrays,
// trackpy's `frame, particle, x, y` vocabulary), a CSR frame index for O(1) access to a frame,
// per-frame columns (camera time stamps, LAMMPS time steps) and the metadata that gives the
// numbers their meaning (units, geometry, species). Plain data: algorithms take spans of it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace vibra {

/// Species codes of the `species` column.
inline constexpr std::int8_t kSpeciesUnknown = -1;
inline constexpr std::int8_t kSpeciesSmall = 0;
inline constexpr std::int8_t kSpeciesLarge = 1;
/// `particle` of a detection not linked into a trajectory.
inline constexpr std::int64_t kUnlinked = -1;

/// One row per detection, sorted by (frame, particle). Optional columns are empty when absent,
/// otherwise exactly size() long. Positions in Metadata::length_unit.
struct TrajectoryTable {
    std::vector<std::int64_t> frame;        ///< 0-based frame number
    std::vector<std::int64_t> particle;     ///< trajectory id, kUnlinked = −1 for unlinked
    std::vector<double> x, y;               ///< position (image: x = column, y = row)
    std::vector<std::int8_t> species;       ///< 0 small, 1 large, −1 unknown
    std::vector<double> vx, vy;             ///< optional velocity, length_unit per time_unit
    std::vector<float> radius;              ///< optional measured radius, length_unit
    std::vector<float> brightness;          ///< optional integrated brightness, counts
    std::vector<float> quality;             ///< optional detection quality in [0, 1]
    std::vector<float> species_confidence;  ///< optional confidence of `species` in [0, 1]
    /// optional: 1 = the disk crosses the edge of the image or the region tracked (its centre is
    /// biased, and it lies outside the analysis window Metadata::geometry), else 0
    std::vector<std::int8_t> edge;

    std::size_t size() const { return frame.size(); }
    bool empty() const { return frame.empty(); }
    bool has_velocity() const { return !vx.empty(); }

    /// Append one row; optional columns must already be present (non-empty) or absent
    /// consistently — use the push_* helpers below for the optional ones.
    void push(std::int64_t f, std::int64_t p, double px, double py, std::int8_t s) {
        frame.push_back(f);
        particle.push_back(p);
        x.push_back(px);
        y.push_back(py);
        species.push_back(s);
    }
    /// Append all rows of `other` (same optional columns required).
    void append(const TrajectoryTable& other);
    /// Keep rows [begin, end).
    TrajectoryTable slice(std::size_t begin, std::size_t end) const;
    void clear();
    void reserve(std::size_t n);

    /// Checks that all present columns have size() rows. Throws FormatError naming `source` and
    /// the column.
    void check_lengths(const std::string& source) const;
    /// check_lengths plus: sorted by (frame, particle), frame ≥ 0, no duplicate (frame, particle)
    /// with particle ≥ 0, species in {−1, 0, 1}. Throws FormatError naming `source`, frame, particle.
    void validate(const std::string& source) const;
    /// Stable sort of all columns by (frame, particle), over rows [begin, end) (default: all).
    void sort_rows(std::size_t begin = 0, std::size_t end = static_cast<std::size_t>(-1));
};

/// CSR index over a frame-major table: rows of frame f are [offsets[f-first], offsets[f-first+1]).
struct FrameIndex {
    std::int64_t first_frame = 0;
    std::vector<std::int64_t> offsets{0};  ///< n_frames()+1 entries, offsets[0] == 0 for a table

    std::int64_t n_frames() const { return static_cast<std::int64_t>(offsets.size()) - 1; }
    std::int64_t begin(std::int64_t f) const { return offsets[static_cast<std::size_t>(f - first_frame)]; }
    std::int64_t end(std::int64_t f) const { return offsets[static_cast<std::size_t>(f - first_frame + 1)]; }
    std::int64_t count(std::int64_t f) const { return end(f) - begin(f); }
};

/// Index of a sorted table covering frames [first_frame, first_frame + n_frames). Rows outside
/// the range are an error (FormatError naming `source`).
FrameIndex build_frame_index(const TrajectoryTable& t, std::int64_t first_frame, std::int64_t n_frames,
                             const std::string& source = "table");

/// Observation geometry: where particles can be and how distances work.
enum class GeometryKind {
    unbounded,      ///< unknown: treat as the bounding box of the data, non-periodic
    periodic_box,   ///< simulation box [x0,x1)×[y0,y1), minimum-image distances
    window_rect,    ///< non-periodic rectangular field of view [x0,x1]×[y0,y1]
    window_circle,  ///< non-periodic circular field of view, centre (cx,cy), radius r
};
const char* to_string(GeometryKind k);
GeometryKind geometry_kind_from_string(const std::string& s);  ///< throws ParameterError

struct Geometry {
    GeometryKind kind = GeometryKind::unbounded;
    double x0 = 0, y0 = 0, x1 = 0, y1 = 0;  ///< box / rectangle bounds (length unit)
    double cx = 0, cy = 0, r = 0;           ///< circle (length unit)

    static Geometry periodic(double x0, double y0, double x1, double y1);
    static Geometry rect(double x0, double y0, double x1, double y1);
    static Geometry circle(double cx, double cy, double r);

    bool periodic() const { return kind == GeometryKind::periodic_box; }
    double lx() const { return x1 - x0; }
    double ly() const { return y1 - y0; }
    /// Area of the region (0 for unbounded).
    double area() const;
    bool contains(double x, double y) const;
    bool operator==(const Geometry&) const = default;
};

/// Where the data came from.
struct Source {
    std::string file;           ///< input path as given
    std::string checksum;       ///< "sha256:<hex>" of the input file, empty when unknown
    std::string vibra_version;  ///< version of vibra that wrote the file
    std::string parameters;     ///< the command line / parameters used, one string
    bool operator==(const Source&) const = default;
};

/// Everything that gives the columns their meaning. Units are explicit: positions in
/// length_unit, times in time_unit; frame_interval is the time between frames in time_unit.
struct Metadata {
    std::string length_unit = "px";   ///< px, mm, sigma, …
    std::string time_unit = "frame";  ///< frame, s, tau, …
    double frame_interval = 1.0;      ///< time between consecutive frames, in time_unit
    std::optional<double> px_per_mm;  ///< image calibration when known
    std::int64_t image_width = 0;     ///< px, 0 for simulations
    std::int64_t image_height = 0;    ///< px
    /// "image": x = column, y = row, (0,0) = centre of the top-left pixel, y down;
    /// "simulation": as given by the source.
    std::string coordinate_convention = "image";
    Geometry geometry;
    std::vector<std::string> species_names{"small", "large"};
    std::vector<double> species_diameters;     ///< per species code 0,1,…, length_unit; empty = unknown
    std::optional<double> drive_frequency_hz;  ///< plate drive frequency
    std::optional<double> drive_gamma;         ///< dimensionless acceleration Γ = Aω²/g
    Source source;
    std::map<std::string, std::string> user;  ///< free-form user attributes
    bool incomplete = false;                  ///< the source was truncated: what was read is kept

    bool operator==(const Metadata&) const = default;
};

/// Per-frame columns beside the frame index. Empty vectors = absent.
struct FrameColumns {
    std::vector<double> time_s;              ///< camera time stamp of each frame, s
    std::vector<std::int64_t> timestep;      ///< simulation time step (LAMMPS TIMESTEP)
    std::vector<std::int64_t> image_number;  ///< camera's own image number
    bool operator==(const FrameColumns&) const = default;
};

/// A whole (or a frame range of a) trajectory file in memory.
struct Trajectory {
    Metadata meta;
    TrajectoryTable rows;
    FrameIndex index;     ///< over rows, covering every frame of the range (empty frames included)
    FrameColumns frames;  ///< per-frame columns for the frames of `index`
};

/// Sorted unique particle ids ≥ 0 of a table.
std::vector<std::int64_t> particle_ids(const TrajectoryTable& t);

/// Physical time of frame f (time_unit): from time stamps when given, else f·frame_interval.
double frame_time(const Metadata& m, const FrameColumns& fc, std::int64_t first_frame, std::int64_t f);

}  // namespace vibra
