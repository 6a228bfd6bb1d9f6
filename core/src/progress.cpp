// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/core/progress.hpp"

#include "vibra/core/interrupt.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace vibra {

Progress::Progress(std::string label, std::int64_t total, bool enabled)
    : label_(std::move(label)),
      total_(total),
      enabled_(enabled),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

Progress::~Progress() { finish(); }

bool Progress::stderr_is_interactive() {
    const char* ci = std::getenv("CI");
    if (ci && *ci) return false;
    return ::isatty(fileno(stderr)) != 0;
}

void Progress::update(std::int64_t done) {
    throw_if_interrupted();  // long work ticks here: the natural place to honour Ctrl-C
    done_ = done;
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(200)) return;
    last_ = now;
    const double secs = std::chrono::duration<double>(now - start_).count();
    const double rate = secs > 0 ? static_cast<double>(done) / secs : 0.0;
    if (total_ > 0 && rate > 0) {
        const double eta = static_cast<double>(total_ - done) / rate;
        std::fprintf(stderr, "\r%s: %lld/%lld (%.0f/s, ETA %.0f s)   ", label_.c_str(),
                     static_cast<long long>(done), static_cast<long long>(total_), rate, eta);
    } else {
        std::fprintf(stderr, "\r%s: %lld (%.0f/s)   ", label_.c_str(), static_cast<long long>(done), rate);
    }
    std::fflush(stderr);
}

void Progress::finish() {
    if (finished_) return;
    finished_ = true;
    if (!enabled_) return;
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::fprintf(stderr, "\r%s: %lld done in %.1f s   \n", label_.c_str(), static_cast<long long>(done_),
                 secs);
}

}  // namespace vibra
