// SPDX-License-Identifier: GPL-3.0-or-later
// OutputLock / AtomicOutput (vibra/core/output_file.hpp), interrupts (interrupt.hpp) and the
// memory checks (memory.hpp): what the commands' reliability rests on, checked in-process and
// with forked children (a second process, a killed writer, a signal).
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "vibra/core/error.hpp"
#include "vibra/core/interrupt.hpp"
#include "vibra/core/memory.hpp"
#include "vibra/core/output_file.hpp"

namespace fs = std::filesystem;
using namespace vibra;

namespace {
std::string scratch(const std::string& name) {
    const auto d =
        fs::temp_directory_path() / ("vibra_test_output_file_" + std::to_string(::getpid())) / name;
    fs::remove_all(d);
    fs::create_directories(d);
    return d.string();
}
std::string slurp(const std::string& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
}
/// Runs f in a forked child; returns its exit status (f returns the code).
template <class F>
int in_child(F f) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        int rc = 99;
        try {
            rc = f();
        } catch (...) {
            rc = 98;
        }
        ::_exit(rc);
    }
    int st = 0;
    ::waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
}  // namespace

TEST_CASE("AtomicOutput: nothing under the final name until commit, nothing left when abandoned",
          "[core][output]") {
    const auto d = scratch("atomic");
    const auto target = d + "/out.dat";
    {
        AtomicOutput out(target);
        std::ofstream(out.path()) << "new";
        REQUIRE(out.path() == target + ".partial");
        REQUIRE_FALSE(fs::exists(target));
        REQUIRE(fs::exists(target + ".lock"));
    }
    REQUIRE_FALSE(fs::exists(target));
    REQUIRE_FALSE(fs::exists(target + ".partial"));
    REQUIRE_FALSE(fs::exists(target + ".lock"));
    {
        AtomicOutput out(target);
        std::ofstream(out.path()) << "whole";
        out.commit();
    }
    REQUIRE(slurp(target) == "whole");
    REQUIRE(fs::directory_iterator(d) != fs::directory_iterator());
    REQUIRE(std::distance(fs::directory_iterator(d), fs::directory_iterator()) ==
            1);  // no .lock, no .partial

    // keep_extension: OpenCV's writers pick the container by the extension
    AtomicOutput::Options o;
    o.keep_extension = true;
    AtomicOutput v(d + "/clip.avi", o);
    REQUIRE(v.path() == d + "/clip.partial.avi");
}

TEST_CASE("AtomicOutput: a folder appears whole, or its files move into an existing folder",
          "[core][output]") {
    const auto d = scratch("folder");
    for (int round = 0; round < 2; ++round) {
        AtomicOutput out(d + "/frames", AtomicOutput::Options{AtomicOutput::Kind::folder});
        REQUIRE(fs::is_directory(out.path()));
        for (int k = 0; k < 3; ++k) std::ofstream(out.path() + "/f" + std::to_string(k + 3 * round)) << k;
        REQUIRE((round == 1 || !fs::exists(d + "/frames")));
        out.commit();
    }
    REQUIRE(std::distance(fs::directory_iterator(d + "/frames"), fs::directory_iterator()) == 6);
    REQUIRE_FALSE(fs::exists(d + "/frames.partial"));
}

TEST_CASE("OutputLock: a second writer of the same target is refused with the holder's PID",
          "[core][output]") {
    const auto d = scratch("lock");
    const auto target = d + "/out.h5";
    OutputLock held(target);
    {
        OutputLock nested(target);  // the same process: locks of one target nest
    }
    REQUIRE(fs::exists(target + ".lock"));  // still held by `held`
    const int rc = in_child([&] {
        try {
            OutputLock other(target);
            return 1;
        } catch (const IoError& e) {
            const std::string m = e.what();
            return m.find("in use by PID " + std::to_string(::getppid())) != std::string::npos ? 0 : 2;
        }
    });
    REQUIRE(rc == 0);
}

TEST_CASE("OutputLock: a writer killed with SIGKILL leaves a stale lock, the next one takes over and cleans",
          "[core][output]") {
    const auto d = scratch("stale");
    const auto target = d + "/out.h5";
    const int rc = in_child([&] {
        AtomicOutput out(target);
        std::ofstream(out.path()) << "half";
        std::ofstream(target + ".spool") << "spool";
        ::kill(::getpid(), SIGKILL);  // no destructor runs
        return 0;
    });
    REQUIRE(rc == 128 + SIGKILL);
    REQUIRE(fs::exists(target + ".partial"));
    REQUIRE(fs::exists(target + ".lock"));
    {
        OutputLock lock(target, {".partial", ".spool"});
        REQUIRE_FALSE(fs::exists(target + ".partial"));
        REQUIRE_FALSE(fs::exists(target + ".spool"));
        REQUIRE_THAT(slurp(target + ".lock"), Catch::StartsWith("PID " + std::to_string(::getpid())));
    }
    REQUIRE_FALSE(fs::exists(target + ".lock"));
    // Only this target's temporaries: another target's are not touched.
    std::ofstream(d + "/other.h5.partial") << "x";
    { OutputLock lock(target, {".partial"}); }
    REQUIRE(fs::exists(d + "/other.h5.partial"));
}

TEST_CASE("write_failure: ENOSPC is 'no space left on <folder>', others keep their errno text",
          "[core][output]") {
    const auto d = scratch("fail");
    REQUIRE(write_failure(d + "/x.h5", ENOSPC) == "no space left on " + d);
    REQUIRE_THAT(write_failure(d + "/x.h5", EDQUOT),
                 Catch::Contains("no space left on " + d) && Catch::Contains("quota"));
    if (!file_system_full(d))
        REQUIRE(write_failure(d + "/x.h5", EACCES) == std::string(std::strerror(EACCES)));
    REQUIRE_THROWS_WITH(check_writable_folder(d + "/missing/x.h5"), Catch::Contains("does not exist"));
}

TEST_CASE("interrupts: SIGINT / SIGTERM set the flag, throw_if_interrupted unwinds with the signal",
          "[core][output]") {
    for (const int sig : {SIGINT, SIGTERM}) {
        const int rc = in_child([sig] {
            install_interrupt_handlers();
            throw_if_interrupted();  // nothing yet
            ::raise(sig);            // handled: the process lives on
            try {
                throw_if_interrupted();
            } catch (const Interrupted& i) {
                return i.signal == sig && i.exit_code() == 128 + sig ? 0 : 1;
            }
            return 2;
        });
        REQUIRE(rc == 0);
    }
    // A second signal takes the default action: the process ends at once.
    const int rc = in_child([] {
        install_interrupt_handlers();
        ::raise(SIGINT);
        ::raise(SIGINT);
        return 0;
    });
    REQUIRE(rc == 128 + SIGINT);
}

TEST_CASE("check_memory: a size beyond what the process may allocate is refused, naming it",
          "[core][memory]") {
    REQUIRE(allocatable_bytes() > (1u << 20));
    REQUIRE_NOTHROW(check_memory(1 << 20, "one megabyte"));
    REQUIRE_THROWS_WITH(check_memory(std::uint64_t(1) << 62, "x.h5: field 'x'"),
                        Catch::StartsWith("x.h5: field 'x': needs 4611686018.4 GB, more than the"));
    set_memory_budget(10 << 20);
    REQUIRE_THROWS_AS(check_memory(20 << 20, "budget"), ResourceError);
    REQUIRE_NOTHROW(check_memory(5 << 20, "budget"));
    set_memory_budget(0);
    REQUIRE(format_bytes(350'000'000) == "350 MB");
}
