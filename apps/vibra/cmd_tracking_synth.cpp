// SPDX-License-Identifier: GPL-3.0-or-later
// `vibra synth`: synthetic video of bi-disperse disks with exact ground truth (vibra HDF5).
#include <filesystem>
#include <iostream>
#include <limits>

#include "commands.hpp"
#include "vibra/core/error.hpp"
#include "vibra/core/progress.hpp"
#include "vibra/store/trajectory_file.hpp"
#include "vibra/tracking/synth.hpp"
#include "vibra/tracking/video_writer.hpp"

namespace vibra::app {

namespace {

namespace fs = std::filesystem;

/// Output format from --format or the output name: .avi → avi, .tif/.tiff-less folder → png.
tracking::VideoFormat guess_video_format(const std::string& out, const std::string& format) {
    if (out.empty()) throw ParameterError("-o must not be empty");
    if (!format.empty()) return tracking::video_format_from_string(format);
    const auto ext = fs::path(out).extension().string();
    if (ext == ".avi") return tracking::VideoFormat::avi_raw;
    if (ext == ".mkv") return tracking::VideoFormat::avi_ffv1;
    if (ext.empty() || out.back() == '/') return tracking::VideoFormat::png;
    throw ParameterError("-o " + out +
                         ": cannot tell the format from the name; use .avi, a folder, or --format");
}

std::string default_truth_path(const std::string& out) {
    std::string base = out;
    while (base.size() > 1 && base.back() == '/') base.pop_back();
    const fs::path p(base);
    if (p.has_extension()) return (p.parent_path() / (p.stem().string() + ".truth.h5")).string();
    return base + ".truth.h5";
}

// Everything `vibra synth` reads from its command line.
struct SynthOpts {
    tracking::SynthParams sp;
    std::string output, truth, format, look = "plain";
    double fps = 25;
};
using SynthOptsPtr = std::shared_ptr<SynthOpts>;

// The video and truth files.
void add_output_options(CLI::App* cmd, const SynthOptsPtr& o) {
    cmd->add_option(
           "-o,--output", o->output,
           "Video: NAME.avi (uncompressed 8-bit grey), NAME.mkv/--format ffv1 (lossless), or a folder "
           "(PNG/TIFF sequence, 8 or 16 bit)")
        ->required();
    cmd->add_option("--truth", o->truth,
                    "Ground-truth trajectory file (default: NAME.truth.h5 beside the video)");
    cmd->add_option("--format", o->format, "avi, ffv1, png or tiff (default: from the output name)")
        ->check(CLI::IsMember({"avi", "ffv1", "png", "tiff"}));
}

// The box and its disks.
void add_scene_options(CLI::App* cmd, const SynthOptsPtr& o) {
    auto& sp = o->sp;
    auto& rp = sp.render;
    const char* grp = "Scene";
    cmd->add_option("--width", rp.width, "Image width (px)")
        ->capture_default_str()
        ->check(CLI::Range(1, std::numeric_limits<int>::max()))
        ->group(grp);
    cmd->add_option("--height", rp.height, "Image height (px)")
        ->capture_default_str()
        ->check(CLI::Range(1, std::numeric_limits<int>::max()))
        ->group(grp);
    cmd->add_option("--frames", sp.frames, "Number of frames")
        ->capture_default_str()
        ->check(CLI::Range(1, std::numeric_limits<int>::max()))
        ->group(grp);
    cmd->add_option("--seed", sp.seed, "Seed of the dynamics")->capture_default_str()->group(grp);
    cmd->add_option("--radius-small", sp.radius_small, "Radius of the small disks (px)")
        ->capture_default_str()
        ->group(grp);
    cmd->add_option("--radius-large", sp.radius_large,
                    "Radius of the large disks (px); equal to --radius-small = one size")
        ->capture_default_str()
        ->group(grp);
    cmd->add_option("--n-small", sp.n_small, "Number of small disks (default: from --packing-fraction)")
        ->group(grp);
    cmd->add_option("--n-large", sp.n_large, "Number of large disks (default: from --packing-fraction)")
        ->group(grp);
    cmd->add_option("--packing-fraction", sp.packing_fraction,
                    "Area fraction in the box when counts are not given")
        ->capture_default_str()
        ->group(grp);
    cmd->add_option("--margin", sp.margin, "Distance of the box walls from the image border (px)")
        ->capture_default_str()
        ->group(grp);
}

// The soft-disk dynamics.
void add_dynamics_options(CLI::App* cmd, const SynthOptsPtr& o) {
    auto& sp = o->sp;
    const char* grp = "Dynamics (px, frames)";
    cmd->add_option("--step-rms", sp.step_rms,
                    "Per-axis RMS displacement per frame of a free small disk (px)")
        ->capture_default_str()
        ->group(grp);
    cmd->add_option("--active-speed", sp.active_speed, "Self-propulsion speed (px/frame)")
        ->capture_default_str()
        ->group(grp);
    cmd->add_option("--rotational-diffusion", sp.rotational_diffusion,
                    "Diffusion of the propulsion direction (rad^2/frame)")
        ->capture_default_str()
        ->group(grp);
    cmd->add_option("--damping", sp.damping, "Friction rate (1/frame)")->capture_default_str()->group(grp);
    cmd->add_option("--stiffness", sp.stiffness, "Contact spring (0 = automatic, overlaps < 0.1 px)")
        ->capture_default_str()
        ->group(grp);
    cmd->add_option("--substeps", sp.substeps, "Integration steps per frame (0 = automatic)")
        ->capture_default_str()
        ->group(grp);
    cmd->add_option("--equilibrate", sp.equilibrate, "Frames simulated before the first recorded one")
        ->capture_default_str()
        ->group(grp);
}

// How a disk looks: look, levels, blur, exposure.
void add_look_options(CLI::App* cmd, const SynthOptsPtr& o) {
    auto& sp = o->sp;
    auto& rp = sp.render;
    const char* grp = "Rendering";
    cmd->add_option("--look", o->look, "Disk look: plain, dark-ring, marker-dot, bright-rim")
        ->capture_default_str()
        ->check(CLI::IsMember({"plain", "dark-ring", "ring", "marker-dot", "dot", "bright-rim", "rim"}))
        ->group(grp);
    cmd->add_option("--bit-depth", rp.bit_depth, "8 or 16 (16 only for png/tiff)")
        ->capture_default_str()
        ->check(CLI::IsMember({8, 16}))
        ->group(grp);
    cmd->add_option("--background", rp.background, "Background level (fraction of full scale)")
        ->capture_default_str()
        ->group(grp);
    cmd->add_option("--foreground", rp.foreground, "Disk level (fraction of full scale)")
        ->capture_default_str()
        ->group(grp);
    cmd->add_flag("--invert", rp.dark_on_bright, "Dark disks on a bright background (swap the two levels)")
        ->group(grp);
    cmd->add_option("--blur", rp.blur_sigma,
                    "Gaussian PSF sigma (px), applied before pixel integration; 0 = sharp")
        ->capture_default_str()
        ->group(grp);
    cmd->add_option("--motion-blur", sp.exposure_subframes,
                    "Sub-frame positions averaged over the exposure (1 = none)")
        ->capture_default_str()
        ->group(grp);
    cmd->add_option("--exposure", sp.exposure, "Exposure time / frame interval, in (0, 1]")
        ->capture_default_str()
        ->group(grp);
}

// What the camera and the light add: noise, illumination, plate texture, stuck pixels; the
// frame rate of the AVI header.
void add_camera_options(CLI::App* cmd, const SynthOptsPtr& o) {
    auto& rp = o->sp.render;
    const char* grp = "Rendering";
    cmd->add_option("--noise", rp.noise_sigma,
                    "Gaussian noise sigma, in units of the disk/background contrast")
        ->capture_default_str()
        ->group(grp);
    cmd->add_option("--photons", rp.photons_full_scale, "Poisson noise: photons at full scale (0 = none)")
        ->capture_default_str()
        ->group(grp);
    cmd->add_option("--gradient", rp.gradient, "Illumination gain 1-g/2 .. 1+g/2 across the frame")
        ->capture_default_str()
        ->group(grp);
    cmd->add_option("--gradient-angle", rp.gradient_angle, "Direction of the gradient (rad from +x)")
        ->capture_default_str()
        ->group(grp);
    cmd->add_option("--flicker", rp.flicker, "Relative RMS of the per-frame brightness")
        ->capture_default_str()
        ->group(grp);
    cmd->add_option("--vignetting", rp.vignetting,
                    "Vignetting: gain 1 - v (d/d_corner)^2 with the distance d from the centre")
        ->capture_default_str()
        ->group(grp);
    cmd->add_option("--light-blobs", rp.light_blobs, "Number of Gaussian light spots at random places")
        ->capture_default_str()
        ->group(grp);
    cmd->add_option("--light-blob-amplitude", rp.light_blob_amplitude,
                    "Relative gain added at the centre of a light spot")
        ->capture_default_str()
        ->group(grp);
    cmd->add_option("--light-blob-radius", rp.light_blob_radius, "Gaussian sigma of a light spot (px)")
        ->capture_default_str()
        ->group(grp);
    cmd->add_option("--plate-texture", rp.plate_texture,
                    "Static background texture RMS, in units of the disk/background contrast")
        ->capture_default_str()
        ->group(grp);
    cmd->add_option("--plate-texture-scale", rp.plate_texture_scale,
                    "Smoothness of the background texture (px; octaves at 1x and 4x)")
        ->capture_default_str()
        ->group(grp);
    cmd->add_option("--hot-pixels", rp.hot_pixel_fraction, "Fraction of pixels stuck at full scale")
        ->capture_default_str()
        ->group(grp);
    cmd->add_option("--dead-pixels", rp.dead_pixel_fraction, "Fraction of pixels stuck at 0")
        ->capture_default_str()
        ->group(grp);
    cmd->add_option("--render-seed", rp.seed, "Seed of noise, flicker and the hot/dead pixel pattern")
        ->capture_default_str()
        ->group(grp);
    cmd->add_option("--fps", o->fps, "Frame rate written into the AVI header")
        ->capture_default_str()
        ->group(grp);
}

// The video and its truth written (both temporaries until the end: an error or Ctrl-C removes
// them), with a line for the user.
void run_synth(const SynthOptsPtr& op, GlobalOptions& g) {
    SynthOpts& o = *op;
    auto& sp = o.sp;
    sp.render.look = tracking::disk_look_from_string(o.look);
    if (!(o.fps > 0)) throw ParameterError("--fps must be > 0, got " + std::to_string(o.fps));
    sp.validate();
    const auto fmt = guess_video_format(o.output, o.format);
    if (sp.render.bit_depth == 16 &&
        (fmt == tracking::VideoFormat::avi_raw || fmt == tracking::VideoFormat::avi_ffv1))
        throw ParameterError("--bit-depth 16 needs a png or tiff sequence (AVI output is 8-bit)");
    const std::string truth = o.truth.empty() ? default_truth_path(o.output) : o.truth;
    const bool folder = fmt == tracking::VideoFormat::png || fmt == tracking::VideoFormat::tiff;
    std::error_code ec;
    if (!folder && fs::exists(o.output, ec) && fs::is_directory(o.output, ec))
        throw IoError(o.output + ": is a folder; give a file name for AVI output");
    auto written_frames = std::make_shared<std::int64_t>(0);
    on_interrupt(g, [op, truth, written_frames, fmt] {
        return "after " + std::to_string(*written_frames) + " of " + std::to_string(op->sp.frames) +
               " frames; kept: nothing (" + op->output + " and " + truth + " not written)";
    });

    tracking::SynthGenerator gen(sp);
    const auto md0 = gen.metadata();
    Metadata meta = md0;
    meta.source.file = o.output;
    meta.source.parameters = g.command_line;
    store::ColumnSet cols;
    cols.velocity = true;
    cols.radius = true;
    std::int64_t written = 0;
    {  // both outputs are temporaries until the end: an error or Ctrl-C removes them
        store::TrajectoryWriter tw(truth, meta, cols);
        tracking::FrameSink sink(o.output, fmt, o.fps);
        Progress prog("synth", sp.frames, g.progress());
        cv::Mat img;
        TrajectoryTable rows;
        while (true) {
            rows.clear();
            if (!gen.next(img, rows)) break;
            sink.write(img);
            *written_frames = ++written;
            tw.append(rows, 1);
            prog.update(written);
        }
        sink.close();
        prog.finish();
        tw.meta().user["synth_max_overlap_px"] = std::to_string(gen.max_overlap());
        tw.commit();
    }
    if (gen.max_overlap() > 0.2)
        std::cerr << "vibra synth: warning: largest disk overlap " << gen.max_overlap()
                  << " px exceeds 0.2 px; raise --stiffness or lower --packing-fraction\n";
    if (!g.quiet) {
        const auto& u = gen.metadata().user;
        std::cout << "synth: " << gen.n_disks() << " disks (" << u.at("synth_n_small")
                  << " small r=" << sp.radius_small << " px, " << u.at("synth_n_large")
                  << " large r=" << sp.radius_large << " px), " << written << " frames " << sp.render.width
                  << "x" << sp.render.height << " " << to_string(sp.render.look) << " → " << o.output << " ("
                  << tracking::to_string(fmt) << "); truth → " << truth << "; max overlap "
                  << gen.max_overlap() << " px\n";
    }
}

}  // namespace

void register_synth(CLI::App& app, GlobalOptions& g) {
    auto o = std::make_shared<SynthOpts>();
    o->sp.render.width = o->sp.render.height = 512;
    auto* cmd = app.add_subcommand(
        "synth",
        "Synthetic video of bi-disperse disks (soft-disk dynamics, exact sub-pixel rendering) "
        "with its ground truth as a vibra HDF5 trajectory file");
    add_output_options(cmd, o);
    add_scene_options(cmd, o);
    add_dynamics_options(cmd, o);
    add_look_options(cmd, o);
    add_camera_options(cmd, o);
    cmd->callback([o, &g] { run_synth(o, g); });
}

}  // namespace vibra::app
