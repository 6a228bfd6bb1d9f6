// SPDX-License-Identifier: GPL-3.0-or-later
// `vibra info FILE` — summary of a trajectory file (or a results file).
#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <unordered_map>

#include "commands.hpp"
#include "vibra/core/error.hpp"
#include "vibra/store/results_file.hpp"
#include "vibra/store/trajectory_file.hpp"

namespace vibra::app {

namespace {

std::string geometry_text(const Geometry& g, const std::string& unit) {
    std::ostringstream s;
    s << to_string(g.kind);
    switch (g.kind) {
        case GeometryKind::periodic_box:
            s << " [" << g.x0 << ", " << g.x1 << ") x [" << g.y0 << ", " << g.y1 << ") " << unit;
            break;
        case GeometryKind::window_rect:
            s << " [" << g.x0 << ", " << g.x1 << "] x [" << g.y0 << ", " << g.y1 << "] " << unit;
            break;
        case GeometryKind::window_circle:
            s << " centre (" << g.cx << ", " << g.cy << ") radius " << g.r << " " << unit;
            break;
        default:
            break;
    }
    return s.str();
}

void trajectory_info(const std::string& path, std::ostream& os) {
    store::TrajectoryReader r(path);
    const auto& m = r.meta();
    // Stream particle/species columns in blocks of ~1M rows: bounded memory for huge files.
    struct Track {
        std::int64_t rows = 0, small = 0, large = 0;
    };
    std::unordered_map<std::int64_t, Track> tracks;
    std::int64_t rows_by_species[3] = {0, 0, 0};  // unknown, small, large
    std::int64_t unlinked = 0;
    const std::int64_t T = r.n_frames();
    for (std::int64_t f = 0; f < T;) {
        std::int64_t n = 1;
        while (f + n < T && r.index().offsets[static_cast<std::size_t>(f + n)] -
                                    r.index().offsets[static_cast<std::size_t>(f)] <
                                (1 << 20))
            ++n;
        const auto t = r.read_columns({"particle", "species"}, f, n);
        for (std::size_t i = 0; i < t.particle.size(); ++i) {
            const int s = t.species[i];
            ++rows_by_species[s + 1 >= 0 && s + 1 <= 2 ? s + 1 : 0];
            if (t.particle[i] < 0) {
                ++unlinked;
                continue;
            }
            auto& tr = tracks[t.particle[i]];
            ++tr.rows;
            tr.small += s == kSpeciesSmall;
            tr.large += s == kSpeciesLarge;
        }
        f += n;
    }
    std::vector<std::int64_t> lengths;
    lengths.reserve(tracks.size());
    std::int64_t p_small = 0, p_large = 0, p_unknown = 0;
    for (const auto& [id, tr] : tracks) {
        lengths.push_back(tr.rows);
        if (tr.small == 0 && tr.large == 0)
            ++p_unknown;
        else if (tr.large > tr.small)
            ++p_large;
        else
            ++p_small;
    }
    std::sort(lengths.begin(), lengths.end());

    os << "file:        " << path << "\n";
    os << "schema:      vibra-trajectories " << r.schema_version() << "\n";
    os << "frames:      " << T << " (frame interval " << m.frame_interval << " " << m.time_unit << ")\n";
    os << "rows:        " << r.n_rows() << " (" << unlinked << " unlinked)\n";
    os << "particles:   " << tracks.size() << "\n";
    auto name = [&](std::size_t code) {
        return code < m.species_names.size() ? m.species_names[code] : "species " + std::to_string(code);
    };
    // Single-size data (one species name, no large rows) lists only that species.
    os << "species:     " << name(0) << " " << rows_by_species[1] << " rows / " << p_small << " particles, ";
    if (m.species_names.size() != 1 || rows_by_species[2] > 0)
        os << name(1) << " " << rows_by_species[2] << " rows / " << p_large << " particles, ";
    os << "unknown " << rows_by_species[0] << " rows / " << p_unknown << " particles\n";
    if (!m.species_diameters.empty()) {
        os << "diameters:  ";
        for (std::size_t i = 0; i < m.species_diameters.size(); ++i)
            os << " " << name(i) << " " << m.species_diameters[i] << " " << m.length_unit;
        os << "\n";
    }
    if (lengths.empty())
        os << "track length: none (no linked rows)\n";
    else
        os << "track length (detections): min " << lengths.front() << ", median "
           << lengths[lengths.size() / 2] << ", max " << lengths.back() << "\n";
    os << "geometry:    " << geometry_text(m.geometry, m.length_unit) << "\n";
    os << "units:       length " << m.length_unit << ", time " << m.time_unit;
    if (m.px_per_mm) os << ", " << *m.px_per_mm << " px/mm";
    os << "\n";
    if (m.image_width > 0) os << "image:       " << m.image_width << " x " << m.image_height << " px\n";
    std::string cols;
    const auto& c = r.columns();
    if (c.velocity) cols += " vx vy";
    if (c.radius) cols += " radius";
    if (c.brightness) cols += " brightness";
    if (c.quality) cols += " quality";
    if (c.species_confidence) cols += " species_confidence";
    if (c.edge) cols += " edge";
    os << "columns:     frame particle x y species" << cols << "\n";
    os << "source:      " << (m.source.file.empty() ? "(unknown)" : m.source.file);
    if (!m.source.checksum.empty()) os << " (" << m.source.checksum << ")";
    if (!m.source.vibra_version.empty()) os << ", vibra " << m.source.vibra_version;
    os << "\n";
    if (m.incomplete) os << "incomplete:  yes — the source was truncated; this file holds what was read\n";
}

void results_info(const std::string& path, std::ostream& os) {
    const auto root = store::read_results_root(path);
    auto str = [&](const char* k) {
        auto it = root.find(k);
        if (it == root.end()) return std::string("?");
        if (auto* s = std::get_if<std::string>(&it->second)) return *s;
        return std::string("?");
    };
    os << "file:        " << path << "\n";
    os << "schema:      vibra-results " << str("schema_version") << "\n";
    os << "input:       " << str("input_path") << " (" << str("input_checksum") << ")\n";
    os << "analyses:   ";
    for (const auto& n : store::list_results(path)) os << " " << n;
    os << "\n";
}

}  // namespace

bool print_video_info(const std::string& path, std::ostream& os);  // cmd_video.cpp (tracking) or fallback

void register_info(CLI::App& app, GlobalOptions&) {
    auto file = std::make_shared<std::string>();
    auto* cmd =
        app.add_subcommand("info", "Summarise a vibra trajectory or results file, or a video's metadata");
    cmd->add_option("file", *file,
                    "HDF5 trajectory/results file, or a video (file, camera file, image folder or glob)")
        ->required();
    cmd->callback([file] {
        if (store::is_hdf5_file(*file)) {
            // Peek at the schema to choose the summary.
            std::string schema;
            try {
                store::read_results_root(*file);
                schema = "results";
            } catch (const FormatError&) {
                schema = "trajectories";
            }
            if (schema == "results")
                results_info(*file, std::cout);
            else
                trajectory_info(*file, std::cout);
            return;
        }
        if (!print_video_info(*file, std::cout))
            throw FormatError(*file + ": not a vibra HDF5 file and not a readable video");
    });
}

}  // namespace vibra::app
