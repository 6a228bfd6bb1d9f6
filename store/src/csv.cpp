// SPDX-License-Identifier: GPL-3.0-or-later
// trackpy-style CSV in (frame,particle,x,y[,species,vx,vy,radius,…]) and out.
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <fstream>
#include <memory>

#include "detail/atomic.hpp"
#include "detail/text.hpp"
#include "vibra/core/checksum.hpp"
#include "vibra/core/error.hpp"
#include "vibra/core/progress.hpp"
#include "vibra/core/version.hpp"
#include "vibra/store/text_formats.hpp"
#include "vibra/store/trajectory_file.hpp"

namespace vibra::store {

using detail::parse_double;
using detail::parse_float;
using detail::parse_int;

namespace {

// Empty frames a CSV may imply (a jump in the frame column, or the sidecar's n_frames beyond the
// last row): each costs an index entry in memory and in the file, so a mistyped frame number such
// as 100000000000 must be an error naming the line, not an index of 800 GB (found by fuzzing).
constexpr std::int64_t kMaxEmptyFrames = 10'000'000;

// The sidecar's metadata for a file imported from the CSV: the provenance of the exported file
// moves to user attributes origin_source_* (the new file's source is the CSV).
Metadata with_origin(Metadata m) {
    const std::pair<const char*, const std::string*> origin[] = {
        {"origin_source_file", &m.source.file},
        {"origin_source_checksum", &m.source.checksum},
        {"origin_source_vibra_version", &m.source.vibra_version},
        {"origin_source_parameters", &m.source.parameters}};
    for (const auto& [key, value] : origin)
        if (!value->empty()) m.user[key] = *value;
    m.source = Source{};
    return m;
}

// Trailing empty frames and the per-frame columns of the sidecar, after the CSV's rows filled
// frames [0, written).
void restore_frames(const CsvMetadata& side, TrajectoryWriter& writer, std::int64_t written,
                    const std::string& in) {
    if (written > side.n_frames) {
        const bool per_frame =
            !side.frames.time_s.empty() || !side.frames.timestep.empty() || !side.frames.image_number.empty();
        if (per_frame)
            throw FormatError(in + ": has rows up to frame " + std::to_string(written - 1) + " but " +
                              csv_metadata_path(in) + " has per-frame columns for " +
                              std::to_string(side.n_frames) +
                              " frames (the CSV was changed after export? import it with --no-metadata)");
        return;
    }
    if (side.n_frames - written > kMaxEmptyFrames)
        throw FormatError(at_field(csv_metadata_path(in), "n_frames",
                                   std::to_string(side.n_frames) +
                                       " frames, but the CSV's rows end at frame " +
                                       std::to_string(written - 1) + ": more than " +
                                       std::to_string(kMaxEmptyFrames) + " empty frames"));
    if (written < side.n_frames) writer.append(TrajectoryTable{}, side.n_frames - written);
    writer.set_frame_columns(side.frames);
}

}  // namespace

ImportSummary import_csv(const std::string& in, const std::string& out, const ImportOptions& opt) {
    detail::LineReader lr(in);
    std::string line;
    std::vector<std::string_view> tok;
    // Header (skip leading blank lines).
    do {
        if (!lr.next(line)) throw FormatError(in + ": empty file: no CSV header (need frame,particle,x,y)");
    } while (line.find_first_not_of(" \t") == std::string::npos);
    detail::split_csv(line, tok);
    std::map<std::string, int> col;
    for (std::size_t i = 0; i < tok.size(); ++i) col[std::string(tok[i])] = static_cast<int>(i);
    const std::size_t n_cols = tok.size();
    auto idx = [&](const char* name) {
        auto it = col.find(name);
        return it == col.end() ? -1 : it->second;
    };
    for (const char* req : {"frame", "particle", "x", "y"})
        if (idx(req) < 0)
            throw FormatError(at_line(
                in, lr.line_no(),
                std::string("header has no '") + req + "' column (need at least frame,particle,x,y)"));
    const int c_frame = idx("frame"), c_part = idx("particle"), c_x = idx("x"), c_y = idx("y");
    const int c_sp = idx("species"), c_vx = idx("vx"), c_vy = idx("vy"), c_r = idx("radius"),
              c_b = idx("brightness"), c_q = idx("quality"), c_sc = idx("species_confidence"),
              c_e = idx("edge");
    if ((c_vx >= 0) != (c_vy >= 0))
        throw FormatError(at_line(in, lr.line_no(), "header has only one of vx, vy"));

    // The sidecar written by export_csv, when there is one: the metadata the CSV cannot hold.
    std::optional<CsvMetadata> side;
    ImportSummary sum;
    if (opt.use_metadata && std::filesystem::is_regular_file(csv_metadata_path(in))) {
        sum.metadata_file = csv_metadata_path(in);
        side = read_csv_metadata(sum.metadata_file);
    }
    Metadata meta = side ? with_origin(side->meta) : Metadata{};
    meta.length_unit = opt.length_unit.value_or(side ? meta.length_unit : "px");
    meta.time_unit = opt.time_unit.value_or(side ? meta.time_unit : "frame");
    meta.frame_interval = opt.dt.value_or(side ? meta.frame_interval : 1.0);
    if (!(meta.frame_interval > 0)) throw ParameterError("--dt must be > 0");
    if (!opt.diameters.empty() || !side) meta.species_diameters = opt.diameters;
    meta.source.file = in;
    meta.source.checksum = file_checksum(in);
    meta.source.vibra_version = vibra::version();
    ColumnSet cs;
    cs.velocity = c_vx >= 0;
    cs.radius = c_r >= 0;
    cs.brightness = c_b >= 0;
    cs.quality = c_q >= 0;
    cs.species_confidence = c_sc >= 0;
    cs.edge = c_e >= 0;
    TrajectoryWriter writer(out, meta, cs);

    TrajectoryTable block;
    std::int64_t next_frame = 0;  // first frame not yet written
    std::int64_t cur = -1;        // frame of the rows being collected
    std::size_t cur_start = 0;
    Progress progress("import " + in, -1, opt.progress);

    // Sort and check the rows of frame `cur`, then write if the block is large.
    auto close_frame = [&](bool force) {
        if (cur < 0) return;
        block.sort_rows(cur_start, block.size());
        for (std::size_t i = cur_start + 1; i < block.size(); ++i)
            if (block.particle[i] == block.particle[i - 1] && block.particle[i] >= 0)
                throw FormatError(in + ": frame " + std::to_string(cur) + ": duplicate particle " +
                                  std::to_string(block.particle[i]));
        if (force || static_cast<std::int64_t>(block.size()) >= opt.block_rows) {
            writer.append(block, cur + 1 - next_frame);
            next_frame = cur + 1;
            block = TrajectoryTable{};
        }
        cur_start = block.size();
    };

    while (lr.next(line)) {
        if (line.find_first_not_of(" \t") == std::string::npos) continue;
        detail::split_csv(line, tok);
        if (tok.size() != n_cols)
            throw FormatError(
                at_line(in, lr.line_no(),
                        "expected " + std::to_string(n_cols) + " fields, got " + std::to_string(tok.size())));
        const auto ln = lr.line_no();
        auto tk = [&](int c) { return tok[static_cast<std::size_t>(c)]; };
        const std::int64_t f = parse_int(tk(c_frame), in, ln, "frame");
        if (f < 0) throw FormatError(at_line(in, ln, "field 'frame': negative frame " + std::to_string(f)));
        if (f < cur)
            throw FormatError(at_line(in, ln,
                                      "field 'frame': frame " + std::to_string(f) + " after frame " +
                                          std::to_string(cur) + " (rows must be in frame order)"));
        if (f > cur + 1 + kMaxEmptyFrames)
            throw FormatError(at_line(in, ln,
                                      "field 'frame': frame " + std::to_string(f) + " after frame " +
                                          std::to_string(cur) + " leaves more than " +
                                          std::to_string(kMaxEmptyFrames) +
                                          " empty frames (a mistyped frame number?)"));
        if (f != cur) {
            close_frame(false);
            cur = f;
        }
        std::int64_t p = parse_int(tk(c_part), in, ln, "particle");
        if (p < -1)
            throw FormatError(at_line(
                in, ln, "field 'particle': " + std::to_string(p) + " is negative (only -1 = unlinked)"));
        std::int8_t s = 0;
        if (c_sp >= 0) {
            const auto v = tk(c_sp);
            if (v == "small")
                s = kSpeciesSmall;
            else if (v == "large")
                s = kSpeciesLarge;
            else if (v == "unknown" || v.empty())
                s = kSpeciesUnknown;
            else {
                const auto code = parse_int(v, in, ln, "species");
                if (code < -1 || code > 1)
                    throw FormatError(
                        at_line(in, ln, "field 'species': " + std::to_string(code) + " is not -1, 0 or 1"));
                s = static_cast<std::int8_t>(code);
            }
        }
        block.push(f, p, parse_double(tk(c_x), in, ln, "x"), parse_double(tk(c_y), in, ln, "y"), s);
        if (c_vx >= 0) {
            block.vx.push_back(parse_double(tk(c_vx), in, ln, "vx"));
            block.vy.push_back(parse_double(tk(c_vy), in, ln, "vy"));
        }
        if (c_r >= 0) block.radius.push_back(parse_float(tk(c_r), in, ln, "radius"));
        if (c_b >= 0) block.brightness.push_back(parse_float(tk(c_b), in, ln, "brightness"));
        if (c_q >= 0) block.quality.push_back(parse_float(tk(c_q), in, ln, "quality"));
        if (c_sc >= 0)
            block.species_confidence.push_back(parse_float(tk(c_sc), in, ln, "species_confidence"));
        if (c_e >= 0) {
            const double e = parse_double(tk(c_e), in, ln, "edge");
            if (e != 0 && e != 1) throw FormatError(at_line(in, ln, "field 'edge': must be 0 or 1"));
            block.edge.push_back(static_cast<std::int8_t>(e));
        }
        ++sum.rows;
        if ((sum.rows & 0xffff) == 0) progress.update(sum.rows);
    }
    close_frame(true);
    progress.finish();
    if (side) restore_frames(*side, writer, next_frame, in);
    sum.frames = writer.frames_written();
    sum.lines = lr.line_no();
    writer.commit();
    return sum;
}

void export_csv(const std::string& in, const std::string& out, bool show_progress, bool metadata) {
    TrajectoryReader r(in);
    detail::check_writable_dir(out);
    detail::PartialFile part(out);
    const std::string& partial = part.path();
    std::ofstream os(partial, std::ios::binary | std::ios::trunc);
    if (!os) throw IoError(out + ": cannot create " + partial);
    const ColumnSet& c = r.columns();
    os << "frame,particle,x,y,species" << (c.velocity ? ",vx,vy" : "") << (c.radius ? ",radius" : "")
       << (c.brightness ? ",brightness" : "") << (c.quality ? ",quality" : "")
       << (c.species_confidence ? ",species_confidence" : "") << (c.edge ? ",edge" : "") << "\n";
    const std::int64_t T = r.n_frames();
    // Blocks of frames sized to ~1M rows keep memory bounded.
    std::int64_t f = 0;
    std::string buf;
    Progress progress("export " + in, T, show_progress);
    auto field = [&buf](auto v) {
        buf += ',';
        detail::append_number(buf, v);
    };
    while (f < T) {
        std::int64_t n = 1;
        while (f + n < T && r.index().offsets[static_cast<std::size_t>(f + n)] -
                                    r.index().offsets[static_cast<std::size_t>(f)] <
                                (1 << 20))
            ++n;
        const Trajectory tr = r.read_frames(f, n);
        const TrajectoryTable& t = tr.rows;
        buf.clear();
        for (std::size_t i = 0; i < t.size(); ++i) {
            detail::append_number(buf, t.frame[i]);
            field(t.particle[i]);
            field(t.x[i]);
            field(t.y[i]);
            field(static_cast<std::int64_t>(t.species[i]));
            if (c.velocity) field(t.vx[i]), field(t.vy[i]);
            if (c.radius) field(t.radius[i]);
            if (c.brightness) field(t.brightness[i]);
            if (c.quality) field(t.quality[i]);
            if (c.species_confidence) field(t.species_confidence[i]);
            if (c.edge) field(static_cast<std::int64_t>(t.edge[i]));
            buf += '\n';
        }
        os.write(buf.data(), static_cast<std::streamsize>(buf.size()));
        if (!os) throw IoError(out + ": " + write_failure(partial, errno));
        f += n;
        progress.update(f);
    }
    os.close();
    if (!os) throw IoError(out + ": " + write_failure(partial, errno));
    if (metadata) write_csv_metadata(csv_metadata_path(out), {r.meta(), T, r.frame_columns()}, c, in);
    part.publish();
}

}  // namespace vibra::store
