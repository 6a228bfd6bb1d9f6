// SPDX-License-Identifier: GPL-3.0-or-later
#include "detail/checkpoint.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "vibra/core/error.hpp"
#include "vibra/core/output_file.hpp"

namespace vibra::tracking::detail {

namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t kMagic = 0x31544b4341524256ull;  // "VBRACKT1"

class Out {
public:
    explicit Out(std::string path) : path_(std::move(path)), f_(std::fopen(path_.c_str(), "wb")) {
        if (!f_) throw IoError(path_ + ": cannot write the checkpoint: " + std::strerror(errno));
    }
    ~Out() {
        if (f_) std::fclose(f_);
    }
    template <class T>
    void put(const T& v) {
        raw(&v, sizeof v);
    }
    template <class T>
    void put_vec(const std::vector<T>& v) {
        put(static_cast<std::uint64_t>(v.size()));
        if (!v.empty()) raw(v.data(), sizeof(T) * v.size());
    }
    void close_synced() {
        if (std::fflush(f_) != 0 || ::fsync(fileno(f_)) != 0)
            throw IoError(path_ + ": " + write_failure(path_, errno));
        std::fclose(f_);
        f_ = nullptr;
    }

private:
    void raw(const void* p, std::size_t n) {
        if (std::fwrite(p, 1, n, f_) != n) throw IoError(path_ + ": " + write_failure(path_, errno));
    }
    std::string path_;
    std::FILE* f_;
};

class In {
public:
    explicit In(const std::string& path) : path_(path), in_(path, std::ios::binary) {
        if (!in_) throw IoError(path + ": cannot read the checkpoint");
    }
    template <class T>
    T get() {
        T v{};
        raw(&v, sizeof v);
        return v;
    }
    template <class T>
    std::vector<T> get_vec(std::uint64_t max) {
        const auto n = get<std::uint64_t>();
        if (n > max)
            throw FormatError(path_ + ": a checkpoint array of " + std::to_string(n) + " elements (at most " +
                              std::to_string(max) + ")");
        std::vector<T> v(n);
        if (n) raw(v.data(), sizeof(T) * n);
        return v;
    }

private:
    void raw(void* p, std::size_t n) {
        if (!in_.read(static_cast<char*>(p), static_cast<std::streamsize>(n)))
            throw FormatError(path_ + ": checkpoint cut short");
    }
    std::string path_;
    std::ifstream in_;
};

void publish(const std::string& tmp, const std::string& path) {
    std::error_code ec;
    fs::rename(tmp, path, ec);
    if (ec) throw IoError(path + ": cannot publish the checkpoint: " + ec.message());
}

}  // namespace

std::string CheckpointFolder::path(std::int64_t segment, const char* ext) const {
    return (fs::path(dir_) / ("segment_" + std::to_string(segment) + "." + ext)).string();
}

CheckpointFolder::CheckpointFolder(std::string dir, const std::string& fingerprint,
                                   std::int64_t frames_per_segment)
    : dir_(std::move(dir)) {
    std::error_code ec;
    // The state files' layout is part of the id: a folder left by a build that wrote another
    // layout (before the outside_roi column: layout 1) is started afresh, never misread.
    const std::string id = std::string("checkpoint layout: 2\n") + fingerprint +
                           "\nframes per segment: " + std::to_string(frames_per_segment) + "\n";
    const auto id_path = (fs::path(dir_) / "run.id").string();
    std::string old;
    if (fs::exists(id_path)) {
        std::ifstream in(id_path, std::ios::binary);
        old.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    if (old != id) {  // another input or other settings: start afresh
        fs::remove_all(dir_, ec);
        fs::create_directories(dir_, ec);
        if (!fs::is_directory(dir_)) throw IoError(dir_ + ": cannot create the checkpoint folder");
        {
            Out o(id_path + ".tmp");
            for (char c : id) o.put(c);
            o.close_synced();
        }
        publish(id_path + ".tmp", id_path);
        return;
    }
    while (fs::exists(path(complete_, "state")) && fs::exists(path(complete_, "rows"))) ++complete_;
    // a segment begun but not finished is redone from its first frame
    for (std::int64_t s = complete_;; ++s) {
        const bool any = fs::exists(path(s, "rows")) || fs::exists(path(s, "state")) ||
                         fs::exists(path(s, "rows.tmp")) || fs::exists(path(s, "state.tmp"));
        if (!any) break;
        for (const char* e : {"rows", "state", "rows.tmp", "state.tmp"}) fs::remove(path(s, e), ec);
    }
}

CheckpointFolder::~CheckpointFolder() {
    if (rows_) std::fclose(rows_);
}

SegmentState CheckpointFolder::read_state(std::int64_t segment) const {
    In in(path(segment, "state"));
    if (in.get<std::uint64_t>() != kMagic)
        throw FormatError(path(segment, "state") + ": not a vibra checkpoint");
    SegmentState s;
    s.first_frame = in.get<std::int64_t>();
    s.n_frames = in.get<std::int64_t>();
    s.n_rows = in.get<std::int64_t>();
    const auto nf = static_cast<std::uint64_t>(std::max<std::int64_t>(s.n_frames, 0));
    s.detections = in.get_vec<std::int64_t>(nf);
    s.links = in.get_vec<std::int64_t>(nf);
    s.new_tracks = in.get_vec<std::int64_t>(nf);
    s.lost_tracks = in.get_vec<std::int64_t>(nf);
    s.decode_errors = in.get_vec<std::int64_t>(nf);
    s.outside_roi = in.get_vec<std::int64_t>(nf);
    s.image_numbers = in.get_vec<std::int64_t>(nf);
    s.time_s = in.get_vec<double>(nf);
    s.linker.next_id = in.get<std::int64_t>();
    s.linker.frame = in.get<std::int64_t>();
    s.linker.active =
        in.get_vec<Linker::Track>(static_cast<std::uint64_t>(std::max<std::int64_t>(s.linker.next_id, 0)));
    if (in.get<std::uint64_t>() != kMagic)
        throw FormatError(path(segment, "state") + ": checkpoint cut short");
    std::error_code ec;
    const auto bytes = fs::file_size(path(segment, "rows"), ec);
    if (ec || bytes != static_cast<std::uintmax_t>(s.n_rows) * sizeof(CheckpointRow))
        throw FormatError(path(segment, "rows") + ": " + std::to_string(bytes) + " bytes, expected " +
                          std::to_string(s.n_rows) + " rows");
    return s;
}

void CheckpointFolder::read_rows(std::int64_t segment, std::int64_t n_rows,
                                 const std::function<void(const CheckpointRow&)>& row) const {
    std::ifstream in(path(segment, "rows"), std::ios::binary);
    std::vector<CheckpointRow> buf(8192);
    for (std::int64_t left = n_rows; left > 0;) {
        const auto n =
            static_cast<std::size_t>(std::min<std::int64_t>(left, static_cast<std::int64_t>(buf.size())));
        if (!in.read(reinterpret_cast<char*>(buf.data()),
                     static_cast<std::streamsize>(n * sizeof(CheckpointRow))))
            throw FormatError(path(segment, "rows") + ": checkpoint cut short");
        for (std::size_t i = 0; i < n; ++i) row(buf[i]);
        left -= static_cast<std::int64_t>(n);
    }
}

void CheckpointFolder::write_rows(std::int64_t segment, const std::vector<CheckpointRow>& rows) {
    if (rows_segment_ != segment) {
        if (rows_) std::fclose(rows_);
        rows_ = std::fopen(path(segment, "rows.tmp").c_str(), "wb");
        if (!rows_)
            throw IoError(path(segment, "rows.tmp") +
                          ": cannot write the checkpoint: " + std::strerror(errno));
        rows_segment_ = segment;
        rows_written_ = 0;
    }
    if (!rows.empty() && std::fwrite(rows.data(), sizeof(CheckpointRow), rows.size(), rows_) != rows.size())
        throw IoError(path(segment, "rows.tmp") + ": " + write_failure(path(segment, "rows.tmp"), errno));
    rows_written_ += static_cast<std::int64_t>(rows.size());
}

void CheckpointFolder::finish_segment(std::int64_t segment, const SegmentState& s) {
    if (rows_segment_ != segment) write_rows(segment, {});  // a segment without rows
    if (std::fflush(rows_) != 0 || ::fsync(fileno(rows_)) != 0)
        throw IoError(path(segment, "rows.tmp") + ": " + write_failure(path(segment, "rows.tmp"), errno));
    std::fclose(rows_);
    rows_ = nullptr;
    rows_segment_ = -1;
    if (rows_written_ != s.n_rows)
        throw IoError(path(segment, "rows") + ": rows written differ from the segment's count");
    publish(path(segment, "rows.tmp"), path(segment, "rows"));
    {
        Out o(path(segment, "state.tmp"));
        o.put(kMagic);
        o.put(s.first_frame), o.put(s.n_frames), o.put(s.n_rows);
        o.put_vec(s.detections), o.put_vec(s.links), o.put_vec(s.new_tracks), o.put_vec(s.lost_tracks);
        o.put_vec(s.decode_errors), o.put_vec(s.outside_roi), o.put_vec(s.image_numbers), o.put_vec(s.time_s);
        o.put(s.linker.next_id), o.put(s.linker.frame), o.put_vec(s.linker.active);
        o.put(kMagic);
        o.close_synced();
    }
    publish(path(segment, "state.tmp"), path(segment, "state"));
    complete_ = segment + 1;
}

void CheckpointFolder::remove_all() {
    if (rows_) std::fclose(rows_), rows_ = nullptr;
    std::error_code ec;
    fs::remove_all(dir_, ec);
}

}  // namespace vibra::tracking::detail
