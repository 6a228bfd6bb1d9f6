// SPDX-License-Identifier: GPL-3.0-or-later
// Thin RAII handles over the HDF5 C API and the store's one error funnel: HDF5's own error
// printing is switched off and its error stack is folded into the vibra::IoError text.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include "vibra/core/error.hpp"
#include "vibra/core/result.hpp"

namespace vibra::store::detail {

/// Owns one hid_t and closes it with the right H5*close.
class Handle {
public:
    Handle() = default;
    explicit Handle(hid_t id) : id_(id) {}
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    Handle(Handle&& o) noexcept : id_(o.id_) { o.id_ = H5I_INVALID_HID; }
    Handle& operator=(Handle&& o) noexcept {
        if (this != &o) {
            reset();
            id_ = o.id_;
            o.id_ = H5I_INVALID_HID;
        }
        return *this;
    }
    ~Handle() { reset(); }
    hid_t get() const { return id_; }
    operator hid_t() const { return id_; }
    bool valid() const { return id_ >= 0; }
    void reset();

private:
    hid_t id_ = H5I_INVALID_HID;
};

/// Switch off HDF5's automatic error printing (once per process; idempotent).
void silence_hdf5();
/// Throws IoError("<file>: <what>: <hdf5 error stack>") if id < 0 or status < 0.
hid_t check(hid_t id, const std::string& file, const std::string& what);
void check_status(herr_t st, const std::string& file, const std::string& what);

bool exists(hid_t loc, const std::string& path);

/// Opens `path` for the store's readers: IoError "<path>: no such file" when it is absent,
/// FormatError "<path>: <not_hdf5>" when it is not HDF5 (H5Fis_hdf5), else H5Fopen(path, flags) or
/// IoError "<path>: cannot open (HDF5: …)". The caller owns the returned file id.
hid_t open_file(const std::string& path, unsigned flags, const std::string& not_hdf5);

/// In-process tests of the readers (the fuzz targets in tests/fuzz): while one is alive, every
/// open_file(…, H5F_ACC_RDONLY) in this thread opens `bytes` — an HDF5 file image held in memory,
/// through HDF5's core driver, copied on each open — whatever path it is given (the path only names
/// the file in messages, and must not exist). The same checks and messages as for a file; nothing is
/// read from or written to disk. Not nestable; writers and read-write opens are not redirected.
class ScopedFileImage {
public:
    ScopedFileImage(const void* bytes, std::size_t size);
    ~ScopedFileImage();
    ScopedFileImage(const ScopedFileImage&) = delete;
    ScopedFileImage& operator=(const ScopedFileImage&) = delete;
};

// Attributes ----------------------------------------------------------------------------------
void write_attr(hid_t obj, const std::string& name, const AttrValue& v, const std::string& file);
/// Reads any numeric or string attribute; false if absent.
bool read_attr(hid_t obj, const std::string& name, AttrValue& out, const std::string& file);
std::string read_attr_string(hid_t obj, const std::string& name, const std::string& file,
                             const std::string& fallback = "");
std::vector<std::string> list_attrs(hid_t obj);
std::vector<std::string> list_links(hid_t group);

// Datasets -----------------------------------------------------------------------------------
hid_t native_type(const double*);
hid_t native_type(const float*);
hid_t native_type(const std::int64_t*);
hid_t native_type(const std::int8_t*);

/// Write a whole dataset (contiguous, or chunked + shuffle + deflate when `compress`).
template <class T>
void write_dataset(hid_t loc, const std::string& name, const std::vector<T>& data,
                   const std::vector<hsize_t>& shape, const std::string& units, const std::string& file,
                   bool compress = true);

/// Read a 1-D (or flattened N-d) dataset's elements [offset, offset+count) (all if count < 0).
template <class T>
std::vector<T> read_dataset(hid_t loc, const std::string& name, const std::string& file,
                            std::int64_t offset = 0, std::int64_t count = -1);
/// Throws FormatError naming `file` and `name` when reading `count` elements of `elem_size` bytes
/// from dataset `d` would need far more memory than the file can hold: a damaged file may declare
/// 2^40 elements in a few kB (a chunked dataset that stores no chunk reads as fill values).
/// Allowed: up to 1 MiB, or 1100 × the bytes the dataset stores in the file (deflate cannot
/// compress beyond ≈ 1032 : 1), whichever is larger.
void check_declared_size(hid_t d, std::int64_t count, std::size_t elem_size, const std::string& file,
                         const std::string& name);
/// Shape of a dataset.
std::vector<hsize_t> dataset_shape(hid_t loc, const std::string& name, const std::string& file);

}  // namespace vibra::store::detail
