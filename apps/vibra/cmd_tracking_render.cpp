// SPDX-License-Identifier: GPL-3.0-or-later
// `vibra render IN.h5 --video VIDEO -o OUT`: overlay of a trajectory file on its video.
#include <algorithm>
#include <filesystem>
#include <map>
#include <iostream>

#include "commands.hpp"
#include "vibra/core/error.hpp"
#include "vibra/core/frame_range.hpp"
#include "vibra/core/progress.hpp"
#include "vibra/store/results_file.hpp"
#include "vibra/store/trajectory_file.hpp"
#include "vibra/tracking/overlay.hpp"
#include "vibra/tracking/synth.hpp"
#include "vibra/tracking/video_writer.hpp"
#include "vibra/tracking/video.hpp"

namespace vibra::app {

namespace {

namespace fs = std::filesystem;

/// Defect markers by frame from /analysis/defects of a results file (the rows of one lag).
std::map<std::int64_t, std::vector<tracking::OverlayMarker>> defect_markers(const std::string& path,
                                                                            std::int64_t lag) {
    const ResultGroup g = store::read_results(path, "defects");
    auto ints = [&](const char* name) {
        const auto* a = g.find(name);
        if (!a)
            throw FormatError(at_field(path, std::string("/analysis/defects/") + name, "dataset is missing"));
        return std::get<std::vector<std::int64_t>>(a->data);
    };
    auto dbls = [&](const char* name) {
        const auto* a = g.find(name);
        if (!a)
            throw FormatError(at_field(path, std::string("/analysis/defects/") + name, "dataset is missing"));
        return std::get<std::vector<double>>(a->data);
    };
    const auto lags = ints("lag"), frames = ints("frame"), charge = ints("charge");
    const auto x = dbls("x"), y = dbls("y");
    if (lag < 0 && !lags.empty()) lag = *std::min_element(lags.begin(), lags.end());
    std::map<std::int64_t, std::vector<tracking::OverlayMarker>> out;
    for (std::size_t i = 0; i < frames.size(); ++i) {
        if (lags[i] != lag) continue;
        tracking::OverlayMarker m;
        m.x = x[i], m.y = y[i], m.size = 6;
        // +1 (vortex-like): red circle; −1 (saddle-like): blue cross.
        m.shape = charge[i] > 0 ? tracking::MarkerShape::circle : tracking::MarkerShape::cross;
        m.colour = charge[i] > 0 ? cv::Scalar(0, 0, 255) : cv::Scalar(255, 0, 0);
        m.label = (charge[i] > 0 ? "+" : "") + std::to_string(charge[i]);
        out[frames[i]].push_back(m);
    }
    return out;
}

}  // namespace

void register_render(CLI::App& app, GlobalOptions& g) {
    struct Opts {
        std::string input, video, output, format, frames;
        tracking::OverlayParams op;
        std::int64_t offset = 0;
        int channel = -1;
        double fps = 25, radius = 5;
        std::string defects;
        std::int64_t defects_lag = -1;
    };
    auto o = std::make_shared<Opts>();
    auto* cmd = app.add_subcommand("render",
                                   "Overlay a trajectory file on its video: circles coloured by species, "
                                   "optional ids and trails (AVI video or PNG frames)");
    cmd->add_option("input", o->input, "vibra HDF5 trajectory file")->required()->check(CLI::ExistingFile);
    cmd->add_option("--video", o->video,
                    "The video (file, camera file, image folder or glob) the trajectories came from")
        ->required();
    cmd->add_option("-o,--output", o->output,
                    "NAME.avi (Motion-JPEG), NAME.mkv (FFV1), or a folder (ending in /) for PNG frames")
        ->required();
    cmd->add_option("--format", o->format, "mjpeg, ffv1 or png (default: from the output name)")
        ->check(CLI::IsMember({"mjpeg", "ffv1", "png"}));
    cmd->add_flag("--ids", o->op.ids, "Draw trajectory ids");
    cmd->add_option("--trails", o->op.trails, "Draw the last N positions of each trajectory")
        ->capture_default_str();
    cmd->add_option("--thickness", o->op.thickness, "Circle line thickness (output px)")
        ->capture_default_str();
    cmd->add_option("--upscale", o->op.upscale, "Output size = video size x N (for small disks)")
        ->capture_default_str();
    cmd->add_option(
        "--frames", o->frames,
        "Trajectory frames A:B (0-based, B exclusive; A:, :B or a single frame A) to draw (default: all)");
    cmd->add_option("--offset", o->offset,
                    "Video frame = trajectory frame + OFFSET (e.g. tracked with --frames A:B → A)")
        ->capture_default_str();
    cmd->add_option("--channel", o->channel, "Colour → grey: -1 luma, 0 R, 1 G, 2 B")->capture_default_str();
    cmd->add_option("--radius", o->radius,
                    "Circle radius (px) when the file has neither radii nor species diameters")
        ->capture_default_str();
    cmd->add_option("--fps", o->fps, "Frame rate of the output video")->capture_default_str();
    cmd->add_option("--defects", o->defects,
                    "Results file with /analysis/defects: draw +1 (red circle) / -1 (blue cross) markers")
        ->check(CLI::ExistingFile);
    cmd->add_option("--defects-lag", o->defects_lag,
                    "Lag (frames) of the displacement field whose defects are drawn (default: smallest)");
    cmd->callback([o, &g] {
        o->op.validate();
        if (!(o->fps > 0)) throw ParameterError("--fps must be > 0, got " + std::to_string(o->fps));
        if (!(o->radius > 0)) throw ParameterError("--radius must be > 0, got " + std::to_string(o->radius));
        if (o->offset < 0) throw ParameterError("--offset must be >= 0, got " + std::to_string(o->offset));
        if (o->output.empty()) throw ParameterError("-o must not be empty");
        std::error_code ec;
        const bool want_folder = o->format == "png" || o->output.back() == '/' ||
                                 fs::is_directory(o->output, ec) || fs::path(o->output).extension().empty();
        tracking::VideoFormat fmt = tracking::VideoFormat::png;
        if (!want_folder) {
            const auto ext = fs::path(o->output).extension().string();
            fmt = !o->format.empty() ? tracking::video_format_from_string(o->format)
                  : ext == ".mkv"    ? tracking::VideoFormat::avi_ffv1
                                     : tracking::VideoFormat::avi_mjpeg;
            if (ext != ".avi" && ext != ".mkv")
                throw ParameterError("-o " + o->output + ": use NAME.avi, NAME.mkv or a folder ending in /");
        }

        store::TrajectoryReader tr(o->input);
        const auto& meta = tr.meta();
        const auto markers = o->defects.empty()
                                 ? std::map<std::int64_t, std::vector<tracking::OverlayMarker>>{}
                                 : defect_markers(o->defects, o->defects_lag);
        std::int64_t first = 0, last = tr.n_frames();
        if (!o->frames.empty()) {
            const auto [a, b] = parse_frame_range(o->frames);
            first = a;
            if (b >= 0) last = std::min(last, b);
        }
        if (first >= last)
            throw ParameterError(o->input + ": no frames to draw (file has " + std::to_string(tr.n_frames()) +
                                 " frames)");
        tracking::ReaderParams rp;
        rp.channel = o->channel;
        rp.first = first + o->offset;
        rp.last = last + o->offset;
        auto src = tracking::open_video(o->video, rp);  // errors here leave no output
        const auto& vi = src->info();
        if (meta.image_width > 0 && meta.image_height > 0 &&
            (meta.image_width != vi.width || meta.image_height != vi.height))
            throw FormatError(o->video + ": video is " + std::to_string(vi.width) + "x" +
                              std::to_string(vi.height) + " px but " + o->input + " was tracked on " +
                              std::to_string(meta.image_width) + "x" + std::to_string(meta.image_height) +
                              " px");
        const bool has_radius = tr.columns().radius;
        auto radius_of = [&](const TrajectoryTable& t, std::size_t r) {
            if (has_radius && std::isfinite(t.radius[r]) && t.radius[r] > 0) return double(t.radius[r]);
            const auto sp = t.species[r];
            if (sp >= 0 && static_cast<std::size_t>(sp) < meta.species_diameters.size() &&
                meta.species_diameters[sp] > 0)
                return 0.5 * meta.species_diameters[static_cast<std::size_t>(sp)];
            return o->radius;
        };

        // FrameSink writes a temporary (file or folder) renamed into place by close(); an error or
        // Ctrl-C removes it.
        auto done = std::make_shared<std::int64_t>(0);
        on_interrupt(g, [o, done] {
            return "after " + std::to_string(*done) + " frames; kept: nothing (" + o->output +
                   " not written)";
        });
        std::int64_t written = 0, skipped = 0;
        {
            tracking::FrameSink sink(o->output, fmt, o->fps);
            tracking::OverlayRenderer ren(o->op);
            Progress prog("render", last - first, g.progress());
            const std::int64_t block = 64;
            Trajectory chunk;
            std::int64_t chunk_first = -1;
            std::vector<std::vector<std::size_t>> rows_of;  // rows of each frame of the chunk
            tracking::Frame fr;
            for (;;) {
                const auto st = src->next(fr);
                if (st == tracking::ReadStatus::corrupt) {
                    ++skipped;
                    continue;
                }
                if (st != tracking::ReadStatus::ok) break;
                const std::int64_t f = fr.index - o->offset;
                if (f < first || f >= last) continue;
                if (chunk_first < 0 || f >= chunk_first + block || f < chunk_first) {
                    chunk_first = f;
                    chunk = tr.read_frames(f, std::min(block, last - f));
                    rows_of.assign(static_cast<std::size_t>(block), {});
                    for (std::size_t r = 0; r < chunk.rows.size(); ++r) {
                        const auto k = chunk.rows.frame[r] - chunk_first;
                        if (k >= 0 && k < block) rows_of[static_cast<std::size_t>(k)].push_back(r);
                    }
                }
                std::vector<tracking::OverlayDisk> disks;
                for (const auto r : rows_of[static_cast<std::size_t>(f - chunk_first)]) {
                    tracking::OverlayDisk d;
                    d.x = chunk.rows.x[r];
                    d.y = chunk.rows.y[r];
                    d.radius = radius_of(chunk.rows, r);
                    d.species = chunk.rows.species[r];
                    d.id = chunk.rows.particle[r];
                    disks.push_back(d);
                }
                const auto mk = markers.find(f);
                sink.write(mk == markers.end() ? ren.render(fr.image, f, disks)
                                               : ren.render(fr.image, f, disks, mk->second));
                *done = ++written;
                prog.update(written);
            }
            if (written == 0) throw FormatError(o->video + ": no frame of the range could be read");
            sink.close();
            prog.finish();
        }
        if (!g.quiet)
            std::cout << "render: " << written << " frames → " << o->output
                      << (skipped ? " (" + std::to_string(skipped) + " undecodable frames skipped)"
                                  : std::string())
                      << "\n";
    });
}

}  // namespace vibra::app
