// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/core/memory.hpp"

#include <cstdlib>  // defines __GLIBC__ on glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace vibra {

bool keep_freed_memory() {
#if defined(__GLIBC__)
    return mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1 && mallopt(M_TRIM_THRESHOLD, 512 << 20) == 1;
#else
    return false;
#endif
}

}  // namespace vibra
