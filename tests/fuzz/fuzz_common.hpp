// SPDX-License-Identifier: GPL-3.0-or-later
// Shared pieces of the reader fuzz targets: a private scratch folder (on /dev/shm when it exists,
// so the readers' files cost no disk I/O), writing the input there, and the contract every reader
// is held to: it parses, or it throws one of vibra's error types. Anything else (another exception
// type, a crash, a sanitizer report, a hang, a memory blow-up) aborts and libFuzzer keeps the input.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <new>
#include <string>
#include <string_view>
#include <typeinfo>

#include "vibra/core/error.hpp"

namespace vibra::fuzz {

/// A folder of this process, emptied on every call (so each input starts from nothing).
inline const std::string& scratch() {
    static const std::string dir = [] {
        const char* base = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
        std::string d = std::string(base) + "/vibra-fuzz-" + std::to_string(::getpid());
        std::filesystem::create_directories(d);
        return d;
    }();
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec))
        std::filesystem::remove_all(e.path(), ec);
    return dir;
}

inline void write_file(const std::string& path, const void* data, std::size_t size) {
    std::ofstream os(path, std::ios::binary | std::ios::trunc);
    os.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!os) {
        std::fprintf(stderr, "fuzz harness: cannot write %s\n", path.c_str());
        std::abort();
    }
}
inline void write_file(const std::string& path, std::string_view s) { write_file(path, s.data(), s.size()); }

[[noreturn]] inline void contract_broken(const char* what, const char* type) {
    std::fprintf(stderr, "\nvibra fuzz contract broken: %s (%s)\n", what, type);
    std::abort();
}

/// Runs `f`; vibra's own errors are the accepted way to reject an input, anything else aborts.
template <class F>
bool accepts(F&& f) {
    try {
        f();
        return true;
    } catch (const vibra::Error&) {
        return false;  // IoError, FormatError, InsufficientData
    } catch (const vibra::ParameterError&) {
        return false;
    } catch (const std::bad_alloc& e) {
        contract_broken(e.what(), "std::bad_alloc: a declared size was trusted");
    } catch (const std::exception& e) {
        contract_broken(e.what(), typeid(e).name());
    } catch (...) {
        contract_broken("unknown exception", "...");
    }
}

/// Checks a harness invariant (not a reader error): aborts with `what` when false.
inline void require(bool ok, const char* what) {
    if (!ok) contract_broken(what, "invariant");
}

}  // namespace vibra::fuzz
