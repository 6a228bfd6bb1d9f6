// SPDX-License-Identifier: GPL-3.0-or-later
// Glue between the tracking pipeline and the HDF5 store. It lives in apps/ because tracking and
// store are siblings that never include each other (docs/architecture.md).
#pragma once
#include <memory>

#include "vibra/tracking/pipeline.hpp"
#include "vibra/store/trajectory_file.hpp"

namespace vibra::tracking {

/// TrajectorySink writing a vibra HDF5 trajectory file (atomic: nothing at `path` until commit).
class StoreSink final : public TrajectorySink {
public:
    explicit StoreSink(std::string path) : path_(std::move(path)) {}
    void open(const Metadata& meta) override {
        store::ColumnSet cols;
        cols.radius = cols.quality = cols.species_confidence = cols.edge = true;
        w_ = std::make_unique<store::TrajectoryWriter>(path_, meta, cols);
        w_->defer_species();
    }
    void append(const TrajectoryTable& rows, std::int64_t n_frames) override { w_->append(rows, n_frames); }
    void append_species(const std::vector<std::int8_t>& species,
                        const std::vector<float>& confidence) override {
        w_->append_species(species, confidence);
    }
    void set_diagnostic(const std::string& name, std::vector<std::int64_t> values,
                        const std::string& units) override {
        w_->set_diagnostic(name, std::move(values), units);
    }
    void commit(const Metadata& meta, const FrameColumns& fc) override {
        w_->meta() = meta;
        w_->set_frame_columns(fc);
        w_->commit();
    }

private:
    std::string path_;
    std::unique_ptr<store::TrajectoryWriter> w_;
};

/// Convenience: track `input` into the HDF5 file `output` (spool at output + ".spool").
inline TrackSummary track_video(const std::string& input, const std::string& output, const TrackParams& p) {
    StoreSink sink(output);
    auto s = track_video(input, sink, output + ".spool", p);
    s.output = output;
    return s;
}

}  // namespace vibra::tracking
