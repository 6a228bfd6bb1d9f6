// SPDX-License-Identifier: GPL-3.0-or-later
// For the targets that open HDF5 files: HDF5 keeps the blocks it frees in free lists of its own, but
// by default only up to 64 kB per list, so the ~0.5 MB cache header of every file open goes back to
// malloc on close. Under ASan every allocation over 128 kB is a fresh mmap, zero-filled page by page:
// that churn was most of an input's time. Unlimited free lists reuse the blocks (they stay reachable:
// no leak report). Speed only; what HDF5 and vibra do with an input is unchanged.
#pragma once

#include <hdf5.h>

namespace vibra::fuzz {

inline void keep_hdf5_free_lists() { H5set_free_list_limits(-1, -1, -1, -1, -1, -1); }

}  // namespace vibra::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    vibra::fuzz::keep_hdf5_free_lists();
    return 0;
}
