// SPDX-License-Identifier: GPL-3.0-or-later
// Private: what one pass over the frames learns about the tracks (ids, lifetimes, species votes,
// per-frame drift increments, mean given velocity) and the particle-major store of TrackCache.
#pragma once

#include <cstdint>
#include <cstdlib>
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

/// The linked rows' raw columns written by the scan to a temporary file, one record per block of
/// frames read (particle, frame, x, y[, vx, vy] of the block's rows in file order): the copy's
/// second pass reads them back instead of decoding the trajectory file again (HDF5 decompression
/// costs ≈ 3× a read of the raw rows). A write that fails (disk full) drops the spill; that pass then
/// reads the trajectory file.
class RowSpill {
public:
    explicit RowSpill(const std::string& dir);
    bool ok() const { return file_ != nullptr; }
    /// Appends the rows of block `b` (blocks in order); on an IoError the spill is dropped.
    void append(const std::vector<std::int64_t>& particle, const std::vector<std::int64_t>& frame,
                const std::vector<double>& x, const std::vector<double>& y, const std::vector<double>& vx,
                const std::vector<double>& vy);
    std::size_t blocks() const { return count_.size(); }
    std::int64_t bytes() const { return end_; }
    struct Rows {
        std::vector<std::int64_t> particle, frame;
        std::vector<double> x, y, vx, vy;  ///< vx, vy empty without velocity columns
    };
    /// The rows of block b.
    void read(std::size_t b, Rows& out) const;

private:
    std::unique_ptr<TempFile> file_;
    std::vector<std::int64_t> offset_, count_;
    std::vector<char> vel_;
    std::int64_t end_ = 0;
};

/// One pass over the frames of `src` in blocks of ≈ block_rows rows; with `keep`, also the rows;
/// with `spill`, the rows into it, a record per block.
TrackScan scan_tracks(const TrajectorySource& src, std::int64_t block_rows, bool progress,
                      KeptRows* keep = nullptr, RowSpill* spill = nullptr);

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
    int cols = 2;                            ///< doubles per cell: x, y [, vx, vy]
    detail::BigArray mem;                    ///< the copy, when in memory
    std::unique_ptr<detail::TempFile> file;  ///< the copy, when in a (deleted) temporary file
    std::int64_t spill_bytes = 0;            ///< rows spilled by the scan for the second pass
    std::int64_t cells() const { return scan.offset.empty() ? 0 : scan.offset.back(); }
    /// Cells [c0, c1) (cols doubles each, NaN where the particle is absent): a pointer into the
    /// copy in memory, or into `buf` read from the file.
    const double* view(std::int64_t c0, std::int64_t c1, std::vector<double>& buf) const;
};

}  // namespace vibra::analysis
