// SPDX-License-Identifier: GPL-3.0-or-later
// Appending to extendable 1-D chunked datasets with the shuffle + deflate filters, where the
// compression runs on several threads. HDF5 compresses a chunk inside H5Dwrite, on the calling
// thread, one chunk after the other (and the library is not thread-safe); deflate is most of the
// time of writing a trajectory file (≈ 0.3 s per 600,000 rows). Here whole chunks are staged,
// shuffled and deflated by a few threads at once into the bytes HDF5's own filters store (byte
// shuffle, then a zlib stream: libdeflate, ≈ 2× faster than zlib at the same size, with leading
// planes of mantissa noise stored as they are: plane_deflate.hpp), and stored with H5Dwrite_chunk: the
// file is an ordinary shuffled + deflated dataset that any HDF5 reader (h5py, HDFView) decodes.
#pragma once

#include <hdf5.h>
#include <libdeflate.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace vibra::store::detail {

/// Byte shuffle as HDF5's H5Z_FILTER_SHUFFLE: byte j of element i goes to j·n + i.
void shuffle_bytes(const std::uint8_t* in, std::uint8_t* out, std::size_t n_elements,
                   std::size_t element_size);

class PackedColumns {
public:
    /// `threads` ≤ 0: the machine's cores (at most 4). `level`: deflate level of the datasets.
    /// `flush_bytes`: 512 KiB, two chunks, so that a streamed file leaves little to compress at its end.
    explicit PackedColumns(int threads = 0, int level = 1, std::size_t flush_bytes = 512u << 10);
    ~PackedColumns();
    PackedColumns(const PackedColumns&) = delete;
    PackedColumns& operator=(const PackedColumns&) = delete;
    /// Registers dataset `d` (1-D, extendable, chunk of `chunk_elements`, shuffle + deflate at
    /// `level`, empty); returns its column number.
    int add(hid_t d, std::size_t element_size, std::size_t chunk_elements, std::string name);
    /// Appends n elements to column `c` (extends the dataset; whole chunks are compressed and
    /// written in batches of about flush_bytes).
    void append(int c, const void* data, std::size_t n, const std::string& file);
    /// Compresses and writes everything staged, the last partial chunk of each column included
    /// (padded with zeros beyond the extent, as HDF5 stores an edge chunk). Call once, at the end.
    void finish(const std::string& file);
    std::int64_t size(int c) const { return static_cast<std::int64_t>(cols_[static_cast<std::size_t>(c)].n); }

private:
    struct Column {
        hid_t d;
        std::size_t esize, chunk;
        std::string name;
        std::size_t n = 0;                // elements appended
        std::size_t chunks_done = 0;      // chunks queued or written
        std::vector<std::uint8_t> stage;  // the chunk being filled
    };
    struct Job {
        int c = 0;
        std::size_t chunk_index = 0;
        std::vector<std::uint8_t> raw;
        std::size_t valid = 0;  // bytes of raw that are data (an edge chunk ends in zero padding)
        std::unique_ptr<std::uint8_t[]> packed;
        std::size_t packed_cap = 0, packed_size = 0;
    };
    void queue(int c, std::size_t valid =
                          0);  // column c's full stage becomes a job (valid: its data bytes, 0 = all)
    void flush(const std::string& file);
    // Each compressing thread's deflate state and shuffle buffer, kept from one batch to the next
    // (a fresh compressor and buffer per batch cost page faults: a writer that streams a file
    // while its program runs flushes many small batches).
    struct Slot {
        libdeflate_compressor* z = nullptr;
        std::unique_ptr<std::uint8_t[]> shuffled;
        std::size_t cap = 0;
    };
    std::vector<Slot> slots_;
    std::vector<Job> spare_;  // written jobs, their buffers kept
    std::vector<Column> cols_;
    std::vector<Job> jobs_;
    std::size_t staged_bytes_ = 0;
    int threads_, level_;
    std::size_t flush_bytes_;
};

}  // namespace vibra::store::detail
