// SPDX-License-Identifier: GPL-3.0-or-later
#include "detail/h5.hpp"

#include "vibra/core/memory.hpp"
#include "vibra/core/output_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>

namespace vibra::store::detail {

void Handle::reset() {
    if (id_ < 0) return;
    switch (H5Iget_type(id_)) {
        case H5I_FILE:
            H5Fclose(id_);
            break;
        case H5I_GROUP:
            H5Gclose(id_);
            break;
        case H5I_DATASET:
            H5Dclose(id_);
            break;
        case H5I_DATASPACE:
            H5Sclose(id_);
            break;
        case H5I_DATATYPE:
            H5Tclose(id_);
            break;
        case H5I_ATTR:
            H5Aclose(id_);
            break;
        case H5I_GENPROP_LST:
            H5Pclose(id_);
            break;
        default:
            break;
    }
    id_ = H5I_INVALID_HID;
}

void silence_hdf5() {
    static std::once_flag once;
    std::call_once(once, [] {
        // No HDF5 clean-up at exit: every file is closed by its Handle, and a file whose close
        // failed (a full disk) would make HDF5's exit handler crash on it.
        H5dont_atexit();
        H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    });
}

namespace {
// H5dont_atexit works only before the library's first initialisation, and any HDF5 macro such as
// H5F_ACC_RDONLY or H5T_NATIVE_DOUBLE, evaluated as an argument, initialises it. So it is set when
// the program starts, before any reader or writer runs.
[[maybe_unused]] const bool g_hdf5_silenced = (silence_hdf5(), true);
}  // namespace

namespace {
struct Stack {
    std::string text;        // the innermost few entries say what happened
    bool no_space = false;   // some entry reports ENOSPC (the sec2 driver prints errno)
    bool no_memory = false;  // some entry reports a failed allocation
};
herr_t walk_cb(unsigned n, const H5E_error2_t* err, void* data) {
    auto* s = static_cast<Stack*>(data);
    const std::string desc = err->desc ? err->desc : "?";
    if (desc.find("errno = 28") != std::string::npos || desc.find("No space left") != std::string::npos)
        s->no_space = true;
    if (desc.find("allocation failed") != std::string::npos ||
        desc.find("memory allocation") != std::string::npos ||
        desc.find("can't allocate") != std::string::npos)
        s->no_memory = true;
    if (n > 2) return 0;
    if (!s->text.empty()) s->text += "; ";
    s->text += desc;
    return 0;
}
Stack hdf5_stack() {
    Stack s;
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, walk_cb, &s);
    H5Eclear2(H5E_DEFAULT);
    if (!s.text.empty()) s.text = " (HDF5: " + s.text + ")";
    return s;
}
bool is_write(const std::string& what) {
    for (const char* w : {"write", "create", "flush", "extend", "copy", "close"})
        if (what.find(w) != std::string::npos) return true;
    return false;
}
[[noreturn]] void fail(const std::string& file, const std::string& what) {
    const auto s = hdf5_stack();
    // HDF5 hides errno from its callers: a full file system is told by the stack or by statvfs.
    if (s.no_space || (is_write(what) && file_system_full(file)))
        throw IoError(file + ": " + write_failure(file, ENOSPC) + " (" + what + ")");
    if (s.no_memory)
        throw ResourceError(file + ": out of memory (free memory or ulimit -v): " + what + s.text);
    throw IoError(file + ": " + what + s.text);
}
}  // namespace

hid_t check(hid_t id, const std::string& file, const std::string& what) {
    if (id < 0) fail(file, what);
    return id;
}
void check_status(herr_t st, const std::string& file, const std::string& what) {
    if (st < 0) fail(file, what);
}

bool exists(hid_t loc, const std::string& path) {
    // Check each component so a missing parent is "false", not an error.
    std::size_t pos = 0;
    while (true) {
        pos = path.find('/', pos + 1);
        const std::string part = path.substr(0, pos);
        if (!part.empty() && part != "/" && H5Lexists(loc, part.c_str(), H5P_DEFAULT) <= 0) return false;
        if (pos == std::string::npos) return true;
    }
}

// ---------------------------------------------------------------------------------------------
namespace {
struct FileImage {
    const unsigned char* bytes = nullptr;
    std::size_t size = 0;
};
thread_local FileImage* active_image = nullptr;

/// H5Fis_hdf5 on bytes: the signature at offset 0, 512, 1024, 2048, … (a user block before it).
bool has_hdf5_signature(const FileImage& im) {
    static const unsigned char sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    for (std::size_t at = 0; at + 8 <= im.size; at = at == 0 ? 512 : 2 * at)
        if (std::memcmp(im.bytes + at, sig, 8) == 0) return true;
    return false;
}

hid_t open_image(const FileImage& im, const std::string& path, const std::string& not_hdf5) {
    if (!has_hdf5_signature(im)) throw FormatError(path + ": " + not_hdf5);
    Handle fapl(H5Pcreate(H5P_FILE_ACCESS));
    check_status(H5Pset_fapl_core(fapl, 64 << 10, /*backing_store=*/0), path, "cannot set the core driver");
    check_status(H5Pset_file_image(fapl, const_cast<unsigned char*>(im.bytes), im.size), path,
                 "cannot set the file image");
    return check(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl), path, "cannot open");
}
}  // namespace

hid_t open_file(const std::string& path, unsigned flags, const std::string& not_hdf5) {
    silence_hdf5();
    if (active_image && flags == H5F_ACC_RDONLY) return open_image(*active_image, path, not_hdf5);
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) throw IoError(path + ": no such file");
    if (H5Fis_hdf5(path.c_str()) <= 0) throw FormatError(path + ": " + not_hdf5);
    return check(H5Fopen(path.c_str(), flags, H5P_DEFAULT), path, "cannot open");
}

ScopedFileImage::ScopedFileImage(const void* bytes, std::size_t size) {
    active_image = new FileImage{static_cast<const unsigned char*>(bytes), size};
}
ScopedFileImage::~ScopedFileImage() {
    delete active_image;
    active_image = nullptr;
}

// ---------------------------------------------------------------------------------------------
namespace {
Handle vlen_string_type() {
    Handle t(H5Tcopy(H5T_C_S1));
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    return t;
}
template <class T>
void write_numeric_attr(hid_t obj, const std::string& name, const std::vector<T>& v, bool scalar,
                        const std::string& file) {
    const hsize_t n = v.size();
    Handle space(scalar ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &n, nullptr));
    if (H5Aexists(obj, name.c_str()) > 0) H5Adelete(obj, name.c_str());
    Handle a(check(H5Acreate2(obj, name.c_str(), native_type(static_cast<const T*>(nullptr)), space,
                              H5P_DEFAULT, H5P_DEFAULT),
                   file, "cannot create attribute '" + name + "'"));
    const T dummy{};  // HDF5 wants a non-null buffer even for zero elements
    check_status(H5Awrite(a, native_type(static_cast<const T*>(nullptr)), v.empty() ? &dummy : v.data()),
                 file, "cannot write attribute '" + name + "'");
}
void write_string_attr(hid_t obj, const std::string& name, const std::vector<std::string>& v, bool scalar,
                       const std::string& file) {
    const hsize_t n = v.size();
    Handle space(scalar ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &n, nullptr));
    Handle type = vlen_string_type();
    if (H5Aexists(obj, name.c_str()) > 0) H5Adelete(obj, name.c_str());
    Handle a(check(H5Acreate2(obj, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT), file,
                   "cannot create attribute '" + name + "'"));
    std::vector<const char*> ptrs;
    for (const auto& s : v) ptrs.push_back(s.c_str());
    const char* dummy = "";  // HDF5 wants a non-null buffer even for zero elements
    check_status(H5Awrite(a, type, ptrs.empty() ? &dummy : ptrs.data()), file,
                 "cannot write attribute '" + name + "'");
}
}  // namespace

void write_attr(hid_t obj, const std::string& name, const AttrValue& v, const std::string& file) {
    std::visit(
        [&](const auto& x) {
            using X = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<X, double> || std::is_same_v<X, std::int64_t>)
                write_numeric_attr(obj, name, std::vector<X>{x}, true, file);
            else if constexpr (std::is_same_v<X, std::string>)
                write_string_attr(obj, name, {x}, true, file);
            else if constexpr (std::is_same_v<X, std::vector<std::string>>)
                write_string_attr(obj, name, x, false, file);
            else
                write_numeric_attr(obj, name, x, false, file);
        },
        v);
}

namespace {
// Bytes of the file backing an object: the file's size, for storage figures a damaged file may
// overstate (a contiguous layout's size is what its header says).
std::uint64_t file_size_of(hid_t obj) {
    Handle f(H5Iget_file_id(obj));
    hsize_t size = 0;
    if (!f.valid() || H5Fget_filesize(f, &size) < 0) return 0;
    return size;
}
// Attribute values are stored whole in the file: n elements of sz bytes (≥ 1 each) fit in it.
void check_attr_size(hid_t obj, std::size_t n, std::size_t sz, const std::string& file,
                     const std::string& name) {
    const std::uint64_t fsize = file_size_of(obj);
    const std::uint64_t per = std::max<std::size_t>(sz, 1);
    if (n > fsize / per)
        throw FormatError(at_field(file, name,
                                   "attribute declares " + std::to_string(n) + " elements of " +
                                       std::to_string(per) + " bytes, more than the file's " +
                                       std::to_string(fsize) + " bytes hold (damaged file?)"));
}
}  // namespace

bool read_attr(hid_t obj, const std::string& name, AttrValue& out, const std::string& file) {
    if (H5Aexists(obj, name.c_str()) <= 0) return false;
    Handle a(check(H5Aopen(obj, name.c_str(), H5P_DEFAULT), file, "cannot open attribute '" + name + "'"));
    Handle type(H5Aget_type(a));
    Handle space(H5Aget_space(a));
    const int rank = H5Sget_simple_extent_ndims(space);
    const auto n = static_cast<std::size_t>(H5Sget_simple_extent_npoints(space));
    const H5T_class_t cls = H5Tget_class(type);
    if (H5Sget_simple_extent_npoints(space) < 0 || rank < 0)
        throw FormatError(at_field(file, name, "attribute has an unreadable shape"));
    check_attr_size(obj, n, H5Tis_variable_str(type) > 0 ? 1 : H5Tget_size(type), file, name);
    if (n == 0) {  // empty array attribute: HDF5 refuses to read into a null buffer
        if (cls == H5T_STRING)
            out = std::vector<std::string>{};
        else if (cls == H5T_INTEGER)
            out = std::vector<std::int64_t>{};
        else
            out = std::vector<double>{};
        return true;
    }
    if (cls == H5T_STRING) {
        std::vector<std::string> vals;
        if (H5Tis_variable_str(type) > 0) {
            Handle mem = vlen_string_type();
            std::vector<char*> ptrs(n, nullptr);
            check_status(H5Aread(a, mem, ptrs.data()), file, "cannot read attribute '" + name + "'");
            for (auto* p : ptrs) vals.emplace_back(p ? p : "");
            H5Dvlen_reclaim(mem, space, H5P_DEFAULT, ptrs.data());
        } else {
            const std::size_t sz = H5Tget_size(type);
            std::vector<char> buf(sz * n + 1, '\0');
            check_status(H5Aread(a, type, buf.data()), file, "cannot read attribute '" + name + "'");
            for (std::size_t i = 0; i < n; ++i) {
                std::string s(buf.data() + i * sz, sz);
                s.erase(std::find(s.begin(), s.end(), '\0'), s.end());
                vals.push_back(s);
            }
        }
        if (rank == 0 && vals.size() == 1)
            out = vals[0];
        else
            out = vals;
        return true;
    }
    if (cls == H5T_INTEGER) {
        std::vector<std::int64_t> v(n);
        check_status(H5Aread(a, H5T_NATIVE_INT64, v.data()), file, "cannot read attribute '" + name + "'");
        if (rank == 0 && n == 1)
            out = v[0];
        else
            out = v;
        return true;
    }
    if (cls == H5T_FLOAT) {
        std::vector<double> v(n);
        check_status(H5Aread(a, H5T_NATIVE_DOUBLE, v.data()), file, "cannot read attribute '" + name + "'");
        if (rank == 0 && n == 1)
            out = v[0];
        else
            out = v;
        return true;
    }
    throw FormatError(at_field(file, name, "attribute has an unsupported type"));
}

std::string read_attr_string(hid_t obj, const std::string& name, const std::string& file,
                             const std::string& fallback) {
    AttrValue v;
    if (!read_attr(obj, name, v, file)) return fallback;
    if (auto* s = std::get_if<std::string>(&v)) return *s;
    throw FormatError(at_field(file, name, "attribute is not a string"));
}

namespace {
herr_t attr_cb(hid_t, const char* name, const H5A_info_t*, void* data) {
    static_cast<std::vector<std::string>*>(data)->emplace_back(name);
    return 0;
}
herr_t link_cb(hid_t, const char* name, const H5L_info_t*, void* data) {
    static_cast<std::vector<std::string>*>(data)->emplace_back(name);
    return 0;
}
}  // namespace

std::vector<std::string> list_attrs(hid_t obj) {
    std::vector<std::string> out;
    H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, nullptr, attr_cb, &out);
    return out;
}
std::vector<std::string> list_links(hid_t group) {
    std::vector<std::string> out;
    H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, nullptr, link_cb, &out);
    return out;
}

hid_t native_type(const double*) { return H5T_NATIVE_DOUBLE; }
hid_t native_type(const float*) { return H5T_NATIVE_FLOAT; }
hid_t native_type(const std::int64_t*) { return H5T_NATIVE_INT64; }
hid_t native_type(const std::int8_t*) { return H5T_NATIVE_INT8; }

template <class T>
void write_dataset(hid_t loc, const std::string& name, const std::vector<T>& data,
                   const std::vector<hsize_t>& shape_in, const std::string& units, const std::string& file,
                   bool compress) {
    std::vector<hsize_t> shape = shape_in.empty() ? std::vector<hsize_t>{data.size()} : shape_in;
    Handle space(H5Screate_simple(static_cast<int>(shape.size()), shape.data(), nullptr));
    Handle dcpl(H5Pcreate(H5P_DATASET_CREATE));
    hsize_t total = 1;
    for (auto s : shape) total *= s;
    if (compress && total > 0) {
        // ~1 MiB chunks along the first axis.
        std::vector<hsize_t> chunk = shape;
        hsize_t row = sizeof(T);
        for (std::size_t i = 1; i < shape.size(); ++i) row *= std::max<hsize_t>(1, shape[i]);
        chunk[0] = std::max<hsize_t>(1, std::min<hsize_t>(shape[0], (1u << 20) / std::max<hsize_t>(row, 1)));
        for (std::size_t i = 1; i < chunk.size(); ++i) chunk[i] = std::max<hsize_t>(1, chunk[i]);
        H5Pset_chunk(dcpl, static_cast<int>(chunk.size()), chunk.data());
        H5Pset_shuffle(dcpl);
        H5Pset_deflate(dcpl, 4);
    }
    Handle d(check(H5Dcreate2(loc, name.c_str(), native_type(static_cast<const T*>(nullptr)), space,
                              H5P_DEFAULT, dcpl, H5P_DEFAULT),
                   file, "cannot create dataset '" + name + "'"));
    if (total > 0)
        check_status(H5Dwrite(d, native_type(static_cast<const T*>(nullptr)), H5S_ALL, H5S_ALL, H5P_DEFAULT,
                              data.data()),
                     file, "cannot write dataset '" + name + "'");
    write_attr(d, "units", units, file);
}

void check_declared_size(hid_t d, std::int64_t count, std::size_t elem_size, const std::string& file,
                         const std::string& name) {
    constexpr std::uint64_t kAlways = 1u << 20, kMaxRatio = 1100;
    if (count <= 0) return;
    const auto n = static_cast<std::uint64_t>(count);
    const std::uint64_t stored = std::min<std::uint64_t>(H5Dget_storage_size(d), file_size_of(d));
    const std::uint64_t limit =
        std::max<std::uint64_t>(kAlways, stored > UINT64_MAX / kMaxRatio ? UINT64_MAX : stored * kMaxRatio);
    if (n > limit / std::max<std::size_t>(elem_size, 1))
        throw FormatError(at_field(file, name,
                                   "declares " + std::to_string(n) + " elements of " +
                                       std::to_string(elem_size) + " bytes but stores " +
                                       std::to_string(stored) + " bytes in the file (damaged file?)"));
}

template <class T>
std::vector<T> read_dataset(hid_t loc, const std::string& name, const std::string& file, std::int64_t offset,
                            std::int64_t count) {
    if (!exists(loc, name)) throw FormatError(at_field(file, name, "dataset is missing"));
    Handle d(check(H5Dopen2(loc, name.c_str(), H5P_DEFAULT), file, "cannot open dataset '" + name + "'"));
    Handle space(H5Dget_space(d));
    const auto n = static_cast<std::int64_t>(H5Sget_simple_extent_npoints(space));
    if (n < 0) throw FormatError(at_field(file, name, "dataset has an unreadable shape"));
    if (count < 0) count = n - offset;
    if (offset < 0 || offset + count > n)
        throw FormatError(at_field(file, name,
                                   "requested elements [" + std::to_string(offset) + ", " +
                                       std::to_string(offset + count) + ") beyond its " + std::to_string(n) +
                                       " elements"));
    check_declared_size(d, count, sizeof(T), file, name);
    // A size the file can hold but this process cannot: refused before allocating, naming it.
    check_memory(static_cast<std::uint64_t>(count) * sizeof(T),
                 at_field(file, name, std::to_string(count) + " elements"));
    std::vector<T> out(static_cast<std::size_t>(count));
    if (count == 0) return out;
    const int rank = H5Sget_simple_extent_ndims(space);
    if (rank == 1) {
        hsize_t off = static_cast<hsize_t>(offset), cnt = static_cast<hsize_t>(count);
        H5Sselect_hyperslab(space, H5S_SELECT_SET, &off, nullptr, &cnt, nullptr);
        Handle mem(H5Screate_simple(1, &cnt, nullptr));
        check_status(
            H5Dread(d, native_type(static_cast<const T*>(nullptr)), mem, space, H5P_DEFAULT, out.data()),
            file, "cannot read dataset '" + name + "'");
    } else {
        if (offset != 0 || count != n)
            throw ParameterError(file + ": partial read of multi-dimensional dataset '" + name + "'");
        check_status(H5Dread(d, native_type(static_cast<const T*>(nullptr)), H5S_ALL, H5S_ALL, H5P_DEFAULT,
                             out.data()),
                     file, "cannot read dataset '" + name + "'");
    }
    return out;
}

std::vector<hsize_t> dataset_shape(hid_t loc, const std::string& name, const std::string& file) {
    Handle d(check(H5Dopen2(loc, name.c_str(), H5P_DEFAULT), file, "cannot open dataset '" + name + "'"));
    Handle space(H5Dget_space(d));
    const int rank = H5Sget_simple_extent_ndims(space);
    std::vector<hsize_t> dims(static_cast<std::size_t>(std::max(rank, 0)));
    H5Sget_simple_extent_dims(space, dims.data(), nullptr);
    return dims;
}

#define VIBRA_INSTANTIATE(T)                                                                             \
    template void write_dataset<T>(hid_t, const std::string&, const std::vector<T>&,                     \
                                   const std::vector<hsize_t>&, const std::string&, const std::string&,  \
                                   bool);                                                                \
    template std::vector<T> read_dataset<T>(hid_t, const std::string&, const std::string&, std::int64_t, \
                                            std::int64_t);
VIBRA_INSTANTIATE(double)
VIBRA_INSTANTIATE(float)
VIBRA_INSTANTIATE(std::int64_t)
VIBRA_INSTANTIATE(std::int8_t)
#undef VIBRA_INSTANTIATE

}  // namespace vibra::store::detail
