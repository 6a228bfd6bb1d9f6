// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/store/trajectory_file.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>

#include "detail/atomic.hpp"
#include "vibra/core/interrupt.hpp"
#include "detail/h5.hpp"
#include "detail/meta_attrs.hpp"
#include "detail/packed_columns.hpp"
#include "vibra/core/error.hpp"
#include "vibra/core/version.hpp"

namespace vibra::store {

using detail::check;
using detail::check_status;
using detail::exists;
using detail::Handle;

ColumnSet ColumnSet::of(const TrajectoryTable& t) {
    return {!t.vx.empty(),
            !t.radius.empty(),
            !t.brightness.empty(),
            !t.quality.empty(),
            !t.species_confidence.empty(),
            !t.edge.empty()};
}

namespace {

// 256 KiB chunks: a streamed file's last, partial chunk of each column is compressed when it is
// committed, so smaller chunks leave less of that work to the end (and readers' default 1 MiB
// chunk cache holds four of them).
constexpr std::size_t kChunkBytes = 256u << 10;
constexpr int kDeflateLevel = 1;

// Extendable, chunked (256 KiB), shuffled + deflated 1-D dataset; its chunks are compressed and
// written by PackedColumns (several threads, the same bytes HDF5's filters would store).
template <class T>
Handle create_column(hid_t group, const char* name, const std::string& units, const std::string& file) {
    const hsize_t zero = 0, unlimited = H5S_UNLIMITED;
    const hsize_t chunk = kChunkBytes / sizeof(T);
    Handle space(H5Screate_simple(1, &zero, &unlimited));
    Handle dcpl(H5Pcreate(H5P_DATASET_CREATE));
    H5Pset_chunk(dcpl, 1, &chunk);
    H5Pset_shuffle(dcpl);
    H5Pset_deflate(dcpl, kDeflateLevel);
    Handle d(check(H5Dcreate2(group, name, detail::native_type(static_cast<const T*>(nullptr)), space,
                              H5P_DEFAULT, dcpl, H5P_DEFAULT),
                   file, std::string("cannot create dataset /trajectories/") + name));
    detail::write_attr(d, "units", units, file);
    return d;
}

}  // namespace

struct TrajectoryWriter::Impl {
    std::unique_ptr<OutputLock> lock;
    std::string partial;
    Handle file, traj;
    detail::PackedColumns packed{0, kDeflateLevel};
    struct Column {
        Handle d;
        int id = -1;  // column number in `packed`
    };
    Column frame, particle, x, y, species, vx, vy, radius, brightness, quality, species_confidence, edge;
    template <class T>
    Column create(const char* name, const std::string& units, const std::string& path) {
        Column c{create_column<T>(traj, name, units, path)};
        c.id = packed.add(c.d, sizeof(T), kChunkBytes / sizeof(T), name);
        return c;
    }
    template <class T>
    void append(const Column& c, const std::vector<T>& v, const std::string& path) {
        packed.append(c.id, v.data(), v.size(), path);
    }
};

TrajectoryWriter::TrajectoryWriter(const std::string& path, const Metadata& meta, ColumnSet cols)
    : impl_(std::make_unique<Impl>()), path_(path), meta_(meta), cols_(cols) {
    detail::silence_hdf5();
    detail::check_writable_dir(path);
    impl_->lock = std::make_unique<OutputLock>(path);  // also removes a .partial left by a killed run
    impl_->partial = path + ".partial";
    try {
        create_columns();
    } catch (...) {
        // The destructor of a half-constructed object never runs: remove the partial file here.
        const auto lock = std::move(impl_->lock);
        const std::string partial = impl_->partial;
        impl_.reset();
        std::remove(partial.c_str());
        throw;
    }
}

void TrajectoryWriter::create_columns() {
    const std::string& path = path_;
    impl_->file = Handle(check(H5Fcreate(impl_->partial.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT),
                               path, "cannot create " + impl_->partial));
    impl_->traj = Handle(check(H5Gcreate2(impl_->file, "trajectories", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                               path, "cannot create /trajectories"));
    const auto& L = meta_.length_unit;
    const auto V = detail::velocity_units(meta_);
    impl_->frame = impl_->create<std::int64_t>("frame", "frame", path);
    impl_->particle = impl_->create<std::int64_t>("particle", "1", path);
    impl_->x = impl_->create<double>("x", L, path);
    impl_->y = impl_->create<double>("y", L, path);
    impl_->species = impl_->create<std::int8_t>("species", "1", path);
    if (cols_.velocity) {
        impl_->vx = impl_->create<double>("vx", V, path);
        impl_->vy = impl_->create<double>("vy", V, path);
    }
    if (cols_.radius) impl_->radius = impl_->create<float>("radius", L, path);
    if (cols_.brightness) impl_->brightness = impl_->create<float>("brightness", "counts", path);
    if (cols_.quality) impl_->quality = impl_->create<float>("quality", "1", path);
    if (cols_.species_confidence)
        impl_->species_confidence = impl_->create<float>("species_confidence", "1", path);
    if (cols_.edge) impl_->edge = impl_->create<std::int8_t>("edge", "1", path);
}

TrajectoryWriter::~TrajectoryWriter() {
    if (committed_ || !impl_) return;
    const auto lock = std::move(impl_->lock);  // released last, once the partial file is gone
    const std::string partial = impl_->partial;
    impl_.reset();  // close handles before unlinking
    std::remove(partial.c_str());
}

void TrajectoryWriter::append(const TrajectoryTable& rows, std::int64_t n_frames, const FrameColumns& fc) {
    if (committed_) throw ParameterError(path_ + ": append after commit");
    if (n_frames < 0) throw ParameterError(path_ + ": append: n_frames < 0");
    rows.check_lengths(path_);
    if (ColumnSet::of(rows) != cols_ && !rows.empty())
        throw ParameterError(path_ + ": append: optional columns differ from the writer's column set");
    // Rows must belong to [n_frames_, n_frames_+n_frames) in order: build the block's offsets.
    const FrameIndex idx = build_frame_index(rows, n_frames_, n_frames, path_);
    for (std::size_t i = 1; i < rows.size(); ++i)
        if (rows.frame[i] == rows.frame[i - 1] && rows.particle[i] <= rows.particle[i - 1] &&
            !(rows.particle[i] == kUnlinked && rows.particle[i - 1] == kUnlinked))
            throw FormatError(at_frame(path_, rows.frame[i],
                                       rows.particle[i] == rows.particle[i - 1]
                                           ? "duplicate particle " + std::to_string(rows.particle[i])
                                           : "rows not sorted by particle"));
    auto per_frame = [&](auto& dst, const auto& src, const char* name) {
        if (src.empty()) {
            if (!dst.empty())
                throw ParameterError(path_ + ": per-frame column " + name + " missing in a block");
            return;
        }
        if (static_cast<std::int64_t>(src.size()) != n_frames)
            throw ParameterError(path_ + ": per-frame column " + name + " has the wrong length");
        if (dst.empty() && n_frames_ > 0)
            throw ParameterError(path_ + ": per-frame column " + name + " appeared after the first block");
        dst.insert(dst.end(), src.begin(), src.end());
    };
    per_frame(frames_.time_s, fc.time_s, "frame_time");
    per_frame(frames_.timestep, fc.timestep, "timestep");
    per_frame(frames_.image_number, fc.image_number, "image_number");

    impl_->append(impl_->frame, rows.frame, path_);
    impl_->append(impl_->particle, rows.particle, path_);
    impl_->append(impl_->x, rows.x, path_);
    impl_->append(impl_->y, rows.y, path_);
    if (!species_deferred_) impl_->append(impl_->species, rows.species, path_);
    if (cols_.velocity) {
        impl_->append(impl_->vx, rows.vx, path_);
        impl_->append(impl_->vy, rows.vy, path_);
    }
    if (cols_.radius) impl_->append(impl_->radius, rows.radius, path_);
    if (cols_.brightness) impl_->append(impl_->brightness, rows.brightness, path_);
    if (cols_.quality) impl_->append(impl_->quality, rows.quality, path_);
    if (cols_.species_confidence && !species_deferred_)
        impl_->append(impl_->species_confidence, rows.species_confidence, path_);
    if (cols_.edge) impl_->append(impl_->edge, rows.edge, path_);
    for (std::int64_t f = 0; f < n_frames; ++f)
        offsets_.push_back(n_rows_ + idx.offsets[static_cast<std::size_t>(f) + 1]);
    n_rows_ += static_cast<std::int64_t>(rows.size());
    n_frames_ += n_frames;
}

void TrajectoryWriter::defer_species() {
    if (committed_) throw ParameterError(path_ + ": defer_species after commit");
    if (n_rows_ > 0 || n_frames_ > 0) throw ParameterError(path_ + ": defer_species after the first append");
    species_deferred_ = true;
}

void TrajectoryWriter::append_species(const std::vector<std::int8_t>& species,
                                      const std::vector<float>& confidence) {
    if (committed_) throw ParameterError(path_ + ": append_species after commit");
    if (!species_deferred_) throw ParameterError(path_ + ": append_species without defer_species");
    if (cols_.species_confidence != !confidence.empty() && !species.empty())
        throw ParameterError(
            path_ + ": append_species: species_confidence " +
            (cols_.species_confidence ? "missing" : "given but the file has no such column"));
    if (!confidence.empty() && confidence.size() != species.size())
        throw ParameterError(path_ + ": append_species: " + std::to_string(species.size()) + " species but " +
                             std::to_string(confidence.size()) + " confidences");
    if (n_species_ + static_cast<std::int64_t>(species.size()) > n_rows_)
        throw ParameterError(path_ + ": append_species: more species than rows appended (" +
                             std::to_string(n_rows_) + ")");
    impl_->append(impl_->species, species, path_);
    if (cols_.species_confidence) impl_->append(impl_->species_confidence, confidence, path_);
    n_species_ += static_cast<std::int64_t>(species.size());
}

void TrajectoryWriter::set_frame_columns(FrameColumns fc) {
    if (committed_) throw ParameterError(path_ + ": set_frame_columns after commit");
    frames_ = std::move(fc);
}

void TrajectoryWriter::set_diagnostic(const std::string& name, std::vector<std::int64_t> values,
                                      const std::string& units) {
    diagnostics_[name] = {std::move(values), units};
}

void TrajectoryWriter::commit() {
    if (committed_) return;
    if (species_deferred_ && n_species_ != n_rows_)
        throw ParameterError(path_ + ": commit: species of " + std::to_string(n_species_) + " rows given, " +
                             std::to_string(n_rows_) + " rows appended");
    auto check_frames = [&](std::size_t n, const char* name) {
        if (n != 0 && static_cast<std::int64_t>(n) != n_frames_)
            throw ParameterError(path_ + ": commit: per-frame column " + name + " has " + std::to_string(n) +
                                 " values for " + std::to_string(n_frames_) + " frames");
    };
    check_frames(frames_.time_s.size(), "frame_time");
    check_frames(frames_.timestep.size(), "timestep");
    check_frames(frames_.image_number.size(), "image_number");
    impl_->packed.finish(path_);
    auto& f = impl_->file;
    detail::write_attr(f, "schema", std::string(kTrajectorySchema), path_);
    detail::write_attr(f, "schema_version", std::string(kTrajectorySchemaVersion), path_);
    detail::write_attr(f, "vibra_version", std::string(vibra::version()), path_);
    detail::write_attr(f, "created", detail::iso_now(), path_);
    {
        Handle idx(check(H5Gcreate2(f, "index", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), path_,
                         "cannot create /index"));
        detail::write_dataset(idx.get(), "frame_offsets", offsets_, {}, "rows", path_);
        if (!frames_.time_s.empty())
            detail::write_dataset(idx.get(), "frame_time", frames_.time_s, {}, "s", path_);
        if (!frames_.timestep.empty())
            detail::write_dataset(idx.get(), "timestep", frames_.timestep, {}, "step", path_);
        if (!frames_.image_number.empty())
            detail::write_dataset(idx.get(), "image_number", frames_.image_number, {}, "1", path_);
    }
    if (!diagnostics_.empty()) {
        Handle dg(check(H5Gcreate2(f, "diagnostics", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), path_,
                        "cannot create /diagnostics"));
        for (const auto& [name, vu] : diagnostics_)
            detail::write_dataset(dg.get(), name, vu.first, {}, vu.second, path_);
    }
    detail::write_meta(f, meta_, path_);
    check_status(H5Fflush(f, H5F_SCOPE_GLOBAL), path_, "cannot flush");
    const auto lock = std::move(impl_->lock);  // released once the file is in place
    const std::string partial = impl_->partial;
    impl_.reset();
    detail::publish(partial, path_);
    committed_ = true;
}

bool is_hdf5_file(const std::string& path) {
    detail::silence_hdf5();
    std::error_code ec;
    return std::filesystem::is_regular_file(path, ec) && H5Fis_hdf5(path.c_str()) > 0;
}

void write_trajectory(const std::string& path, const Trajectory& t) {
    TrajectoryWriter w(path, t.meta, ColumnSet::of(t.rows));
    w.append(t.rows, t.index.n_frames(), t.frames);
    w.commit();
}

// ---------------------------------------------------------------------------------------------

struct TrajectoryReader::Impl {
    Handle file, traj;
};

TrajectoryReader::TrajectoryReader(const std::string& path) : impl_(std::make_unique<Impl>()), path_(path) {
    impl_->file =
        Handle(detail::open_file(path, H5F_ACC_RDONLY, "not an HDF5 file (vibra trajectory files are HDF5)"));
    const auto& f = impl_->file;
    const std::string schema = detail::read_attr_string(f, "schema", path);
    if (schema != kTrajectorySchema)
        throw FormatError(
            at_field(path, "/schema", "is '" + schema + "', expected '" + kTrajectorySchema + "'"));
    schema_version_ = detail::read_attr_string(f, "schema_version", path);
    const auto major = schema_version_.substr(0, schema_version_.find('.'));
    if (major.empty() || major.find_first_not_of("0123456789") != std::string::npos)
        throw FormatError(at_field(path, "/schema_version", "'" + schema_version_ + "' is not a version"));
    unsigned long long major_number = 0;  // digits only; too many for the type is a newer version too
    const auto parsed = std::from_chars(major.data(), major.data() + major.size(), major_number);
    if (parsed.ec != std::errc() || major_number > 1)
        throw FormatError(
            at_field(path, "/schema_version",
                     "is " + schema_version_ + ", newer than this vibra reads (1.x); upgrade vibra"));
    meta_ = detail::read_meta(f, path);
    if (!exists(f, "trajectories")) throw FormatError(at_field(path, "/trajectories", "group is missing"));
    impl_->traj = Handle(check(H5Gopen2(f, "trajectories", H5P_DEFAULT), path, "cannot open /trajectories"));
    const auto& t = impl_->traj;
    auto len = [&](const char* name) -> std::int64_t {
        if (!exists(t, name)) return -1;
        const auto s = detail::dataset_shape(t, name, path);
        if (s.size() != 1)
            throw FormatError(at_field(path, std::string("/trajectories/") + name, "is not 1-D"));
        return static_cast<std::int64_t>(s[0]);
    };
    std::int64_t n = -1;
    for (const char* name : {"frame", "particle", "x", "y", "species"}) {
        const auto m = len(name);
        if (m < 0)
            throw FormatError(at_field(path, std::string("/trajectories/") + name, "dataset is missing"));
        if (n < 0) n = m;
        if (m != n)
            throw FormatError(
                at_field(path, std::string("/trajectories/") + name,
                         "has " + std::to_string(m) + " rows, /trajectories/frame has " + std::to_string(n)));
    }
    auto opt = [&](const char* name) {
        const auto m = len(name);
        if (m >= 0 && m != n)
            throw FormatError(
                at_field(path, std::string("/trajectories/") + name,
                         "has " + std::to_string(m) + " rows, /trajectories/frame has " + std::to_string(n)));
        return m >= 0;
    };
    cols_.velocity = opt("vx");
    if (opt("vy") != cols_.velocity)
        throw FormatError(at_field(path, "/trajectories/vy", "vx and vy must come together"));
    cols_.radius = opt("radius");
    cols_.brightness = opt("brightness");
    cols_.quality = opt("quality");
    cols_.species_confidence = opt("species_confidence");
    cols_.edge = opt("edge");

    if (!exists(f, "index/frame_offsets"))
        throw FormatError(at_field(path, "/index/frame_offsets", "dataset is missing"));
    index_.first_frame = 0;
    index_.offsets = detail::read_dataset<std::int64_t>(f, "index/frame_offsets", path);
    if (index_.offsets.empty() || index_.offsets.front() != 0 || index_.offsets.back() != n)
        throw FormatError(at_field(path, "/index/frame_offsets",
                                   "must start at 0 and end at the row count " + std::to_string(n)));
    for (std::size_t i = 1; i < index_.offsets.size(); ++i)
        if (index_.offsets[i] < index_.offsets[i - 1])
            throw FormatError(
                at_field(path, "/index/frame_offsets", "decreases at frame " + std::to_string(i - 1)));
    const auto T = static_cast<std::size_t>(index_.n_frames());
    auto per_frame = [&](const char* name, auto& dst) {
        const std::string p = std::string("index/") + name;
        if (!exists(f, p)) return;
        using V = typename std::decay_t<decltype(dst)>::value_type;
        dst = detail::read_dataset<V>(f, p, path);
        if (dst.size() != T)
            throw FormatError(at_field(
                path, "/" + p,
                "has " + std::to_string(dst.size()) + " entries, expected " + std::to_string(T) + " frames"));
    };
    per_frame("frame_time", frames_.time_s);
    per_frame("timestep", frames_.timestep);
    per_frame("image_number", frames_.image_number);
}

TrajectoryReader::~TrajectoryReader() = default;

std::int64_t TrajectoryReader::rows_in(std::int64_t first, std::int64_t count) const {
    first = std::clamp<std::int64_t>(first, 0, n_frames());
    count = std::clamp<std::int64_t>(count, 0, n_frames() - first);
    return index_.offsets[static_cast<std::size_t>(first + count)] -
           index_.offsets[static_cast<std::size_t>(first)];
}
TrajectoryReader::TrajectoryReader(TrajectoryReader&&) noexcept = default;

std::vector<std::string> TrajectoryReader::diagnostics() const {
    if (!exists(impl_->file, "diagnostics")) return {};
    Handle g(check(H5Gopen2(impl_->file, "diagnostics", H5P_DEFAULT), path_, "cannot open /diagnostics"));
    return detail::list_links(g);
}

std::vector<std::int64_t> TrajectoryReader::read_diagnostic(const std::string& name) const {
    return detail::read_dataset<std::int64_t>(impl_->file, "diagnostics/" + name, path_);
}

TrajectoryTable TrajectoryReader::read_columns(const std::vector<std::string>& names, std::int64_t first,
                                               std::int64_t count) const {
    first = std::clamp<std::int64_t>(first, 0, n_frames());
    count = std::clamp<std::int64_t>(count, 0, n_frames() - first);
    const std::int64_t r0 = index_.offsets[static_cast<std::size_t>(first)];
    const std::int64_t r1 = index_.offsets[static_cast<std::size_t>(first + count)];
    TrajectoryTable t;
    const auto& g = impl_->traj;
    for (const auto& name : names) {
        if (name == "frame")
            t.frame = detail::read_dataset<std::int64_t>(g, name, path_, r0, r1 - r0);
        else if (name == "particle")
            t.particle = detail::read_dataset<std::int64_t>(g, name, path_, r0, r1 - r0);
        else if (name == "x")
            t.x = detail::read_dataset<double>(g, name, path_, r0, r1 - r0);
        else if (name == "y")
            t.y = detail::read_dataset<double>(g, name, path_, r0, r1 - r0);
        else if (name == "species")
            t.species = detail::read_dataset<std::int8_t>(g, name, path_, r0, r1 - r0);
        else if (name == "vx" && cols_.velocity)
            t.vx = detail::read_dataset<double>(g, name, path_, r0, r1 - r0);
        else if (name == "vy" && cols_.velocity)
            t.vy = detail::read_dataset<double>(g, name, path_, r0, r1 - r0);
        else if (name == "radius" && cols_.radius)
            t.radius = detail::read_dataset<float>(g, name, path_, r0, r1 - r0);
        else if (name == "brightness" && cols_.brightness)
            t.brightness = detail::read_dataset<float>(g, name, path_, r0, r1 - r0);
        else if (name == "quality" && cols_.quality)
            t.quality = detail::read_dataset<float>(g, name, path_, r0, r1 - r0);
        else if (name == "species_confidence" && cols_.species_confidence)
            t.species_confidence = detail::read_dataset<float>(g, name, path_, r0, r1 - r0);
        else if (name == "edge" && cols_.edge)
            t.edge = detail::read_dataset<std::int8_t>(g, name, path_, r0, r1 - r0);
        else if (name != "vx" && name != "vy" && name != "radius" && name != "brightness" &&
                 name != "quality" && name != "species_confidence" && name != "edge")
            throw ParameterError(path_ + ": unknown column '" + name + "'");
    }
    return t;
}

Trajectory TrajectoryReader::read_frames(std::int64_t first, std::int64_t count) const {
    throw_if_interrupted();  // every analysis reads block by block through here
    first = std::clamp<std::int64_t>(first, 0, n_frames());
    count = std::clamp<std::int64_t>(count, 0, n_frames() - first);
    Trajectory tr;
    tr.meta = meta_;
    tr.rows = read_columns({"frame", "particle", "x", "y", "species", "vx", "vy", "radius", "brightness",
                            "quality", "species_confidence", "edge"},
                           first, count);
    tr.rows.validate(path_);
    // The frame column must agree with the index it was read through.
    tr.index = build_frame_index(tr.rows, first, count, path_);
    const std::int64_t r0 = index_.offsets[static_cast<std::size_t>(first)];
    for (std::int64_t fr = first; fr < first + count; ++fr)
        if (tr.index.end(fr) + r0 != index_.offsets[static_cast<std::size_t>(fr + 1)])
            throw FormatError(at_frame(path_, fr, "/index/frame_offsets disagrees with /trajectories/frame"));
    auto slice = [&](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        if (v.empty()) return V{};
        return V(v.begin() + first, v.begin() + first + count);
    };
    tr.frames.time_s = slice(frames_.time_s);
    tr.frames.timestep = slice(frames_.timestep);
    tr.frames.image_number = slice(frames_.image_number);
    return tr;
}

}  // namespace vibra::store
