// SPDX-License-Identifier: GPL-3.0-or-later
#include "detail/meta_attrs.hpp"

#include "detail/h5.hpp"

namespace vibra::store::detail {

void write_meta(hid_t fid, const Metadata& m, const std::string& file) {
    Handle g(exists(fid, "meta") ? H5Gopen2(fid, "meta", H5P_DEFAULT)
                                 : H5Gcreate2(fid, "meta", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    check(g.get(), file, "cannot create group /meta");
    write_attr(g, "length_unit", m.length_unit, file);
    write_attr(g, "time_unit", m.time_unit, file);
    write_attr(g, "frame_interval", m.frame_interval, file);
    if (m.px_per_mm) write_attr(g, "px_per_mm", *m.px_per_mm, file);
    write_attr(g, "image_width", m.image_width, file);
    write_attr(g, "image_height", m.image_height, file);
    write_attr(g, "coordinate_convention", m.coordinate_convention, file);
    write_attr(g, "geometry", std::string(to_string(m.geometry.kind)), file);
    if (m.geometry.kind == GeometryKind::periodic_box || m.geometry.kind == GeometryKind::window_rect)
        write_attr(g, "geometry_bounds",
                   std::vector<double>{m.geometry.x0, m.geometry.y0, m.geometry.x1, m.geometry.y1}, file);
    if (m.geometry.kind == GeometryKind::window_circle)
        write_attr(g, "geometry_circle", std::vector<double>{m.geometry.cx, m.geometry.cy, m.geometry.r},
                   file);
    write_attr(g, "species_names", m.species_names, file);
    if (!m.species_diameters.empty()) write_attr(g, "species_diameters", m.species_diameters, file);
    if (m.drive_frequency_hz) write_attr(g, "drive_frequency_hz", *m.drive_frequency_hz, file);
    if (m.drive_gamma) write_attr(g, "drive_gamma", *m.drive_gamma, file);
    write_attr(g, "source_file", m.source.file, file);
    write_attr(g, "source_checksum", m.source.checksum, file);
    write_attr(g, "source_vibra_version", m.source.vibra_version, file);
    write_attr(g, "source_parameters", m.source.parameters, file);
    write_attr(g, "incomplete", std::int64_t{m.incomplete ? 1 : 0}, file);
    Handle u(exists(g, "user") ? H5Gopen2(g, "user", H5P_DEFAULT)
                               : H5Gcreate2(g, "user", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    check(u.get(), file, "cannot create group /meta/user");
    for (const auto& [k, v] : m.user) write_attr(u, k, v, file);
}

namespace {
template <class T>
T get_as(hid_t g, const std::string& name, const std::string& file, const T& fallback) {
    AttrValue v;
    if (!read_attr(g, name, v, file)) return fallback;
    if constexpr (std::is_same_v<T, double>) {
        if (auto* d = std::get_if<double>(&v)) return *d;
        if (auto* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
    } else if constexpr (std::is_same_v<T, std::int64_t>) {
        if (auto* i = std::get_if<std::int64_t>(&v)) return *i;
    } else if constexpr (std::is_same_v<T, std::string>) {
        if (auto* s = std::get_if<std::string>(&v)) return *s;
    } else if constexpr (std::is_same_v<T, std::vector<double>>) {
        if (auto* d = std::get_if<std::vector<double>>(&v)) return *d;
        if (auto* d = std::get_if<double>(&v)) return {*d};
    } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
        if (auto* s = std::get_if<std::vector<std::string>>(&v)) return *s;
        if (auto* s = std::get_if<std::string>(&v)) return {*s};
    }
    throw FormatError(at_field(file, "/meta/" + name, "attribute has the wrong type"));
}
}  // namespace

Metadata read_meta(hid_t fid, const std::string& file) {
    if (!exists(fid, "meta")) throw FormatError(at_field(file, "/meta", "group is missing"));
    Handle g(check(H5Gopen2(fid, "meta", H5P_DEFAULT), file, "cannot open /meta"));
    Metadata m;
    m.length_unit = get_as<std::string>(g, "length_unit", file, m.length_unit);
    m.time_unit = get_as<std::string>(g, "time_unit", file, m.time_unit);
    m.frame_interval = get_as<double>(g, "frame_interval", file, m.frame_interval);
    if (H5Aexists(g, "px_per_mm") > 0) m.px_per_mm = get_as<double>(g, "px_per_mm", file, 0.0);
    m.image_width = get_as<std::int64_t>(g, "image_width", file, 0);
    m.image_height = get_as<std::int64_t>(g, "image_height", file, 0);
    m.coordinate_convention = get_as<std::string>(g, "coordinate_convention", file, m.coordinate_convention);
    try {
        m.geometry.kind = geometry_kind_from_string(get_as<std::string>(g, "geometry", file, "unbounded"));
    } catch (const ParameterError& e) {
        throw FormatError(at_field(file, "/meta/geometry", e.what()));
    }
    if (m.geometry.kind == GeometryKind::periodic_box || m.geometry.kind == GeometryKind::window_rect) {
        const auto b = get_as<std::vector<double>>(g, "geometry_bounds", file, {});
        if (b.size() != 4)
            throw FormatError(at_field(file, "/meta/geometry_bounds", "needs 4 values x0,y0,x1,y1"));
        m.geometry.x0 = b[0], m.geometry.y0 = b[1], m.geometry.x1 = b[2], m.geometry.y1 = b[3];
    }
    if (m.geometry.kind == GeometryKind::window_circle) {
        const auto c = get_as<std::vector<double>>(g, "geometry_circle", file, {});
        if (c.size() != 3)
            throw FormatError(at_field(file, "/meta/geometry_circle", "needs 3 values cx,cy,r"));
        m.geometry.cx = c[0], m.geometry.cy = c[1], m.geometry.r = c[2];
    }
    m.species_names = get_as<std::vector<std::string>>(g, "species_names", file, m.species_names);
    m.species_diameters = get_as<std::vector<double>>(g, "species_diameters", file, {});
    if (H5Aexists(g, "drive_frequency_hz") > 0)
        m.drive_frequency_hz = get_as<double>(g, "drive_frequency_hz", file, 0.0);
    if (H5Aexists(g, "drive_gamma") > 0) m.drive_gamma = get_as<double>(g, "drive_gamma", file, 0.0);
    m.source.file = get_as<std::string>(g, "source_file", file, "");
    m.source.checksum = get_as<std::string>(g, "source_checksum", file, "");
    m.source.vibra_version = get_as<std::string>(g, "source_vibra_version", file, "");
    m.source.parameters = get_as<std::string>(g, "source_parameters", file, "");
    m.incomplete = get_as<std::int64_t>(g, "incomplete", file, 0) != 0;
    if (exists(g, "user")) {
        Handle u(check(H5Gopen2(g, "user", H5P_DEFAULT), file, "cannot open /meta/user"));
        for (const auto& name : list_attrs(u)) {
            AttrValue v;
            read_attr(u, name, v, file);
            if (auto* s = std::get_if<std::string>(&v)) m.user[name] = *s;
        }
    }
    return m;
}

}  // namespace vibra::store::detail
