// SPDX-License-Identifier: GPL-3.0-or-later
#include "detail/packed_columns.hpp"

#include <libdeflate.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <thread>

#include "detail/h5.hpp"
#include "detail/plane_deflate.hpp"
#include "vibra/core/workers.hpp"

namespace vibra::store::detail {

void shuffle_bytes(const std::uint8_t* in, std::uint8_t* out, std::size_t n, std::size_t es) {
    if (es == 1) {
        std::memcpy(out, in, n);
        return;
    }
    for (std::size_t j = 0; j < es; ++j) {
        std::uint8_t* o = out + j * n;
        const std::uint8_t* s = in + j;
        for (std::size_t i = 0; i < n; ++i) o[i] = s[i * es];
    }
}

PackedColumns::PackedColumns(int threads, int level, std::size_t flush_bytes)
    : threads_(threads > 0 ? threads
                           : static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 4u))),
      level_(level),
      flush_bytes_(flush_bytes) {}

PackedColumns::~PackedColumns() {
    for (auto& sl : slots_)
        if (sl.z) libdeflate_free_compressor(sl.z);
}

int PackedColumns::add(hid_t d, std::size_t element_size, std::size_t chunk_elements, std::string name) {
    cols_.push_back({d, element_size, chunk_elements, std::move(name), 0, 0, {}});
    cols_.back().stage.reserve(element_size * chunk_elements);
    return static_cast<int>(cols_.size()) - 1;
}

void PackedColumns::append(int ci, const void* data, std::size_t n, const std::string& file) {
    if (n == 0) return;
    auto& c = cols_[static_cast<std::size_t>(ci)];
    const hsize_t new_n = c.n + n;
    check_status(H5Dset_extent(c.d, &new_n), file, "cannot extend /trajectories/" + c.name);
    const auto* p = static_cast<const std::uint8_t*>(data);
    const std::size_t chunk_bytes = c.esize * c.chunk;
    std::size_t left = n * c.esize;
    while (left > 0) {
        const std::size_t take = std::min(left, chunk_bytes - c.stage.size());
        c.stage.insert(c.stage.end(), p, p + take);
        p += take, left -= take;
        if (c.stage.size() == chunk_bytes) {
            queue(ci);
            staged_bytes_ += chunk_bytes;
        }
    }
    c.n = new_n;
    if (staged_bytes_ >= flush_bytes_) flush(file);
}

void PackedColumns::queue(int ci, std::size_t valid) {
    auto& c = cols_[static_cast<std::size_t>(ci)];
    if (valid == 0) valid = c.stage.size();
    Job j;
    if (!spare_.empty()) {
        j = std::move(spare_.back());
        spare_.pop_back();
    }
    j.c = ci;
    j.chunk_index = c.chunks_done++;
    j.valid = valid;
    std::swap(j.raw, c.stage);  // the job takes the full chunk, the column a spare buffer
    c.stage.clear();
    c.stage.reserve(c.esize * c.chunk);
    jobs_.push_back(std::move(j));
}

void PackedColumns::flush(const std::string& file) {
    if (jobs_.empty()) return;
    // Shuffle + deflate every job, on up to threads_ threads (jobs are independent; each thread
    // its own compressor and scratch buffer).
    std::atomic<std::size_t> next{0};
    std::atomic<bool> failed{false};
    const int nt = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(threads_), jobs_.size()));
    if (slots_.size() < static_cast<std::size_t>(nt)) slots_.resize(static_cast<std::size_t>(nt));
    for (int t = 0; t < nt; ++t) {
        auto& sl = slots_[static_cast<std::size_t>(t)];
        if (!sl.z) sl.z = libdeflate_alloc_compressor(level_);
        if (!sl.z) throw IoError(file + ": cannot allocate a deflate compressor while writing /trajectories");
    }
    auto work = [&](int t) {
        auto& sl = slots_[static_cast<std::size_t>(t)];
        for (std::size_t k; (k = next++) < jobs_.size();) {
            auto& j = jobs_[k];
            const auto& c = cols_[static_cast<std::size_t>(j.c)];
            const std::size_t n = j.raw.size();
            if (sl.cap < n) sl.shuffled.reset(new std::uint8_t[sl.cap = n]);  // no zero-filling: overwritten
            shuffle_bytes(j.raw.data(), sl.shuffled.get(), n / c.esize, c.esize);
            const std::size_t bound = zlib_planes_bound(sl.z, n);
            if (j.packed_cap < bound) j.packed.reset(new std::uint8_t[j.packed_cap = bound]);
            // noise planes stored as they are (plane_deflate.hpp); an edge chunk's planes end in
            // zero padding, which deflate takes care of: deflated whole
            j.packed_size =
                j.valid == n
                    ? zlib_compress_planes(sl.z, sl.shuffled.get(), n, c.esize, j.packed.get(), bound)
                    : libdeflate_zlib_compress(sl.z, sl.shuffled.get(), n, j.packed.get(), bound);
            if (j.packed_size == 0) failed = true;
        }
    };
    run_workers(nt, work, WorkerStart::at_least_caller);  // no thread to spare: the caller takes every job
    if (failed) throw IoError(file + ": deflate failed while writing /trajectories");
    // Store them, in order, from this thread (HDF5 is not thread-safe).
    for (auto& j : jobs_) {
        const auto& c = cols_[static_cast<std::size_t>(j.c)];
        const hsize_t offset = j.chunk_index * c.chunk;
        check_status(H5Dwrite_chunk(c.d, H5P_DEFAULT, 0, &offset, j.packed_size, j.packed.get()), file,
                     "cannot write /trajectories/" + c.name);
    }
    // Keep the buffers for the next batch (fresh megabytes cost a page fault per 4 KiB).
    for (auto& j : jobs_) spare_.push_back(std::move(j));
    jobs_.clear();
    staged_bytes_ = 0;
}

void PackedColumns::finish(const std::string& file) {
    for (std::size_t ci = 0; ci < cols_.size(); ++ci) {
        auto& c = cols_[ci];
        if (c.stage.empty()) continue;
        const std::size_t valid = c.stage.size();
        c.stage.resize(c.esize * c.chunk, 0);  // an edge chunk is stored whole
        queue(static_cast<int>(ci), valid);
    }
    flush(file);
}

}  // namespace vibra::store::detail
