// SPDX-License-Identifier: GPL-3.0-or-later
// `vibra render IN.h5 --video VIDEO -o OUT`: overlay of a trajectory file on its video.
#include <algorithm>
#include <filesystem>
#include <map>
#include <iostream>

#include "commands.hpp"
#include "vibra/core/error.hpp"
#include "vibra/core/frame_range.hpp"
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
        tracking::OverlayRunParams rp;
        std::string defects;
        std::int64_t defects_lag = -1;
    };
    auto o = std::make_shared<Opts>();
    auto* cmd = app.add_subcommand("render",
                                   "Overlay a trajectory file on its video: circles coloured by species, "
                                   "optional ids and trails (AVI video or PNG frames)");
    cmd->add_option("input", o->input, "vibra HDF5 trajectory file")->required()->check(CLI::ExistingFile);
    cmd->add_option(
           "--video", o->video,
           "The video (file, camera file, image folder or glob) the trajectories came from; its size "
           "and frame count must be those the file records")
        ->required();
    cmd->add_option("-o,--output", o->output,
                    "NAME.avi (Motion-JPEG), NAME.mkv (FFV1), or a folder (ending in /) for PNG frames named "
                    "after their trajectory frame (frame_000012.png)")
        ->required();
    cmd->add_option("--format", o->format, "mjpeg, ffv1 or png (default: from the output name)")
        ->check(CLI::IsMember({"mjpeg", "ffv1", "png"}));
    auto& op = o->rp.overlay;
    cmd->add_flag("--ids", op.ids, "Draw trajectory ids");
    cmd->add_option("--trails", op.trails, "Draw the last N positions of each trajectory")
        ->capture_default_str();
    cmd->add_option("--thickness", op.thickness, "Circle line thickness (output px)")->capture_default_str();
    cmd->add_option("--upscale", op.upscale, "Output size = video size x N (for small disks)")
        ->capture_default_str();
    cmd->add_flag_callback(
        "--no-stretch", [o] { o->rp.overlay.stretch = false; },
        "Show the frames as they are (default: each frame's 0.1-99.9 percentile range fills the grey scale)");
    cmd->add_flag_callback(
        "--no-legend", [o] { o->rp.overlay.legend = false; },
        "No colour legend (default: top-left, orange = small, cyan = large, magenta = unknown)");
    cmd->add_option(
        "--frames", o->frames,
        "Trajectory frames A:B (0-based, B exclusive; A:, :B or a single frame A) to draw (default: all)");
    auto* opt_offset = cmd->add_option(
        "--offset", o->rp.offset,
        "Video frame = trajectory frame + OFFSET (default: the first video frame the file records, "
        "e.g. A for a file tracked with --frames A:B)");
    cmd->add_option("--channel", o->rp.channel, "Colour → grey: -1 luma, 0 R, 1 G, 2 B")
        ->capture_default_str();
    cmd->add_option("--radius", o->rp.radius,
                    "Circle radius (px) when the file has neither radii nor species diameters")
        ->capture_default_str();
    cmd->add_option("--fps", o->rp.fps, "Frame rate of the output video")->capture_default_str();
    cmd->add_option("--defects", o->defects,
                    "Results file with /analysis/defects: draw +1 (red circle) / -1 (blue cross) markers")
        ->check(CLI::ExistingFile);
    cmd->add_option("--defects-lag", o->defects_lag,
                    "Lag (frames) of the displacement field whose defects are drawn (default: smallest)");
    cmd->callback([o, &g, opt_offset] {
        auto& rp = o->rp;
        if (!(rp.fps > 0)) throw ParameterError("--fps must be > 0, got " + std::to_string(rp.fps));
        if (!(rp.radius > 0)) throw ParameterError("--radius must be > 0, got " + std::to_string(rp.radius));
        if (opt_offset->count() > 0 && rp.offset < 0)
            throw ParameterError("--offset must be >= 0, got " + std::to_string(rp.offset));
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
        if (!o->frames.empty()) {
            const auto [a, b] = parse_frame_range(o->frames);
            rp.first = a;
            rp.last = b;
        }
        rp.validate();

        store::TrajectoryReader tr(o->input);
        const auto markers = o->defects.empty()
                                 ? std::map<std::int64_t, std::vector<tracking::OverlayMarker>>{}
                                 : defect_markers(o->defects, o->defects_lag);
        // The sink writes a temporary (file or folder) renamed into place at the end; an error or
        // Ctrl-C removes it.
        auto done = std::make_shared<std::int64_t>(0);
        on_interrupt(g, [o, done] {
            return "after " + std::to_string(*done) + " frames; kept: nothing (" + o->output +
                   " not written)";
        });
        rp.progress = g.progress();
        rp.on_frame = [done](std::int64_t n) { *done = n; };
        const auto s = tracking::render_overlays(tr, o->input, o->video, o->output, fmt, rp, markers);
        if (!g.quiet)
            std::cout << "render: " << s.written << " frames → " << o->output
                      << (s.skipped ? " (" + std::to_string(s.skipped) + " undecodable frames skipped)"
                                    : std::string())
                      << "\n";
    });
}

}  // namespace vibra::app
