// SPDX-License-Identifier: GPL-3.0-or-later
// The vibra trajectory file (HDF5), a public contract documented in docs/hdf5-layout.md:
//   /                 schema="vibra-trajectories", schema_version="1.0", vibra_version, created
//   /trajectories/*   one 1-D dataset per column (frame, particle, x, y, species, [vx, vy, radius,
//                     brightness, quality, species_confidence]), chunked, shuffle+deflate, `units`
//   /index/frame_offsets (int64, T+1), optional frame_time (s), timestep, image_number
//   /meta             metadata as attributes, /meta/user free-form attributes
//   /diagnostics/*    optional per-frame diagnostic counters (tracking)
// Writes are atomic (NAME.partial, fsync, rename); reads validate the schema and read frame
// ranges by hyperslab, never the whole file.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "vibra/core/trajectory.hpp"
#include "vibra/core/trajectory_source.hpp"

namespace vibra::store {

inline constexpr const char* kTrajectorySchema = "vibra-trajectories";
inline constexpr const char* kTrajectorySchemaVersion = "1.0";

/// Which optional columns a file has.
struct ColumnSet {
    bool velocity = false;
    bool radius = false;
    bool brightness = false;
    bool quality = false;
    bool species_confidence = false;
    bool edge = false;
    static ColumnSet of(const TrajectoryTable& t);
    bool operator==(const ColumnSet&) const = default;
};

/// Streams a trajectory into `path` frame block by frame block. Nothing appears at `path` until
/// commit(): data go to `path.partial`, which is fsynced and renamed. Destroying an uncommitted
/// writer removes the partial file.
class TrajectoryWriter {
public:
    /// @pre the directory of `path` exists and is writable (else IoError naming the path).
    TrajectoryWriter(const std::string& path, const Metadata& meta, ColumnSet columns);
    ~TrajectoryWriter();
    TrajectoryWriter(const TrajectoryWriter&) = delete;
    TrajectoryWriter& operator=(const TrajectoryWriter&) = delete;

    /// Append `n_frames` frames starting at frames_written(); `rows` holds their rows, sorted by
    /// (frame, particle), with exactly the optional columns of the ColumnSet. Per-frame columns
    /// in `fc` are either empty or n_frames long, consistently across calls.
    void append(const TrajectoryTable& rows, std::int64_t n_frames, const FrameColumns& fc = {});
    /// Species (and species_confidence, when the file has it) come later, by append_species():
    /// from now on append() writes every column but those two (its rows still carry them, with
    /// any values). For a tracker whose species are decided by a vote over each whole trajectory,
    /// known only at the end: the other columns are compressed and written while it runs. Call
    /// before the first append.
    void defer_species();
    /// The deferred species (and confidences: empty when the file has no species_confidence) of
    /// the next rows, in the order they were appended; every row's by commit.
    void append_species(const std::vector<std::int8_t>& species, const std::vector<float>& confidence);
    /// Replaces the per-frame columns (each empty or frames_written() long at commit) given to
    /// append() so far: for a writer that learns them only at the end (camera time stamps).
    void set_frame_columns(FrameColumns fc);
    /// Per-frame diagnostic counter written to /diagnostics/<name> at commit (length = frames).
    void set_diagnostic(const std::string& name, std::vector<std::int64_t> values, const std::string& units);
    Metadata& meta() { return meta_; }
    std::int64_t frames_written() const { return n_frames_; }
    std::int64_t rows_written() const { return n_rows_; }
    /// Writes index and metadata, flushes, fsyncs and renames into place.
    void commit();

private:
    void create_columns();
    struct Impl;
    std::unique_ptr<Impl> impl_;
    std::string path_;
    Metadata meta_;
    ColumnSet cols_;
    std::int64_t n_frames_ = 0, n_rows_ = 0;
    bool species_deferred_ = false;
    std::int64_t n_species_ = 0;  // deferred species rows written
    std::vector<std::int64_t> offsets_{0};
    FrameColumns frames_;
    std::map<std::string, std::pair<std::vector<std::int64_t>, std::string>> diagnostics_;
    bool committed_ = false;
};

/// True when `path` is a regular file in HDF5 format (quietly: no HDF5 error printing).
bool is_hdf5_file(const std::string& path);

/// Write a whole in-memory trajectory (atomic, as TrajectoryWriter).
void write_trajectory(const std::string& path, const Trajectory& t);

/// Opens a trajectory file, validates its schema and index, and reads frame ranges on demand.
class TrajectoryReader final : public TrajectorySource {
public:
    /// Throws IoError (cannot open) or FormatError (not a vibra trajectory file, missing dataset,
    /// unequal lengths, bad index, newer major schema version), naming the file and field.
    explicit TrajectoryReader(const std::string& path);
    ~TrajectoryReader();
    TrajectoryReader(TrajectoryReader&&) noexcept;

    const std::string& path() const { return path_; }
    const Metadata& meta() const override { return meta_; }
    const ColumnSet& columns() const { return cols_; }
    std::int64_t n_frames() const override { return index_.n_frames(); }
    std::int64_t n_rows() const override { return index_.offsets.back(); }
    const FrameIndex& index() const { return index_; }
    const FrameColumns& frame_columns() const override { return frames_; }
    std::int64_t rows_in(std::int64_t first, std::int64_t count) const override;
    std::string schema_version() const { return schema_version_; }
    /// Names of the /diagnostics datasets (empty when none).
    std::vector<std::string> diagnostics() const;
    std::vector<std::int64_t> read_diagnostic(const std::string& name) const;

    /// Frames [first, first+count) (clamped to the file): rows by hyperslab, index rebased to the
    /// slice, per-frame columns sliced. Validates sorting and duplicates of what it reads.
    Trajectory read_frames(std::int64_t first, std::int64_t count) const override;
    Trajectory read_all() const { return read_frames(0, n_frames()); }
    /// Reads only the named columns of frames [first, first+count) — e.g. {"particle"} for
    /// track statistics without positions. Unnamed required columns are left empty.
    TrajectoryTable read_columns(const std::vector<std::string>& names, std::int64_t first,
                                 std::int64_t count) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
    std::string path_;
    Metadata meta_;
    ColumnSet cols_;
    FrameIndex index_;
    FrameColumns frames_;
    std::string schema_version_;
};

}  // namespace vibra::store
