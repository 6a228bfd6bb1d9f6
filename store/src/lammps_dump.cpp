// SPDX-License-Identifier: GPL-3.0-or-later
// LAMMPS text dump reader (the `dump atom/custom` text layout), streamed frame by frame.
#include <algorithm>
#include <memory>
#include <numeric>
#include <tuple>

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

/// Unwrapped position of one atom line from whichever position columns the dump has
/// (unwrapped xu yu; wrapped x y, plus image flags ix iy when present; scaled xs ys / xsu ysu).
struct AtomPosition {
    const AtomColumns& cols;
    const Box& box;
    const std::vector<std::string_view>& tok;
    const std::string& file;
    std::int64_t line;

    double col(int c, const char* name) const {
        return parse_double(tok[static_cast<std::size_t>(c)], file, line, name);
    }
    double image(int c, const char* name) const {
        return static_cast<double>(parse_int(tok[static_cast<std::size_t>(c)], file, line, name));
    }
    std::pair<double, double> operator()() const {
        const double lx = box.xhi - box.xlo, ly = box.yhi - box.ylo;
        const bool images = cols.ix >= 0 && cols.iy >= 0;
        if (cols.xu >= 0 && cols.yu >= 0) return {col(cols.xu, "xu"), col(cols.yu, "yu")};
        if (cols.x >= 0 && cols.y >= 0) {
            double x = col(cols.x, "x"), y = col(cols.y, "y");
            if (images) {
                x += lx * image(cols.ix, "ix");
                y += ly * image(cols.iy, "iy");
            }
            return {x, y};
        }
        if (cols.xsu >= 0 && cols.ysu >= 0)
            return {box.xlo + lx * col(cols.xsu, "xsu"), box.ylo + ly * col(cols.ysu, "ysu")};
        double sx = col(cols.xs, "xs"), sy = col(cols.ys, "ys");
        if (images) {
            sx += image(cols.ix, "ix");
            sy += image(cols.iy, "iy");
        }
        return {box.xlo + lx * sx, box.ylo + ly * sy};
    }
};

/// The dump read item by item (TIMESTEP, NUMBER OF ATOMS, BOX BOUNDS, ATOMS), frames appended to
/// the trajectory in blocks of opt.block_rows rows.
class LammpsImport {
public:
    LammpsImport(const std::string& in, const std::string& out, const ImportOptions& opt)
        : in_(in), out_(out), opt_(opt), lr_(in), progress_("import " + in, -1, opt.progress) {
        meta_.length_unit = opt.length_unit.value_or("sigma");
        meta_.time_unit = opt.time_unit.value_or("tau");
        meta_.frame_interval = opt.dt.value_or(1.0);
        if (!(meta_.frame_interval > 0)) throw ParameterError("--dt must be > 0");
        meta_.coordinate_convention = "simulation";
        meta_.species_diameters = opt.diameters;
        meta_.source.file = in;
        meta_.source.checksum = file_checksum(in);
        meta_.source.vibra_version = vibra::version();
    }

    ImportSummary run() {
        bool any = false;
        while (lr_.next(line_)) {
            if (line_.find_first_not_of(" \t") == std::string::npos) continue;  // blank lines
            detail::split_ws(line_, tok_);
            if (tok_.size() < 2 || tok_[0] != "ITEM:")
                throw FormatError(at_line(in_, lr_.line_no(),
                                          "expected an 'ITEM:' line, got '" + line_.substr(0, 60) + "'"));
            any = true;
            read_item(tok_[1]);
        }
        if (!any)
            throw FormatError(in_ + ": empty file: no 'ITEM: TIMESTEP' found (not a LAMMPS text dump?)");
        if (have_timestep_ || n_atoms_ >= 0 || have_box_)
            throw FormatError(at_line(in_, lr_.line_no(),
                                      "truncated dump: frame " + std::to_string(sum_.frames) +
                                          " ends before its ITEM: ATOMS block"));
        if (!writer_)  // only ITEM: TIME / UNITS items (found by fuzz_lammps_dump: was a null dereference)
            throw FormatError(in_ + ": no 'ITEM: ATOMS' block: not a LAMMPS text dump with atoms");
        flush();
        progress_.finish();
        sum_.lines = lr_.line_no();
        writer_->commit();
        return sum_;
    }

private:
    void read_item(std::string_view item) {
        if (item == "TIMESTEP") {
            need_line("the TIMESTEP value");
            timestep_ = parse_int(line_, in_, lr_.line_no(), "TIMESTEP");
            have_timestep_ = true;
        } else if (item == "TIME" || item == "UNITS") {
            need_line("ITEM: TIME/UNITS");
        } else if (item == "NUMBER") {
            need_line("NUMBER OF ATOMS");
            n_atoms_ = parse_int(line_, in_, lr_.line_no(), "NUMBER OF ATOMS");
            if (n_atoms_ < 0) throw FormatError(at_line(in_, lr_.line_no(), "negative NUMBER OF ATOMS"));
        } else if (item == "BOX") {
            read_box();
        } else if (item == "ATOMS") {
            read_atoms();
        } else {
            throw FormatError(at_line(in_, lr_.line_no(), "unknown item '" + line_.substr(0, 60) + "'"));
        }
    }

    void need_line(const char* what) {
        if (!lr_.next(line_))
            throw FormatError(at_line(in_, lr_.line_no(),
                                      std::string("truncated dump: end of file while reading ") + what +
                                          " of frame " + std::to_string(sum_.frames)));
    }

    /// One "lo hi" line of BOX BOUNDS.
    std::pair<double, double> bounds(const char* axis, const char* lo, const char* hi) {
        need_line((std::string("BOX BOUNDS ") + axis).c_str());
        detail::split_ws(line_, tok_);
        if (tok_.size() != 2)
            throw FormatError(at_line(in_, lr_.line_no(), "BOX BOUNDS line must have 2 numbers (lo hi)"));
        return {parse_double(tok_[0], in_, lr_.line_no(), lo), parse_double(tok_[1], in_, lr_.line_no(), hi)};
    }

    // "ITEM: BOX BOUNDS [xy xz yz] xx yy zz", then three "lo hi" lines (z too, even in 2-D runs).
    void read_box() {
        const std::int64_t box_line = lr_.line_no();
        std::vector<std::string> flags;
        bool triclinic = false;
        for (std::size_t k = 3; k < tok_.size(); ++k) {
            if (tok_[k] == "xy" || tok_[k] == "xz" || tok_[k] == "yz")
                triclinic = true;
            else
                flags.emplace_back(tok_[k]);
        }
        if (triclinic)
            throw FormatError(
                at_line(in_, box_line, "triclinic box is not supported (vibra needs an orthogonal 2-D box)"));
        std::tie(box_.xlo, box_.xhi) = bounds("x", "xlo", "xhi");
        std::tie(box_.ylo, box_.yhi) = bounds("y", "ylo", "yhi");
        need_line("BOX BOUNDS z");
        const bool px = flags.size() > 0 && flags[0] == "pp";
        const bool py = flags.size() > 1 && flags[1] == "pp";
        if (px != py)
            throw FormatError(at_line(in_, box_line, "box periodic in only one of x, y is not supported"));
        box_.periodic = px;
        if (!(box_.xhi > box_.xlo) || !(box_.yhi > box_.ylo))
            throw FormatError(at_line(in_, box_line, "box bounds must have lo < hi"));
        if (first_box_ && !(box_ == *first_box_))
            throw FormatError(at_line(in_, box_line,
                                      "box changes between frames (frame " + std::to_string(sum_.frames) +
                                          "); vibra needs a fixed box"));
        have_box_ = true;
    }

    /// The first ATOMS header fixes the columns and the box and opens the output.
    void start_output(const AtomColumns& cols, std::int64_t header_line) {
        if (!first_cols_) {
            first_cols_ = cols;
            first_box_ = box_;
            meta_.geometry = box_.periodic ? Geometry::periodic(box_.xlo, box_.ylo, box_.xhi, box_.yhi)
                                           : Geometry::rect(box_.xlo, box_.ylo, box_.xhi, box_.yhi);
            ColumnSet cs;
            cs.velocity = cols.vx >= 0;
            writer_ = std::make_unique<TrajectoryWriter>(out_, meta_, cs);
        } else if ((cols.vx >= 0) != (first_cols_->vx >= 0)) {
            throw FormatError(
                at_line(in_, header_line, "velocity columns appear or disappear between frames"));
        }
    }

    void read_atom_line(const AtomColumns& cols, std::int64_t frame, std::int64_t a) {
        if (!lr_.next(line_))
            throw FormatError(at_line(in_, lr_.line_no(),
                                      "truncated dump: frame " + std::to_string(frame) + " (TIMESTEP " +
                                          std::to_string(timestep_) + ") has " + std::to_string(a) + " of " +
                                          std::to_string(n_atoms_) + " atom lines"));
        detail::split_ws(line_, tok_);
        if (tok_.size() != cols.n)
            throw FormatError(at_line(
                in_, lr_.line_no(),
                "expected " + std::to_string(cols.n) + " columns, got " + std::to_string(tok_.size())));
        const std::int64_t id = parse_int(tok_[static_cast<std::size_t>(cols.id)], in_, lr_.line_no(), "id");
        if (id < 0)  // found by fuzz_lammps_dump: written, then refused by the trajectory reader
            throw FormatError(at_line(in_, lr_.line_no(), "atom id " + std::to_string(id) + " is negative"));
        const std::int64_t type =
            parse_int(tok_[static_cast<std::size_t>(cols.type)], in_, lr_.line_no(), "type");
        const auto sp = opt_.species_map.find(type);
        if (sp == opt_.species_map.end())
            throw FormatError(at_line(in_, lr_.line_no(),
                                      "atom type " + std::to_string(type) +
                                          " is not in the species map (use --species-map, e.g. " +
                                          std::to_string(type) + ":small)"));
        const AtomPosition pos{cols, box_, tok_, in_, lr_.line_no()};
        const auto [x, y] = pos();
        block_.push(frame, id, x, y, sp->second);
        if (cols.vx >= 0) {
            block_.vx.push_back(pos.col(cols.vx, "vx"));
            block_.vy.push_back(pos.col(cols.vy, "vy"));
        }
    }

    void read_atoms() {
        const std::int64_t header_line = lr_.line_no();
        if (!have_timestep_ || n_atoms_ < 0 || !have_box_)
            throw FormatError(at_line(in_, header_line,
                                      "ITEM: ATOMS before ITEM: TIMESTEP, NUMBER OF ATOMS and BOX BOUNDS"));
        const AtomColumns cols = parse_atom_header(tok_, in_, header_line);
        start_output(cols, header_line);
        const std::int64_t frame = sum_.frames;
        const std::size_t row0 = block_.size();
        for (std::int64_t a = 0; a < n_atoms_; ++a) read_atom_line(cols, frame, a);
        // Atom order may differ per frame: sort this frame's rows by id.
        block_.sort_rows(row0, block_.size());
        for (std::size_t i = row0 + 1; i < block_.size(); ++i)
            if (block_.particle[i] == block_.particle[i - 1])
                throw FormatError(at_line(in_, header_line,
                                          "frame " + std::to_string(frame) + " (TIMESTEP " +
                                              std::to_string(timestep_) + ") has atom id " +
                                              std::to_string(block_.particle[i]) + " twice"));
        block_fc_.timestep.push_back(timestep_);
        ++block_frames_;
        ++sum_.frames;
        sum_.rows += n_atoms_;
        have_timestep_ = false;
        n_atoms_ = -1;
        have_box_ = false;
        if (static_cast<std::int64_t>(block_.size()) >= opt_.block_rows) flush();
        progress_.update(sum_.frames);
    }

    void flush() {
        if (block_frames_ == 0) return;
        writer_->append(block_, block_frames_, block_fc_);
        block_.clear();
        if (first_cols_ && first_cols_->vx >= 0) {
            block_.vx.clear();
            block_.vy.clear();
        }
        block_fc_ = {};
        block_frames_ = 0;
    }

    const std::string& in_;
    const std::string& out_;
    const ImportOptions& opt_;
    detail::LineReader lr_;
    Progress progress_;
    Metadata meta_;
    std::unique_ptr<TrajectoryWriter> writer_;
    TrajectoryTable block_;
    FrameColumns block_fc_;
    std::int64_t block_frames_ = 0;
    ImportSummary sum_;
    std::optional<Box> first_box_;
    std::optional<AtomColumns> first_cols_;
    std::string line_;
    std::vector<std::string_view> tok_;
    // State of the frame being read.
    std::int64_t timestep_ = 0, n_atoms_ = -1;
    bool have_timestep_ = false;
    Box box_;
    bool have_box_ = false;
};

}  // namespace

ImportSummary import_lammps(const std::string& in, const std::string& out, const ImportOptions& opt) {
    return LammpsImport(in, out, opt).run();
}

}  // namespace vibra::store
