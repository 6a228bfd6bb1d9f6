// SPDX-License-Identifier: GPL-3.0-or-later
// `vibra import` (LAMMPS dump / CSV → HDF5) and `vibra export` (HDF5 → CSV).
#include <filesystem>
#include <iostream>

#include "commands.hpp"
#include "vibra/core/error.hpp"
#include "vibra/store/text_formats.hpp"

namespace vibra::app {

namespace {
std::string guess_format(const std::string& in) {
    const auto ext = std::filesystem::path(in).extension().string();
    if (ext == ".csv") return "csv";
    return "lammps";  // .dump, .lammpstrj, .atom, …
}
}  // namespace

void register_import(CLI::App& app, GlobalOptions& g) {
    struct Opts {
        std::string input, output, format, species_map = "1:small,2:large", diameter, time_unit, length_unit;
        double dt = 0;
        std::int64_t block_rows = 1 << 20;
        bool no_metadata = false;
    };
    auto o = std::make_shared<Opts>();
    auto* cmd = app.add_subcommand(
        "import", "Import a LAMMPS text dump or a CSV table into a vibra HDF5 trajectory file");
    cmd->add_option("input", o->input, "LAMMPS dump or CSV file")->required()->check(CLI::ExistingFile);
    cmd->add_option("-o,--output", o->output, "Output HDF5 file")->required();
    cmd->add_option("--format", o->format, "Input format (default: by extension, .csv → csv, else lammps)")
        ->check(CLI::IsMember({"lammps", "csv"}));
    cmd->add_option("--species-map", o->species_map, "LAMMPS atom type → species, e.g. 1:small,2:large")
        ->capture_default_str();
    cmd->add_option("--diameter", o->diameter,
                    "Species diameters in the length unit, e.g. small=1.0,large=1.4");
    cmd->add_option("--dt", o->dt, "Time between dumped frames, in --time-unit (default 1)");
    cmd->add_option("--time-unit", o->time_unit, "Time unit (default: tau for LAMMPS, frame for CSV)");
    cmd->add_option("--length-unit", o->length_unit, "Length unit (default: sigma for LAMMPS, px for CSV)");
    cmd->add_option("--block-rows", o->block_rows, "Rows buffered before each write (bounds memory)")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    cmd->add_flag(
        "--no-metadata", o->no_metadata,
        "CSV: ignore the metadata sidecar INPUT.meta.json that `vibra export` writes (units, frame interval, "
        "species, geometry, per-frame times; read by default when present, the flags above override it)");
    cmd->callback([o, &g] {
        on_interrupt(g, [o] {
            return "while reading " + o->input + "; kept: nothing (" + o->output + " not written)";
        });
        store::ImportOptions opt;
        opt.block_rows = o->block_rows;
        opt.species_map = store::parse_species_map(o->species_map);
        if (!o->diameter.empty()) opt.diameters = store::parse_diameters(o->diameter);
        if (o->dt != 0) {
            if (!(o->dt > 0)) throw ParameterError("--dt must be > 0, got " + std::to_string(o->dt));
            opt.dt = o->dt;
        }
        if (!o->time_unit.empty()) opt.time_unit = o->time_unit;
        if (!o->length_unit.empty()) opt.length_unit = o->length_unit;
        opt.progress = g.progress();
        opt.use_metadata = !o->no_metadata;
        const std::string fmt = o->format.empty() ? guess_format(o->input) : o->format;
        const auto s = fmt == "csv" ? store::import_csv(o->input, o->output, opt)
                                    : store::import_lammps(o->input, o->output, opt);
        if (!g.quiet)
            std::cout << "imported " << o->input << " (" << fmt << "): " << s.frames << " frames, " << s.rows
                      << " rows → " << o->output
                      << (s.metadata_file.empty() ? "" : " (metadata from " + s.metadata_file + ")") << "\n";
    });
}

void register_export(CLI::App& app, GlobalOptions& g) {
    struct Opts {
        std::string input, output;
        bool no_metadata = false;
    };
    auto o = std::make_shared<Opts>();
    auto* cmd = app.add_subcommand(
        "export",
        "Export a vibra HDF5 trajectory file as CSV (frame,particle,x,y,species[,vx,vy][,radius,...]) "
        "plus its metadata in OUTPUT.meta.json, which `vibra import` reads back");
    cmd->add_option("input", o->input, "vibra HDF5 trajectory file")->required()->check(CLI::ExistingFile);
    cmd->add_option("-o,--output", o->output, "Output CSV file")->required();
    cmd->add_flag("--no-metadata", o->no_metadata, "Write the CSV only, without OUTPUT.meta.json");
    cmd->callback([o, &g] {
        on_interrupt(g, [o] {
            return "while writing " + o->output + "; kept: nothing (" + o->output + " not written)";
        });
        store::export_csv(o->input, o->output, g.progress(), !o->no_metadata);
        if (!g.quiet)
            std::cout << "exported " << o->input << " → " << o->output
                      << (o->no_metadata ? "" : " + " + store::csv_metadata_path(o->output)) << "\n";
    });
}

}  // namespace vibra::app
