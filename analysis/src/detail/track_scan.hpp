// SPDX-License-Identifier: GPL-3.0-or-later
// Private: what one pass over the frames learns about the tracks (ids, lifetimes, species votes,
// per-frame drift increments, mean given velocity) and the particle-major store of TrackCache.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <memory>
#include <string>
#include <vector>

#include "detail/temp_file.hpp"
#include "vibra/analysis/track_cache.hpp"
#include "vibra/core/trajectory_source.hpp"

namespace vibra::analysis::detail {

struct TrackScan {
    std::vector<std::int64_t> ids;               ///< linked ids (≥ 0), ascending
    std::vector<std::int64_t> first, last;       ///< lifetime [first, last] of ids[j]
    std::vector<std::int64_t> n_small, n_large;  ///< species votes of ids[j]
    std::vector<std::int64_t> offset;            ///< prefix sum of lifetimes (ids.size() + 1)
    std::vector<double> dx, dy, ux, uy;  ///< per frame: mean displacement from f−1, mean given velocity
    std::vector<char> d_ok, u_ok;        ///< … defined
    bool has_vel = false;                ///< the rows carry vx, vy
};

void* huge_alloc(std::size_t bytes);  ///< aligned to 2 MiB, advised onto transparent huge pages
struct FreeDelete {
    void operator()(void* p) const { std::free(p); }
};

/// A fixed-capacity array on huge pages: appending to hundreds of MB of fresh memory costs a
/// page fault per 4 KiB otherwise (≈ 10 µs each on the machines measured).
template <class T>
class HugeBuffer {
public:
    HugeBuffer() = default;
    HugeBuffer(const HugeBuffer&) = delete;
    HugeBuffer& operator=(const HugeBuffer&) = delete;
    ~HugeBuffer() { std::free(p_); }
    void reserve(std::size_t n) {
        clear();
        p_ = static_cast<T*>(huge_alloc(n * sizeof(T)));
        cap_ = n;
    }
    void push_back(T v) {
        if (n_ == cap_) throw std::logic_error("HugeBuffer: capacity exceeded");
        p_[n_++] = v;
    }
    void clear() {
        std::free(p_);
        p_ = nullptr, n_ = cap_ = 0;
    }
    const T* data() const { return p_; }
    std::size_t size() const { return n_; }
    bool empty() const { return n_ == 0; }

private:
    T* p_ = nullptr;
    std::size_t n_ = 0, cap_ = 0;
};

/// The linked rows' raw columns, kept by the scan when they fit the budget (saves a second pass).
struct KeptRows {
    HugeBuffer<std::int64_t> particle, frame;
    HugeBuffer<double> x, y, vx, vy;  ///< vx, vy empty without velocity columns
    void clear() { particle.clear(), frame.clear(), x.clear(), y.clear(), vx.clear(), vy.clear(); }
};

/// Linked rows (particle ≥ 0) of one block of frames, in file order (frames ascending).
struct LinkedRows {
    std::vector<std::int64_t> particle, frame;
    std::vector<double> x, y, vx, vy;  ///< vx, vy empty without velocity columns
    void clear() { particle.clear(), frame.clear(), x.clear(), y.clear(), vx.clear(), vy.clear(); }
};

/// Where the scan sends each block's linked rows (besides what it learns from them).
class RowSink {
public:
    virtual ~RowSink() = default;
    virtual bool ok() const = 0;                   ///< false: stop collecting rows for this sink
    virtual void append(const LinkedRows& r) = 0;  ///< the rows of the next block of frames
    /// The same in place: the scan appends the block's rows to open_block(), then calls close_block().
    virtual LinkedRows& open_block() {
        block_.clear();
        return block_;
    }
    virtual void close_block() { append(block_); }

private:
    LinkedRows block_;
};

/// The linked rows' raw columns written by the scan to a temporary file, one record per block of
/// frames read (particle, frame, x, y[, vx, vy] of the block's rows in file order): the copy's
/// second pass reads them back instead of decoding the trajectory file again (HDF5 decompression
/// costs ≈ 3× a read of the raw rows). A write that fails (disk full) drops the spill; that pass then
/// reads the trajectory file.
class RowSpill final : public RowSink {
public:
    explicit RowSpill(const std::string& dir);
    bool ok() const override { return file_ != nullptr; }
    /// Appends the rows of the next block; on an IoError the spill is dropped.
    void append(const LinkedRows& r) override;
    std::size_t blocks() const { return count_.size(); }
    std::int64_t bytes() const { return end_; }
    /// The rows of block b.
    void read(std::size_t b, LinkedRows& out) const;

private:
    std::unique_ptr<TempFile> file_;
    std::vector<std::int64_t> offset_, count_;
    std::vector<char> vel_;
    std::int64_t end_ = 0;
};

/// fn(j, at, count, cells): `count` cells (cols doubles each) of track j of the scan from its frame
/// first[j] + at on; frames of the track outside every slice are absent (NaN).
using SliceFn = std::function<void(std::size_t, std::int64_t, std::int64_t, const double*)>;

/// The particle-major copy that does not fit the budget, built chunk by chunk of frames as the rows
/// come (from the scan itself, so the trajectory file is decoded once; or from the spill, or a
/// second read). A chunk holds, for each id alive in it (ascending), its cells from its first to its
/// last frame in the chunk (cols doubles each, NaN where absent); a block of consecutive tracks is
/// one range per chunk. Chunks stay in memory while they (and every chunk's index) fit `memory_bytes`, the rest go to a
/// temporary file (created at the first such chunk): only the excess over the budget costs disk
/// writes. Write errors (disk full) throw IoError naming the temporary file.
class ChunkedCopy final : public RowSink {
public:
    /// `chunk_rows`: rows buffered before a chunk is made (whole blocks, so a chunk can be larger);
    /// `cols`: 2 or 4 doubles a cell (velocities NaN in rows without them), 0 = from the first rows.
    ChunkedCopy(const std::string& dir, std::int64_t chunk_rows, std::int64_t memory_bytes, int cols = 0);
    bool ok() const override { return true; }
    void append(const LinkedRows& r) override;
    LinkedRows& open_block() override;  ///< rows appended straight to the chunk's buffer
    void close_block() override;
    void finish();  ///< makes the last chunk
    /// Doubles per cell: 4 with velocity columns, 2 without, 0 when none was given and no row came.
    int cols() const { return cols_; }
    std::int64_t memory_bytes() const { return in_memory_; }  ///< memory pieces and chunk indexes
    std::int64_t file_bytes() const { return end_; }          ///< cells in the temporary file
    /// The slices of tracks [j0, j1) of `s`, chunk by chunk (`scratch` holds what is read from
    /// the file). Safe from several threads.
    void read(const TrackScan& s, std::size_t j0, std::size_t j1, std::vector<double>& scratch,
              const SliceFn& fn) const;

private:
    struct Chunk {
        std::int64_t at = -1;                  ///< byte offset in the file; -1: in `mem`
        double* mem = nullptr;                 ///< the cells, when in memory (in one of pieces_)
        std::vector<std::int64_t> ids, first;  ///< ids alive in the chunk (ascending), first frame
        std::vector<std::int64_t> cell0;       ///< prefix sum of their cells (ids.size() + 1)
    };
    void flush();
    double* hold(std::size_t count);
    std::string dir_;
    std::int64_t chunk_rows_, memory_budget_;
    int cols_ = 0;
    LinkedRows pending_;                     ///< the rows of the chunk being gathered
    std::size_t open_at_ = 0;                ///< rows of pending_ before the open block
    std::vector<std::int64_t> slot_, rank_;  ///< flush(): id → slot table, row → slot
    std::vector<double> cells_;              ///< a chunk's cells on their way to the file
    std::vector<Chunk> chunks_;
    std::vector<std::unique_ptr<double, FreeDelete>> pieces_;  ///< memory of the chunks held in memory
    std::size_t piece_used_ = 0, piece_cap_ = 0;               ///< doubles of the last piece
    std::unique_ptr<TempFile> file_;
    std::int64_t in_memory_ = 0, end_ = 0;
};

/// One pass over the frames of `src` in blocks of ≈ block_rows rows; with `keep`, also the rows;
/// with `sink`, each block's linked rows into it.
TrackScan scan_tracks(const TrajectorySource& src, std::int64_t block_rows, bool progress,
                      KeptRows* keep = nullptr, RowSink* sink = nullptr);

/// An array of doubles on transparent huge pages where the kernel allows it (fewer page faults
/// and TLB misses when filled in particle-major order).
struct BigArray {
    double* p = nullptr;
    std::size_t n = 0;
    void allocate(std::size_t count);
    BigArray() = default;
    BigArray(const BigArray&) = delete;
    BigArray& operator=(const BigArray&) = delete;
    ~BigArray();
};

}  // namespace vibra::analysis::detail

namespace vibra::analysis {

struct TrackCache::Impl {
    const TrajectorySource* src = nullptr;
    TrackCacheParams p;
    bool built = false;
    detail::TrackScan scan;
    int cols = 2;          ///< doubles per cell: x, y [, vx, vy]
    detail::BigArray mem;  ///< the copy, when in memory
    /// The copy, when over the budget: chunks in memory up to it, the rest in a (deleted) temporary file.
    std::unique_ptr<detail::ChunkedCopy> chunks;
    std::int64_t spill_bytes = 0;  ///< rows spilled by the scan for the second pass
    std::int64_t cells() const { return scan.offset.empty() ? 0 : scan.offset.back(); }
    /// The cells of tracks [j0, j1) as slices (detail::SliceFn): one per track from the copy in
    /// memory, one per track and chunk from a chunked copy (`scratch` holds what is read from its file).
    void slices(std::size_t j0, std::size_t j1, std::vector<double>& scratch,
                const detail::SliceFn& fn) const;
};

}  // namespace vibra::analysis
