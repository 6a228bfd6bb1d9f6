// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/core/interrupt.hpp"

#include <signal.h>

#include <atomic>

namespace vibra {

namespace {
std::atomic<int> g_signal{0};  // lock-free int: safe to store from a signal handler

void on_signal(int sig) {
    int none = 0;
    g_signal.compare_exchange_strong(none, sig);
    // The next SIGINT/SIGTERM takes the default action (ends the process at once).
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
}
}  // namespace

const char* Interrupted::name() const {
    return signal == SIGTERM ? "SIGTERM" : signal == SIGINT ? "SIGINT" : "signal";
}

void install_interrupt_handlers() {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
}

int interrupt_signal() noexcept { return g_signal.load(std::memory_order_relaxed); }

void throw_if_interrupted() {
    if (const int s = interrupt_signal()) throw Interrupted{s};
}

}  // namespace vibra
