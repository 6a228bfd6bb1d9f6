// SPDX-License-Identifier: GPL-3.0-or-later
// LAMMPS text dump reader (the `dump atom/custom` text layout), streamed frame by frame.
#include <algorithm>
#include <memory>
#include <numeric>

#include "detail/text.hpp"
#include "vibra/core/checksum.hpp"
#include "vibra/core/error.hpp"
#include "vibra/core/progress.hpp"
#include "vibra/core/version.hpp"
#include "vibra/store/text_formats.hpp"
#include "vibra/store/trajectory_file.hpp"

namespace vibra::store {

using detail::parse_double;
using detail::parse_int;

std::map<std::int64_t, std::int8_t> parse_species_map(const std::string& s) {
    std::map<std::int64_t, std::int8_t> m;
    std::vector<std::string_view> items;
    detail::split_csv(s, items);
    for (auto it : items) {
        const auto colon = it.find(':');
        if (colon == std::string_view::npos)
            throw ParameterError("--species-map: '" + std::string(it) +
                                 "' is not TYPE:SPECIES (e.g. 1:small)");
        const auto type_s = it.substr(0, colon);
        const auto name = it.substr(colon + 1);
        std::int64_t type = 0;
        auto [p, ec] = std::from_chars(type_s.data(), type_s.data() + type_s.size(), type);
        if (ec != std::errc() || p != type_s.data() + type_s.size())
            throw ParameterError("--species-map: atom type '" + std::string(type_s) + "' is not an integer");
        std::int8_t code;
        if (name == "small" || name == "0")
            code = kSpeciesSmall;
        else if (name == "large" || name == "1")
            code = kSpeciesLarge;
        else if (name == "unknown" || name == "-1")
            code = kSpeciesUnknown;
        else
            throw ParameterError("--species-map: species '" + std::string(name) +
                                 "' is not small, large or unknown");
        m[type] = code;
    }
    return m;
}

std::vector<double> parse_diameters(const std::string& s) {
    std::vector<double> d;
    std::vector<std::string_view> items;
    detail::split_csv(s, items);
    for (auto it : items) {
        const auto eq = it.find('=');
        if (eq == std::string_view::npos)
            throw ParameterError("--diameter: '" + std::string(it) +
                                 "' is not SPECIES=VALUE (e.g. small=1.0)");
        const auto name = it.substr(0, eq);
        std::size_t code;
        if (name == "small")
            code = 0;
        else if (name == "large")
            code = 1;
        else
            throw ParameterError("--diameter: species '" + std::string(name) + "' is not small or large");
        double v = 0;
        const auto val = it.substr(eq + 1);
        auto [p, ec] = std::from_chars(val.data(), val.data() + val.size(), v);
        if (ec != std::errc() || p != val.data() + val.size() || !(v > 0))
            throw ParameterError("--diameter: '" + std::string(val) + "' is not a positive number");
        if (d.size() <= code) d.resize(code + 1, 0.0);
        d[code] = v;
    }
    for (std::size_t i = 0; i < d.size(); ++i)
        if (d[i] == 0) throw ParameterError("--diameter: species " + std::to_string(i) + " has no diameter");
    return d;
}

namespace {

struct AtomColumns {
    int id = -1, type = -1, x = -1, y = -1, xu = -1, yu = -1, xs = -1, ys = -1, xsu = -1, ysu = -1, ix = -1,
        iy = -1, vx = -1, vy = -1;
    std::size_t n = 0;
    std::vector<std::string> names;
};

AtomColumns parse_atom_header(const std::vector<std::string_view>& tok, const std::string& file,
                              std::int64_t line) {
    AtomColumns c;
    // tok[0] = "ITEM:", tok[1] = "ATOMS"
    for (std::size_t k = 2; k < tok.size(); ++k) {
        const auto name = tok[k];
        const int i = static_cast<int>(k - 2);
        c.names.emplace_back(name);
        if (name == "id")
            c.id = i;
        else if (name == "type")
            c.type = i;
        else if (name == "x")
            c.x = i;
        else if (name == "y")
            c.y = i;
        else if (name == "xu")
            c.xu = i;
        else if (name == "yu")
            c.yu = i;
        else if (name == "xs")
            c.xs = i;
        else if (name == "ys")
            c.ys = i;
        else if (name == "xsu")
            c.xsu = i;
        else if (name == "ysu")
            c.ysu = i;
        else if (name == "ix")
            c.ix = i;
        else if (name == "iy")
            c.iy = i;
        else if (name == "vx")
            c.vx = i;
        else if (name == "vy")
            c.vy = i;
    }
    c.n = tok.size() - 2;
    if (c.id < 0) throw FormatError(at_line(file, line, "ITEM: ATOMS has no 'id' column"));
    if (c.type < 0) throw FormatError(at_line(file, line, "ITEM: ATOMS has no 'type' column"));
    const bool have = (c.xu >= 0 && c.yu >= 0) || (c.x >= 0 && c.y >= 0) || (c.xs >= 0 && c.ys >= 0) ||
                      (c.xsu >= 0 && c.ysu >= 0);
    if (!have)
        throw FormatError(
            at_line(file, line, "ITEM: ATOMS has no position columns (xu yu, x y, xs ys or xsu ysu)"));
    if ((c.vx >= 0) != (c.vy >= 0))
        throw FormatError(at_line(file, line, "ITEM: ATOMS has only one of vx, vy"));
    return c;
}

struct Box {
    double xlo = 0, xhi = 0, ylo = 0, yhi = 0;
    bool periodic = false;
    bool operator==(const Box&) const = default;
};

}  // namespace

ImportSummary import_lammps(const std::string& in, const std::string& out, const ImportOptions& opt) {
    detail::LineReader lr(in);
    Metadata meta;
    meta.length_unit = opt.length_unit.value_or("sigma");
    meta.time_unit = opt.time_unit.value_or("tau");
    meta.frame_interval = opt.dt.value_or(1.0);
    if (!(meta.frame_interval > 0)) throw ParameterError("--dt must be > 0");
    meta.coordinate_convention = "simulation";
    meta.species_diameters = opt.diameters;
    meta.source.file = in;
    meta.source.checksum = file_checksum(in);
    meta.source.vibra_version = vibra::version();

    std::unique_ptr<TrajectoryWriter> writer;
    TrajectoryTable block;
    FrameColumns block_fc;
    std::int64_t block_frames = 0;
    ImportSummary sum;
    std::optional<Box> first_box;
    std::optional<AtomColumns> first_cols;
    Progress progress("import " + in, -1, opt.progress);

    std::string line;
    std::vector<std::string_view> tok;
    // Per-frame state.
    std::int64_t timestep = 0, n_atoms = -1;
    bool have_timestep = false;
    Box box;
    bool have_box = false;

    auto flush = [&] {
        if (block_frames == 0) return;
        writer->append(block, block_frames, block_fc);
        block.clear();
        if (first_cols && first_cols->vx >= 0) {
            block.vx.clear();
            block.vy.clear();
        }
        block_fc = {};
        block_frames = 0;
    };

    auto need_line = [&](const char* what) {
        if (!lr.next(line))
            throw FormatError(at_line(in, lr.line_no(),
                                      std::string("truncated dump: end of file while reading ") + what +
                                          " of frame " + std::to_string(sum.frames)));
    };

    bool any = false;
    while (lr.next(line)) {
        if (line.find_first_not_of(" \t") == std::string::npos) continue;  // blank lines
        detail::split_ws(line, tok);
        if (tok.size() < 2 || tok[0] != "ITEM:")
            throw FormatError(
                at_line(in, lr.line_no(), "expected an 'ITEM:' line, got '" + line.substr(0, 60) + "'"));
        any = true;
        const auto item = tok[1];
        if (item == "TIMESTEP") {
            need_line("the TIMESTEP value");
            timestep = parse_int(line, in, lr.line_no(), "TIMESTEP");
            have_timestep = true;
        } else if (item == "TIME" || item == "UNITS") {
            need_line("ITEM: TIME/UNITS");
        } else if (item == "NUMBER") {
            need_line("NUMBER OF ATOMS");
            n_atoms = parse_int(line, in, lr.line_no(), "NUMBER OF ATOMS");
            if (n_atoms < 0) throw FormatError(at_line(in, lr.line_no(), "negative NUMBER OF ATOMS"));
        } else if (item == "BOX") {
            // "ITEM: BOX BOUNDS [xy xz yz] xx yy zz"
            const std::int64_t box_line = lr.line_no();
            std::vector<std::string> flags;
            bool triclinic = false;
            for (std::size_t k = 3; k < tok.size(); ++k) {
                if (tok[k] == "xy" || tok[k] == "xz" || tok[k] == "yz")
                    triclinic = true;
                else
                    flags.emplace_back(tok[k]);
            }
            if (triclinic)
                throw FormatError(at_line(
                    in, box_line, "triclinic box is not supported (vibra needs an orthogonal 2-D box)"));
            need_line("BOX BOUNDS x");
            detail::split_ws(line, tok);
            if (tok.size() != 2)
                throw FormatError(at_line(in, lr.line_no(), "BOX BOUNDS line must have 2 numbers (lo hi)"));
            box.xlo = parse_double(tok[0], in, lr.line_no(), "xlo");
            box.xhi = parse_double(tok[1], in, lr.line_no(), "xhi");
            need_line("BOX BOUNDS y");
            detail::split_ws(line, tok);
            if (tok.size() != 2)
                throw FormatError(at_line(in, lr.line_no(), "BOX BOUNDS line must have 2 numbers (lo hi)"));
            box.ylo = parse_double(tok[0], in, lr.line_no(), "ylo");
            box.yhi = parse_double(tok[1], in, lr.line_no(), "yhi");
            need_line("BOX BOUNDS z");  // LAMMPS writes three bound lines even for 2-D runs
            const bool px = flags.size() > 0 && flags[0] == "pp";
            const bool py = flags.size() > 1 && flags[1] == "pp";
            if (px != py)
                throw FormatError(at_line(in, box_line, "box periodic in only one of x, y is not supported"));
            box.periodic = px;
            if (!(box.xhi > box.xlo) || !(box.yhi > box.ylo))
                throw FormatError(at_line(in, box_line, "box bounds must have lo < hi"));
            if (first_box && !(box == *first_box))
                throw FormatError(at_line(in, box_line,
                                          "box changes between frames (frame " + std::to_string(sum.frames) +
                                              "); vibra needs a fixed box"));
            have_box = true;
        } else if (item == "ATOMS") {
            const std::int64_t header_line = lr.line_no();
            if (!have_timestep || n_atoms < 0 || !have_box)
                throw FormatError(at_line(
                    in, header_line, "ITEM: ATOMS before ITEM: TIMESTEP, NUMBER OF ATOMS and BOX BOUNDS"));
            const AtomColumns cols = parse_atom_header(tok, in, header_line);
            if (!first_cols) {
                first_cols = cols;
                first_box = box;
                meta.geometry = box.periodic ? Geometry::periodic(box.xlo, box.ylo, box.xhi, box.yhi)
                                             : Geometry::rect(box.xlo, box.ylo, box.xhi, box.yhi);
                ColumnSet cs;
                cs.velocity = cols.vx >= 0;
                writer = std::make_unique<TrajectoryWriter>(out, meta, cs);
            } else if ((cols.vx >= 0) != (first_cols->vx >= 0)) {
                throw FormatError(
                    at_line(in, header_line, "velocity columns appear or disappear between frames"));
            }
            const double lx = box.xhi - box.xlo, ly = box.yhi - box.ylo;
            const std::int64_t frame = sum.frames;
            const std::size_t row0 = block.size();
            for (std::int64_t a = 0; a < n_atoms; ++a) {
                if (!lr.next(line))
                    throw FormatError(at_line(in, lr.line_no(),
                                              "truncated dump: frame " + std::to_string(frame) +
                                                  " (TIMESTEP " + std::to_string(timestep) + ") has " +
                                                  std::to_string(a) + " of " + std::to_string(n_atoms) +
                                                  " atom lines"));
                detail::split_ws(line, tok);
                if (tok.size() != cols.n)
                    throw FormatError(at_line(in, lr.line_no(),
                                              "expected " + std::to_string(cols.n) + " columns, got " +
                                                  std::to_string(tok.size())));
                const std::int64_t id =
                    parse_int(tok[static_cast<std::size_t>(cols.id)], in, lr.line_no(), "id");
                const std::int64_t type =
                    parse_int(tok[static_cast<std::size_t>(cols.type)], in, lr.line_no(), "type");
                const auto sp = opt.species_map.find(type);
                if (sp == opt.species_map.end())
                    throw FormatError(at_line(in, lr.line_no(),
                                              "atom type " + std::to_string(type) +
                                                  " is not in the species map (use --species-map, e.g. " +
                                                  std::to_string(type) + ":small)"));
                auto col = [&](int c, const char* name) {
                    return parse_double(tok[static_cast<std::size_t>(c)], in, lr.line_no(), name);
                };
                double x, y;
                if (cols.xu >= 0 && cols.yu >= 0) {
                    x = col(cols.xu, "xu"), y = col(cols.yu, "yu");
                } else if (cols.x >= 0 && cols.y >= 0) {
                    x = col(cols.x, "x"), y = col(cols.y, "y");
                    if (cols.ix >= 0 && cols.iy >= 0) {
                        x += lx * static_cast<double>(parse_int(tok[static_cast<std::size_t>(cols.ix)], in,
                                                                lr.line_no(), "ix"));
                        y += ly * static_cast<double>(parse_int(tok[static_cast<std::size_t>(cols.iy)], in,
                                                                lr.line_no(), "iy"));
                    }
                } else if (cols.xsu >= 0 && cols.ysu >= 0) {
                    x = box.xlo + lx * col(cols.xsu, "xsu"), y = box.ylo + ly * col(cols.ysu, "ysu");
                } else {
                    double sx = col(cols.xs, "xs"), sy = col(cols.ys, "ys");
                    if (cols.ix >= 0 && cols.iy >= 0) {
                        sx += static_cast<double>(
                            parse_int(tok[static_cast<std::size_t>(cols.ix)], in, lr.line_no(), "ix"));
                        sy += static_cast<double>(
                            parse_int(tok[static_cast<std::size_t>(cols.iy)], in, lr.line_no(), "iy"));
                    }
                    x = box.xlo + lx * sx, y = box.ylo + ly * sy;
                }
                block.push(frame, id, x, y, sp->second);
                if (cols.vx >= 0) {
                    block.vx.push_back(col(cols.vx, "vx"));
                    block.vy.push_back(col(cols.vy, "vy"));
                }
            }
            // Atom order may differ per frame: sort this frame's rows by id.
            block.sort_rows(row0, block.size());
            for (std::size_t i = row0 + 1; i < block.size(); ++i)
                if (block.particle[i] == block.particle[i - 1])
                    throw FormatError(at_line(in, header_line,
                                              "frame " + std::to_string(frame) + " (TIMESTEP " +
                                                  std::to_string(timestep) + ") has atom id " +
                                                  std::to_string(block.particle[i]) + " twice"));
            block_fc.timestep.push_back(timestep);
            ++block_frames;
            ++sum.frames;
            sum.rows += n_atoms;
            have_timestep = false;
            n_atoms = -1;
            have_box = false;
            if (static_cast<std::int64_t>(block.size()) >= opt.block_rows) flush();
            progress.update(sum.frames);
        } else {
            throw FormatError(at_line(in, lr.line_no(), "unknown item '" + line.substr(0, 60) + "'"));
        }
    }
    if (!any) throw FormatError(in + ": empty file: no 'ITEM: TIMESTEP' found (not a LAMMPS text dump?)");
    if (have_timestep || n_atoms >= 0 || have_box)
        throw FormatError(at_line(
            in, lr.line_no(),
            "truncated dump: frame " + std::to_string(sum.frames) + " ends before its ITEM: ATOMS block"));
    if (!writer)  // only ITEM: TIME / UNITS items (found by fuzz_lammps_dump: was a null dereference)
        throw FormatError(in + ": no 'ITEM: ATOMS' block: not a LAMMPS text dump with atoms");
    flush();
    progress.finish();
    sum.lines = lr.line_no();
    writer->commit();
    return sum;
}

}  // namespace vibra::store
