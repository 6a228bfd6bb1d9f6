// SPDX-License-Identifier: GPL-3.0-or-later
// How vibra writes a file or folder so that nothing is ever half-written under its final name, two
// writers of one output never mix, and a killed run leaves nothing the next run does not clean:
//
//  * OutputLock(target): the exclusive right to write `target` and its temporaries
//    (target.partial, target.spool, …). It is an open-file-description lock (fcntl F_OFD_SETLK) on
//    `target.lock`, which holds the writer's PID; a second writer, in this or another process or
//    host sharing the folder, fails at once with "target: in use by PID n". The kernel drops the
//    lock when its holder dies (even by kill -9), so a lock file left behind is recognised as stale:
//    the next writer takes it over and removes the dead writer's temporaries — only those of this
//    target. Locks of one target nest within a process (a command and the store writer it calls).
//  * AtomicOutput(target): a file or folder written at `target.partial` under the target's lock,
//    fsynced and renamed over the target by commit(); removed by the destructor otherwise (an
//    exception, an `Interrupted`).
//  * write_failure(): the one message for a failed write, "no space left on <dir>" when the
//    file system is full (ENOSPC/EDQUOT, or a library that hides errno and a full file system).
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

namespace vibra {

class OutputLock {
public:
    /// Takes the lock (or throws IoError "<target>: in use by PID n (lock <target>.lock)") and removes
    /// stale temporaries `target + suffix` for each suffix (files or folders).
    /// `wait_seconds` > 0: while another writer holds the lock, wait for it (polling; Ctrl-C still
    /// interrupts) up to that long instead of failing at once — for merges, which then serialise.
    explicit OutputLock(std::string target,
                        std::initializer_list<const char*> temporary_suffixes = {".partial"},
                        double wait_seconds = 0);
    ~OutputLock();
    OutputLock(const OutputLock&) = delete;
    OutputLock& operator=(const OutputLock&) = delete;
    const std::string& target() const { return target_; }
    /// Path of the lock file of `target`.
    static std::string lock_path(const std::string& target);

private:
    std::string target_;
};

class AtomicOutput {
public:
    enum class Kind { file, folder };
    struct Options {
        Kind kind = Kind::file;
        /// The temporary is `stem.partial.ext` instead of `target.partial`, for writers that choose a
        /// container by the file name's extension (OpenCV's video writers).
        bool keep_extension = false;
        /// See OutputLock: wait this long for another writer of the target (merges) instead of failing.
        double wait_seconds = 0;
    };
    /// Locks `target`, removes a stale temporary, and (folders) creates the temporary folder.
    /// Throws IoError when the target's folder is missing or unwritable, or the target is in use.
    explicit AtomicOutput(std::string target) : AtomicOutput(std::move(target), Options{}) {}
    AtomicOutput(std::string target, Options options);
    ~AtomicOutput();  ///< removes the temporary unless committed
    AtomicOutput(const AtomicOutput&) = delete;
    AtomicOutput& operator=(const AtomicOutput&) = delete;
    /// Where to write (the temporary).
    const std::string& path() const { return partial_; }
    const std::string& target() const { return target_; }
    /// fsync + rename over the target (+ fsync of the folder). A folder replaces a missing target
    /// whole; into an existing folder its files are moved one by one (each atomically).
    void commit();
    bool committed() const { return committed_; }

private:
    OutputLock lock_;
    std::string target_, partial_;
    Kind kind_;
    bool committed_ = false;
};

/// fsync(partial), rename(partial → target), fsync(folder). Throws IoError naming the target.
void publish_file(const std::string& partial, const std::string& target);
/// Throws IoError "<path>: cannot write: folder <dir> does not exist / is not writable".
void check_writable_folder(const std::string& path);
/// The message for a failed write of `path` with errno `err` (0 = unknown, e.g. from HDF5 or
/// OpenCV): "no space left on <folder of path>" when err is ENOSPC/EDQUOT or the file system is
/// full, else strerror(err) or "write failed".
std::string write_failure(const std::string& path, int err = 0);
/// True when the file system holding `path` (or its folder) has less than 4 MiB free for an
/// unprivileged writer (or no free inode).
bool file_system_full(const std::string& path);
/// Writes a whole buffer with ::write, retrying short writes; throws IoError(write_failure()).
void write_all(int fd, const void* data, std::size_t n, const std::string& path);

}  // namespace vibra
