// SPDX-License-Identifier: GPL-3.0-or-later
// Ctrl-C (SIGINT) and SIGTERM as a request to stop: the handler only sets a flag, and long work
// polls it between units (a block of frames, a frame, a progress tick) and unwinds with
// `Interrupted`, so every temporary output is removed by its owner's destructor and the command
// can say what it kept. A second signal while unwinding ends the process at once (default action);
// whatever temporaries that leaves are removed by the next run (vibra/core/output_file.hpp).
// Why polling and not cleanup in the handler: removing folders and closing HDF5 files are not
// async-signal-safe.
#pragma once

namespace vibra {

/// Thrown by throw_if_interrupted(). Deliberately not a vibra::Error nor a std::exception, so no
/// "skip this analysis / this video and go on" handler swallows it.
struct Interrupted {
    int signal;                                     ///< SIGINT or SIGTERM
    const char* name() const;                       ///< "SIGINT" / "SIGTERM"
    int exit_code() const { return 128 + signal; }  ///< 130 / 143, as a shell reports them
};

/// SIGINT and SIGTERM set the flag (the first one; the next restores the default action).
/// Idempotent; call once at the start of a command that writes.
void install_interrupt_handlers();
/// 0 when no stop was requested, else the signal number.
int interrupt_signal() noexcept;
/// Throws Interrupted when a stop was requested. Cheap (one atomic load): call it per frame/block.
void throw_if_interrupted();

}  // namespace vibra
