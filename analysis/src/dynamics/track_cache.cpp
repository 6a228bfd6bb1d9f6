// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/analysis/track_cache.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <new>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "detail/track_scan.hpp"
#include "detail/numeric.hpp"
#include "vibra/core/error.hpp"
#include "vibra/core/periodic.hpp"
#include "vibra/core/progress.hpp"

namespace vibra::analysis {

namespace {
using detail::kNaN;

struct IdInfo {
    std::int64_t first = 0, last = -1, n_small = 0, n_large = 0;
};

/// id → index into the sorted ids: a table when the ids are dense enough, else a hash map.
class IdLookup {
public:
    explicit IdLookup(const std::vector<std::int64_t>& ids) {
        if (ids.empty()) return;
        lo_ = ids.front();
        const std::int64_t span = ids.back() - lo_ + 1;
        if (span <= 8 * static_cast<std::int64_t>(ids.size()) + (1 << 20)) {
            table_.assign(static_cast<std::size_t>(span), -1);
            for (std::size_t j = 0; j < ids.size(); ++j)
                table_[static_cast<std::size_t>(ids[j] - lo_)] = static_cast<std::int64_t>(j);
        } else {
            map_.reserve(ids.size());
            for (std::size_t j = 0; j < ids.size(); ++j) map_.emplace(ids[j], static_cast<std::int64_t>(j));
        }
    }
    std::int64_t operator()(std::int64_t id) const {
        if (!table_.empty()) {
            const std::int64_t k = id - lo_;
            return k < 0 || k >= static_cast<std::int64_t>(table_.size())
                       ? -1
                       : table_[static_cast<std::size_t>(k)];
        }
        const auto it = map_.find(id);
        return it == map_.end() ? -1 : it->second;
    }

private:
    std::int64_t lo_ = 0;
    std::vector<std::int64_t> table_;
    std::unordered_map<std::int64_t, std::int64_t> map_;
};

}  // namespace

// ------------------------------------------------------------------ spill
namespace detail {
RowSpill::RowSpill(const std::string& dir) {
    try {
        file_ = std::make_unique<TempFile>(dir, "vibra-rows", "the trajectory's rows (particle-major copy)");
    } catch (const IoError&) {
        file_.reset();  // no temporary folder: the second pass reads the trajectory file
    }
}

void RowSpill::append(const LinkedRows& r) {
    if (!file_) return;
    const auto n = static_cast<std::int64_t>(r.particle.size());
    const bool vel = !r.vx.empty();
    try {
        std::int64_t at = end_;
        const auto put = [&](const auto& v) {
            if (v.empty()) return;
            file_->write(at, v.data(), v.size() * 8);
            at += static_cast<std::int64_t>(v.size() * 8);
        };
        put(r.particle), put(r.frame), put(r.x), put(r.y);
        if (vel) put(r.vx), put(r.vy);
        offset_.push_back(end_), count_.push_back(n), vel_.push_back(vel ? 1 : 0);
        end_ = at;
    } catch (const IoError&) {
        file_.reset();  // disk full: drop the spill, read the trajectory file again instead
    }
}

void RowSpill::read(std::size_t b, LinkedRows& out) const {
    const auto n = static_cast<std::size_t>(count_[b]);
    std::int64_t at = offset_[b];
    const auto get = [&](auto& v) {
        v.resize(n);
        if (n) file_->read(at, v.data(), n * 8);
        at += static_cast<std::int64_t>(n * 8);
    };
    get(out.particle), get(out.frame), get(out.x), get(out.y);
    if (vel_[b]) {
        get(out.vx), get(out.vy);
    } else {
        out.vx.clear(), out.vy.clear();
    }
}

// ------------------------------------------------------------------ chunked copy
ChunkedCopy::ChunkedCopy(const std::string& dir, std::int64_t chunk_rows, std::int64_t memory_bytes, int cols)
    : dir_(dir),
      chunk_rows_(std::max<std::int64_t>(1, chunk_rows)),
      memory_budget_(memory_bytes),
      cols_(cols) {}

void ChunkedCopy::append(const LinkedRows& r) {
    LinkedRows& to = open_block();
    const auto add = [](auto& v, const auto& from) { v.insert(v.end(), from.begin(), from.end()); };
    add(to.particle, r.particle), add(to.frame, r.frame), add(to.x, r.x), add(to.y, r.y);
    add(to.vx, r.vx), add(to.vy, r.vy);
    close_block();
}

LinkedRows& ChunkedCopy::open_block() {
    open_at_ = pending_.particle.size();
    return pending_;
}

/// The block's rows came with velocities or without: the copy's columns are set by the first rows.
void ChunkedCopy::close_block() {
    LinkedRows& p = pending_;
    const std::size_t n = p.particle.size();
    if (n == open_at_) return;
    const bool vel = p.vx.size() > open_at_;
    if (cols_ == 0) cols_ = vel ? 4 : 2;
    if (vel && cols_ == 2) throw std::logic_error("ChunkedCopy: velocities in a copy without them");
    if (!vel && cols_ == 4) p.vx.resize(n, kNaN), p.vy.resize(n, kNaN);
    if (static_cast<std::int64_t>(n) >= chunk_rows_) flush();
}

void ChunkedCopy::finish() {
    if (!pending_.particle.empty()) flush();
    pending_ = LinkedRows{};  // release the buffers
    slot_ = rank_ = std::vector<std::int64_t>{};
    cells_ = std::vector<double>{};
}

/// One pass gives each row the slot of its id (slots in order of first appearance) and each slot its
/// first and last frame; the ids sorted give the chunk's layout; a second pass scatters the rows.
void ChunkedCopy::flush() {
    const LinkedRows& r = pending_;
    const std::size_t n = r.particle.size();
    Chunk ch;
    std::vector<std::int64_t> ids, first, last;  // per slot
    rank_.resize(n);
    const auto seen = [&](std::int64_t& slot, std::size_t k) {
        if (slot < 0) {
            slot = static_cast<std::int64_t>(ids.size());
            ids.push_back(r.particle[k]), first.push_back(r.frame[k]), last.push_back(r.frame[k]);
        }
        last[static_cast<std::size_t>(slot)] = r.frame[k];  // frames ascend
        rank_[k] = slot;
    };
    const auto [lo_it, hi_it] = std::minmax_element(r.particle.begin(), r.particle.end());
    const std::int64_t lo = *lo_it, span = *hi_it - lo + 1;
    if (span <= 8 * static_cast<std::int64_t>(n) + (1 << 20)) {  // dense ids: a table over their span
        slot_.assign(static_cast<std::size_t>(span), -1);
        for (std::size_t k = 0; k < n; ++k) seen(slot_[static_cast<std::size_t>(r.particle[k] - lo)], k);
    } else {
        std::unordered_map<std::int64_t, std::int64_t> at;
        for (std::size_t k = 0; k < n; ++k) seen(at.try_emplace(r.particle[k], -1).first->second, k);
    }
    const std::size_t m = ids.size();
    std::vector<std::int64_t> order(m), cell_of_slot(m);  // slots by id; each slot's first cell
    for (std::size_t i = 0; i < m; ++i) order[i] = static_cast<std::int64_t>(i);
    std::sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
        return ids[static_cast<std::size_t>(a)] < ids[static_cast<std::size_t>(b)];
    });
    ch.ids.resize(m), ch.first.resize(m), ch.cell0.assign(m + 1, 0);
    for (std::size_t i = 0; i < m; ++i) {
        const auto q = static_cast<std::size_t>(order[i]);
        ch.ids[i] = ids[q], ch.first[i] = first[q];
        ch.cell0[i + 1] = ch.cell0[i] + last[q] - first[q] + 1;
        cell_of_slot[q] = ch.cell0[i] - first[q];  // + frame: the row's cell
    }
    const auto C = static_cast<std::size_t>(cols_);
    const std::size_t count = static_cast<std::size_t>(ch.cell0[m]) * C;
    const auto bytes = static_cast<std::int64_t>(count * sizeof(double));
    in_memory_ += static_cast<std::int64_t>(m * 3 * sizeof(std::int64_t));  // the chunk's index
    double* cells = in_memory_ + bytes <= memory_budget_ ? hold(count) : nullptr;
    if (cells) {
        ch.mem = cells;
    } else {
        cells_.resize(count);
        cells = cells_.data();
    }
    std::fill_n(cells, count, kNaN);
    for (std::size_t k = 0; k < n; ++k) {
        double* c =
            cells +
            static_cast<std::size_t>(cell_of_slot[static_cast<std::size_t>(rank_[k])] + r.frame[k]) * C;
        c[0] = r.x[k], c[1] = r.y[k];
        if (C == 4) c[2] = r.vx[k], c[3] = r.vy[k];
    }
    if (!ch.mem) {
        if (!file_)
            file_ =
                std::make_unique<TempFile>(dir_, "vibra-tracks", "the particle-major copy of the trajectory");
        ch.at = end_;
        file_->write(end_, cells, count * sizeof(double));
        end_ += bytes;
    }
    chunks_.push_back(std::move(ch));
    pending_.clear();
}

/// Room for `count` doubles in the memory pieces (64 MiB or a quarter of the budget, at least one
/// chunk, on huge pages: fresh
/// memory costs a page fault per 4 KiB otherwise); the tail of a piece too short is left unused.
/// nullptr when the piece needed would exceed the budget.
double* ChunkedCopy::hold(std::size_t count) {
    if (piece_used_ + count > piece_cap_) {
        const auto quarter = static_cast<std::size_t>(memory_budget_ / 4) / sizeof(double);
        const std::size_t cap = std::max(count, std::min((std::size_t{64} << 20) / sizeof(double), quarter));
        if (in_memory_ + static_cast<std::int64_t>(cap * sizeof(double)) > memory_budget_) return nullptr;
        pieces_.emplace_back(static_cast<double*>(huge_alloc(cap * sizeof(double))));
        piece_used_ = 0, piece_cap_ = cap;
        in_memory_ += static_cast<std::int64_t>(cap * sizeof(double));
    }
    double* p = pieces_.back().get() + piece_used_;
    piece_used_ += count;
    return p;
}

void ChunkedCopy::read(const TrackScan& s, std::size_t j0, std::size_t j1, std::vector<double>& scratch,
                       const SliceFn& fn) const {
    if (j0 >= j1) return;
    const auto C = static_cast<std::size_t>(cols_);
    for (const Chunk& ch : chunks_) {
        const auto a = static_cast<std::size_t>(std::lower_bound(ch.ids.begin(), ch.ids.end(), s.ids[j0]) -
                                                ch.ids.begin());
        const auto b = static_cast<std::size_t>(
            std::upper_bound(ch.ids.begin(), ch.ids.end(), s.ids[j1 - 1]) - ch.ids.begin());
        if (a == b) continue;
        const double* cells = nullptr;
        if (ch.mem) {
            cells = ch.mem + static_cast<std::size_t>(ch.cell0[a]) * C;
        } else {
            scratch.resize(static_cast<std::size_t>(ch.cell0[b] - ch.cell0[a]) * C);
            file_->read(ch.at + ch.cell0[a] * static_cast<std::int64_t>(C * sizeof(double)), scratch.data(),
                        scratch.size() * sizeof(double));
            cells = scratch.data();
        }
        std::size_t j = j0;
        for (std::size_t i = a; i < b; ++i) {
            while (s.ids[j] < ch.ids[i]) ++j;  // every id of the chunk is one of the scan's
            fn(j, ch.first[i] - s.first[j], ch.cell0[i + 1] - ch.cell0[i],
               cells + static_cast<std::size_t>(ch.cell0[i] - ch.cell0[a]) * C);
        }
    }
}

// ------------------------------------------------------------------ scan
TrackScan scan_tracks(const TrajectorySource& src, std::int64_t block_rows, bool progress, KeptRows* keep,
                      RowSink* sink) {
    const Metadata& meta = src.meta();
    const std::int64_t T = src.n_frames();
    const bool periodic = meta.geometry.periodic();
    const double Lx = periodic ? meta.geometry.lx() : 0.0, Ly = periodic ? meta.geometry.ly() : 0.0;
    const std::int64_t fpb = std::max<std::int64_t>(1, frames_per_block(src, block_rows));
    TrackScan s;
    std::unordered_map<std::int64_t, IdInfo> ids;
    const auto Ts = static_cast<std::size_t>(T);
    s.dx.assign(Ts, 0.0), s.dy.assign(Ts, 0.0), s.ux.assign(Ts, 0.0), s.uy.assign(Ts, 0.0);
    s.d_ok.assign(Ts, 0), s.u_ok.assign(Ts, 0);
    std::vector<std::int64_t> prev_id, cur_id;
    std::vector<double> prev_x, prev_y, cur_x, cur_y;
    std::int64_t prev_frame = -2;
    if (keep) {
        const auto n = static_cast<std::size_t>(src.n_rows());
        keep->particle.reserve(n), keep->frame.reserve(n), keep->x.reserve(n), keep->y.reserve(n);
        keep->vx.reserve(n), keep->vy.reserve(n);  // touched (faulted in) only when there are velocities
    }
    Progress prog("tracks: scan", T, progress);
    for (std::int64_t first = 0; first < T; first += fpb) {
        const Trajectory tr = src.read_frames(first, fpb);
        s.has_vel = s.has_vel || tr.rows.has_velocity();
        const auto& r = tr.rows;
        LinkedRows* out = sink && sink->ok() ? &sink->open_block() : nullptr;  // the block's linked rows
        for (std::int64_t f = tr.index.first_frame; f < tr.index.first_frame + tr.index.n_frames(); ++f) {
            cur_id.clear();
            cur_x.clear();
            cur_y.clear();
            double su = 0, sv = 0;
            std::int64_t nv = 0;
            for (auto k = static_cast<std::size_t>(tr.index.begin(f));
                 k < static_cast<std::size_t>(tr.index.end(f)); ++k) {
                const std::int64_t id = r.particle[k];
                if (id < 0) continue;
                auto& inf = ids.try_emplace(id, IdInfo{f, f, 0, 0}).first->second;
                inf.first = std::min(inf.first, f);
                inf.last = std::max(inf.last, f);
                if (r.species[k] == kSpeciesSmall) ++inf.n_small;
                if (r.species[k] == kSpeciesLarge) ++inf.n_large;
                cur_id.push_back(id);
                cur_x.push_back(r.x[k]);
                cur_y.push_back(r.y[k]);
                if (out) {
                    out->particle.push_back(id), out->frame.push_back(f), out->x.push_back(r.x[k]),
                        out->y.push_back(r.y[k]);
                    if (r.has_velocity()) out->vx.push_back(r.vx[k]), out->vy.push_back(r.vy[k]);
                }
                if (keep) {
                    keep->particle.push_back(id);
                    keep->frame.push_back(f);
                    keep->x.push_back(r.x[k]);
                    keep->y.push_back(r.y[k]);
                    if (r.has_velocity()) {
                        keep->vx.push_back(r.vx[k]);
                        keep->vy.push_back(r.vy[k]);
                    }
                }
                if (r.has_velocity() && std::isfinite(r.vx[k]) && std::isfinite(r.vy[k])) {
                    su += r.vx[k];
                    sv += r.vy[k];
                    ++nv;
                }
            }
            if (nv > 0) {
                s.ux[f] = su / nv;
                s.uy[f] = sv / nv;
                s.u_ok[f] = 1;
            }
            if (prev_frame == f - 1) {  // merge-join on sorted ids
                double sx = 0, sy = 0;
                std::int64_t n = 0;
                std::size_t a = 0, b = 0;
                while (a < prev_id.size() && b < cur_id.size()) {
                    if (prev_id[a] < cur_id[b])
                        ++a;
                    else if (cur_id[b] < prev_id[a])
                        ++b;
                    else {
                        sx += minimum_image_if_periodic(cur_x[b] - prev_x[a], Lx);
                        sy += minimum_image_if_periodic(cur_y[b] - prev_y[a], Ly);
                        ++n, ++a, ++b;
                    }
                }
                if (n > 0) {
                    s.dx[f] = sx / n;
                    s.dy[f] = sy / n;
                    s.d_ok[f] = 1;
                }
            }
            std::swap(prev_id, cur_id);
            std::swap(prev_x, cur_x);
            std::swap(prev_y, cur_y);
            prev_frame = f;
        }
        if (out) sink->close_block();
        prog.update(std::min(T, first + fpb));
    }
    s.ids.reserve(ids.size());
    for (const auto& [id, inf] : ids) s.ids.push_back(id);
    std::sort(s.ids.begin(), s.ids.end());
    const std::size_t n = s.ids.size();
    s.first.resize(n), s.last.resize(n), s.n_small.resize(n), s.n_large.resize(n), s.offset.assign(n + 1, 0);
    for (std::size_t j = 0; j < n; ++j) {
        const IdInfo& inf = ids[s.ids[j]];
        s.first[j] = inf.first, s.last[j] = inf.last, s.n_small[j] = inf.n_small, s.n_large[j] = inf.n_large;
        s.offset[j + 1] = s.offset[j] + (inf.last - inf.first + 1);
    }
    return s;
}
}  // namespace detail

// ------------------------------------------------------------------ cache
void TrackCacheParams::validate() const {
    if (memory_bytes < 0)
        throw ParameterError("track cache memory_bytes must be >= 0, got " + std::to_string(memory_bytes));
    if (chunk_bytes < 1)
        throw ParameterError("track cache chunk_bytes must be >= 1, got " + std::to_string(chunk_bytes));
    if (block_rows < 1)
        throw ParameterError("track cache block_rows must be >= 1, got " + std::to_string(block_rows));
}

void* detail::huge_alloc(std::size_t bytes) {
    constexpr std::size_t kHuge = std::size_t{1} << 21;
    const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + kHuge - 1) / kHuge * kHuge;
    void* p = std::aligned_alloc(kHuge, rounded);
    if (!p) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    ::madvise(p, rounded, MADV_HUGEPAGE);  // a hint: ignored where huge pages are off
#endif
    return p;
}

void detail::BigArray::allocate(std::size_t count) {
    std::free(p);
    p = static_cast<double*>(huge_alloc(count * sizeof(double)));
    n = count;
}

detail::BigArray::~BigArray() { std::free(p); }

void TrackCache::Impl::slices(std::size_t j0, std::size_t j1, std::vector<double>& scratch,
                              const detail::SliceFn& fn) const {
    if (chunks) return chunks->read(scan, j0, j1, scratch, fn);
    for (std::size_t j = j0; j < j1; ++j)
        fn(j, 0, scan.offset[j + 1] - scan.offset[j], mem.p + scan.offset[j] * cols);
}

TrackCache::TrackCache(const TrajectorySource& src, TrackCacheParams p) : impl_(std::make_unique<Impl>()) {
    p.validate();
    impl_->src = &src;
    impl_->p = std::move(p);
}
TrackCache::~TrackCache() = default;
const TrajectorySource& TrackCache::source() const { return *impl_->src; }
bool TrackCache::built() const { return impl_->built; }
bool TrackCache::on_disk() const { return impl_->chunks && impl_->chunks->file_bytes() > 0; }
std::int64_t TrackCache::spill_bytes() const { return impl_->spill_bytes; }
std::int64_t TrackCache::file_bytes() const { return impl_->chunks ? impl_->chunks->file_bytes() : 0; }
std::int64_t TrackCache::bytes() const {
    return impl_->cells() * impl_->cols * static_cast<std::int64_t>(sizeof(double));
}
TrackCache::Impl& TrackCache::impl() { return *impl_; }

namespace {
/// The linked rows of a block read from the trajectory file.
void linked_rows(const Trajectory& tr, detail::LinkedRows& out) {
    const auto& r = tr.rows;
    const bool vel = r.has_velocity();
    out.clear();
    for (std::size_t k = 0; k < r.size(); ++k) {
        if (r.particle[k] < 0) continue;
        out.particle.push_back(r.particle[k]), out.frame.push_back(r.frame[k]);
        out.x.push_back(r.x[k]), out.y.push_back(r.y[k]);
        if (vel) out.vx.push_back(r.vx[k]), out.vy.push_back(r.vy[k]);
    }
}
}  // namespace

// Three ways, by what fits the budget: rows and copy (≤ 80 bytes a row) → the scan keeps the rows
// and the copy is made from them; the copy (≥ 16 bytes a row) but not the rows → the scan spills
// the rows to a temporary file and the copy is made from it; not even the copy → the scan itself
// writes it, chunk by chunk of frames, to a temporary file. Each reads the trajectory file once.
// When gaps make the copy larger than its rows foretold, it goes to a file made from the spill (or a
// second read).
void TrackCache::build() {
    Impl& m = *impl_;
    if (m.built) return;
    const TrajectorySource& src = *m.src;
    // A chunk's buffers (a row: 32–48 bytes, its cells 16–32) within chunk_bytes and half the budget,
    // but no more than ≈ 512 chunks (each keeps an index of its tracks) while a quarter of it allows.
    const std::int64_t buffers =
        std::min(m.p.chunk_bytes, std::max<std::int64_t>(m.p.memory_bytes / 2, 1 << 16));
    const std::int64_t chunk_rows =
        std::max(buffers / 64, std::min(src.n_rows() / 512, m.p.memory_bytes / 4 / 64));
    // In memory: the budget less the chunk's buffers and an eighth for the analyses' particle blocks.
    const std::int64_t held = m.p.memory_bytes - m.p.memory_bytes / 8 - 2 * 64 * chunk_rows;
    const auto chunked_copy = [&](int cols) {
        return std::make_unique<detail::ChunkedCopy>(m.p.temp_dir, chunk_rows,
                                                     std::max<std::int64_t>(0, held), cols);
    };
    detail::KeptRows kept;
    bool keep = src.n_rows() * 80 <= m.p.memory_bytes;
    std::unique_ptr<detail::ChunkedCopy> chunked;
    std::unique_ptr<detail::RowSpill> spill;
    if (src.n_rows() * 16 > m.p.memory_bytes)
        chunked = chunked_copy(0);  // columns from the rows
    else if (!keep)
        spill = std::make_unique<detail::RowSpill>(m.p.temp_dir);
    detail::RowSink* sink = chunked ? static_cast<detail::RowSink*>(chunked.get()) : spill.get();
    m.scan = detail::scan_tracks(src, m.p.block_rows, m.p.progress, keep ? &kept : nullptr, sink);
    const detail::TrackScan& s = m.scan;
    m.cols = s.has_vel ? 4 : 2;
    if (chunked) {
        chunked->finish();
        if (chunked->cols() == m.cols) {
            m.chunks = std::move(chunked);
            m.built = true;
            return;
        }
        chunked.reset();  // no rows at all (or blocks that disagree on velocities): the way below
    }
    if (spill && !spill->ok()) spill.reset();
    m.spill_bytes = spill ? spill->bytes() : 0;
    const int C = m.cols;
    const std::int64_t cells = m.cells();
    const std::int64_t total = cells * C * static_cast<std::int64_t>(sizeof(double));
    const std::int64_t T = src.n_frames();
    // The linked rows of the scan's block of frames starting at f0: from the spill, else read again.
    const std::int64_t fpb = std::max<std::int64_t>(1, frames_per_block(src, m.p.block_rows));
    detail::LinkedRows rows;
    const auto block_rows = [&](std::int64_t f0) -> const detail::LinkedRows& {
        if (spill)
            spill->read(static_cast<std::size_t>(f0 / fpb), rows);
        else
            linked_rows(src.read_frames(f0, fpb), rows);
        return rows;
    };
    const std::int64_t kept_bytes = static_cast<std::int64_t>(kept.x.size()) * (keep && s.has_vel ? 48 : 32);
    if (keep && kept_bytes + total > m.p.memory_bytes)
        keep = false, kept.clear();  // gaps made the copy larger
    if (total > m.p.memory_bytes) {  // ---- a file, from the spill or a second read
        kept.clear();
        chunked = chunked_copy(C);
        Progress prog("tracks: transpose", T, m.p.progress);
        for (std::int64_t f0 = 0; f0 < T; f0 += fpb) {
            chunked->append(block_rows(f0));
            prog.update(std::min(T, f0 + fpb));
        }
        chunked->finish();
        m.chunks = std::move(chunked);
        m.built = true;
        return;
    }
    // ---- in memory: rows scattered straight into the particle-major array
    m.mem.allocate(static_cast<std::size_t>(cells * C));
    std::fill(m.mem.p, m.mem.p + m.mem.n, kNaN);
    const IdLookup lookup(s.ids);
    const auto scatter = [&](std::size_t n, const std::int64_t* pid, const std::int64_t* frame,
                             const double* x, const double* y, const double* vx, const double* vy) {
        for (std::size_t k = 0; k < n; ++k) {
            if (pid[k] < 0) continue;
            const auto j = static_cast<std::size_t>(lookup(pid[k]));
            double* c = m.mem.p + (s.offset[j] + frame[k] - s.first[j]) * C;
            c[0] = x[k];
            c[1] = y[k];
            if (C == 4) {
                c[2] = vx ? vx[k] : kNaN;
                c[3] = vy ? vy[k] : kNaN;
            }
        }
    };
    if (keep) {
        const bool vel = !kept.vx.empty();
        scatter(kept.x.size(), kept.particle.data(), kept.frame.data(), kept.x.data(), kept.y.data(),
                vel ? kept.vx.data() : nullptr, vel ? kept.vy.data() : nullptr);
    } else {
        Progress prog("tracks: transpose", T, m.p.progress);
        for (std::int64_t f0 = 0; f0 < T; f0 += fpb) {
            const detail::LinkedRows& r = block_rows(f0);
            const bool vel = !r.vx.empty();
            scatter(r.particle.size(), r.particle.data(), r.frame.data(), r.x.data(), r.y.data(),
                    vel ? r.vx.data() : nullptr, vel ? r.vy.data() : nullptr);
            prog.update(std::min(T, f0 + fpb));
        }
    }
    m.built = true;
}

}  // namespace vibra::analysis
