// SPDX-License-Identifier: GPL-3.0-or-later
// `vibra batch DATASET -o OUTDIR`: every video of a dataset (a folder, or a TOML/CSV manifest)
// through track → analyze → figures into OUTDIR/<name>/, then the campaign table
// OUTDIR/campaign.h5 + .csv. Resumable (a rerun skips what is unchanged), safe for several
// processes on one OUTDIR (per-video locks), shardable (--shard i/N) and with a Slurm job-array
// writer (--slurm). The stages run as child processes of this program (batch/runner.hpp), so a
// video that crashes its stage is a failed row, not a failed batch. docs/batch.md.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>

#include "batch/campaign.hpp"
#include "batch/dataset.hpp"
#include "batch/runner.hpp"
#include "commands.hpp"
#include "python_package.hpp"
#include "vibra/core/checksum.hpp"
#include "vibra/core/error.hpp"
#include "vibra/core/version.hpp"

namespace vibra::app {

namespace fs = std::filesystem;
using namespace batch;

namespace {

struct BatchOptions {
    std::string dataset, outdir, only, shard;
    int threads = 0;
    std::int64_t checkpoint_every = 0;  // 0: track's own default (1000 frames)
    bool no_figures = false, collect = false, force = false;
    std::vector<std::string> plot;
    // Slurm
    bool slurm = false, submit = false;
    int shards = 0;
    std::string slurm_time, slurm_mem, slurm_partition;
    // defaults for every video (the manifest may override them)
    std::string fps, px_per_mm, radius, radius_small, radius_large, radii, roi, roi_circle, channel, frames;
    bool invert = false;
};

DatasetDefaults defaults_from(const BatchOptions& o) {
    DatasetDefaults d;
    const std::pair<const std::string*, const char*> opts[] = {{&o.fps, "--fps"},
                                                               {&o.px_per_mm, "--px-per-mm"},
                                                               {&o.radius, "--radius"},
                                                               {&o.radius_small, "--radius-small"},
                                                               {&o.radius_large, "--radius-large"},
                                                               {&o.radii, "--radii"},
                                                               {&o.roi, "--roi"},
                                                               {&o.roi_circle, "--roi-circle"},
                                                               {&o.channel, "--channel"},
                                                               {&o.frames, "--frames"}};
    for (const auto& [v, flag] : opts)
        if (!v->empty()) set_flag(d.track, {flag, *v});
    if (o.invert) set_flag(d.track, {"--invert", ""});
    return d;
}

/// sha256 of a file, or of every file of a folder (names and contents); reused from the state
/// when the size and modification time are unchanged (as make and rsync decide).
std::string input_checksum(const std::string& input, State& st) {
    std::error_code ec;
    std::vector<fs::path> files;
    if (fs::is_directory(input, ec)) {
        for (const auto& e : fs::directory_iterator(input, ec))
            if (e.is_regular_file()) files.push_back(e.path());
        std::sort(files.begin(), files.end());
    } else if (fs::is_regular_file(input, ec)) {
        files.push_back(input);
    } else {
        throw IoError(input + ": no such video file or image folder");
    }
    std::uintmax_t bytes = 0;
    std::int64_t newest = std::numeric_limits<std::int64_t>::min();  // file_clock counts may be negative
    for (const auto& f : files) {
        bytes += fs::file_size(f, ec);
        newest = std::max<std::int64_t>(newest, fs::last_write_time(f, ec).time_since_epoch().count());
    }
    const std::string stamp =
        std::to_string(files.size()) + ":" + std::to_string(bytes) + ":" + std::to_string(newest);
    if (st.count("input_stamp") && st["input_stamp"] == stamp && st.count("input_checksum"))
        return st["input_checksum"];
    std::string sum;
    if (files.size() == 1 && !fs::is_directory(input)) {
        sum = file_checksum(input);
    } else {
        std::string all;
        for (const auto& f : files) all += f.filename().string() + "\t" + file_checksum(f.string()) + "\n";
        sum = "sha256:" + sha256_hex(all);
    }
    st["input_stamp"] = stamp;
    st["input_bytes"] = std::to_string(bytes);
    return sum;
}

std::string joined(const std::vector<Flag>& flags) {
    std::string s;
    for (const auto& f : flags) s += (s.empty() ? "" : " ") + f.name + (f.value.empty() ? "" : " " + f.value);
    return s;
}

void add_flags(std::vector<std::string>& argv, const std::vector<Flag>& flags) {
    for (const auto& f : flags) {
        argv.push_back(f.name);
        if (!f.value.empty()) argv.push_back(f.value);
    }
}

void read_report(const std::string& path, const std::string& prefix, State& st) {
    for (const auto& [k, v] : read_state(path)) st[prefix + k] = v;
    fs::remove(path);
}

void record(State& st, const std::string& stage, const StageRun& r) {
    st[stage + ".wall_s"] = std::to_string(r.wall_seconds);
    st[stage + ".cpu_s"] = std::to_string(r.cpu_seconds);
    st[stage + ".peak_rss_mb"] = std::to_string(r.peak_rss_mb);
    st[stage + ".exit"] = std::to_string(r.exit_code);
}

enum class Outcome { ok, skipped, failed, busy, interrupted };

class VideoJob {
public:
    VideoJob(const VideoEntry& v, const BatchOptions& o) : v_(v), o_(o), dir_(fs::path(o.outdir) / v.name) {}

    Outcome run(std::string& message);
    /// Frames tracked by this run (0 when the video was skipped or failed before tracking).
    std::int64_t frames_tracked() const { return frames_tracked_; }

private:
    std::string path(const std::string& f) const { return (dir_ / f).string(); }
    std::vector<Flag> track_flags() const {
        auto f = v_.track;
        const bool has_radius =
            std::any_of(f.begin(), f.end(), [](const Flag& x) { return x.name.rfind("--radi", 0) == 0; });
        if (!has_radius) f.push_back({"--radii", "auto"});
        return f;
    }
    std::vector<Flag> analyze_flags() const {
        auto f = v_.analyze;
        if (!o_.only.empty()) set_flag(f, {"--only", o_.only});
        return f;
    }
    bool stage(const std::string& name, std::vector<std::string> argv, std::string& message);
    void clean_debris() const {
        for (const auto* f : {"trajectories.h5.partial", "trajectories.h5.spool", "trajectories.h5.lock",
                              "results.h5.partial", "results.h5.lock", "batch_state.txt.partial"}) {
            std::error_code ec;
            fs::remove(dir_ / f, ec);
        }
    }

    const VideoEntry& v_;
    const BatchOptions& o_;
    fs::path dir_;
    State st_;
    std::int64_t frames_tracked_ = 0;
};

/// Progress across the dataset on a terminal (videos done/total, failed, frames/s of the
/// tracking, ETA from the mean time per video so far); silent in pipes and CI.
class DatasetProgress {
public:
    DatasetProgress(std::size_t total, bool enabled)
        : total_(total), enabled_(enabled), t0_(std::chrono::steady_clock::now()) {}
    void video_done(std::int64_t frames, std::size_t failed) {
        ++done_, frames_ += frames;
        if (!enabled_) return;
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
        const double eta = static_cast<double>(total_ - done_) * s / static_cast<double>(done_);
        std::fprintf(stderr, "\rbatch: %zu/%zu videos, %zu failed, %.0f frames/s, ETA %.0f s   ", done_,
                     total_, failed, s > 0 ? static_cast<double>(frames_) / s : 0.0, eta);
        std::fflush(stderr);
        shown_ = true;
    }
    void clear() {
        if (shown_) std::fprintf(stderr, "\r%80s\r", "");
        shown_ = false;
    }

private:
    std::size_t total_, done_ = 0;
    std::int64_t frames_ = 0;
    bool enabled_, shown_ = false;
    std::chrono::steady_clock::time_point t0_;
};

bool VideoJob::stage(const std::string& name, std::vector<std::string> argv, std::string& message) {
    st_["status"] = "running";
    st_["stage"] = name;
    write_state(path("batch_state.txt"), st_);
    const auto r = run_stage(argv, path("log.txt"));
    record(st_, name, r);
    if (r.exit_code == 0) return true;
    st_["status"] = stop_signal() ? "interrupted" : "failed";
    st_["error"] = r.error.empty() ? name + " exited with " + std::to_string(r.exit_code) : r.error;
    if (stop_signal())
        st_["error"] = std::string("interrupted (") + strsignal(stop_signal()) + ") during " + name;
    clean_debris();  // a stage that died or was interrupted leaves no temporaries
    message = name + ": " + st_["error"];
    write_state(path("batch_state.txt"), st_);
    return false;
}

Outcome VideoJob::run(std::string& message) {
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (!fs::is_directory(dir_)) throw IoError(dir_.string() + ": cannot create the video's output folder");
    FileLock lock(path(".lock"));
    if (!lock.try_lock()) {
        message = "in use by another batch process (" + lock.holder() + ")";
        return Outcome::busy;
    }
    clean_debris();  // a stage killed with the batch (kill -9) left its temporaries; we hold the lock
    st_ = read_state(path("batch_state.txt"));
    std::string checksum;
    try {
        checksum = input_checksum(v_.input, st_);
    } catch (const std::exception& e) {
        st_["status"] = "failed", st_["stage"] = "input", st_["error"] = e.what();
        write_state(path("batch_state.txt"), st_);
        message = e.what();
        return Outcome::failed;
    }
    const std::string ver = vibra::version();
    const std::string track_fp =
        joined(track_flags()) + " | restart every " + std::to_string(o_.checkpoint_every) + " | vibra " + ver;
    const std::string analyze_fp = joined(analyze_flags()) + " | vibra " + ver;
    const std::string figures_fp = o_.no_figures ? "off" : "on";
    const auto same = [&](const std::string& k, const std::string& v) { return st_.count(k) && st_[k] == v; };
    const bool track_needed = o_.force || !same("input_checksum", checksum) ||
                              !same("track.settings", track_fp) || !same("track.status", "ok") ||
                              !fs::exists(path("trajectories.h5"));
    const bool analyze_needed = track_needed || !same("analyze.settings", analyze_fp) ||
                                !same("analyze.status", "ok") || !fs::exists(path("results.h5"));
    const bool figures_needed = !o_.no_figures && (analyze_needed || !same("figures.status", "ok"));
    if (!track_needed && !analyze_needed && !figures_needed && same("status", "ok")) return Outcome::skipped;

    st_["input"] = v_.input;
    st_["input_checksum"] = checksum;
    st_.erase("error");
    const std::string exe = self_executable();
    const std::string threads = std::to_string(o_.threads);
    if (track_needed) {
        st_["track.status"] = "running", st_["analyze.status"] = "pending", st_["figures.status"] = "pending";
        for (auto it = st_.begin(); it != st_.end();)  // timings of an earlier analysis are stale
            it = it->first.rfind("analysis_time.", 0) == 0 ? st_.erase(it) : std::next(it);
        std::vector<std::string> argv{exe,
                                      "track",
                                      v_.input,
                                      "-o",
                                      path("trajectories.h5"),
                                      "--report",
                                      path("track_report.txt"),
                                      "--checkpoint"};
        if (o_.checkpoint_every > 0)
            argv.insert(argv.end(), {"--restart-every", std::to_string(o_.checkpoint_every)});
        if (o_.threads > 0) argv.insert(argv.end(), {"--threads", threads});
        add_flags(argv, track_flags());
        const bool ok = stage("track", argv, message);
        read_report(path("track_report.txt"), "track.",
                    st_);  // also of a truncated input (exit 1, file kept)
        if (!ok) {
            write_state(path("batch_state.txt"), st_);
            return stop_signal() ? Outcome::interrupted : Outcome::failed;
        }
        st_["track.status"] = "ok", st_["track.settings"] = track_fp;
        if (st_.count("track.frames")) frames_tracked_ = std::stoll(st_["track.frames"]);
    }
    if (analyze_needed) {
        st_["analyze.status"] = "running";
        fs::remove(path("results.h5"), ec);  // from the trajectories of now, not merged into older results
        std::vector<std::string> argv{exe,
                                      "analyze",
                                      path("trajectories.h5"),
                                      "-o",
                                      path("results.h5"),
                                      "--report",
                                      path("analyze_report.txt")};
        if (o_.threads > 0) argv.insert(argv.end(), {"--threads", threads});
        add_flags(argv, analyze_flags());
        const bool ok = stage("analyze", argv, message);
        read_report(path("analyze_report.txt"), "analysis_", st_);
        if (!ok) return stop_signal() ? Outcome::interrupted : Outcome::failed;
        st_["analyze.status"] = "ok", st_["analyze.settings"] = analyze_fp;
    }
    if (figures_needed) {
        fs::remove_all(path("figures"), ec);
        if (!stage("figures",
                   {"/usr/bin/python3", "-m", "vibra.figures", path("results.h5"), "-o", path("figures")},
                   message))
            return stop_signal() ? Outcome::interrupted : Outcome::failed;
        st_["figures.status"] = "ok";
    }
    st_["status"] = "ok";
    st_.erase("stage");
    write_state(path("batch_state.txt"), st_);
    return Outcome::ok;
}

std::pair<int, int> parse_shard(const std::string& s) {
    const auto slash = s.find('/');
    try {
        if (slash == std::string::npos) throw std::invalid_argument(s);
        std::size_t p1 = 0, p2 = 0;
        const int i = std::stoi(s.substr(0, slash), &p1), n = std::stoi(s.substr(slash + 1), &p2);
        if (p1 != slash || p2 != s.size() - slash - 1 || n < 1 || i < 0 || i >= n)
            throw std::invalid_argument(s);
        return {i, n};
    } catch (const std::exception&) {
        throw ParameterError("--shard must be i/N with 0 <= i < N, got '" + s + "'");
    }
}

std::string shell_quote(const std::string& s) {
    if (!s.empty() &&
        s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=,+@%") ==
            std::string::npos)
        return s;
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

/// The batch's own settings as flags, for the Slurm scripts (every task runs the same batch).
std::string batch_flags(const BatchOptions& o) {
    std::string s;
    const auto add = [&](const char* flag, const std::string& v) {
        if (!v.empty()) s += std::string(" ") + flag + " " + shell_quote(v);
    };
    add("--only", o.only);
    add("--fps", o.fps), add("--px-per-mm", o.px_per_mm), add("--radius", o.radius);
    add("--radius-small", o.radius_small), add("--radius-large", o.radius_large), add("--radii", o.radii);
    add("--roi", o.roi), add("--roi-circle", o.roi_circle), add("--channel", o.channel),
        add("--frames", o.frames);
    if (o.invert) s += " --invert";
    if (o.no_figures) s += " --no-figures";
    if (o.checkpoint_every > 0) s += " --checkpoint-every " + std::to_string(o.checkpoint_every);
    return s;
}

void write_slurm(const BatchOptions& o, const Dataset& ds, const std::string& exe, bool quiet) {
    const int n = o.shards > 0 ? o.shards : static_cast<int>(std::min<std::size_t>(ds.videos.size(), 64));
    const fs::path dir = fs::path(o.outdir) / "slurm";
    fs::create_directories(dir);
    // Memory and time per task from the measured cost of videos already processed, else defaults.
    double rss = 0, sec_per_video = 0;
    int measured = 0;
    for (const auto& v : ds.videos) {
        const auto st = read_state((fs::path(o.outdir) / v.name / "batch_state.txt").string());
        if (!st.count("status") || st.at("status") != "ok") continue;
        double t = 0;
        for (const auto* stg : {"track", "analyze", "figures"}) {
            const std::string k = stg;
            if (st.count(k + ".peak_rss_mb")) rss = std::max(rss, std::stod(st.at(k + ".peak_rss_mb")));
            if (st.count(k + ".wall_s")) t += std::stod(st.at(k + ".wall_s"));
        }
        sec_per_video = std::max(sec_per_video, t);
        ++measured;
    }
    const std::size_t per_task =
        (ds.videos.size() + static_cast<std::size_t>(n) - 1) / static_cast<std::size_t>(n);
    std::string mem = o.slurm_mem, time = o.slurm_time, basis;
    if (measured > 0) {
        if (mem.empty()) mem = std::to_string(static_cast<long>(rss * 1.5 + 256)) + "M";
        if (time.empty()) {
            const long minutes =
                static_cast<long>(sec_per_video * 2 * static_cast<double>(per_task) / 60.0) + 5;
            time = std::to_string(minutes / 60) + ":" + (minutes % 60 < 10 ? "0" : "") +
                   std::to_string(minutes % 60) + ":00";
        }
        basis = "measured on " + std::to_string(measured) + " processed video(s): peak " +
                std::to_string(static_cast<long>(rss)) + " MB, slowest " +
                std::to_string(static_cast<long>(sec_per_video)) +
                " s per video; memory 1.5x + 256 MB, time 2x + 5 min";
    } else {
        if (mem.empty()) mem = "4G";
        if (time.empty()) time = "2:00:00";
        basis =
            "no video processed yet: defaults (run a few videos first, or set --slurm-mem / --slurm-time)";
    }
    const std::string common = shell_quote(exe) + " batch " + shell_quote(fs::absolute(ds.source).string()) +
                               " -o " + shell_quote(fs::absolute(o.outdir).string()) + batch_flags(o);
    const std::string part =
        o.slurm_partition.empty() ? "" : "#SBATCH --partition=" + o.slurm_partition + "\n";
    const std::string cpus = std::to_string(o.threads > 0 ? o.threads : 2);
    std::ofstream a(dir / "batch.sbatch");
    a << "#!/bin/bash\n# vibra batch: one array task per shard of " << ds.videos.size() << " videos ("
      << per_task << " per task). Memory and time " << basis << ".\n"
      << "#SBATCH --job-name=vibra-batch\n#SBATCH --array=0-" << n - 1 << "\n#SBATCH --cpus-per-task=" << cpus
      << "\n#SBATCH --mem=" << mem << "\n#SBATCH --time=" << time << "\n"
      << part << "#SBATCH --output=" << fs::absolute(dir).string() << "/batch_%A_%a.log\n"
      << "# exit 1 = some videos failed (recorded in the table): the task itself succeeded\n"
      << common << " --threads " << cpus << " --shard ${SLURM_ARRAY_TASK_ID}/" << n << " || [ $? -eq 1 ]\n";
    std::ofstream c(dir / "collect.sbatch");
    c << "#!/bin/bash\n# vibra batch: the campaign table (and figures) once every shard is done.\n"
      << "#SBATCH --job-name=vibra-collect\n#SBATCH --cpus-per-task=1\n#SBATCH --mem=1G\n#SBATCH "
         "--time=0:30:00\n"
      << part << "#SBATCH --output=" << fs::absolute(dir).string() << "/collect_%j.log\n"
      << common << " --collect";
    for (const auto& p : o.plot) c << " --plot " << shell_quote(p);
    c << "\n";
    std::ofstream s(dir / "submit.sh");
    s << "#!/bin/bash\n# Submits the array, then the collect job that runs when every task succeeded "
         "(afterok).\nset -euo pipefail\n"
      << "cd " << shell_quote(fs::absolute(dir).string()) << "\nA=$(sbatch --parsable batch.sbatch)\n"
      << "C=$(sbatch --parsable --dependency=afterok:${A%%;*} collect.sbatch)\necho \"array job $A, collect "
         "job $C\"\n";
    a.close(), c.close(), s.close();
    fs::permissions(dir / "submit.sh", fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                    fs::perm_options::add);
    if (!quiet)
        std::cerr << "batch: wrote " << (dir / "batch.sbatch").string() << " (array 0-" << n - 1
                  << ", --mem=" << mem << ", --time=" << time << "), collect.sbatch and submit.sh\n";
}

// The dataset, the output, what runs per video, sharding and collecting.
void add_batch_options(CLI::App* cmd, const std::shared_ptr<BatchOptions>& o) {
    cmd->add_option("DATASET", o->dataset,
                    "Folder of videos (image sequences as sub-folders) or manifest (.toml, .csv)")
        ->required();
    cmd->add_option("-o,--output", o->outdir,
                    "Output folder: OUTDIR/<video>/..., OUTDIR/campaign.h5 and .csv")
        ->required();
    cmd->add_option("--only", o->only,
                    "Analyses to run per video (default: the default set of `vibra analyze`)");
    cmd->add_option("--threads", o->threads, "Threads per stage (0 = all cores)")->capture_default_str();
    cmd->add_flag("--no-figures", o->no_figures, "Skip the per-video figures");
    cmd->add_flag("--force", o->force, "Redo every video, even those unchanged since the last run");
    cmd->add_option("--checkpoint-every", o->checkpoint_every,
                    "Frames per tracking checkpoint (a killed video resumes from its last one; default: "
                    "track's --restart-every, 1000)");
    cmd->add_option(
        "--shard", o->shard,
        "Process only share i of N (i/N, 0-based): the videos at positions i, i+N, … of the sorted list");
    cmd->add_flag("--collect", o->collect,
                  "Only rebuild the campaign table (and --plot figures) from what is in OUTDIR");
    cmd->add_option("--plot", o->plot,
                    "Draw every observable against this control parameter into OUTDIR/figures/ (repeatable)");
}

// A Slurm job array instead of running here.
void add_slurm_options(CLI::App* cmd, const std::shared_ptr<BatchOptions>& o) {
    cmd->add_flag("--slurm", o->slurm,
                  "Write OUTDIR/slurm/{batch.sbatch,collect.sbatch,submit.sh}: a job array + a collect job");
    cmd->add_flag("--submit", o->submit, "With --slurm: submit them (sbatch) too");
    cmd->add_option("--shards", o->shards, "With --slurm: array tasks (default: one per video, at most 64)");
    cmd->add_option("--slurm-time", o->slurm_time,
                    "With --slurm: time per task (default: from the measured cost)");
    cmd->add_option("--slurm-mem", o->slurm_mem,
                    "With --slurm: memory per task (default: from the measured cost)");
    cmd->add_option("--slurm-partition", o->slurm_partition, "With --slurm: partition");
}

// Defaults for every video (a manifest's own settings win).
void add_video_defaults(CLI::App* cmd, const std::shared_ptr<BatchOptions>& o) {
    auto* d = cmd->add_option_group("Defaults for every video (a manifest's own settings win)");
    d->add_option("--fps", o->fps, "Frame rate (frames/s)");
    d->add_option("--px-per-mm", o->px_per_mm, "Image calibration (px per mm)");
    d->add_option("--radius", o->radius, "Disk radius (px), one size");
    d->add_option("--radius-small", o->radius_small, "Radius of the small disks (px)");
    d->add_option("--radius-large", o->radius_large, "Radius of the large disks (px)");
    d->add_option("--radii", o->radii, "'auto' (the default when no radius is given)");
    d->add_option("--roi", o->roi,
                  "Region of interest x0,y0,x1,y1 (px), or 'full' (default: the packing's region)");
    d->add_option("--roi-circle", o->roi_circle, "Circular region of interest cx,cy,r (px)");
    d->add_flag("--invert", o->invert, "Dark particles on a bright background");
    d->add_option("--channel", o->channel, "Colour → grey: -1 luma, 0 R, 1 G, 2 B");
    d->add_option("--frames", o->frames, "Frame range A:B");
}

// Values that mean nothing, named by their flag (usage errors, exit 2).
void check_batch_options(const BatchOptions& o) {
    if (o.threads < 0) throw ParameterError("--threads must be >= 0, got " + std::to_string(o.threads));
    if (o.submit && !o.slurm) throw ParameterError("--submit goes with --slurm");
    if (o.checkpoint_every < 0)
        throw ParameterError("--checkpoint-every must be >= 1 frame, got " +
                             std::to_string(o.checkpoint_every));
    if (o.shards < 0) throw ParameterError("--shards must be >= 1, got " + std::to_string(o.shards));
}

// --slurm: the job scripts written, and with --submit submitted.
void slurm_batch(const BatchOptions& o, const Dataset& ds, const GlobalOptions& g) {
    write_slurm(o, ds, self_executable(), g.quiet);
    if (!o.submit) return;
    const auto r = run_stage({"/bin/bash", (fs::path(o.outdir) / "slurm" / "submit.sh").string()},
                             (fs::path(o.outdir) / "slurm" / "submit.log").string());
    if (r.exit_code != 0) throw IoError("sbatch failed: " + r.error);
    if (!g.quiet)
        std::cerr << "batch: submitted (" << (fs::path(o.outdir) / "slurm" / "submit.log").string() << ")\n";
}

// What this run did with its share of the videos.
struct BatchRun {
    int n_ok = 0, n_skipped = 0, n_busy = 0;
    std::vector<std::string> failed;  // "name (why)"
    std::string interrupted;          // "during NAME" / "after NAME" when a signal stopped the run
};

// This shard's videos, one after the other (a line each), until the end or a stop signal.
BatchRun process_videos(const BatchOptions& o, const Dataset& ds, std::pair<int, int> sh,
                        const GlobalOptions& g) {
    BatchRun run;
    install_stop_handlers();
    const auto mine = shard(ds.videos, sh.first, sh.second);
    DatasetProgress progress(mine.size(), g.progress());
    for (const auto& v : mine) {
        std::string msg;
        VideoJob job(v, o);
        const auto out = job.run(msg);
        if (out == Outcome::ok) ++run.n_ok;
        if (out == Outcome::skipped) ++run.n_skipped;
        if (out == Outcome::busy) ++run.n_busy;
        if (out == Outcome::failed) run.failed.push_back(v.name + " (" + msg + ")");
        progress.clear();
        if (!g.quiet && out != Outcome::ok && out != Outcome::skipped)
            std::cerr << "batch: " << v.name << ": " << (out == Outcome::busy ? "" : "failed: ") << msg
                      << "\n";
        if (!g.quiet && (out == Outcome::ok || out == Outcome::skipped))
            std::cerr << "batch: " << v.name << ": " << (out == Outcome::ok ? "done" : "unchanged, skipped")
                      << "\n";
        progress.video_done(job.frames_tracked(), run.failed.size());
        if (out == Outcome::interrupted || stop_signal()) {
            run.interrupted = (out == Outcome::interrupted ? "during " : "after ") + v.name;
            break;
        }
    }
    progress.clear();
    return run;
}

// The campaign table of the whole dataset (and the --plot figures). Shards running at once take
// turns (lock) and each writes it atomically.
store::Table update_campaign(const BatchOptions& o, const Dataset& ds) {
    FileLock table_lock((fs::path(o.outdir) / ".campaign.lock").string());
    table_lock.lock();
    auto table = collect_campaign(ds, o.outdir);
    write_campaign(table, o.outdir);
    if (!o.plot.empty()) {
        std::vector<std::string> argv{"/usr/bin/python3", "-m", "vibra.figures.campaign",
                                      (fs::path(o.outdir) / "campaign.h5").string(),
                                      (fs::path(o.outdir) / "figures").string()};
        argv.insert(argv.end(), o.plot.begin(), o.plot.end());
        const auto r = run_stage(argv, (fs::path(o.outdir) / "figures.log").string());
        if (r.exit_code != 0)
            throw IoError("campaign figures failed (" + (fs::path(o.outdir) / "figures.log").string() +
                          "): " + r.error);
    }
    return table;
}

// The lines for the user (stragglers, this run, the table) and the exit status: 128 + signal
// when interrupted, 1 when a video failed (this run's, or with --collect the table's).
void finish_batch(const BatchOptions& o, const BatchRun& run, const store::Table& table,
                  const GlobalOptions& g) {
    int table_failed = 0, table_pending = 0;
    const auto& status = std::get<std::vector<std::string>>(table.find("status")->data);
    for (const auto& s : status) table_failed += s == "failed", table_pending += s != "ok" && s != "failed";
    if (!g.quiet) {
        for (const auto& line : straggler_report(table)) std::cerr << "batch: straggler: " << line << "\n";
        if (!o.collect)
            std::cerr << "batch: " << run.n_ok << " done, " << run.n_skipped << " unchanged, "
                      << run.failed.size() << " failed"
                      << (run.n_busy ? ", " + std::to_string(run.n_busy) + " busy in another process" : "")
                      << "\n";
        std::cerr << "batch: campaign table " << (fs::path(o.outdir) / "campaign.h5").string() << ": "
                  << status.size() << " videos, "
                  << status.size() - static_cast<std::size_t>(table_failed + table_pending) << " ok, "
                  << table_failed << " failed, " << table_pending << " not done\n";
    }
    if (!run.interrupted.empty()) {
        const int sig = stop_signal();
        throw ExitStatus{128 + (sig ? sig : 2), "batch: interrupted " + run.interrupted + "; kept " +
                                                    std::to_string(run.n_ok) +
                                                    " finished video(s) this run and the campaign table; "
                                                    "rerun the same command to resume"};
    }
    if (!run.failed.empty()) {
        std::string msg = "batch: " + std::to_string(run.failed.size()) + " video(s) failed:";
        for (const auto& f : run.failed) msg += " " + f;
        throw ExitStatus{1, msg};
    }
    if (o.collect && table_failed > 0)
        throw ExitStatus{1, "batch: " + std::to_string(table_failed) + " video(s) in the table failed"};
}

void run_batch(const BatchOptions& o, const GlobalOptions& g) {
    check_batch_options(o);
    if (!o.no_figures || !o.plot.empty()) use_python_package();  // the stages run python3 -m vibra.figures
    std::pair<int, int> sh{0, 1};
    if (!o.shard.empty()) sh = parse_shard(o.shard);
    const Dataset ds = load_dataset(o.dataset, defaults_from(o));
    std::error_code ec;
    fs::create_directories(o.outdir, ec);
    if (!fs::is_directory(o.outdir)) throw IoError(o.outdir + ": cannot create the output folder");
    if (o.slurm) {
        slurm_batch(o, ds, g);
        return;
    }
    const BatchRun run = o.collect ? BatchRun{} : process_videos(o, ds, sh, g);
    finish_batch(o, run, update_campaign(o, ds), g);
}

}  // namespace

void register_batch(CLI::App& app, GlobalOptions& g) {
    auto o = std::make_shared<BatchOptions>();
    auto* cmd = app.add_subcommand(
        "batch", "A dataset of videos → per-video trajectories, results, figures + the campaign table");
    add_batch_options(cmd, o);
    add_slurm_options(cmd, o);
    add_video_defaults(cmd, o);
    cmd->callback([o, &g] { run_batch(*o, g); });
}

}  // namespace vibra::app
