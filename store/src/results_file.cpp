// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/store/results_file.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <set>

#include "detail/atomic.hpp"
#include "detail/h5.hpp"
#include "detail/meta_attrs.hpp"
#include "vibra/core/error.hpp"
#include "vibra/core/version.hpp"

namespace vibra::store {

using detail::check;
using detail::exists;
using detail::Handle;
namespace fs = std::filesystem;

namespace {

void write_group(hid_t parent, const ResultGroup& g, const std::string& file) {
    if (g.name.empty() || g.name.find('/') != std::string::npos)
        throw ParameterError(file + ": result group name '" + g.name + "' is empty or contains '/'");
    Handle h(check(H5Gcreate2(parent, g.name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), file,
                   "cannot create group " + g.name));
    for (const auto& [k, v] : g.attrs) detail::write_attr(h, k, v, file);
    for (const auto& a : g.arrays) {
        std::vector<hsize_t> shape(a.shape.begin(), a.shape.end());
        std::visit(
            [&](const auto& data) { detail::write_dataset(h.get(), a.name, data, shape, a.units, file); },
            a.data);
        Handle d(check(H5Dopen2(h, a.name.c_str(), H5P_DEFAULT), file, "cannot reopen " + a.name));
        for (const auto& [k, v] : a.attrs) detail::write_attr(d, k, v, file);
    }
    for (const auto& sub : g.groups) write_group(h, sub, file);
}

// Addresses of the groups read so far: vibra writes a tree, so a group reached a second time
// (hard links forming a cycle, or two links to one group) is a damaged file, not an endless read.
using Visited = std::set<haddr_t>;

ResultGroup read_group(hid_t parent, const std::string& name, const std::string& file, Visited& visited) {
    ResultGroup g;
    g.name = name;
    Handle h(check(H5Gopen2(parent, name.c_str(), H5P_DEFAULT), file, "cannot open group " + name));
    for (const auto& a : detail::list_attrs(h)) detail::read_attr(h, a, g.attrs[a], file);
    for (const auto& link : detail::list_links(h)) {
        H5O_info_t info;
        detail::check_status(
            H5Oget_info_by_name2(h, link.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT), file,
            "cannot follow link '" + link + "' in group " + name + " (dangling or cyclic link?)");
        if (info.type == H5O_TYPE_GROUP) {
            if (!visited.insert(info.addr).second)
                throw FormatError(at_field(file, name + "/" + link,
                                           "is a group already read (hard links forming a cycle?)"));
            g.groups.push_back(read_group(h, link, file, visited));
            continue;
        }
        if (info.type != H5O_TYPE_DATASET)
            throw FormatError(at_field(file, name + "/" + link, "is neither a group nor a dataset"));
        ResultArray a;
        a.name = link;
        const auto shape = detail::dataset_shape(h, link, file);
        a.shape.assign(shape.begin(), shape.end());
        Handle d(check(H5Dopen2(h, link.c_str(), H5P_DEFAULT), file, "cannot open " + link));
        Handle type(H5Dget_type(d));
        if (H5Tget_class(type) == H5T_FLOAT)
            a.data = detail::read_dataset<double>(h, link, file);
        else if (H5Tget_size(type) == 1)
            a.data = detail::read_dataset<std::int8_t>(h, link, file);
        else
            a.data = detail::read_dataset<std::int64_t>(h, link, file);
        for (const auto& at : detail::list_attrs(d)) {
            if (at == "units")
                a.units = detail::read_attr_string(d, "units", file);
            else
                detail::read_attr(d, at, a.attrs[at], file);
        }
        g.arrays.push_back(std::move(a));
    }
    return g;
}

Handle open_results(const std::string& path, unsigned flags) {
    Handle f(detail::open_file(path, flags, "not an HDF5 file"));
    const auto schema = detail::read_attr_string(f, "schema", path);
    if (schema != kResultsSchema)
        throw FormatError(at_field(path, "/schema",
                                   "is '" + schema + "', expected '" + kResultsSchema +
                                       "' (refusing to overwrite a file that is not a vibra results file)"));
    return f;
}

bool exists_attr(hid_t obj, const std::string& name) { return H5Aexists(obj, name.c_str()) > 0; }

/// Groups written before groups carried their own provenance: give them the root's, which
/// described them, before the root is rewritten for the new input.
void stamp_old_groups(hid_t f, const std::string& path) {
    if (!exists(f, "analysis") || !exists_attr(f, "input_checksum")) return;
    const std::string in =
        exists_attr(f, "input_path") ? detail::read_attr_string(f, "input_path", path) : "";
    const std::string sum = detail::read_attr_string(f, "input_checksum", path);
    Handle an(check(H5Gopen2(f, "analysis", H5P_DEFAULT), path, "cannot open /analysis"));
    for (const auto& name : detail::list_links(an)) {
        Handle g(check(H5Gopen2(an, name.c_str(), H5P_DEFAULT), path, "cannot open /analysis/" + name));
        if (exists_attr(g, "input_checksum")) continue;
        detail::write_attr(g, "input_path", in, path);
        detail::write_attr(g, "input_checksum", sum, path);
    }
}

}  // namespace

void check_merge(const std::string& path, const ResultsProvenance& prov) {
    if (!fs::exists(path)) return;
    detail::silence_hdf5();
    Handle old = open_results(path, H5F_ACC_RDONLY);
    const std::string old_sum =
        exists_attr(old, "input_checksum") ? detail::read_attr_string(old, "input_checksum", path) : "";
    if (prov.force || old_sum.empty() || old_sum == prov.input_checksum) return;
    const std::string old_in =
        exists_attr(old, "input_path") ? detail::read_attr_string(old, "input_path", path) : "?";
    throw ParameterError(path + ": holds results of " + old_in + " (" + old_sum +
                         "); refusing to merge results of " + prov.input_path + " (" + prov.input_checksum +
                         ") into it: write to another file, or --force to merge (each group keeps its own "
                         "input_path)");
}

void write_results(const std::string& path, const std::vector<ResultGroup>& groups,
                   const ResultsProvenance& prov, const Metadata& input_meta) {
    detail::silence_hdf5();
    detail::check_writable_dir(path);
    // Under the target's lock from before the old file is read until the merged one is in place:
    // two runs merging into one file serialise (the second waits, then merges into the first's result).
    detail::PartialFile out(path, /*wait_seconds=*/600);
    const std::string& partial = out.path();
    Handle f;
    if (fs::exists(path)) {
        check_merge(path, prov);  // validates the schema before touching anything
        std::error_code ec;
        fs::copy_file(path, partial, fs::copy_options::overwrite_existing, ec);
        if (ec) throw IoError(path + ": cannot copy to " + partial + ": " + ec.message());
        f = Handle(
            check(H5Fopen(partial.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), path, "cannot open copy " + partial));
    } else {
        f = Handle(check(H5Fcreate(partial.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), path,
                         "cannot create " + partial));
        detail::write_attr(f, "schema", std::string(kResultsSchema), path);
        detail::write_attr(f, "schema_version", std::string(kResultsSchemaVersion), path);
    }
    stamp_old_groups(f, path);
    detail::write_attr(f, "vibra_version", std::string(vibra::version()), path);
    detail::write_attr(f, "created", detail::iso_now(), path);
    detail::write_attr(f, "input_path", prov.input_path, path);
    detail::write_attr(f, "input_checksum", prov.input_checksum, path);
    detail::write_attr(f, "parameters", prov.parameters, path);
    detail::write_attr(f, "skipped_analyses", prov.skipped, path);
    if (exists(f, "input_meta")) H5Ldelete(f, "input_meta", H5P_DEFAULT);
    {
        // The input's metadata, so units and geometry travel with the results.
        Handle im(check(H5Gcreate2(f, "input_meta", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), path,
                        "cannot create /input_meta"));
        detail::write_meta(im, input_meta, path);
    }
    Handle an(exists(f, "analysis") ? H5Gopen2(f, "analysis", H5P_DEFAULT)
                                    : H5Gcreate2(f, "analysis", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    check(an.get(), path, "cannot open /analysis");
    for (const auto& g : groups) {
        if (exists(an, g.name)) H5Ldelete(an, g.name.c_str(), H5P_DEFAULT);
        write_group(an, g, path);
    }
    detail::check_status(H5Fflush(f, H5F_SCOPE_GLOBAL), path, "cannot flush");
    an.reset();
    f.reset();
    out.publish();
}

std::vector<std::string> list_results(const std::string& path) {
    Handle f = open_results(path, H5F_ACC_RDONLY);
    if (!exists(f, "analysis")) return {};
    Handle an(check(H5Gopen2(f, "analysis", H5P_DEFAULT), path, "cannot open /analysis"));
    return detail::list_links(an);
}

ResultGroup read_results(const std::string& path, const std::string& name) {
    Handle f = open_results(path, H5F_ACC_RDONLY);
    if (!exists(f, "analysis/" + name))
        throw FormatError(at_field(path, "/analysis/" + name, "group is missing"));
    Handle an(check(H5Gopen2(f, "analysis", H5P_DEFAULT), path, "cannot open /analysis"));
    H5O_info_t info;
    detail::check_status(H5Oget_info_by_name2(an, name.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT), path,
                         "cannot follow /analysis/" + name);
    Visited visited{info.addr};
    return read_group(an, name, path, visited);
}

Attributes read_results_attrs(const std::string& path, const std::string& name) {
    Handle f = open_results(path, H5F_ACC_RDONLY);
    if (!exists(f, "analysis/" + name))
        throw FormatError(at_field(path, "/analysis/" + name, "group is missing"));
    Handle g(
        check(H5Gopen2(f, ("analysis/" + name).c_str(), H5P_DEFAULT), path, "cannot open /analysis/" + name));
    Attributes out;
    for (const auto& a : detail::list_attrs(g)) detail::read_attr(g, a, out[a], path);
    return out;
}

Attributes read_results_root(const std::string& path) {
    Handle f = open_results(path, H5F_ACC_RDONLY);
    Attributes out;
    for (const auto& a : detail::list_attrs(f)) detail::read_attr(f, a, out[a], path);
    return out;
}

Metadata read_results_input_meta(const std::string& path) {
    Handle f = open_results(path, H5F_ACC_RDONLY);
    if (!exists(f, "input_meta")) throw FormatError(at_field(path, "/input_meta", "group is missing"));
    Handle im(check(H5Gopen2(f, "input_meta", H5P_DEFAULT), path, "cannot open /input_meta"));
    return detail::read_meta(im, path);
}

}  // namespace vibra::store
