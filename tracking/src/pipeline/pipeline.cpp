// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/tracking/pipeline.hpp"

#include <algorithm>
#include <cmath>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "vibra/core/error.hpp"
#include "vibra/core/output_file.hpp"
#include "vibra/core/progress.hpp"
#include "vibra/core/version.hpp"
#include "vibra/core/workers.hpp"
#include "vibra/tracking/packing_region.hpp"
#include "vibra/tracking/species.hpp"
#include "detail/checkpoint.hpp"
#include "detail/static_background.hpp"
#include "detail/strips.hpp"

namespace vibra::tracking {

using detail::auto_strip_count;  // frame strips (detail/strips.hpp)
using detail::FrameStrip;
using detail::locate_in_strip;
using detail::merge_strips;
using detail::plan_strips;

void TrackParams::validate() const {
    if (restart_every < 0)
        throw ParameterError("track: restart_every must be >= 0 (0 = never), got " +
                             std::to_string(restart_every));
    if (!checkpoint_dir.empty() && restart_every == 0)
        throw ParameterError("track: checkpoints need restart_every > 0");
    if (!detect.radii.empty()) detect.validate();
    locator.validate();
    if (link.max_step != 0) link.validate();
    if (threads < 0) throw ParameterError("track: threads must be >= 0, got " + std::to_string(threads));
    if (background_frames < 8 || background_frames > 1024)
        throw ParameterError("track: background_frames must be in [8, 1024], got " +
                             std::to_string(background_frames));
    if (n_strips < 0) throw ParameterError("track: n_strips must be >= 0, got " + std::to_string(n_strips));
    if (fps < 0) throw ParameterError("track: fps must be >= 0, got " + std::to_string(fps));
    if (px_per_mm < 0)
        throw ParameterError("track: px_per_mm must be >= 0, got " + std::to_string(px_per_mm));
    if (auto_radii_frames < 1) throw ParameterError("track: auto_radii_frames must be >= 1");
    if (!(link_species_confidence >= 0 && link_species_confidence <= 1))
        throw ParameterError("track: link_species_confidence must be in [0, 1], got " +
                             std::to_string(link_species_confidence));
    if (roi.kind == GeometryKind::periodic_box)
        throw ParameterError("track: roi must be a rectangle or a circle");
    if (roi.kind == GeometryKind::window_rect && !(roi.x1 > roi.x0 && roi.y1 > roi.y0))
        throw ParameterError("track: roi needs x0 < x1 and y0 < y1");
    if (roi.kind == GeometryKind::window_circle && !(roi.r > 0))
        throw ParameterError("track: roi circle radius must be > 0");
}

namespace {

// One decoded frame (or a decode problem) in stream order.
struct Item {
    std::int64_t seq = 0;
    ReadStatus status = ReadStatus::ok;
    Frame frame;
    std::vector<Particle> parts;
    int strip = 0;  // which strip of the frame `parts` holds (strips mode)
};

template <class T>
class BoundedQueue {
public:
    explicit BoundedQueue(std::size_t cap) : cap_(cap) {}
    bool push(T v) {
        std::unique_lock lk(m_);
        cv_not_full_.wait(lk, [&] { return q_.size() < cap_ || closed_; });
        if (closed_) return false;
        q_.push_back(std::move(v));
        cv_not_empty_.notify_one();
        return true;
    }
    bool pop(T& v) {
        std::unique_lock lk(m_);
        cv_not_empty_.wait(lk, [&] { return !q_.empty() || closed_; });
        if (q_.empty()) return false;
        v = std::move(q_.front());
        q_.pop_front();
        cv_not_full_.notify_one();
        return true;
    }
    void close() {
        std::lock_guard lk(m_);
        closed_ = true;
        cv_not_empty_.notify_all();
        cv_not_full_.notify_all();
    }

private:
    std::size_t cap_;
    std::deque<T> q_;
    bool closed_ = false;
    std::mutex m_;
    std::condition_variable cv_not_empty_, cv_not_full_;
};

// Results arrive out of order from the workers; the linker takes them in order. With strips, a
// frame is complete when all its strips have arrived (`pieces`, indexed by strip).
class Reorder {
public:
    explicit Reorder(int n_pieces) : n_pieces_(n_pieces) {}
    void put(Item it) {
        std::lock_guard lk(m_);
        auto& slot = done_[it.seq];
        if (slot.pieces.empty()) slot.pieces.resize(static_cast<std::size_t>(n_pieces_));
        slot.pieces[static_cast<std::size_t>(it.strip)] = std::move(it.parts);
        if (it.strip == 0) slot.item = std::move(it);
        if (++slot.arrived == n_pieces_) cv_.notify_all();
    }
    // Waits for frame `seq`, all its pieces; false when the stream ended without it (every
    // worker is done: nothing more can come).
    bool take(std::int64_t seq, Item& out, std::vector<std::vector<Particle>>& pieces) {
        std::unique_lock lk(m_);
        cv_.wait(lk, [&] {
            auto it = done_.find(seq);
            return (it != done_.end() && it->second.arrived == n_pieces_) || finished_;
        });
        return pop_complete(seq, out, pieces);
    }
    // Frame `seq` if all its pieces are there (true), without waiting.
    bool try_take(std::int64_t seq, Item& out, std::vector<std::vector<Particle>>& pieces) {
        std::lock_guard lk(m_);
        return pop_complete(seq, out, pieces);
    }
    void finish() {  // every worker is done
        std::lock_guard lk(m_);
        finished_ = true;
        cv_.notify_all();
    }

private:
    bool pop_complete(std::int64_t seq, Item& out, std::vector<std::vector<Particle>>& pieces) {  // under m_
        auto it = done_.find(seq);
        if (it == done_.end() || it->second.arrived < n_pieces_) return false;
        out = std::move(it->second.item);
        pieces = std::move(it->second.pieces);
        done_.erase(it);
        return true;
    }
    struct Slot {
        Item item;
        std::vector<std::vector<Particle>> pieces;
        int arrived = 0;
    };
    int n_pieces_;
    std::map<std::int64_t, Slot> done_;
    bool finished_ = false;
    std::mutex m_;
    std::condition_variable cv_;
};

// Strips: the (strip, frame) tasks, taken by whichever worker is free. A strip's frames go in
// order (its locator starts each from the one before), one worker at a time; a free worker takes
// the strip that is furthest behind, so that with more strips than workers a slower core or a
// denser band of the frame does not hold the others back. A decoded frame is kept (shared, read
// only) until every strip is done with it; at most `cap` frames.
class StripTasks {
public:
    StripTasks(std::size_t n_strips, std::size_t cap, std::int64_t first_seq = 0)
        : next_(n_strips, first_seq), busy_(n_strips, 0), base_(first_seq), cap_(cap) {}
    bool push(Item it) {  // the reader; false once closed
        std::unique_lock lk(m_);
        cv_.wait(lk, [&] { return frames_.size() < cap_ || closed_; });
        if (closed_) return false;
        frames_.push_back(std::move(it));
        cv_.notify_all();
        return true;
    }
    void close() {
        std::lock_guard lk(m_);
        closed_ = true;
        cv_.notify_all();
    }
    // Waits for a task: strip `k` of `it` (the frame shared, not copied); false when none is left.
    bool take(std::size_t& k, Item& it) {
        std::unique_lock lk(m_);
        while (true) {
            const auto end = base_ + static_cast<std::int64_t>(frames_.size());
            std::size_t best = next_.size();
            for (std::size_t s = 0; s < next_.size(); ++s)
                if (!busy_[s] && next_[s] < end && (best == next_.size() || next_[s] < next_[best])) best = s;
            if (best < next_.size()) {
                busy_[best] = 1;
                k = best;
                const Item& f = frames_[static_cast<std::size_t>(next_[best] - base_)];
                it.seq = f.seq, it.status = f.status, it.frame = f.frame, it.strip = static_cast<int>(best);
                it.parts.clear();
                return true;
            }
            if (closed_ && std::all_of(next_.begin(), next_.end(), [&](std::int64_t n) { return n == end; }))
                return false;
            cv_.wait(lk);
        }
    }
    // Whether the worker that just finished a task of strip k should consume the frames that are
    // complete: its strip is not behind any other, or no frame is left to read.
    bool may_consume(std::size_t k) {
        std::lock_guard lk(m_);
        return closed_ || next_[k] >= *std::max_element(next_.begin(), next_.end());
    }
    void done(std::size_t k) {
        std::lock_guard lk(m_);
        busy_[k] = 0;
        ++next_[k];
        const auto lowest = *std::min_element(next_.begin(), next_.end());
        while (!frames_.empty() && base_ < lowest) frames_.pop_front(), ++base_;
        cv_.notify_all();
    }

private:
    std::vector<std::int64_t> next_;  // per strip: the next frame (seq) it needs
    std::vector<char> busy_;
    std::int64_t base_ = 0;    // the seq of frames_.front()
    std::deque<Item> frames_;  // frames base_, base_+1, …
    std::size_t cap_;
    bool closed_ = false;
    std::mutex m_;
    std::condition_variable cv_;
};

// What the vote at the end needs of each row, in file order: its particle and own species.
struct SpoolRow {
    std::int64_t particle;
    float conf;
    std::int8_t species;
};

struct Spool {
    std::string path;
    std::FILE* f = nullptr;
    explicit Spool(std::string p) : path(std::move(p)) {
        f = std::fopen(path.c_str(), "w+b");
        if (!f)
            throw IoError(
                path + ": cannot create the temporary spool file beside the output: " + std::strerror(errno));
    }
    ~Spool() {
        if (f) std::fclose(f);
        std::error_code ec;
        std::filesystem::remove(path, ec);
    }
    void write(const std::vector<SpoolRow>& rows) {
        if (!rows.empty() && std::fwrite(rows.data(), sizeof(SpoolRow), rows.size(), f) != rows.size())
            throw IoError(path + ": " + write_failure(path, errno));
    }
};

/// What a checkpoint must match to be resumed: the input (path, size, modification time), the
/// settings (the command line) and the program.
std::string run_fingerprint(const std::string& input, const TrackParams& p) {
    namespace fs = std::filesystem;
    std::error_code ec;
    std::string id = "input: " + input + "\n";
    for (const auto& f : p.input_files) {  // a list of image files: each one's name and time
        id += f + " " + std::to_string(fs::last_write_time(f, ec).time_since_epoch().count()) + "\n";
    }
    if (fs::is_regular_file(input, ec)) {
        id += "bytes: " + std::to_string(fs::file_size(input, ec)) + "\n";
        id += "mtime: " + std::to_string(fs::last_write_time(input, ec).time_since_epoch().count()) + "\n";
    } else if (fs::is_directory(input, ec)) {
        for (const auto& e : fs::directory_iterator(input, ec))
            id += e.path().filename().string() + " " +
                  std::to_string(e.last_write_time(ec).time_since_epoch().count()) + "\n";
    }
    // The command line without what cannot change the output: verbosity, the thread count (the
    // output is the same for any), the summary file, the checkpoint switch itself.
    std::string params;
    std::istringstream words(p.parameters);
    for (std::string w; words >> w;) {
        const bool verbosity = w == "-q" || w == "--quiet" || w == "--verbose" ||
                               (w.rfind("-v", 0) == 0 && w.find_first_not_of('v', 1) == std::string::npos);
        if (verbosity || w == "--checkpoint" || w.rfind("--threads=", 0) == 0 || w.rfind("--report=", 0) == 0)
            continue;
        if (w == "--threads" || w == "--report") {
            words >> w;  // and its value
            continue;
        }
        params += " " + w;
    }
    id += "parameters:" + params + "\nvibra: " + vibra::version() +
          "\nframes: " + std::to_string(p.reader.first) + ":" + std::to_string(p.reader.last) + "\n";
    // What the run derived from the frames and applies to every frame: the radii and the region
    // (a packing region found by another build must not be mixed with this one's).
    char derived[256];
    std::snprintf(derived, sizeof derived, "roi: %d %.17g %.17g %.17g %.17g %.17g %.17g %.17g\n",
                  static_cast<int>(p.roi.kind), p.roi.x0, p.roi.y0, p.roi.x1, p.roi.y1, p.roi.cx, p.roi.cy,
                  p.roi.r);
    id += derived;
    for (double r : p.detect.radii) id += "radius: " + std::to_string(r) + "\n";
    return id;
}

// The region tracked: the image, or the ROI within it. A disk crossing its edge is flagged
// (`edge` column: its centre is biased); the analysis window (Metadata::geometry) is the region
// inset by the large radius, where a whole disk fits (docs/tracking.md, "Edges").
struct EdgeRegion {
    double x0 = 0, y0 = 0, x1 = 0, y1 = 0;  // the image (pixel edges) ∩ a rectangular ROI
    Geometry circle;                        // a circular ROI, else unbounded
    double r_default = 0;                   // radius of a disk without a measured one
    bool cut(double x, double y, double r) const {
        if (!(r > 0)) r = r_default;
        if (x - r < x0 || x + r > x1 || y - r < y0 || y + r > y1) return true;
        return circle.kind == GeometryKind::window_circle &&
               std::hypot(x - circle.cx, y - circle.cy) + r > circle.r;
    }
    // The analysis window: where the centre of a disk of radius R keeps the disk inside.
    Geometry window(double R) const {
        if (circle.kind == GeometryKind::window_circle && circle.r > R)
            return Geometry::circle(circle.cx, circle.cy, circle.r - R);
        if (circle.kind == GeometryKind::window_circle) return circle;
        if (x1 - x0 > 2 * R && y1 - y0 > 2 * R) return Geometry::rect(x0 + R, y0 + R, x1 - R, y1 - R);
        return Geometry::rect(x0, y0, x1, y1);  // smaller than a disk: the region itself
    }
};

EdgeRegion edge_region(std::int64_t W, std::int64_t H, const Geometry& roi, double r_default) {
    EdgeRegion e;
    e.x0 = -0.5, e.y0 = -0.5, e.x1 = static_cast<double>(W) - 0.5, e.y1 = static_cast<double>(H) - 0.5;
    if (roi.kind == GeometryKind::window_rect) {
        e.x0 = std::max(e.x0, roi.x0), e.y0 = std::max(e.y0, roi.y0);
        e.x1 = std::min(e.x1, roi.x1), e.y1 = std::min(e.y1, roi.y1);
    } else if (roi.kind == GeometryKind::window_circle) {
        e.circle = roi;
    }
    e.r_default = r_default;
    return e;
}

bool inside_roi(const Geometry& g, double x, double y) {
    return g.kind == GeometryKind::unbounded || g.contains(x, y);
}

std::int64_t since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
        .count();
}

// What is settled before the first frame: the settings completed (radii, linking step), the
// source, the checkpoint resumed from, the strips and the metadata known then.
struct RunPlan {
    TrackParams p;
    std::unique_ptr<FrameSource> src;
    VideoInfo info;
    std::unique_ptr<detail::CheckpointFolder> ckpt;
    std::int64_t first_seq = 0;
    std::vector<FrameStrip> strips;
    bool by_strips = false;
    int n_pieces = 1, n_threads = 1;
    double seam_zone = 0;
    EdgeRegion region;
    bool packing_roi = false;  // the ROI is the packing region (TrackParams::packing_region)
    Metadata meta;
    detail::StaticBackground background;  // taken out of every frame by the reader
};

// The run's input over a frame range: a video, a camera file, a folder or glob, or the image files
// of TrackParams::input_files (`input` then only names them).
std::unique_ptr<FrameSource> open_input(const std::string& input, const TrackParams& p,
                                        const ReaderParams& rp) {
    return p.input_files.empty() ? open_video(input, rp) : open_image_files(p.input_files, input, rp);
}

// The static background and stuck pixels, measured from up to p.background_frames frames spread
// over the range (the same frames for every run of the range, so the same correction whatever
// the threads, the strips or a resumed checkpoint).
detail::StaticBackground measure_background(const std::string& input, const TrackParams& p,
                                            const VideoInfo& info) {
    const std::int64_t n = frames_in_range(info.n_frames, p.reader);
    const std::int64_t frame_bytes = std::max<std::int64_t>(1, info.width * info.height * 2);
    const int k_mem =
        static_cast<int>(std::min<std::int64_t>(p.background_frames, (256LL << 20) / frame_bytes));
    if (n < 0 || n < 16 || k_mem < 16) return {};
    // The frames numbered `wanted` (in order), each shown to `see` as it is decoded: read through
    // when they are dense, else one by one (by seeking, or reopening a source that cannot seek).
    const auto visit = [&](const std::vector<std::int64_t>& wanted,
                           const std::function<void(const cv::Mat&)>& see) {
        Frame fr;
        std::unique_ptr<FrameSource> src;
        if (n <= 2 * static_cast<std::int64_t>(wanted.size())) {
            src = open_input(input, p, p.reader);
            std::size_t next = 0;
            for (std::int64_t f = p.reader.first; next < wanted.size(); ++f) {
                const auto st = src->next(fr);
                if (st == ReadStatus::end || st == ReadStatus::truncated) break;
                if (f != wanted[next]) continue;
                ++next;
                if (st == ReadStatus::ok && !fr.image.empty()) see(fr.image);
            }
        } else {
            for (const auto f : wanted) {
                if (!src || !src->seek(f)) {
                    ReaderParams from = p.reader;
                    from.first = f;
                    src = open_input(input, p, from);
                }
                if (src->next(fr) == ReadStatus::ok && !fr.image.empty()) see(fr.image);
            }
        }
    };
    // The quick look's 16 frames are shown (and decoded) again rather than held: 16 fresh frame
    // buffers cost more than reading them twice (docs/performance.md).
    const auto few_frames = detail::static_background_frames(p.reader.first, p.reader.first + n, 16);
    detail::StaticBackgroundParams bp;
    bp.invert = p.detect.invert;
    bp.r_large = p.detect.r_large();
    return detail::measure_static_background(
        [&](const std::function<void(const cv::Mat&)>& see) { visit(few_frames, see); },
        [&] {
            std::vector<cv::Mat> frames;
            visit(detail::static_background_frames(p.reader.first, p.reader.first + n, k_mem),
                  [&](const cv::Mat& f) { frames.push_back(f.clone()); });
            return frames;
        },
        bp);
}

Metadata initial_metadata(const std::string& input, const RunPlan& plan);

// Threads the run may use: --threads, or all cores (0).
int threads_of(const TrackParams& p) {
    return p.threads > 0 ? p.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// Frames read at the start for the packing region when the radii are given (else those of the
// radius estimate, as many).
constexpr std::int64_t kPackingRegionFrames = 9;

// No ROI given (TrackParams::packing_region): the packing's region, from 5 frames spread over
// those read at the start, becomes the ROI when it cuts a wall (machine parts beyond a wall may
// show in some frames only: the hole and bolt at the discs' left edge in 3 of 9). The first frame
// alone decides when no wall has room beyond it (a packing that fills the image, a gas): the
// other 4 are located only when some wall has.
void find_packing_region(const std::string& input, const std::vector<cv::Mat>& first, RunPlan& plan,
                         TrackSummary& sum) {
    TrackParams& p = plan.p;
    p.detect.validate();
    const int width = first.front().cols, height = first.front().rows;
    // Centres to a pixel are enough here: the refinement alone, without the joint fit (on the
    // 1024² bench clip ≈ 110 ms instead of ≈ 190; the real discs, which the joint fit refuses,
    // are located as they are tracked).
    DetectParams dp = p.detect;
    dp.joint = false;
    std::vector<std::vector<Particle>> frames{locate(first.front(), dp)};
    auto reg = find_packing_region(frames.front(), p.detect.r_large(), width, height);
    if (reg.room != std::array<bool, 4>{}) {
        std::vector<std::size_t> picked;  // 4 more spread over them, the last included
        for (std::size_t i = 1; i < 5; ++i) picked.push_back((i * (first.size() - 1) + 2) / 4);
        picked.erase(std::unique(picked.begin(), picked.end()), picked.end());
        std::erase(picked, std::size_t{0});
        // Located side by side on up to --threads threads (each frame's own disks: the same for
        // any thread count).
        frames.resize(1 + picked.size());
        std::atomic<std::size_t> next{0};
        run_workers(
            std::min(threads_of(p), static_cast<int>(picked.size())),  // 0 items: inline, nothing
            [&](int) {
                for (std::size_t k; (k = next++) < picked.size();)
                    frames[1 + k] = locate(first[picked[k]], dp);
            },
            WorkerStart::at_least_caller);
        reg = find_packing_region(frames, p.detect.r_large(), width, height);
    }
    sum.packing_region = reg.summary();
    if (!reg.found) return;
    p.roi = reg.kept;
    plan.packing_roi = true;
    if (p.note) p.note(input + ": " + sum.packing_region);
}

// Opens the input (radii estimated from the first frames when not given), finds the checkpoint
// to resume from and plans the strips and threads.
RunPlan plan_run(const std::string& input, const TrackParams& p_in, TrackSummary& sum) {
    RunPlan plan;
    plan.p = p_in;
    TrackParams& p = plan.p;
    auto& src = plan.src;
    src = open_input(input, p, p.reader);
    plan.info = src->info();
    const VideoInfo& info = plan.info;
    if (info.n_frames == 0) throw FormatError(input + ": the input has no frames");

    // Radii: given, or estimated from the first frames; edge thresholds adapted to the first
    // frame (TrackParams::adapt_thresholds). The frames are then processed normally: the source is
    // reopened.
    // The static background (measured from frames spread over the range, never from what a worker
    // sees: a function of the input, the range, the radii and --invert only) is measured beside
    // all this, from as soon as the radii are known, when more than one thread is allowed.
    std::future<detail::StaticBackground> background;
    const auto measure_background_from_now = [&] {
        if (!p.static_background) return;
        auto measure = [input, bp = p, info] { return measure_background(input, bp, info); };
        background =
            std::async(p.threads == 1 ? std::launch::deferred : std::launch::async, std::move(measure));
    };
    if (!p.detect.radii.empty()) measure_background_from_now();
    const bool find_packing = p.packing_region && p.roi.kind == GeometryKind::unbounded;
    if (p.detect.radii.empty() || p.adapt_thresholds || find_packing) {
        std::vector<cv::Mat> first;
        Frame fr;
        const std::int64_t n_first =
            p.detect.radii.empty() ? p.auto_radii_frames : (find_packing ? kPackingRegionFrames : 1);
        while (static_cast<std::int64_t>(first.size()) < n_first) {
            const auto st = src->next(fr);
            if (st == ReadStatus::ok)
                first.push_back(fr.image.clone());
            else if (st != ReadStatus::corrupt)
                break;
        }
        if (first.empty()) throw FormatError(input + ": no frame could be decoded");
        if (p.detect.radii.empty()) {
            RadiusEstimateParams rp;
            rp.invert = p.detect.invert;
            rp.r_min = p.auto_radius_min, rp.r_max = p.auto_radius_max;
            try {
                const auto est = estimate_radius_classes(first, rp);
                p.detect.radii = est.radii;
                p.detect.ring_tolerance = 0.15;  // measured outer radii (DetectParams::ring_tolerance)
                sum.radii_estimate = est.summary();
            } catch (const FormatError& e) {
                throw FormatError(input + ": " + e.what());
            }
            if (p.note) p.note(input + ": " + sum.radii_estimate);
            measure_background_from_now();
        }
        if (p.adapt_thresholds) {
            p.detect.validate();
            const auto a = adapt_edge_thresholds(first.front(), p.detect);
            sum.edge_thresholds = a.summary(p.detect);
            if (p.note && a.factor < 1) p.note(input + ": " + sum.edge_thresholds);
        }
        if (find_packing) find_packing_region(input, first, plan, sum);
        src = open_input(input, p, p.reader);
    }
    if (background.valid()) plan.background = background.get();
    p.detect.validate();
    // Automatic step: half the small radius, at least 2 px (spots of a few px still move by pixels).
    if (p.link.max_step == 0) p.link.max_step = std::max(2.0, 0.5 * p.detect.r_small());
    p.link.validate();
    sum.radii = p.detect.radii;

    // Checkpoints: the complete segments of an earlier run of the same input and settings are
    // taken as they are (replayed into the sink below); the video is read from the frame after.
    auto& ckpt = plan.ckpt;
    std::int64_t& first_seq = plan.first_seq;
    if (!p.checkpoint_dir.empty()) {
        ckpt = std::make_unique<detail::CheckpointFolder>(p.checkpoint_dir, run_fingerprint(input, p),
                                                          p.restart_every);
        first_seq = ckpt->complete_segments() * p.restart_every;
        if (first_seq > 0) {
            ReaderParams from = p.reader;
            from.first = p.reader.first + first_seq;
            src = open_input(input, p, from);
        }
    }
    sum.resumed_frames = first_seq;
    const std::int64_t H = info.height;
    const int n_workers = threads_of(p);
    // Warm start: every frame is cut into the same strips whatever the number of workers (their
    // count is a function of the image and the radii, or --strips: never of --threads), each
    // strip has its own locator that sees every frame in order, and the (strip, frame) tasks go
    // to whichever worker is free (StripTasks) — so the output is the same for any --threads.
    // One worker takes the strips in turn; more workers than strips would wait. From scratch
    // (no warm start): frames dealt in turn (frame seq → worker seq % n), each located alone.
    auto& strips = plan.strips;
    if (p.warm_start && H > 0) {
        const int n_strips =
            p.n_strips > 0 ? p.n_strips : auto_strip_count(static_cast<int>(H), p.detect.r_large());
        strips = plan_strips(static_cast<int>(H), n_strips, p.detect.r_large());
    }
    plan.by_strips = !strips.empty();
    plan.n_pieces = plan.by_strips ? static_cast<int>(strips.size()) : 1;
    plan.n_threads = plan.by_strips ? std::min(n_workers, static_cast<int>(strips.size())) : n_workers;
    plan.seam_zone = 0.5 * p.detect.r_small();
    // Edges: those of the image and of a given ROI; the packing region's border cuts no disk.
    plan.region =
        edge_region(info.width, info.height, plan.packing_roi ? Geometry{} : p.roi, p.detect.r_large());
    sum.background = plan.background.frames_used > 0 ? plan.background.describe() : "";
    plan.meta = initial_metadata(input, plan);
    if (!sum.background.empty()) plan.meta.user["static_background"] = sum.background;
    plan.meta.user["radii_source"] = sum.radii_estimate.empty() ? "given" : "estimated";
    if (!sum.radii_estimate.empty()) plan.meta.user["radii_estimate"] = sum.radii_estimate;
    if (!sum.edge_thresholds.empty()) plan.meta.user["edge_thresholds"] = sum.edge_thresholds;
    if (!sum.packing_region.empty()) plan.meta.user["packing_region"] = sum.packing_region;
    return plan;
}

// Metadata known before the first frame (time stamps, truncation: at the end). The sink is
// opened by this thread while the workers locate the first frame (it receives the rows while
// the video is tracked).
Metadata initial_metadata(const std::string& input, const RunPlan& plan) {
    const TrackParams& p = plan.p;
    const VideoInfo& info = plan.info;
    const std::int64_t W = info.width, H = info.height;
    Metadata meta;
    meta.length_unit = "px";
    meta.time_unit = "frame";
    meta.frame_interval = 1.0;
    if (p.px_per_mm > 0) meta.px_per_mm = p.px_per_mm;
    meta.image_width = W;
    meta.image_height = H;
    meta.coordinate_convention = "image";
    // The analysis window: the image or the ROI inset by the large radius (disks cut by the
    // edge, flagged in the `edge` column, fall outside it).
    meta.geometry = plan.region.window(p.detect.r_large());
    meta.user["window"] = std::string(p.roi.kind == GeometryKind::unbounded ? "image" : "ROI") +
                          " inset by the large radius " + std::to_string(p.detect.r_large()) + " px";
    // The packing region: its cut walls bound the window, as a ROI's sides would (its edges flag
    // no disk: the region above is the image).
    if (plan.packing_roi) {
        meta.geometry = edge_region(W, H, p.roi, p.detect.r_large()).window(p.detect.r_large());
        meta.user["window"] =
            "packing region inset by the large radius " + std::to_string(p.detect.r_large()) + " px";
    }
    for (double r : p.detect.radii) meta.species_diameters.push_back(2 * r);
    if (p.detect.radii.size() == 1) meta.species_names = {"disk"};
    meta.source.file = input;
    meta.source.vibra_version = vibra::version();
    meta.source.parameters = p.parameters;
    meta.user["video_format"] = info.format;
    // What `vibra render` checks a video against, and where its frame numbers start.
    if (info.n_frames >= 0) meta.user["video_frames"] = std::to_string(info.n_frames);
    meta.user["first_video_frame"] = std::to_string(p.reader.first);
    if (plan.by_strips) meta.user["strips"] = std::to_string(plan.strips.size());
    if (p.fps > 0)
        meta.user["fps"] = std::to_string(p.fps);
    else if (info.fps > 0)
        meta.user["video_fps"] = std::to_string(info.fps);
    meta.user["radii_px"] = [&] {
        std::string s;
        for (double r : p.detect.radii) s += (s.empty() ? "" : ",") + std::to_string(r);
        return s;
    }();

    // Camera metadata (exposure, bit depth, trigger time, warnings) → /meta/user as camera_*.
    for (const auto& [k, v] : info.extra) meta.user["camera_" + k] = v;
    return meta;
}

// The frame consumer: the frames in order — strips merged, ROI applied, linked, rows handed to
// the sink in blocks, to the species spool and to the checkpoint — and at the end the final
// metadata, the trajectory species vote and the commit. Called under the scheduler's lock (one
// frame at a time, by whichever thread consumes).
class FrameConsumer {
public:
    FrameConsumer(const std::string& input, TrajectorySink& writer, const std::string& spool_path,
                  const RunPlan& plan, TrackSummary& sum, std::chrono::steady_clock::time_point t_start)
        : input(input),
          writer(writer),
          p(plan.p),
          info(plan.info),
          sum(sum),
          t_start(t_start),
          ckpt(plan.ckpt),
          first_seq(plan.first_seq),
          by_strips(plan.by_strips),
          strips(plan.strips),
          seam_zone(plan.seam_zone),
          spool(spool_path),
          linker(p.link),
          progress("track " + input, frames_in_range(info.n_frames, p.reader),
                   p.progress),  // the --frames range
          same_disk(p.detect.r_small()),
          region(plan.region) {}
    /// Frame `seq` (its strips' pieces, or the one piece) into the output.
    void consume(std::int64_t seq, Item& it, std::vector<std::vector<Particle>>& pieces);
    /// The complete segments of an earlier run into the sink, the spool, the vote and the
    /// counters, frame by frame as consume() did; then the linker as it was at their end.
    void replay_checkpoint();
    /// The rows of the frames consumed so far to the sink.
    void flush_block();
    void finish_progress() { progress.finish(); }
    std::int64_t frames() const { return static_cast<std::int64_t>(d_det.size()); }
    /// After the last frame: the final metadata (time stamps, truncation), the species of every
    /// row by its trajectory's vote, the per-frame diagnostics, and the commit.
    void commit(Metadata meta, bool truncated);
    std::int64_t n_tracks() const { return linker.n_tracks(); }
    std::int64_t ns_link = 0, ns_write = 0;  // time in linking and in the sink (under the consumer lock)

private:
    FrameColumns final_metadata(Metadata& meta, bool truncated) const;
    void write_species();
    void save_checkpoint(std::int64_t seq);

    const std::string& input;
    TrajectorySink& writer;
    const TrackParams& p;
    const VideoInfo& info;
    TrackSummary& sum;
    const std::chrono::steady_clock::time_point t_start;
    const std::unique_ptr<detail::CheckpointFolder>& ckpt;
    const std::int64_t first_seq;
    const bool by_strips;
    const std::vector<FrameStrip>& strips;
    const double seam_zone;
    // Everything that can fail before the first frame fails here, before the threads start (the
    // sink is opened below, inside the loop's error handling, which stops them).
    Spool spool;
    std::vector<SpoolRow> spool_rows;
    // Rows go to the sink in blocks of whole frames of about 8,192 rows (buffers re-used): small
    // blocks leave little to compress after the last frame (docs/performance.md).
    static constexpr std::size_t block_rows = 8192;
    TrajectoryTable block;
    std::int64_t block_frames = 0;
    Linker linker;
    SpeciesVote vote;
    std::vector<std::int64_t> d_det, d_links, d_new, d_lost, d_err, d_out;
    std::vector<double> time_s;
    std::vector<std::int64_t> image_numbers;
    bool any_time = false;
    Progress progress;
    std::vector<std::uint64_t>
        order;  // a frame's rows by particle (the file's order within a frame): id << 32 | row
    std::vector<double> xs, ys;
    std::vector<std::int8_t> sp;
    const double same_disk;  // two disks' centres are ≥ 2 r_small apart
    const EdgeRegion& region;
    // The frame's rows (as the sink got them, species before the vote) into the checkpoint; at a
    // segment's last frame, its per-frame columns and the linker's state too.
    std::vector<detail::CheckpointRow> ckpt_rows;
};

void FrameConsumer::flush_block() {
    if (block_frames == 0) return;
    const auto t0 = std::chrono::steady_clock::now();
    writer.append(block, block_frames);
    ns_write += since(t0);
    block.clear();
    block.radius.clear();
    block.quality.clear();
    block.species_confidence.clear();
    block.edge.clear();
    block_frames = 0;
}

void FrameConsumer::save_checkpoint(std::int64_t seq) {
    const std::int64_t seg = seq / p.restart_every, n = static_cast<std::int64_t>(d_det.size());
    ckpt->write_rows(seg, ckpt_rows);  // this frame's, filled by consume()
    if ((seq + 1) % p.restart_every != 0) return;
    detail::SegmentState st;
    st.first_frame = seg * p.restart_every;
    st.n_frames = seq + 1 - st.first_frame;
    const auto from = static_cast<std::ptrdiff_t>(st.first_frame), to = static_cast<std::ptrdiff_t>(n);
    const auto slice = [&](const auto& v) { return std::vector(v.begin() + from, v.begin() + to); };
    st.detections = slice(d_det), st.links = slice(d_links), st.new_tracks = slice(d_new);
    st.lost_tracks = slice(d_lost), st.decode_errors = slice(d_err), st.image_numbers = slice(image_numbers);
    st.outside_roi = slice(d_out);
    st.time_s = slice(time_s);
    for (auto v : st.detections) st.n_rows += v;
    st.linker = linker.state();
    ckpt->finish_segment(seg, st);
}

// One frame, in order: merge its strips, link, and hand its rows to the sink. Called under
// consume_m, by a worker that is not behind (strips) or by this thread (the rest).
void FrameConsumer::consume(std::int64_t seq, Item& it, std::vector<std::vector<Particle>>& pieces) {
    if (seq == first_seq)
        sum.seconds_first_frame =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    if (by_strips)
        it.parts = merge_strips(pieces, strips, seam_zone, same_disk);
    else
        it.parts = std::move(pieces.front());
    std::vector<Particle> parts = std::move(it.parts);
    const auto n_located = parts.size();
    if (p.roi.kind != GeometryKind::unbounded)
        std::erase_if(parts, [&](const Particle& q) { return !inside_roi(p.roi, q.x, q.y); });
    d_out.push_back(static_cast<std::int64_t>(n_located - parts.size()));
    xs.resize(parts.size());
    ys.resize(parts.size());
    sp.resize(parts.size());
    for (std::size_t i = 0; i < parts.size(); ++i) {
        xs[i] = parts[i].x, ys[i] = parts[i].y;
        sp[i] = parts[i].species_confidence >= p.link_species_confidence ? parts[i].species : kSpeciesUnknown;
    }
    const auto t_link = std::chrono::steady_clock::now();
    const auto ids = linker.link(xs, ys, sp);
    ns_link += since(t_link);
    const auto& ls = linker.last_stats();
    // The rows by particle id: (id, row) packed in one integer key and sorted as
    // integers (the linker's ids count tracks from 0; rows and ids < 2³² always in practice,
    // else a sort by comparison).
    order.resize(parts.size());
    bool packable = parts.size() <= 0xffffffffu;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        packable = packable && ids[i] >= 0 && ids[i] <= 0xffffffffLL;
        order[i] = static_cast<std::uint64_t>(ids[i]) << 32 | static_cast<std::uint64_t>(i);
        vote.add(ids[i], parts[i].species, parts[i].species_confidence);
    }
    if (packable) {
        std::sort(order.begin(), order.end());
    } else {
        for (std::size_t i = 0; i < parts.size(); ++i) order[i] = i;
        std::sort(order.begin(), order.end(),
                  [&](std::uint64_t a, std::uint64_t b) { return ids[a] < ids[b]; });
    }
    spool_rows.clear();
    ckpt_rows.clear();
    for (const std::uint64_t key : order) {
        const auto i = static_cast<std::size_t>(packable ? key & 0xffffffffu : key);
        const auto& q = parts[i];
        if (ckpt)
            ckpt_rows.push_back(
                {seq, ids[i], q.x, q.y, q.radius, q.quality, q.species_confidence, q.species});
        block.push(seq, ids[i], q.x, q.y, q.species);
        block.radius.push_back(q.radius);
        block.quality.push_back(q.quality);
        block.species_confidence.push_back(q.species_confidence);
        block.edge.push_back(region.cut(q.x, q.y, q.radius) ? 1 : 0);
        spool_rows.push_back({ids[i], q.species_confidence, q.species});
    }
    ++block_frames;
    if (block.size() >= block_rows) flush_block();
    spool.write(spool_rows);
    d_det.push_back(static_cast<std::int64_t>(parts.size()));
    d_links.push_back(ls.links);
    d_new.push_back(ls.new_tracks);
    d_lost.push_back(ls.lost_tracks);
    d_err.push_back(it.status == ReadStatus::ok ? 0 : 1);
    sum.decode_errors += it.status == ReadStatus::ok ? 0 : 1;
    sum.detections += static_cast<std::int64_t>(parts.size());
    time_s.push_back(it.frame.time_s);
    any_time = any_time || it.frame.time_s >= 0;
    image_numbers.push_back(it.frame.image_number);
    if (ckpt) save_checkpoint(seq);
    progress.update(seq + 1);
}

void FrameConsumer::replay_checkpoint() {
    for (std::int64_t sg = 0; sg < ckpt->complete_segments(); ++sg) {
        const auto st = ckpt->read_state(sg);
        const auto nf = static_cast<std::size_t>(st.n_frames);
        std::size_t k = 0;
        std::int64_t left = nf > 0 ? st.detections[0] : 0;
        auto close_frame = [&] {
            ++block_frames;
            if (block.size() >= block_rows) flush_block();
            spool.write(spool_rows);
            spool_rows.clear();
            d_det.push_back(st.detections[k]), d_links.push_back(st.links[k]),
                d_new.push_back(st.new_tracks[k]);
            d_lost.push_back(st.lost_tracks[k]), d_err.push_back(st.decode_errors[k]);
            d_out.push_back(st.outside_roi[k]);
            sum.decode_errors += st.decode_errors[k];
            sum.detections += st.detections[k];
            time_s.push_back(st.time_s[k]);
            any_time = any_time || st.time_s[k] >= 0;
            image_numbers.push_back(st.image_numbers[k]);
            ++k;
            left = k < nf ? st.detections[k] : 0;
        };
        auto settle = [&] {
            while (k < nf && left == 0) close_frame();
        };
        settle();
        spool_rows.clear();
        ckpt->read_rows(sg, st.n_rows, [&](const detail::CheckpointRow& r) {
            block.push(r.frame, r.particle, r.x, r.y, r.species);
            block.radius.push_back(r.radius);
            block.quality.push_back(r.quality);
            block.species_confidence.push_back(r.conf);
            block.edge.push_back(region.cut(r.x, r.y, r.radius) ? 1 : 0);
            spool_rows.push_back({r.particle, r.conf, r.species});
            vote.add(r.particle, r.species, r.conf);
            --left;
            settle();
        });
        if (k != nf)
            throw FormatError(ckpt->dir() + ": checkpoint segment " + std::to_string(sg) +
                              " is inconsistent");
        linker.restore(st.linker);
    }
}

FrameColumns FrameConsumer::final_metadata(Metadata& meta, bool truncated) const {
    const auto n_frames = static_cast<std::int64_t>(d_det.size());
    // Final metadata. Physical time: camera time stamps win over the nominal rate (decimated
    // saves), else --fps, else the rate the camera header or the container states.
    bool stamped = false;
    if (any_time) {
        std::vector<double> dt;
        for (std::size_t i = 1; i < time_s.size(); ++i)
            if (time_s[i] >= 0 && time_s[i - 1] >= 0 && time_s[i] > time_s[i - 1])
                dt.push_back(time_s[i] - time_s[i - 1]);
        if (!dt.empty()) {
            stamped = true;
            std::nth_element(dt.begin(), dt.begin() + static_cast<std::ptrdiff_t>(dt.size() / 2), dt.end());
            meta.time_unit = "s";
            meta.frame_interval = dt[dt.size() / 2];
            const double nominal = p.fps > 0 ? p.fps : info.fps;
            if (nominal > 0 && std::abs(nominal * meta.frame_interval - 1.0) > 0.01)
                meta.user["warning_frame_rate"] = "time stamps give " +
                                                  std::to_string(1.0 / meta.frame_interval) +
                                                  " frames/s, the header/--fps says " +
                                                  std::to_string(nominal) + " frames/s; the stamps are used";
        }
    }
    // Else the rate: --fps, else the camera header or the container's (docs/tracking.md, "Units").
    const double rate = p.fps > 0 ? p.fps : info.fps;
    if (meta.time_unit != "s" && rate > 0) {
        meta.time_unit = "s";
        meta.frame_interval = 1.0 / rate;
    }
    const bool camera = info.format == "cine" || info.format == "mraw";
    meta.user["frame_rate_source"] = meta.time_unit != "s" ? "none: times in frames"
                                     : stamped             ? "camera time stamps"
                                     : p.fps > 0           ? "--fps"
                                     : camera              ? "camera header"
                                                           : "video container";
    meta.incomplete = truncated;

    FrameColumns fc;
    if (any_time)
        fc.time_s = time_s;
    else if (rate > 0) {
        fc.time_s.resize(static_cast<std::size_t>(n_frames));
        for (std::int64_t f = 0; f < n_frames; ++f)
            fc.time_s[static_cast<std::size_t>(f)] = static_cast<double>(f) / rate;
    }
    fc.image_number = image_numbers;
    return fc;
}

// Species: each row's trajectory vote (its own species where the vote has none), in the
// order of the rows, from the spool in blocks.
void FrameConsumer::write_species() {
    std::fflush(spool.f);
    std::rewind(spool.f);
    std::vector<std::int8_t> species;
    std::vector<float> confidence;
    for (std::int64_t left = sum.detections; left > 0;) {
        const auto nb =
            static_cast<std::size_t>(std::min<std::int64_t>(left, static_cast<std::int64_t>(block_rows)));
        spool_rows.resize(nb);
        if (std::fread(spool_rows.data(), sizeof(SpoolRow), nb, spool.f) != nb)
            throw IoError(spool.path + ": read failed");
        species.resize(nb);
        confidence.resize(nb);
        for (std::size_t i = 0; i < nb; ++i) {
            const auto& r = spool_rows[i];
            const auto v = vote.result(r.particle);
            species[i] = v.species >= 0 ? v.species : r.species;
            confidence[i] = v.species >= 0 ? static_cast<float>(v.confidence) : r.conf;
        }
        const auto t_sp = std::chrono::steady_clock::now();
        writer.append_species(species, confidence);
        ns_write += since(t_sp);
        left -= static_cast<std::int64_t>(nb);
    }
}

void FrameConsumer::commit(Metadata meta, bool truncated) {
    const FrameColumns fc = final_metadata(meta, truncated);
    write_species();
    writer.set_diagnostic("detections", d_det, "1");
    writer.set_diagnostic("links", d_links, "1");
    writer.set_diagnostic("new_tracks", d_new, "1");
    writer.set_diagnostic("lost_tracks", d_lost, "1");
    writer.set_diagnostic("decode_errors", d_err, "1");
    // Detections left out by the ROI or the packing region: a count that grows along the run
    // says the packing moved out of a region fixed at the start.
    if (p.roi.kind != GeometryKind::unbounded) writer.set_diagnostic("outside_roi", d_out, "1");
    const auto t_commit = std::chrono::steady_clock::now();
    writer.commit(meta, fc);
    ns_write += since(t_commit);
}

// The scheduler: a reader thread decodes the frames in order and hands them to the workers —
// by strips (StripTasks: each strip's locator sees every frame in order, so the output is the
// same for any --threads) or frames dealt in turn (from scratch) — whose results are put back
// in frame order (Reorder) and given to the consumer one at a time.
class FrameScheduler {
public:
    FrameScheduler(const std::string& input, RunPlan& plan, FrameConsumer& consumer)
        : input(input),
          p(plan.p),
          src(*plan.src),
          consumer(consumer),
          first_seq(plan.first_seq),
          by_strips(plan.by_strips),
          n_threads(plan.n_threads),
          strips(plan.strips),
          seam_zone(plan.seam_zone),
          W(plan.info.width),
          H(plan.info.height),
          background(plan.background),
          tasks(strips.size(), 2 * strips.size() + 2, first_seq),
          strip_locators(strips.size(), DiskLocator(p.detect, p.locator)),
          out(plan.n_pieces),
          next_seq(first_seq),
          workers_left(n_threads) {
        if (!by_strips)
            for (int k = 0; k < n_threads; ++k)
                in_qs.push_back(
                    std::make_unique<BoundedQueue<Item>>(3));  // frames dealt in turn: one queue per worker
    }
    /// Runs the video through: starts the threads, calls `open_sink` on this thread while the
    /// workers locate the first frames, consumes the frames in order (here, and by strips also
    /// on the workers), and joins the threads, also when something throws.
    template <class F>
    void run(F&& open_sink);

    std::exception_ptr reader_error, worker_error;
    bool truncated = false;
    std::atomic<bool> cancelled{false};  // the reader stopped at TrackParams::cancel
    // Where the time goes, summed over the threads that do each part (wall seconds; decoding and
    // locating overlap with each other and with linking and writing).
    std::atomic<std::int64_t> ns_decode{0}, ns_detect{0};

private:
    void read_frames();
    void locate_strips();
    void locate_frames(int k);
    void record_error();
    void help_consume();
    void close_all();
    void join_all();

    const std::string& input;
    const TrackParams& p;
    FrameSource& src;
    FrameConsumer& consumer;
    const std::int64_t first_seq;
    const bool by_strips;
    const int n_threads;
    const std::vector<FrameStrip>& strips;
    const double seam_zone;
    const std::int64_t W, H;
    const detail::StaticBackground& background;
    std::vector<std::unique_ptr<BoundedQueue<Item>>> in_qs;
    StripTasks tasks;
    std::vector<DiskLocator> strip_locators;
    Reorder out;
    std::atomic<bool> stop{false};
    std::mutex err_m;
    std::mutex consume_m;
    std::int64_t next_seq;                // the next frame to consume (under consume_m)
    std::atomic<bool> sink_ready{false};  // the sink is open: workers may consume
    std::atomic<int> workers_left;
    std::thread reader;
    std::vector<std::thread> workers;
};

void FrameScheduler::close_all() {
    for (auto& q : in_qs) q->close();
    tasks.close();
}

void FrameScheduler::read_frames() {
    std::int64_t seq = first_seq;
    try {
        while (!stop) {
            if (p.cancel && p.cancel->load()) {
                cancelled = true;
                break;
            }
            Item it;
            it.seq = seq;
            const auto t0 = std::chrono::steady_clock::now();
            const auto st = src.next(it.frame);
            ns_decode += since(t0);
            if (st == ReadStatus::end) break;
            if (st == ReadStatus::truncated) {
                truncated = true;
                break;
            }
            it.status = st;
            if (st == ReadStatus::ok) {
                if (it.frame.image.empty()) {
                    it.status = ReadStatus::corrupt;
                } else if ((W > 0 && it.frame.image.cols != W) || (H > 0 && it.frame.image.rows != H)) {
                    throw FormatError(at_frame(
                        input, it.frame.index,
                        "frame size changed from " + std::to_string(W) + "x" + std::to_string(H) + " to " +
                            std::to_string(it.frame.image.cols) + "x" + std::to_string(it.frame.image.rows)));
                } else if (background.active()) {
                    const auto t1 = std::chrono::steady_clock::now();
                    background.apply(it.frame.image);
                    ns_decode += since(t1);
                }
            }
            bool pushed = true;
            if (by_strips) {
                pushed = tasks.push(std::move(it));
            } else {
                pushed = in_qs[static_cast<std::size_t>(seq % n_threads)]->push(std::move(it));
            }
            if (!pushed) break;
            ++seq;
        }
    } catch (...) {
        std::lock_guard lk(err_m);
        reader_error = std::current_exception();
        stop = true;
    }
    close_all();
}

void FrameScheduler::record_error() {
    std::lock_guard lk(err_m);
    if (!worker_error) worker_error = std::current_exception();
    stop = true;
}

// Strips: the (strip, frame) tasks, each strip by its own locator.
void FrameScheduler::locate_strips() {
    Item it;
    std::size_t s = 0;
    while (tasks.take(s, it)) {
        auto& locator = strip_locators[s];
        // a segment's first frame: from scratch, as a run resumed there starts
        if (p.restart_every > 0 && it.seq % p.restart_every == 0) locator = DiskLocator(p.detect, p.locator);
        try {
            if (it.status == ReadStatus::ok && !stop) {
                const auto t0 = std::chrono::steady_clock::now();
                it.parts = locate_in_strip(locator, it.frame.image, strips, s, seam_zone);
                ns_detect += since(t0);
            } else
                locator.reset();  // a gap: the next frame from scratch
        } catch (...) {
            record_error();
        }
        it.frame.image.release();
        out.put(std::move(it));
        tasks.done(s);
        if (sink_ready && !stop && tasks.may_consume(s)) {
            try {
                help_consume();
            } catch (...) {
                record_error();
            }
        }
    }
}

// Frames dealt in turn: worker k's queue, each frame located from scratch.
void FrameScheduler::locate_frames(int k) {
    Item it;
    auto& q = *in_qs[static_cast<std::size_t>(k)];
    while (q.pop(it)) {
        try {
            if (it.status == ReadStatus::ok && !stop) {
                const auto t0 = std::chrono::steady_clock::now();
                it.parts = locate(it.frame.image, p.detect);
                ns_detect += since(t0);
            }
        } catch (...) {
            record_error();
        }
        it.frame.image.release();
        out.put(std::move(it));
    }
}

// Strips: a worker that is not behind the other strips consumes the frames that are complete,
// so the linking and the sink's work land on the core that is ahead and the strips stay in
// step (with a separate consumer thread they drifted apart by up to ±30 ms, and one core
// waited for the other at the end: docs/performance.md). Never blocks: another consumer
// already at it does the work.
void FrameScheduler::help_consume() {
    std::unique_lock lk(consume_m, std::try_to_lock);
    if (!lk.owns_lock()) return;
    Item it;
    std::vector<std::vector<Particle>> pieces;
    while (!stop && out.try_take(next_seq, it, pieces)) {
        consumer.consume(next_seq, it, pieces);
        ++next_seq;
    }
}

void FrameScheduler::join_all() {
    stop = true;
    close_all();
    if (reader.joinable()) reader.join();
    for (auto& w : workers)
        if (w.joinable()) w.join();
}

template <class F>
void FrameScheduler::run(F&& open_sink) {
    try {
        // Inside the try: a thread that cannot start (ulimit -v, ulimit -u) stops and joins
        // the ones already running instead of destroying them joinable (std::terminate).
        reader = std::thread([this] { read_frames(); });
        for (int k = 0; k < n_threads; ++k)
            workers.emplace_back([this, k] {
                if (by_strips)
                    locate_strips();
                else
                    locate_frames(k);
                if (--workers_left == 0) out.finish();
            });
        open_sink();
        sink_ready = true;
        if (by_strips) {
            // the workers consume as they go; the frames left when they are done, here
            if (reader.joinable()) reader.join();
            for (auto& w : workers)
                if (w.joinable()) w.join();
        }
        std::lock_guard lk(consume_m);
        Item it;
        std::vector<std::vector<Particle>> pieces;
        for (;; ++next_seq) {
            // (strips: the threads are joined, the errors can be read; a frame a worker took
            // when its sink failed is gone from `out`, and must not be waited for)
            if (by_strips && stop && (reader_error || worker_error)) break;
            if (!out.take(next_seq, it, pieces)) break;
            if (stop && (reader_error || worker_error)) break;
            consumer.consume(next_seq, it, pieces);
        }
    } catch (...) {
        join_all();
        throw;
    }
    join_all();
}

}  // namespace

TrackSummary track_video(const std::string& input, TrajectorySink& writer, const std::string& spool_path,
                         const TrackParams& p_in) {
    p_in.validate();
    const auto t_start = std::chrono::steady_clock::now();
    TrackSummary sum;
    sum.input = input;
    RunPlan plan = plan_run(input, p_in, sum);
    // Everything that can fail before the first frame fails before the threads start (the spool
    // here; the sink is opened inside the scheduler's error handling, which stops them).
    FrameConsumer consumer(input, writer, spool_path, plan, sum, t_start);
    FrameScheduler scheduler(input, plan, consumer);
    scheduler.run([&] {
        writer.open(plan.meta);
        if (plan.ckpt) consumer.replay_checkpoint();
    });
    const auto t_tracked = std::chrono::steady_clock::now();
    consumer.flush_block();
    consumer.finish_progress();
    if (scheduler.reader_error) std::rethrow_exception(scheduler.reader_error);
    if (scheduler.worker_error) std::rethrow_exception(scheduler.worker_error);
    if (scheduler.cancelled)
        throw Interrupted(input + ": interrupted after " + std::to_string(consumer.frames()) + " frames",
                          consumer.frames());
    const auto n_frames = consumer.frames();
    if (n_frames == 0) throw FormatError(input + ": no frames could be read");
    if (n_frames == sum.decode_errors) throw FormatError(input + ": no frame could be decoded");
    consumer.commit(plan.meta, scheduler.truncated);
    sum.seconds_decode = 1e-9 * static_cast<double>(scheduler.ns_decode.load());
    sum.seconds_detect = 1e-9 * static_cast<double>(scheduler.ns_detect.load());
    sum.seconds_link = 1e-9 * static_cast<double>(consumer.ns_link);
    sum.seconds_write = 1e-9 * static_cast<double>(consumer.ns_write);
    if (plan.ckpt) plan.ckpt->remove_all();

    sum.frames = n_frames;
    sum.tracks = consumer.n_tracks();
    sum.truncated = scheduler.truncated;
    const auto t_end = std::chrono::steady_clock::now();
    sum.seconds = std::chrono::duration<double>(t_end - t_start).count();
    sum.seconds_final = std::chrono::duration<double>(t_end - t_tracked).count();
    return sum;
}

}  // namespace vibra::tracking
