// SPDX-License-Identifier: GPL-3.0-or-later
// Progress line for long work: items/s and ETA on a terminal (stderr is a TTY), silent in pipes
// and CI, so logs stay clean.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace vibra {

class Progress {
public:
    /// `total` ≤ 0 = unknown. `enabled` false (quiet, or not a terminal) makes every call a no-op.
    Progress(std::string label, std::int64_t total, bool enabled);
    ~Progress();
    /// Record that `done` items are finished; redraws at most ~5 times a second. Throws
    /// vibra::Interrupted when SIGINT/SIGTERM was received (vibra/core/interrupt.hpp).
    void update(std::int64_t done);
    /// Final line (newline) — called by the destructor if not called before.
    void finish();

    /// True when stderr is a terminal and CI is not set.
    static bool stderr_is_interactive();

private:
    std::string label_;
    std::int64_t total_;
    bool enabled_;
    bool finished_ = false;
    std::int64_t done_ = 0;
    std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace vibra
