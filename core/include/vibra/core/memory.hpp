// SPDX-License-Identifier: GPL-3.0-or-later
// Process-wide memory settings for programs that handle a video frame after frame.
//
// glibc serves allocations above a (dynamic) threshold of 128 KiB–32 MiB by fresh mmap calls and
// returns them on free, and trims freed heap memory back to the system. A frame's working arrays
// (cell lists over the image, per-disk state, decoded images) are exactly that size, so every frame
// pays the kernel's page faults and zeroing again: up to ~450 faults per 1024² frame, ~11 µs each
// on the machines measured (docs/performance.md). keep_freed_memory() makes freed memory stay in the
// process for re-use. It changes the whole process: call it once from main(), never from a library.
#pragma once

namespace vibra {

/// Freed memory stays in the process (glibc: mmap threshold 32 MiB, its largest; trim threshold 512 MiB);
/// no effect with other C libraries. Returns false when the settings were not accepted.
bool keep_freed_memory();

}  // namespace vibra
