// SPDX-License-Identifier: GPL-3.0-or-later
// How `vibra batch` runs one stage of one video: as a child process (this same program with
// `track`, `analyze`, or the figure script), its output appended to the video's log, its wall
// and CPU time and peak memory measured by the kernel (wait4). A child dies with the batch
// (PR_SET_PDEATHSIG), so a killed batch leaves no stage running on its own. Per-video locks
// (flock on OUTDIR/<name>/.lock) keep two batch processes off the same video; the kernel drops
// a lock when its holder dies, even by kill -9.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace vibra::app::batch {

struct StageRun {
    int exit_code = -1;  ///< the child's exit status; 128 + signal when killed by one
    double wall_seconds = 0;
    double cpu_seconds = 0;  ///< user + system of the child and its threads
    double peak_rss_mb = 0;
    std::string error;  ///< the child's last "error:" line, or what killed it
};

/// Runs argv[0] with argv, stdout + stderr appended to `log_path`. Throws IoError only when the
/// child cannot be started at all.
StageRun run_stage(const std::vector<std::string>& argv, const std::string& log_path);

/// The running program (/proc/self/exe), for the stages that are `vibra` subcommands.
std::string self_executable();

/// An exclusive lock on a file, held until destruction (or the process's death). `try_lock`
/// false = another process holds it; `holder()` then says which PID wrote itself in.
class FileLock {
public:
    explicit FileLock(std::string path) : path_(std::move(path)) {}
    ~FileLock();
    FileLock(const FileLock&) = delete;
    FileLock& operator=(const FileLock&) = delete;
    bool try_lock();
    void lock();  ///< waits
    std::string holder() const;

private:
    std::string path_;
    int fd_ = -1;
};

/// The per-video record OUTDIR/<name>/batch_state.txt: `key = value` lines, written atomically.
using State = std::map<std::string, std::string>;
State read_state(const std::string& path);
void write_state(const std::string& path, const State& s);

/// Signal handling for the batch: SIGINT/SIGTERM set a flag (and are passed to the running
/// child by the terminal or by forward_signal_to_child); the batch stops after the current stage.
void install_stop_handlers();
int stop_signal();  ///< 0, SIGINT or SIGTERM

}  // namespace vibra::app::batch
