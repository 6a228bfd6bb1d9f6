// SPDX-License-Identifier: GPL-3.0-or-later
// `vibra track INPUT... -o OUT`: video → linked trajectories (vibra HDF5), one file per input.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iostream>
#include <sstream>

#include "commands.hpp"
#include "vibra/core/error.hpp"
#include "vibra/core/frame_range.hpp"
#include "vibra/core/output_file.hpp"
#include "track_store.hpp"
#include "vibra/tracking/pipeline.hpp"

namespace vibra::app {

namespace {

namespace fs = std::filesystem;

// SIGINT / SIGTERM while tracking: the pipeline stops reading (TrackParams::cancel), the output
// is not committed, and the command says what it kept.
std::atomic<bool> g_cancel{false};
std::atomic<int> g_signal{0};
void on_signal(int sig) {
    g_signal = sig;
    g_cancel = true;
}
void install_cancel_handlers() {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
}

std::vector<double> parse_numbers(const std::string& s, std::size_t n, const std::string& flag) {
    std::vector<double> v;
    std::stringstream ss(s);
    std::string tok;
    while (std::getline(ss, tok, ',')) {
        try {
            std::size_t pos = 0;
            v.push_back(std::stod(tok, &pos));
            if (pos != tok.size()) throw std::invalid_argument(tok);
        } catch (const std::exception&) {
            throw ParameterError(flag + ": '" + tok + "' is not a number");
        }
    }
    if (v.size() != n)
        throw ParameterError(flag + " needs " + std::to_string(n) + " comma-separated numbers, got '" + s +
                             "'");
    return v;
}

std::string input_stem(const std::string& input) {
    std::string base = input;
    while (base.size() > 1 && base.back() == '/') base.pop_back();
    fs::path p(base);
    std::string stem = p.stem().string();
    if (stem.empty() || stem.find('*') != std::string::npos) stem = p.parent_path().filename().string();
    return stem.empty() ? std::string("input") : stem;
}

bool has_extension(const std::string& name, std::initializer_list<const char*> exts) {
    std::string e = fs::path(name).extension().string();
    std::transform(e.begin(), e.end(), e.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return std::any_of(exts.begin(), exts.end(), [&](const char* x) { return e == x; });
}
bool looks_like_h5_file(const std::string& name) { return has_extension(name, {".h5", ".hdf5", ".he5"}); }
bool looks_like_image(const std::string& name) {
    return has_extension(name, {".png", ".tif", ".tiff", ".jpg", ".jpeg", ".bmp", ".pgm", ".ppm"});
}

// Everything `vibra track` reads from its command line: the values, and the options whose
// presence matters (a value that means nothing, thresholds given or adapted).
struct TrackOpts {
    std::vector<std::string> inputs;
    std::string output, radii, frames, roi, roi_circle, report;
    bool checkpoint = false;
    double radius = 0, radius_small = 0, radius_large = 0;
    tracking::TrackParams tp;
    CLI::Option *opt_radius = nullptr, *opt_small = nullptr, *opt_large = nullptr, *opt_fps = nullptr,
                *opt_scale = nullptr, *opt_edge = nullptr, *opt_min_edge = nullptr;
};
using TrackOptsPtr = std::shared_ptr<TrackOpts>;

// Inputs and output.
void add_io_options(CLI::App* cmd, const TrackOptsPtr& o) {
    cmd->add_option("INPUT", o->inputs,
                    "Video file, camera file, image-sequence folder or glob (several = several videos)")
        ->required();
    cmd->add_option("-o,--output", o->output, "Output .h5 file (one input) or folder (several inputs)")
        ->required();
}

// Detection: radii, polarity, thresholds (DetectParams).
void add_detection_options(CLI::App* cmd, const TrackOptsPtr& o) {
    o->opt_radius = cmd->add_option("--radius", o->radius, "Disk radius (px), one size");
    o->opt_small = cmd->add_option("--radius-small", o->radius_small, "Radius of the small disks (px)");
    o->opt_large = cmd->add_option("--radius-large", o->radius_large, "Radius of the large disks (px)");
    cmd->add_option("--radii", o->radii,
                    "'auto' (the default without a radius): estimate one or two radii from the first frames");
    cmd->add_flag("--invert", o->tp.detect.invert, "Dark particles on a bright background");
    o->opt_edge = cmd->add_option("--edge-threshold", o->tp.detect.edge_threshold,
                                  "Voting edge: |gradient| / local contrast (default: 0.12, lower for "
                                  "weak edges measured on the first frame)")
                      ->capture_default_str();
    cmd->add_option("--min-score", o->tp.detect.min_score, "Keep vote maxima ≥ this × typical score")
        ->capture_default_str();
    o->opt_min_edge =
        cmd->add_option("--min-edge", o->tp.detect.min_edge,
                        "Keep disks with edge strength ≥ this × median (default: 0.35, lower for weak edges)")
            ->capture_default_str();
    cmd->add_option("--radius-tolerance", o->tp.detect.radius_tolerance, "Relative radius range searched")
        ->capture_default_str();
}

// Linking (LinkParams).
void add_linking_options(CLI::App* cmd, const TrackOptsPtr& o) {
    cmd->add_option("--max-step", o->tp.link.max_step,
                    "Linking search radius (px per frame); 0 = half the small radius, at least 2 px")
        ->capture_default_str();
    cmd->add_option("--memory", o->tp.link.memory, "Frames a particle may vanish and keep its id")
        ->capture_default_str();
    cmd->add_flag("--predict", o->tp.link.predict, "Constant-velocity prediction when linking");
}

// How the frames are processed: threads, strips, warm or cold, joint fit, static background.
void add_processing_options(CLI::App* cmd, const TrackOptsPtr& o) {
    cmd->add_option("--threads", o->tp.threads,
                    "Detection threads (0 = all cores); the output is the same for any count")
        ->capture_default_str();
    cmd->add_option("--strips", o->tp.n_strips,
                    "Horizontal strips of each frame, each tracked frame to frame by its own locator (0 = by "
                    "the image "
                    "height and radius); the output depends on the strips, never on --threads")
        ->capture_default_str();
    cmd->add_flag_callback(
        "--cold", [o] { o->tp.warm_start = false; },
        "Locate every frame from scratch (default: each strip starts a frame from the one before)");
    cmd->add_flag_callback(
        "--no-joint-fit", [o] { o->tp.detect.joint = false; },
        "Skip the joint template fit of all disks (touching disks then bias each other by ~0.1 px)");
    cmd->add_flag_callback(
        "--no-static-background", [o] { o->tp.static_background = false; },
        "Do not measure the static background and stuck pixels (default: measured from frames spread "
        "over the range and taken out of every frame when found; docs/tracking.md)");
}

// What the input is: frame rate, calibration, region of interest, colour channel, frame range.
void add_source_options(CLI::App* cmd, const TrackOptsPtr& o) {
    o->opt_fps = cmd->add_option("--fps", o->tp.fps, "Frame rate (frames/s), recorded in the file");
    o->opt_scale = cmd->add_option("--px-per-mm", o->tp.px_per_mm,
                                   "Image calibration (px per mm), recorded in the file");
    cmd->add_option(
        "--roi", o->roi,
        "Region of interest x0,y0,x1,y1 (px); detections outside are dropped. Default: the packing's region "
        "found on the first frames (beyond its walls, machine parts are left out); 'full' = the whole image");
    cmd->add_option("--roi-circle", o->roi_circle, "Circular region of interest cx,cy,r (px)");
    cmd->add_option("--channel", o->tp.reader.channel, "Colour → grey: -1 luma, 0 R, 1 G, 2 B")
        ->capture_default_str();
    cmd->add_option("--frames", o->frames,
                    "Frame range A:B (0-based, B exclusive; A:, :B or a single frame A)");
}

// Restarts and checkpoints; the summary file for `vibra batch`.
void add_restart_options(CLI::App* cmd, const TrackOptsPtr& o) {
    cmd->add_option("--restart-every", o->tp.restart_every,
                    "Frames after which every locator starts from scratch (so a checkpoint can resume "
                    "there); 0 = never")
        ->capture_default_str();
    cmd->add_flag("--checkpoint", o->checkpoint,
                  "Save the run every --restart-every frames in OUT.ckpt/; a killed run, started again the "
                  "same way, resumes there");
    // For `vibra batch`: the run's summary as `key = value` lines (one input only).
    cmd->add_option("--report", o->report, "Write the run's summary (frames, tracks, times) to this file")
        ->group("");
}

// The command line checked (values that mean nothing, named by their flag: usage errors, exit 2)
// and mapped onto TrackParams; validated.
void apply_track_options(TrackOpts& o, const GlobalOptions& g) {
    auto& tp = o.tp;
    // Values that mean nothing, named by their flag (usage errors, exit 2).
    auto positive = [](const CLI::Option* opt, double v, const char* unit) {
        if (opt->count() > 0 && !(v > 0))
            throw ParameterError(opt->get_name() + " must be > 0" + unit + ", got " + opt->as<std::string>());
    };
    positive(o.opt_radius, o.radius, " px");
    positive(o.opt_small, o.radius_small, " px");
    positive(o.opt_large, o.radius_large, " px");
    positive(o.opt_fps, tp.fps, " frames/s");
    positive(o.opt_scale, tp.px_per_mm, " px per mm");
    if (tp.threads < 0)
        throw ParameterError("--threads must be >= 0 (0 = all cores), got " + std::to_string(tp.threads));
    if (tp.n_strips < 0)
        throw ParameterError("--strips must be >= 0 (0 = by the image), got " + std::to_string(tp.n_strips));
    if (o.radius > 0) {
        if (o.radius_small > 0 || o.radius_large > 0)
            throw ParameterError("--radius excludes --radius-small/--radius-large");
        tp.detect.radii = {o.radius};
    } else if (o.radius_small > 0 || o.radius_large > 0) {
        if (!(o.radius_small > 0 && o.radius_large > 0))
            throw ParameterError("--radius-small and --radius-large go together");
        tp.detect.radii = {o.radius_small, o.radius_large};
    }
    if (!o.radii.empty() && o.radii != "auto")
        throw ParameterError("--radii accepts only 'auto', got '" + o.radii + "'");
    if (o.radii == "auto" && !tp.detect.radii.empty())
        throw ParameterError("--radii auto excludes --radius/--radius-small/--radius-large");
    // No radius given: estimated from the first frames (TrackParams::auto_radii_frames), and
    // what was found is said on stderr and recorded in /meta/user (radii_estimate).
    if (!g.quiet) tp.note = [](const std::string& line) { std::cerr << line << "\n"; };
    // Thresholds not given: scaled to the edge strength of the first frame (docs/tracking.md).
    tp.adapt_thresholds = o.opt_edge->count() == 0 && o.opt_min_edge->count() == 0;
    if (!o.roi.empty() && !o.roi_circle.empty())
        throw ParameterError("--roi and --roi-circle exclude each other");
    // No region given: the packing's region on the first frames (TrackParams::packing_region);
    // `--roi full` keeps the whole image.
    tp.packing_region = o.roi.empty() && o.roi_circle.empty();
    if (!o.roi.empty() && o.roi != "full") {
        const auto v = parse_numbers(o.roi, 4, "--roi");
        if (!(v[0] < v[2] && v[1] < v[3]))
            throw ParameterError("--roi is x0,y0,x1,y1 with x0 < x1 and y0 < y1, got '" + o.roi + "'");
        tp.roi = Geometry::rect(v[0], v[1], v[2], v[3]);
    }
    if (!o.roi_circle.empty()) {
        const auto v = parse_numbers(o.roi_circle, 3, "--roi-circle");
        if (!(v[2] > 0))
            throw ParameterError("--roi-circle is cx,cy,r with r > 0, got '" + o.roi_circle + "'");
        tp.roi = Geometry::circle(v[0], v[1], v[2]);
    }
    if (!o.frames.empty()) {
        const auto range = parse_frame_range(o.frames);
        tp.reader.first = range.first;
        tp.reader.last = range.last;
    }
    tp.parameters = g.command_line;
    tp.progress = g.progress();
    tp.validate();
}

// Several image files to one -o FILE.h5 (an unquoted glob expanded by the shell): one sequence,
// as the quoted pattern would be. Anything else is an error, never a folder named like the file.
void join_image_files(TrackOpts& o) {
    auto& tp = o.tp;
    if (!(o.inputs.size() > 1 && looks_like_h5_file(o.output) && !fs::is_directory(o.output))) return;
    if (!std::all_of(o.inputs.begin(), o.inputs.end(), looks_like_image))
        throw ParameterError("-o " + o.output + " is one file, but " + std::to_string(o.inputs.size()) +
                             " inputs were given that are not all image files; for one file per "
                             "input, give an output folder (-o DIR)");
    tp.input_files = o.inputs;
    std::sort(tp.input_files.begin(), tp.input_files.end());
    const std::string name = tp.input_files.front() + " … " +
                             fs::path(tp.input_files.back()).filename().string() + " (" +
                             std::to_string(tp.input_files.size()) + " image files)";
    o.inputs = {name};
}

// The run's summary as `key = value` lines (--report, for `vibra batch`).
void write_report(const std::string& path, const tracking::TrackSummary& s) {
    std::ofstream rep(path, std::ios::trunc);
    rep << "frames = " << s.frames << "\ndetections = " << s.detections << "\ntracks = " << s.tracks
        << "\ndecode_errors = " << s.decode_errors << "\ntruncated = " << (s.truncated ? 1 : 0)
        << "\nseconds = " << s.seconds << "\nseconds_first_frame = " << s.seconds_first_frame
        << "\nseconds_final = " << s.seconds_final << "\nresumed_frames = " << s.resumed_frames
        << "\nseconds_decode = " << s.seconds_decode << "\nseconds_detect = " << s.seconds_detect
        << "\nseconds_link = " << s.seconds_link << "\nseconds_write = " << s.seconds_write << "\nradii_px =";
    for (double r : s.radii) rep << " " << r;
    rep << "\n";
}

// One input tracked to `out`, with its lines for the user. SIGINT / SIGTERM: ExitStatus 128 +
// signal, saying what was kept (`n_failed`: inputs of this command that had failed before).
tracking::TrackSummary track_one(const TrackOpts& o, const GlobalOptions& g, const std::string& in,
                                 const std::string& out, bool many, std::size_t n_failed) {
    auto tpi = o.tp;
    if (o.checkpoint) tpi.checkpoint_dir = out + ".ckpt";
    tpi.cancel = &g_cancel;
    install_cancel_handlers();
    tracking::TrackSummary s;
    // One writer per output: a second `track` of the same -o fails with "in use by PID n";
    // a .partial/.spool left by a killed run is removed here (the checkpoint is kept).
    const OutputLock lock(out, {".partial", ".spool"});
    try {
        s = tracking::track_video(in, out, tpi);
    } catch (const tracking::Interrupted& e) {
        const int sig = g_signal.load();
        std::string kept = "kept: nothing written to " + out;
        if (o.checkpoint && fs::exists(out + ".ckpt"))
            kept += "; the checkpoint " + out + ".ckpt is kept: the same command resumes from it";
        if (many && n_failed > 0) kept += "; " + std::to_string(n_failed) + " input(s) had failed";
        throw ExitStatus{128 + (sig ? sig : SIGINT), "track: " + std::string(e.what()) + " (" +
                                                         (sig == SIGTERM ? "SIGTERM" : "SIGINT") + "); " +
                                                         kept};
    }
    if (g.verbose > 0 && !g.quiet && !s.background.empty()) std::cerr << in << ": " << s.background << "\n";
    if (s.resumed_frames > 0 && !g.quiet)
        std::cerr << in << ": resumed from the checkpoint in " << out << ".ckpt (" << s.resumed_frames
                  << " frames kept)\n";
    if (!g.quiet)
        std::cerr << in << " → " << out << ": " << s.frames << " frames, " << s.detections << " detections, "
                  << s.tracks << " tracks, " << s.decode_errors << " undecodable frames, "
                  << (s.seconds > 0 ? static_cast<double>(s.frames) / s.seconds : 0.0) << " frames/s"
                  << (s.truncated ? " (input truncated: file marked incomplete)" : "") << "\n";
    if (!o.report.empty()) write_report(o.report, s);
    return s;
}

// Every input, one output each (several: into the output folder). With several inputs one that
// fails is skipped with a message; at the end ExitStatus 1 lists the failed and the truncated ones.
void run_track(const TrackOpts& o, const GlobalOptions& g) {
    const bool many = o.inputs.size() > 1;
    if (many) {
        std::error_code ec;
        fs::create_directories(o.output, ec);
        if (!fs::is_directory(o.output)) throw IoError(o.output + ": cannot create the output folder");
    }
    std::vector<std::string> failed;
    std::vector<std::string> incomplete;
    for (const auto& in : o.inputs) {
        const std::string out = many ? (fs::path(o.output) / (input_stem(in) + ".h5")).string() : o.output;
        try {
            if (track_one(o, g, in, out, many, failed.size()).truncated) incomplete.push_back(in);
        } catch (const vibra::Error& e) {
            if (!many) throw;
            std::cerr << "vibra: error: " << e.what() << " (skipped)\n";
            failed.push_back(in);
        }
    }
    if (failed.empty() && incomplete.empty()) return;
    std::string msg;
    if (!failed.empty()) {
        msg += std::to_string(failed.size()) + " of " + std::to_string(o.inputs.size()) + " inputs failed:";
        for (const auto& f : failed) msg += " " + f;
    }
    if (!incomplete.empty()) {
        msg += std::string(msg.empty() ? "" : "; ") + std::to_string(incomplete.size()) +
               " input(s) truncated, output marked incomplete:";
        for (const auto& f : incomplete) msg += " " + f;
    }
    throw ExitStatus{1, msg};
}

}  // namespace

void register_track(CLI::App& app, GlobalOptions& g) {
    auto o = std::make_shared<TrackOpts>();
    o->tp.link.max_step = 0;  // automatic: half the small radius, ≥ 2 px (TrackParams)
    auto* cmd =
        app.add_subcommand("track", "Video → detections → linked trajectories (one HDF5 file per input)");
    add_io_options(cmd, o);
    add_detection_options(cmd, o);
    add_linking_options(cmd, o);
    add_processing_options(cmd, o);
    add_source_options(cmd, o);
    add_restart_options(cmd, o);
    cmd->callback([o, &g] {
        apply_track_options(*o, g);
        join_image_files(*o);
        run_track(*o, g);
    });
}

}  // namespace vibra::app
