// SPDX-License-Identifier: GPL-3.0-or-later
// The CSV metadata sidecar `<csv>.meta.json`: what a CSV cannot say (units, frame interval,
// species names and diameters, geometry, per-frame times, provenance), in JSON with the names
// of the HDF5 /meta attributes (docs/hdf5-layout.md), so `vibra import` restores it.
#include <cerrno>
#include <cmath>
#include <fstream>
#include <sstream>

#include "detail/atomic.hpp"
#include "detail/json.hpp"
#include "detail/text.hpp"
#include "vibra/core/error.hpp"
#include "vibra/core/version.hpp"
#include "vibra/store/text_formats.hpp"

namespace vibra::store {

namespace {

constexpr const char* kSchema = "vibra-csv-metadata";
constexpr const char* kSchemaVersion = "1.0";

using detail::Json;

// ---- writing -------------------------------------------------------------------------------

class Writer {
public:
    std::string out;

    void open(const char* key, char bracket) {
        this->key(key);
        out += bracket;
        first_ = true;
        ++depth_;
    }
    void close(char bracket) {
        --depth_;
        if (!first_) newline();  // an empty object or array stays "{}" / "[]"
        out += bracket;
        first_ = false;
    }
    void str(const char* k, const std::string& v) { key(k), detail::append_json_string(out, v); }
    void num(const char* k, double v) { key(k), number(v); }
    void num(const char* k, std::int64_t v) { key(k), detail::append_number(out, v); }
    template <class T>
    void list(const char* k, const std::vector<T>& v) {
        key(k);
        out += '[';
        for (std::size_t i = 0; i < v.size(); ++i) {
            if (i) out += ", ";
            if constexpr (std::is_same_v<T, std::string>)
                detail::append_json_string(out, v[i]);
            else if constexpr (std::is_same_v<T, double>)
                number(v[i]);
            else
                detail::append_number(out, v[i]);
        }
        out += ']';
    }

private:
    bool first_ = true;
    int depth_ = 1;
    void newline() {
        out += '\n';
        out.append(static_cast<std::size_t>(2 * depth_), ' ');
    }
    void key(const char* k) {
        if (!first_) out += ',';
        first_ = false;
        newline();
        if (k) detail::append_json_string(out, k), out += ": ";
    }
    void number(double v) {  // JSON has no NaN or infinities: null
        if (std::isfinite(v))
            detail::append_number(out, v);
        else
            out += "null";
    }
};

void write_meta(Writer& w, const Metadata& m) {
    w.open("meta", '{');
    w.str("length_unit", m.length_unit);
    w.str("time_unit", m.time_unit);
    w.num("frame_interval", m.frame_interval);
    if (m.px_per_mm) w.num("px_per_mm", *m.px_per_mm);
    w.num("image_width", m.image_width);
    w.num("image_height", m.image_height);
    w.str("coordinate_convention", m.coordinate_convention);
    w.str("geometry", to_string(m.geometry.kind));
    const Geometry& g = m.geometry;
    if (g.kind == GeometryKind::periodic_box || g.kind == GeometryKind::window_rect)
        w.list("geometry_bounds", std::vector<double>{g.x0, g.y0, g.x1, g.y1});
    if (g.kind == GeometryKind::window_circle)
        w.list("geometry_circle", std::vector<double>{g.cx, g.cy, g.r});
    w.list("species_names", m.species_names);
    if (!m.species_diameters.empty()) w.list("species_diameters", m.species_diameters);
    if (m.drive_frequency_hz) w.num("drive_frequency_hz", *m.drive_frequency_hz);
    if (m.drive_gamma) w.num("drive_gamma", *m.drive_gamma);
    w.str("source_file", m.source.file);
    w.str("source_checksum", m.source.checksum);
    w.str("source_vibra_version", m.source.vibra_version);
    w.str("source_parameters", m.source.parameters);
    w.num("incomplete", std::int64_t{m.incomplete ? 1 : 0});
    w.open("user", '{');
    for (const auto& [k, v] : m.user) w.str(k.c_str(), v);
    w.close('}');
    w.close('}');
}

// The CSV's columns with their units, in the order export_csv writes them.
std::vector<std::pair<std::string, std::string>> column_units(const Metadata& m, const ColumnSet& c) {
    const std::string& L = m.length_unit;
    std::vector<std::pair<std::string, std::string>> cols{
        {"frame", "frame"}, {"particle", "1"}, {"x", L}, {"y", L}, {"species", "1"}};
    if (c.velocity) cols.insert(cols.end(), {{"vx", L + "/" + m.time_unit}, {"vy", L + "/" + m.time_unit}});
    if (c.radius) cols.emplace_back("radius", L);
    if (c.brightness) cols.emplace_back("brightness", "counts");
    if (c.quality) cols.emplace_back("quality", "1");
    if (c.species_confidence) cols.emplace_back("species_confidence", "1");
    if (c.edge) cols.emplace_back("edge", "1");
    return cols;
}

// ---- reading -------------------------------------------------------------------------------

class Reader {
public:
    explicit Reader(const std::string& file) : file_(file) {}

    const Json& member(const Json& obj, const std::string& path, const char* key, Json::Kind kind,
                       const char* what) const {
        const Json* v = obj.find(key);
        if (!v) throw FormatError(at_field(file_, path + key, "missing"));
        if (v->kind != kind) throw FormatError(at_field(file_, path + key, std::string("expected ") + what));
        return *v;
    }
    const Json* optional(const Json& obj, const std::string& path, const char* key, Json::Kind kind,
                         const char* what) const {
        return obj.find(key) ? &member(obj, path, key, kind, what) : nullptr;
    }
    std::string str(const Json& obj, const std::string& path, const char* key) const {
        return member(obj, path, key, Json::Kind::string, "a string").string;
    }
    double num(const Json& obj, const std::string& path, const char* key) const {
        return member(obj, path, key, Json::Kind::number, "a number").number;
    }
    std::int64_t integer(const Json& obj, const std::string& path, const char* key) const {
        const double v = num(obj, path, key);
        if (v != std::floor(v) || std::fabs(v) > 9.0e15)
            throw FormatError(at_field(file_, path + key, "expected an integer"));
        return static_cast<std::int64_t>(v);
    }
    // Array of numbers (null = NaN when allow_null).
    std::vector<double> numbers(const Json& arr, const std::string& field, bool allow_null) const {
        std::vector<double> v;
        v.reserve(arr.array.size());
        for (const auto& e : arr.array) {
            if (e.kind == Json::Kind::number)
                v.push_back(e.number);
            else if (allow_null && e.kind == Json::Kind::null)
                v.push_back(std::nan(""));
            else
                throw FormatError(at_field(file_, field, "expected an array of numbers"));
        }
        return v;
    }
    std::vector<std::int64_t> integers(const Json& arr, const std::string& field) const {
        std::vector<std::int64_t> v;
        for (const double d : numbers(arr, field, false)) {
            if (d != std::floor(d) || std::fabs(d) > 9.0e15)
                throw FormatError(at_field(file_, field, "expected an array of integers"));
            v.push_back(static_cast<std::int64_t>(d));
        }
        return v;
    }
    [[noreturn]] void fail(const std::string& field, const std::string& what) const {
        throw FormatError(at_field(file_, field, what));
    }

private:
    const std::string& file_;
};

Metadata read_meta(const Reader& r, const Json& m) {
    const std::string P = "meta.";
    using K = Json::Kind;
    Metadata out;
    out.length_unit = r.str(m, P, "length_unit");
    out.time_unit = r.str(m, P, "time_unit");
    out.frame_interval = r.num(m, P, "frame_interval");
    if (!(out.frame_interval > 0)) r.fail(P + "frame_interval", "must be > 0");
    if (m.find("px_per_mm")) out.px_per_mm = r.num(m, P, "px_per_mm");
    if (m.find("image_width")) out.image_width = r.integer(m, P, "image_width");
    if (m.find("image_height")) out.image_height = r.integer(m, P, "image_height");
    if (m.find("coordinate_convention")) out.coordinate_convention = r.str(m, P, "coordinate_convention");
    if (m.find("geometry")) {
        try {
            out.geometry.kind = geometry_kind_from_string(r.str(m, P, "geometry"));
        } catch (const ParameterError& e) {
            r.fail(P + "geometry", e.what());
        }
    }
    Geometry& g = out.geometry;
    if (g.kind == GeometryKind::periodic_box || g.kind == GeometryKind::window_rect) {
        const auto b = r.numbers(r.member(m, P, "geometry_bounds", K::array, "an array [x0, y0, x1, y1]"),
                                 P + "geometry_bounds", false);
        if (b.size() != 4) r.fail(P + "geometry_bounds", "needs 4 values x0, y0, x1, y1");
        g.x0 = b[0], g.y0 = b[1], g.x1 = b[2], g.y1 = b[3];
    }
    if (g.kind == GeometryKind::window_circle) {
        const auto c = r.numbers(r.member(m, P, "geometry_circle", K::array, "an array [cx, cy, r]"),
                                 P + "geometry_circle", false);
        if (c.size() != 3) r.fail(P + "geometry_circle", "needs 3 values cx, cy, r");
        g.cx = c[0], g.cy = c[1], g.r = c[2];
    }
    if (const Json* a = r.optional(m, P, "species_names", K::array, "an array of strings")) {
        out.species_names.clear();
        for (const auto& e : a->array) {
            if (e.kind != K::string) r.fail(P + "species_names", "expected an array of strings");
            out.species_names.push_back(e.string);
        }
    }
    if (const Json* a = r.optional(m, P, "species_diameters", K::array, "an array of numbers"))
        out.species_diameters = r.numbers(*a, P + "species_diameters", false);
    if (m.find("drive_frequency_hz")) out.drive_frequency_hz = r.num(m, P, "drive_frequency_hz");
    if (m.find("drive_gamma")) out.drive_gamma = r.num(m, P, "drive_gamma");
    if (m.find("source_file")) out.source.file = r.str(m, P, "source_file");
    if (m.find("source_checksum")) out.source.checksum = r.str(m, P, "source_checksum");
    if (m.find("source_vibra_version")) out.source.vibra_version = r.str(m, P, "source_vibra_version");
    if (m.find("source_parameters")) out.source.parameters = r.str(m, P, "source_parameters");
    if (m.find("incomplete")) out.incomplete = r.integer(m, P, "incomplete") != 0;
    if (const Json* u = r.optional(m, P, "user", K::object, "an object of strings"))
        for (const auto& [k, v] : u->object) {
            if (v.kind != K::string) r.fail(P + "user." + k, "expected a string");
            out.user[k] = v.string;
        }
    return out;
}

}  // namespace

std::string csv_metadata_path(const std::string& csv) { return csv + ".meta.json"; }

void write_csv_metadata(const std::string& path, const CsvMetadata& m, const ColumnSet& columns,
                        const std::string& exported_from) {
    detail::check_writable_dir(path);
    Writer w;
    w.out += '{';
    w.str("schema", kSchema);
    w.str("schema_version", kSchemaVersion);
    w.str("vibra_version", vibra::version());
    w.str("exported_from", exported_from);
    w.num("n_frames", m.n_frames);
    w.open("columns", '{');
    for (const auto& [name, units] : column_units(m.meta, columns)) w.str(name.c_str(), units);
    w.close('}');
    write_meta(w, m.meta);
    w.open("frames", '{');
    if (!m.frames.time_s.empty()) w.list("frame_time", m.frames.time_s);
    if (!m.frames.timestep.empty()) w.list("timestep", m.frames.timestep);
    if (!m.frames.image_number.empty()) w.list("image_number", m.frames.image_number);
    w.close('}');
    w.out += "\n}\n";

    detail::PartialFile part(path);
    std::ofstream os(part.path(), std::ios::binary | std::ios::trunc);
    if (!os) throw IoError(path + ": cannot create " + part.path());
    os << w.out;
    os.close();
    if (!os) throw IoError(path + ": " + write_failure(part.path(), errno));
    part.publish();
}

CsvMetadata read_csv_metadata(const std::string& path) {
    std::ifstream is(path, std::ios::binary);
    if (!is) throw IoError(path + ": cannot open");
    std::ostringstream text;
    text << is.rdbuf();
    if (is.bad()) throw IoError(path + ": read failed");
    const Json root = detail::parse_json(text.str(), path);
    if (root.kind != Json::Kind::object)
        throw FormatError(path + ": not a vibra CSV metadata file (expected a JSON object)");
    const Reader r(path);
    const Json* schema = root.find("schema");
    if (!schema || schema->kind != Json::Kind::string || schema->string != kSchema)
        r.fail("schema", std::string("not a vibra CSV metadata file (expected \"") + kSchema + "\")");
    const std::string version = r.str(root, "", "schema_version");
    if (version.empty() || version.substr(0, version.find('.')) != "1")
        r.fail("schema_version", "\"" + version + "\" is not supported (this vibra reads 1.x)");

    CsvMetadata out;
    out.meta = read_meta(r, r.member(root, "", "meta", Json::Kind::object, "an object"));
    out.n_frames = r.integer(root, "", "n_frames");
    if (out.n_frames < 0) r.fail("n_frames", "must be >= 0");
    if (const Json* f = r.optional(root, "", "frames", Json::Kind::object, "an object")) {
        auto column = [&](const char* key) -> const Json* {
            const Json* a = r.optional(*f, "frames.", key, Json::Kind::array, "an array");
            if (a && static_cast<std::int64_t>(a->array.size()) != out.n_frames)
                r.fail(std::string("frames.") + key,
                       std::to_string(a->array.size()) +
                           " values for n_frames = " + std::to_string(out.n_frames));
            return a;
        };
        if (const Json* a = column("frame_time"))
            out.frames.time_s = r.numbers(*a, "frames.frame_time", true);
        if (const Json* a = column("timestep")) out.frames.timestep = r.integers(*a, "frames.timestep");
        if (const Json* a = column("image_number"))
            out.frames.image_number = r.integers(*a, "frames.image_number");
    }
    return out;
}

}  // namespace vibra::store
