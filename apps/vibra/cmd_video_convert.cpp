// SPDX-License-Identifier: GPL-3.0-or-later
// `vibra convert VIDEO -o OUT [--frames A:B] [--format png|tiff] [--scale]`: writes any readable
// video's frames as a 16-bit PNG or TIFF sequence holding the raw stored counts, top row first —
// what labs need to hand camera files (.cine, .mraw) to other tools — plus OUT/frames.csv with
// each frame's index, camera image number and time stamp.
#include <opencv2/core.hpp>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "vibra/core/error.hpp"
#include "vibra/core/frame_range.hpp"
#include "vibra/core/interrupt.hpp"
#include "vibra/core/output_file.hpp"
#include "vibra/tracking/video.hpp"

namespace vibra::app {

namespace {

struct ConvertOptions {
    std::string input, output, frames, format = "png";
    bool scale = false;
    int channel = -1;
};

void run_convert(const ConvertOptions& o, GlobalOptions& g) {
    if (o.format != "png" && o.format != "tiff")
        throw ParameterError("--format: '" + o.format + "' (png or tiff)");
    tracking::ReaderParams params;
    params.channel = o.channel;
    if (!o.frames.empty()) {
        const auto range = parse_frame_range(o.frames);
        params.first = range.first;
        params.last = range.last;
    }
    auto src = tracking::open_video(o.input, params);
    const auto& info = src->info();
    std::string target = o.output;  // "frames/" names the folder "frames"
    while (target.size() > 1 && target.back() == '/') target.pop_back();
    if (const auto parent = std::filesystem::path(target).parent_path(); !parent.empty())
        std::filesystem::create_directories(parent);
    // Frames and frames.csv go to OUT.partial/, renamed into place at the end (also when some
    // frames could not be read: what was read is kept); an error or Ctrl-C removes it.
    AtomicOutput out(target, AtomicOutput::Options{AtomicOutput::Kind::folder});
    auto done = std::make_shared<std::int64_t>(0);
    on_interrupt(g, [target, done] {
        return "after " + std::to_string(*done) + " frames; kept: nothing (" + target + " not written)";
    });
    const std::string csv_path = (std::filesystem::path(out.path()) / "frames.csv").string();
    std::ofstream csv(csv_path);
    if (!csv) throw IoError(target + "/frames.csv: cannot write: " + write_failure(csv_path, errno));
    csv << "# " << info.path << " (" << info.format << "), " << info.bit_depth << "-bit counts"
        << (o.scale ? " scaled to 16 bits" : " as stored") << "\nindex,image_number,time_s,file\n";
    csv.precision(12);

    const std::string ext = o.format == "png" ? ".png" : ".tif";
    std::int64_t written = 0, bad = 0;
    std::string problems;
    tracking::Frame f;
    for (;;) {
        throw_if_interrupted();
        const auto st = src->next(f);
        if (st == tracking::ReadStatus::end) break;
        if (st != tracking::ReadStatus::ok) {
            auto it = info.extra.find("last_error");
            const std::string msg =
                it != info.extra.end() ? it->second : at_frame(info.path, f.index, "could not be decoded");
            std::cerr << "vibra convert: " << msg << "\n";
            problems = msg;
            ++bad;
            if (st == tracking::ReadStatus::truncated) break;
            continue;
        }
        cv::Mat image;
        if (o.scale) {
            const int bits = info.bit_depth > 0 && info.bit_depth <= 16 ? info.bit_depth
                                                                        : (f.image.depth() == CV_8U ? 8 : 16);
            f.image.convertTo(image, CV_16U, 65535.0 / double((1 << bits) - 1));
        } else {
            f.image.convertTo(image, CV_16U);  // raw counts, no rescaling
        }
        char name[64];
        std::snprintf(name, sizeof name, "frame_%06lld", static_cast<long long>(f.index));
        const std::string file = (std::filesystem::path(out.path()) / (name + ext)).string();
        const std::string shown = (std::filesystem::path(target) / (name + ext)).string();
        bool ok = false;
        try {
            ok = tracking::write_image(file, image);
        } catch (const cv::Exception& e) {
            throw IoError(shown + ": cannot write: " + e.what());
        }
        if (!ok) throw IoError(shown + ": cannot write: " + write_failure(file));
        csv << f.index << "," << f.image_number << ",";
        if (f.time_s >= 0) csv << f.time_s;
        csv << "," << name << ext << "\n";
        *done = ++written;
    }
    csv.flush();
    if (!csv) throw IoError(target + "/frames.csv: " + write_failure(csv_path, errno));
    csv.close();
    out.commit();
    if (!g.quiet) std::cerr << "vibra convert: wrote " << written << " frames to " << o.output << "\n";
    if (bad > 0) throw ExitStatus{1, std::to_string(bad) + " frame(s) could not be read; last: " + problems};
}

}  // namespace

void register_convert(CLI::App& app, GlobalOptions& g) {
    auto o = std::make_shared<ConvertOptions>();
    auto* c =
        app.add_subcommand("convert", "Write a video's frames as a 16-bit PNG/TIFF sequence of raw counts");
    c->add_option("VIDEO", o->input, "Video, camera file (.cine, .mraw/.cih/.cihx) or image sequence")
        ->required();
    c->add_option("-o,--output", o->output, "Output folder (created): frame_NNNNNN.png + frames.csv")
        ->required();
    c->add_option("--frames", o->frames,
                  "Frame range A:B (0-based, B exclusive; A:, :B or a single frame A)");
    c->add_option("--format", o->format, "png or tiff (default png)");
    c->add_flag("--scale", o->scale, "Scale counts from the video's bit depth to the full 16-bit range");
    c->add_option("--channel", o->channel, "Colour → grey: -1 luma (default), 0/1/2 = R/G/B");
    c->callback([o, &g] { run_convert(*o, g); });
}

}  // namespace vibra::app
