// SPDX-License-Identifier: GPL-3.0-or-later
// Where analyses get frames from: a file read block by block (vibra::store::TrajectoryReader)
// or a trajectory already in memory (tests, simulations). Analyses stream over blocks of
// frames through this interface, so their memory is bounded by a block plus their result.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

#include "vibra/core/trajectory.hpp"

namespace vibra {

class TrajectorySource {
public:
    virtual ~TrajectorySource() = default;
    virtual const Metadata& meta() const = 0;
    virtual std::int64_t n_frames() const = 0;
    /// Total rows over all frames.
    virtual std::int64_t n_rows() const = 0;
    /// Frames [first, first+count) (clamped), with their index (first_frame = first) and
    /// per-frame columns.
    virtual Trajectory read_frames(std::int64_t first, std::int64_t count) const = 0;
    /// Per-frame columns of the whole range (time stamps, time steps).
    virtual const FrameColumns& frame_columns() const = 0;
    /// Rows in frames [first, first+count) — lets a caller size its blocks.
    virtual std::int64_t rows_in(std::int64_t first, std::int64_t count) const = 0;
    /// The most rows a block of frames should hold (frames_per_block honours it; a block is
    /// never less than one frame). No limit unless a memory budget sets one (RowBudgetSource).
    virtual std::int64_t max_block_rows() const { return std::numeric_limits<std::int64_t>::max(); }
};

/// `inner` with blocks of at most `max_rows` rows: how a memory budget (`vibra analyze --memory`)
/// reaches every analysis that streams frames in blocks. Everything else is forwarded.
class RowBudgetSource final : public TrajectorySource {
public:
    RowBudgetSource(const TrajectorySource& inner, std::int64_t max_rows)
        : inner_(inner), max_rows_(max_rows) {}
    const Metadata& meta() const override { return inner_.meta(); }
    std::int64_t n_frames() const override { return inner_.n_frames(); }
    std::int64_t n_rows() const override { return inner_.n_rows(); }
    Trajectory read_frames(std::int64_t first, std::int64_t count) const override {
        return inner_.read_frames(first, count);
    }
    const FrameColumns& frame_columns() const override { return inner_.frame_columns(); }
    std::int64_t rows_in(std::int64_t first, std::int64_t count) const override {
        return inner_.rows_in(first, count);
    }
    std::int64_t max_block_rows() const override { return std::min(max_rows_, inner_.max_block_rows()); }

private:
    const TrajectorySource& inner_;
    std::int64_t max_rows_;
};

/// A Trajectory held in memory, served through the TrajectorySource interface.
class InMemorySource final : public TrajectorySource {
public:
    /// @pre t.index covers frames [0, T) of t.rows (build_frame_index(t.rows, 0, T)).
    explicit InMemorySource(Trajectory t);
    const Metadata& meta() const override { return t_.meta; }
    std::int64_t n_frames() const override { return t_.index.n_frames(); }
    std::int64_t n_rows() const override { return static_cast<std::int64_t>(t_.rows.size()); }
    Trajectory read_frames(std::int64_t first, std::int64_t count) const override;
    const FrameColumns& frame_columns() const override { return t_.frames; }
    std::int64_t rows_in(std::int64_t first, std::int64_t count) const override;
    const Trajectory& trajectory() const { return t_; }

private:
    Trajectory t_;
};

/// Frames per block so that a block holds about min(target_rows, s.max_block_rows()) rows (at
/// least 1 frame).
std::int64_t frames_per_block(const TrajectorySource& s, std::int64_t target_rows = 1 << 21);

}  // namespace vibra
