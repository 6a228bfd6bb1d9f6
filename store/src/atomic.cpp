// SPDX-License-Identifier: GPL-3.0-or-later
#include "detail/atomic.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "vibra/core/error.hpp"

namespace vibra::store::detail {

namespace fs = std::filesystem;

std::string iso_now() {
    const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

}  // namespace vibra::store::detail
