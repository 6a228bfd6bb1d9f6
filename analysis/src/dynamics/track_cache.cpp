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

void RowSpill::append(const std::vector<std::int64_t>& particle, const std::vector<std::int64_t>& frame,
                      const std::vector<double>& x, const std::vector<double>& y,
                      const std::vector<double>& vx, const std::vector<double>& vy) {
    if (!file_) return;
    const auto n = static_cast<std::int64_t>(particle.size());
    const bool vel = !vx.empty();
    try {
        std::int64_t at = end_;
        const auto put = [&](const void* d, std::size_t bytes) {
            if (bytes == 0) return;
            file_->write(at, d, bytes);
            at += static_cast<std::int64_t>(bytes);
        };
        put(particle.data(), particle.size() * 8), put(frame.data(), frame.size() * 8);
        put(x.data(), x.size() * 8), put(y.data(), y.size() * 8);
        if (vel) put(vx.data(), vx.size() * 8), put(vy.data(), vy.size() * 8);
        offset_.push_back(end_), count_.push_back(n), vel_.push_back(vel ? 1 : 0);
        end_ = at;
    } catch (const IoError&) {
        file_.reset();  // disk full: drop the spill, read the trajectory file again instead
    }
}

void RowSpill::read(std::size_t b, Rows& out) const {
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

// ------------------------------------------------------------------ scan
TrackScan scan_tracks(const TrajectorySource& src, std::int64_t block_rows, bool progress, KeptRows* keep,
                      RowSpill* spill) {
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
    RowSpill::Rows out;  // the block's linked rows for the spill
    Progress prog("tracks: scan", T, progress);
    for (std::int64_t first = 0; first < T; first += fpb) {
        const Trajectory tr = src.read_frames(first, fpb);
        s.has_vel = s.has_vel || tr.rows.has_velocity();
        const auto& r = tr.rows;
        const bool to_spill = spill && spill->ok();
        if (to_spill)
            out.particle.clear(), out.frame.clear(), out.x.clear(), out.y.clear(), out.vx.clear(),
                out.vy.clear();
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
                if (to_spill) {
                    out.particle.push_back(id), out.frame.push_back(f), out.x.push_back(r.x[k]),
                        out.y.push_back(r.y[k]);
                    if (r.has_velocity()) out.vx.push_back(r.vx[k]), out.vy.push_back(r.vy[k]);
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
        if (to_spill) spill->append(out.particle, out.frame, out.x, out.y, out.vx, out.vy);
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

const double* TrackCache::Impl::view(std::int64_t c0, std::int64_t c1, std::vector<double>& buf) const {
    if (!file) return mem.p + c0 * cols;
    const auto n = static_cast<std::size_t>((c1 - c0) * cols);
    buf.resize(n);
    file->read(c0 * cols * static_cast<std::int64_t>(sizeof(double)), buf.data(), n * sizeof(double));
    return buf.data();
}

TrackCache::TrackCache(const TrajectorySource& src, TrackCacheParams p) : impl_(std::make_unique<Impl>()) {
    p.validate();
    impl_->src = &src;
    impl_->p = std::move(p);
}
TrackCache::~TrackCache() = default;
const TrajectorySource& TrackCache::source() const { return *impl_->src; }
bool TrackCache::built() const { return impl_->built; }
bool TrackCache::on_disk() const { return impl_->file != nullptr; }
std::int64_t TrackCache::spill_bytes() const { return impl_->spill_bytes; }
std::int64_t TrackCache::bytes() const {
    return impl_->cells() * impl_->cols * static_cast<std::int64_t>(sizeof(double));
}
TrackCache::Impl& TrackCache::impl() { return *impl_; }

void TrackCache::build() {
    Impl& m = *impl_;
    if (m.built) return;
    const TrajectorySource& src = *m.src;
    // One pass when the kept rows (≤ 48 bytes each) and the copy (≥ 16–32 bytes per row) fit the
    // budget: the scan keeps the rows and the copy is made from them; else a second pass.
    detail::KeptRows kept;
    bool keep = src.n_rows() * 80 <= m.p.memory_bytes;
    // Else, when the copy itself (≥ 16 bytes a row) fits the budget, the rows go to a temporary file
    // for the second pass (read back at page-cache speed); when the copy goes to a file too, the
    // second pass decodes the trajectory file again rather than write twice the copy's size.
    std::unique_ptr<detail::RowSpill> spill;
    if (!keep && src.n_rows() * 16 <= m.p.memory_bytes)
        spill = std::make_unique<detail::RowSpill>(m.p.temp_dir);
    m.scan = detail::scan_tracks(src, m.p.block_rows, m.p.progress, keep ? &kept : nullptr, spill.get());
    if (spill && !spill->ok()) spill.reset();
    m.spill_bytes = spill ? spill->bytes() : 0;
    const detail::TrackScan& s = m.scan;
    m.cols = s.has_vel ? 4 : 2;
    const int C = m.cols;
    const std::int64_t cells = m.cells();
    const std::int64_t total = cells * C * static_cast<std::int64_t>(sizeof(double));
    const IdLookup lookup(s.ids);
    const std::int64_t T = src.n_frames();
    // rows → cells; put(j, cell) gives where cell `cell` of track j goes
    const auto scatter = [&](std::size_t n, const std::int64_t* pid, const std::int64_t* frame,
                             const double* x, const double* y, const double* vx, const double* vy,
                             auto&& put) {
        for (std::size_t k = 0; k < n; ++k) {
            if (pid[k] < 0) continue;
            const std::int64_t j = lookup(pid[k]);
            double* c = put(
                j, s.offset[static_cast<std::size_t>(j)] + frame[k] - s.first[static_cast<std::size_t>(j)]);
            c[0] = x[k];
            c[1] = y[k];
            if (C == 4) {
                c[2] = vx ? vx[k] : kNaN;
                c[3] = vy ? vy[k] : kNaN;
            }
        }
    };
    // The rows of the scan's block of frames starting at f0 (fpb frames): from the spill, else
    // read again from the trajectory file.
    const std::int64_t fpb = std::max<std::int64_t>(1, frames_per_block(src, m.p.block_rows));
    detail::RowSpill::Rows sp;
    const auto scatter_block = [&](std::int64_t f0, auto&& put) {
        if (spill) {
            spill->read(static_cast<std::size_t>(f0 / fpb), sp);
            const bool vel = !sp.vx.empty();
            scatter(sp.particle.size(), sp.particle.data(), sp.frame.data(), sp.x.data(), sp.y.data(),
                    vel ? sp.vx.data() : nullptr, vel ? sp.vy.data() : nullptr, put);
            return;
        }
        const Trajectory tr = src.read_frames(f0, fpb);
        const auto& r = tr.rows;
        const bool vel = r.has_velocity();
        scatter(r.size(), r.particle.data(), r.frame.data(), r.x.data(), r.y.data(),
                vel ? r.vx.data() : nullptr, vel ? r.vy.data() : nullptr, put);
    };
    const std::int64_t kept_bytes = static_cast<std::int64_t>(kept.x.size()) * (keep && s.has_vel ? 48 : 32);
    if (keep && kept_bytes + total > m.p.memory_bytes)
        keep = false, kept.clear();  // gaps made the copy larger
    if (total <= m.p.memory_bytes) {
        // ---- in memory: rows scattered straight into the particle-major array
        m.mem.allocate(static_cast<std::size_t>(cells * C));
        std::fill(m.mem.p, m.mem.p + m.mem.n, kNaN);
        const auto put = [&](std::int64_t, std::int64_t cell) { return m.mem.p + cell * C; };
        if (keep) {
            const bool vel = !kept.vx.empty();
            scatter(kept.x.size(), kept.particle.data(), kept.frame.data(), kept.x.data(), kept.y.data(),
                    vel ? kept.vx.data() : nullptr, vel ? kept.vy.data() : nullptr, put);
        } else {
            Progress prog("tracks: transpose", T, m.p.progress);
            for (std::int64_t f0 = 0; f0 < T; f0 += fpb) {
                scatter_block(f0, put);
                prog.update(std::min(T, f0 + fpb));
            }
        }
        m.built = true;
        return;
    }
    kept.clear();
    // ---- temporary file: chunks of frames transposed in a buffer, each track's slice written once
    m.file = std::make_unique<detail::TempFile>(m.p.temp_dir, "vibra-tracks",
                                                "the particle-major copy of the trajectory");
    const std::int64_t budget =
        std::min(m.p.chunk_bytes, std::max<std::int64_t>(m.p.memory_bytes / 2, 1 << 16));
    const std::int64_t chunk_rows =
        std::max<std::int64_t>(1, budget / (C * static_cast<std::int64_t>(sizeof(double))));
    // chunks of whole blocks of the scan (at least one)
    const std::int64_t fpc = std::max<std::int64_t>(1, frames_per_block(src, chunk_rows) / fpb) * fpb;
    std::vector<double> buf;
    std::vector<std::int64_t> alive, boff;  // tracks alive in the chunk, their slice offset in buf
    std::vector<std::int64_t> slot(s.ids.size(), -1);
    Progress prog("tracks: transpose", T, m.p.progress);
    for (std::int64_t f0 = 0; f0 < T; f0 += fpc) {
        const std::int64_t f1 = std::min(T, f0 + fpc);
        alive.clear();
        boff.assign(1, 0);
        for (std::size_t j = 0; j < s.ids.size(); ++j)
            if (s.first[j] < f1 && s.last[j] >= f0) {
                slot[j] = static_cast<std::int64_t>(alive.size());
                alive.push_back(static_cast<std::int64_t>(j));
                boff.push_back(boff.back() + std::min(f1 - 1, s.last[j]) - std::max(f0, s.first[j]) + 1);
            }
        buf.assign(static_cast<std::size_t>(boff.back() * C), kNaN);
        for (std::int64_t b0 = f0; b0 < f1; b0 += fpb)
            scatter_block(b0, [&](std::int64_t j, std::int64_t cell) {
                const auto ju = static_cast<std::size_t>(j);
                const std::int64_t lo = s.offset[ju] + std::max(f0, s.first[ju]) - s.first[ju];
                return buf.data() + (boff[static_cast<std::size_t>(slot[ju])] + cell - lo) * C;
            });
        for (std::size_t a = 0; a < alive.size(); ++a) {
            const auto ju = static_cast<std::size_t>(alive[a]);
            const std::int64_t lo = s.offset[ju] + std::max(f0, s.first[ju]) - s.first[ju];
            m.file->write(lo * C * static_cast<std::int64_t>(sizeof(double)), buf.data() + boff[a] * C,
                          static_cast<std::size_t>((boff[a + 1] - boff[a]) * C) * sizeof(double));
            slot[ju] = -1;
        }
        prog.update(f1);
    }
    m.built = true;
}

}  // namespace vibra::analysis
