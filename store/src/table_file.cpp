// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/store/table_file.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "detail/atomic.hpp"
#include "detail/h5.hpp"
#include "vibra/core/error.hpp"
#include "vibra/core/version.hpp"

namespace vibra::store {

using detail::check;
using detail::check_status;
using detail::Handle;

std::size_t TableColumn::size() const {
    return std::visit([](const auto& v) { return v.size(); }, data);
}

const TableColumn* Table::find(const std::string& name) const {
    for (const auto& c : columns)
        if (c.name == name) return &c;
    return nullptr;
}

namespace {

void check_shape(const Table& t, const std::string& path) {
    for (const auto& c : t.columns)
        if (c.size() != t.rows())
            throw ParameterError(path + ": column '" + c.name + "' has " + std::to_string(c.size()) +
                                 " rows, '" + t.columns.front().name + "' has " + std::to_string(t.rows()));
}

void write_strings(hid_t g, const std::string& name, const std::vector<std::string>& v,
                   const std::string& file) {
    Handle type(H5Tcopy(H5T_C_S1));
    H5Tset_size(type, H5T_VARIABLE);
    H5Tset_cset(type, H5T_CSET_UTF8);
    const hsize_t n = v.size();
    Handle space(H5Screate_simple(1, &n, nullptr));
    Handle d(check(H5Dcreate2(g, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), file,
                   "cannot create dataset " + name));
    std::vector<const char*> ptrs;
    for (const auto& s : v) ptrs.push_back(s.c_str());
    if (!ptrs.empty())
        check_status(H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()), file,
                     "cannot write " + name);
    detail::write_attr(d, "units", std::string(""), file);
}

std::vector<std::string> read_strings(hid_t g, const std::string& name, const std::string& file) {
    Handle d(check(H5Dopen2(g, name.c_str(), H5P_DEFAULT), file, "cannot open " + name));
    Handle space(H5Dget_space(d));
    const auto npoints = H5Sget_simple_extent_npoints(space);
    if (npoints < 0) throw FormatError(at_field(file, name, "dataset has an unreadable shape"));
    detail::check_declared_size(d, npoints, sizeof(char*), file, name);
    const auto n = static_cast<std::size_t>(npoints);
    Handle type(H5Tcopy(H5T_C_S1));
    H5Tset_size(type, H5T_VARIABLE);
    H5Tset_cset(type, H5T_CSET_UTF8);
    std::vector<char*> ptrs(n, nullptr);
    if (n)
        check_status(H5Dread(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()), file,
                     "cannot read " + name);
    std::vector<std::string> out;
    for (auto* p : ptrs) out.emplace_back(p ? p : "");
    if (n) H5Dvlen_reclaim(type, space, H5P_DEFAULT, ptrs.data());
    return out;
}

std::string csv_field(const std::string& s) {
    if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

std::string csv_number(double x) {
    if (!std::isfinite(x)) return std::isnan(x) ? "" : (x > 0 ? "inf" : "-inf");
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", x);
    return buf;
}

}  // namespace

void write_table_h5(const std::string& path, const Table& t) {
    check_shape(t, path);
    detail::silence_hdf5();
    detail::check_writable_dir(path);
    detail::PartialFile out(path);
    {
        Handle f(check(H5Fcreate(out.path().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), path,
                       "cannot create " + out.path()));
        detail::write_attr(f, "schema", t.schema, path);
        detail::write_attr(f, "vibra_version", std::string(vibra::version()), path);
        detail::write_attr(f, "created", detail::iso_now(), path);
        for (const auto& [k, v] : t.attrs) detail::write_attr(f, k, v, path);
        Handle g(check(H5Gcreate2(f, t.group.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), path,
                       "cannot create group " + t.group));
        std::vector<std::string> names;
        for (const auto& c : t.columns) {
            names.push_back(c.name);
            if (const auto* s = std::get_if<std::vector<std::string>>(&c.data)) {
                write_strings(g, c.name, *s, path);
            } else {
                std::visit(
                    [&](const auto& v) {
                        using V = std::decay_t<decltype(v)>;
                        if constexpr (!std::is_same_v<V, std::vector<std::string>>)
                            detail::write_dataset(g.get(), c.name, v, {static_cast<hsize_t>(v.size())},
                                                  c.units, path, false);
                    },
                    c.data);
            }
            Handle d(check(H5Dopen2(g, c.name.c_str(), H5P_DEFAULT), path, "cannot reopen " + c.name));
            if (!c.description.empty()) detail::write_attr(d, "description", c.description, path);
        }
        detail::write_attr(g, "columns", names, path);
        detail::write_attr(g, "rows", static_cast<std::int64_t>(t.rows()), path);
        check_status(H5Fflush(f, H5F_SCOPE_GLOBAL), path, "cannot flush");
    }
    out.publish();
}

Table read_table_h5(const std::string& path, const std::string& schema, const std::string& group) {
    Handle f(detail::open_file(path, H5F_ACC_RDONLY, "not an HDF5 file"));
    Table t;
    t.schema = detail::read_attr_string(f, "schema", path);
    if (t.schema != schema)
        throw FormatError(at_field(path, "/schema", "is '" + t.schema + "', expected '" + schema + "'"));
    t.group = group;
    for (const auto& a : detail::list_attrs(f))
        if (a != "schema") detail::read_attr(f, a, t.attrs[a], path);
    if (!detail::exists(f, group)) throw FormatError(at_field(path, "/" + group, "is missing"));
    Handle g(check(H5Gopen2(f, group.c_str(), H5P_DEFAULT), path, "cannot open /" + group));
    AttrValue names_v;
    if (!detail::read_attr(g, "columns", names_v, path))
        throw FormatError(at_field(path, "/" + group + "@columns", "is missing"));
    const auto* names = std::get_if<std::vector<std::string>>(&names_v);
    if (!names) throw FormatError(at_field(path, "/" + group + "@columns", "is not a list of strings"));
    for (const auto& n : *names) {
        if (!detail::exists(g, n))
            throw FormatError(at_field(path, "/" + group + "/" + n, "is listed but missing"));
        TableColumn c;
        c.name = n;
        Handle d(check(H5Dopen2(g, n.c_str(), H5P_DEFAULT), path, "cannot open " + n));
        Handle type(H5Dget_type(d));
        const auto cls = H5Tget_class(type);
        if (cls == H5T_STRING)
            c.data = read_strings(g, n, path);
        else if (cls == H5T_FLOAT)
            c.data = detail::read_dataset<double>(g, n, path);
        else
            c.data = detail::read_dataset<std::int64_t>(g, n, path);
        c.units = detail::read_attr_string(d, "units", path, "");
        c.description = detail::read_attr_string(d, "description", path, "");
        t.columns.push_back(std::move(c));
    }
    return t;
}

void write_table_csv(const std::string& path, const Table& t) {
    check_shape(t, path);
    detail::check_writable_dir(path);
    detail::PartialFile out(path);
    {
        std::ofstream os(out.path(), std::ios::binary | std::ios::trunc);
        if (!os) throw IoError(path + ": cannot create " + out.path());
        for (std::size_t j = 0; j < t.columns.size(); ++j)
            os << (j ? "," : "") << csv_field(t.columns[j].name);
        os << "\n";
        for (std::size_t i = 0; i < t.rows(); ++i) {
            for (std::size_t j = 0; j < t.columns.size(); ++j) {
                if (j) os << ',';
                std::visit(
                    [&](const auto& v) {
                        using V = std::decay_t<decltype(v)>;
                        if constexpr (std::is_same_v<V, std::vector<std::string>>)
                            os << csv_field(v[i]);
                        else if constexpr (std::is_same_v<V, std::vector<double>>)
                            os << csv_number(v[i]);
                        else
                            os << v[i];
                    },
                    t.columns[j].data);
            }
            os << "\n";
        }
        os.flush();
        if (!os) throw IoError(path + ": " + write_failure(out.path(), errno));
    }
    out.publish();
}

}  // namespace vibra::store
