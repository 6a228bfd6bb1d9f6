// SPDX-License-Identifier: GPL-3.0-or-later
// Process-wide memory settings for programs that handle a video frame after frame.
//
// glibc serves allocations above a (dynamic) threshold of 128 KiB–32 MiB by fresh mmap calls and
// returns them on free, and trims freed heap memory back to the system. A frame's working arrays
// (cell lists over the image, per-disk state, decoded images) are exactly that size, so every frame
// pays the kernel's page faults and zeroing again: up to ~450 faults per 1024² frame, ~11 µs each
// on the machines measured (docs/performance.md). keep_freed_memory() makes freed memory stay in the
// process for re-use. It changes the whole process: call it once from main(), never from a library.
//
// allocatable_bytes() / check_memory(): a size read from a file (a dataset's shape, a header's atom
// count) is checked against what this process may still allocate before the allocation, so a
// corrupt or huge input fails at once with a message naming it, instead of the kernel killing the
// process later (overcommit) or std::bad_alloc without context.
#pragma once

#include <cstdint>
#include <string>

namespace vibra {

/// Bytes this process may still allocate: the smallest of the machine's available memory
/// (MemAvailable + SwapFree), the address-space limit (ulimit -v) minus what is resident, and the
/// budget of set_memory_budget(). UINT64_MAX when none can be read.
std::uint64_t allocatable_bytes();
/// A process-wide budget in bytes (0 = none), set from a command-line flag by main() only.
void set_memory_budget(std::uint64_t bytes);
/// Throws vibra::ResourceError "<what>: needs 12.0 GB, more than the 3.1 GB this process can
/// allocate (…)" when `bytes` exceeds allocatable_bytes().
void check_memory(std::uint64_t bytes, const std::string& what);
/// "12.0 GB", "350 MB", "12 kB".
std::string format_bytes(std::uint64_t bytes);

/// Freed memory stays in the process (glibc: mmap threshold 32 MiB, its largest; trim threshold 512 MiB);
/// no effect with other C libraries. Returns false when the settings were not accepted.
bool keep_freed_memory();

}  // namespace vibra
