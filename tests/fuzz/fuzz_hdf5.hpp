// SPDX-License-Identifier: GPL-3.0-or-later
// For the targets that open HDF5 files: HDF5 keeps the blocks it frees in free lists of its own, but
// by default only up to 64 kB per list, so the ~0.5 MB cache header of every file open goes back to
// malloc on close. Under ASan every allocation over 128 kB is a fresh mmap, zero-filled page by page:
// that churn was most of an input's time. Unlimited free lists reuse the blocks (they stay reachable:
// no leak report). Speed only; what HDF5 and vibra do with an input is unchanged.
#pragma once

#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace vibra::fuzz {

inline void keep_hdf5_free_lists() { H5set_free_list_limits(-1, -1, -1, -1, -1, -1); }

namespace detail {

/// Little-endian unsigned of `n` bytes at `at`; bytes past the input read as 0 (HDF5's core driver
/// zero-fills a read past the end of the image).
inline std::uint64_t le(const std::uint8_t* data, std::size_t size, std::uint64_t at, int n) {
    std::uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) {
        const std::uint64_t k = at + static_cast<std::uint64_t>(i);
        v = (v << 8) | (k < size && k >= at ? data[k] : 0);
    }
    return v;
}

/// Walks one global heap collection ("GCOL" at `at`) the way HDF5 1.10 decodes it
/// (H5HG__cache_heap_deserialize) with lengths of `L` bytes: false when the walk would not end (an
/// entry of size 0 in slot 0: no progress) or an object (slot > 0) runs past the collection's end
/// (H5HG_read would copy past it). A free-space entry (slot 0) that overshoots only ends the walk.
inline bool heap_collection_sound(const std::uint8_t* data, std::size_t size, std::uint64_t at, int L) {
    const std::uint64_t heap_size = le(data, size, at + 8, L > 8 ? 8 : L);
    if (heap_size > (std::uint64_t{1} << 26)) return false;  // a 64 MB collection: a memory blow-up
    const std::uint64_t hdr = 8 + static_cast<std::uint64_t>(L), obj_hdr = 8 + static_cast<std::uint64_t>(L);
    for (std::uint64_t p = hdr; p < heap_size;) {
        if (heap_size - p < obj_hdr) break;  // too small for an object: free space to the end
        const std::uint64_t slot = le(data, size, at + p, 2);
        const std::uint64_t obj_size = le(data, size, at + p + 8, L > 8 ? 8 : L);
        if (slot == 0) {
            if (obj_size == 0) return false;  // no progress: the decoder loops forever
            if (obj_size >= heap_size - p) break;
            p += obj_size;
            continue;
        }
        if (obj_size > heap_size - p - obj_hdr) return false;  // the object runs past the collection
        p += obj_hdr + ((obj_size + 7) & ~std::uint64_t{7});
    }
    return true;
}

/// Inputs seen and skipped by this process; with FUZZ_SKIP_STATS=FILE in the environment, a line
/// "seen skipped" is appended to FILE every 100 inputs and at exit (run_fuzz.sh --long sums them
/// over the fork-mode jobs; a job that crashes loses fewer than 100).
struct SkipStats {
    long seen = 0, skipped = 0;
    void flush() {
        const char* path = std::getenv("FUZZ_SKIP_STATS");
        if (path == nullptr || seen == 0) return;
        if (std::FILE* out = std::fopen(path, "a")) {
            std::fprintf(out, "%ld %ld\n", seen, skipped);
            std::fclose(out);
        }
        seen = skipped = 0;
    }
    ~SkipStats() { flush(); }
};
inline SkipStats& skip_stats() {
    static SkipStats s;
    return s;
}

}  // namespace detail

/// The size of lengths the superblock declares (the first HDF5 signature at 0, 512, 1024, …, as
/// HDF5 searches), or 0 when there is none that HDF5 would accept.
inline int size_of_lengths(const std::uint8_t* data, std::size_t size) {
    static const std::uint8_t sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    for (std::size_t at = 0; at + 16 <= size; at = at == 0 ? 512 : 2 * at) {
        if (std::memcmp(data + at, sig, 8) != 0) continue;
        const int L = data[at + 8] < 2 ? data[at + 14] : data[at + 10];
        return L == 2 || L == 4 || L == 8 || L == 16 || L == 32 ? L : 0;
    }
    return 0;
}

/// HDF5 1.10 trusts a global heap collection's object sizes: an object of size 0 in slot 0 makes
/// its decoder loop forever (H5HG__protect), an object larger than its collection makes H5HG_read
/// copy past it (a vlen string attribute read). vibra cannot guard against either: it only calls
/// H5Aread. An input with such a collection (any "GCOL" signature, decoded with the superblock's
/// size of lengths) is skipped: each would cost the fork-mode time limit or a restart and reach no
/// code of vibra's. docs/reliability.md ("Fuzzing") says what this leaves out.
inline bool global_heap_sound(const std::uint8_t* data, std::size_t size) {
    if (++detail::skip_stats().seen == 100) detail::skip_stats().flush();
    const int L = size_of_lengths(data, size);
    if (L == 0) return true;  // HDF5 refuses the file before any heap is read
    for (std::size_t at = 0; at + 5 <= size; ++at)
        if (std::memcmp(data + at, "GCOL", 4) == 0 && data[at + 4] == 1 &&
            !detail::heap_collection_sound(data, size, at, L)) {
            ++detail::skip_stats().skipped;
            return false;
        }
    return true;
}

}  // namespace vibra::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    vibra::fuzz::keep_hdf5_free_lists();
    return 0;
}
