// SPDX-License-Identifier: GPL-3.0-or-later
// `vibra track` as a library call: video → detections → trajectories → a TrajectorySink. A
// reader thread decodes frames, `threads` workers detect and refine them (warm: by strips of
// rows fixed by the image, each strip's locator seeing every frame in order; from scratch:
// frames dealt in turn), and the frames are linked in order and their rows handed to the
// sink while the video is tracked — by strips, by the worker that is not behind; frames dealt in
// turn, by the calling thread — spooling each row's species to a temporary file; at
// the end each trajectory's species is fixed by a majority vote and sent to the sink in row
// order (the HDF5 sink, apps/vibra/track_store.hpp, is atomic: nothing appears at OUT unless
// the run produced a file).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "vibra/core/error.hpp"
#include "vibra/core/trajectory.hpp"
#include "vibra/tracking/detect.hpp"
#include "vibra/tracking/link.hpp"
#include "vibra/tracking/video.hpp"

namespace vibra::tracking {

struct TrackParams {
    DetectParams detect;                 ///< radii empty = estimate them from the first frames
    LocatorParams locator;               ///< how each locator carries disks from frame to frame (warm_start)
    std::int64_t auto_radii_frames = 9;  ///< frames read for the radius estimate (at most)
    double auto_radius_min = 3, auto_radius_max = 80;  ///< px range of the estimate
    /// When set: receives one line per note for the user (the radius estimate, e.g. "IN: radii:
    /// small 51.0 px, large 59.4 px from 9 frames, 72 disks per frame"); `vibra track` prints it.
    std::function<void(const std::string&)> note;
    /// Scale detect.edge_threshold and detect.min_edge to the edge strength measured on the first
    /// frame (adapt_edge_thresholds, detect.hpp); `vibra track` sets it unless --edge-threshold or
    /// --min-edge is given.
    bool adapt_thresholds = false;
    /// When no roi is given: find the packing's region on the first frames (packing_region.hpp)
    /// and, when it cuts a wall, track inside it (the roi; the window is it inset by the large
    /// radius) — round machine parts beyond a container's walls are not disks. `vibra track`
    /// sets it unless --roi, --roi-circle or `--roi full` is given.
    bool packing_region = false;
    /// max_step 5 px by default (LinkParams); set 0 for automatic (0.5 × small radius, ≥ 2 px), as
    /// `vibra track` does
    LinkParams link;
    ReaderParams reader;
    /// When not empty: the input is these image files, one sequence (open_image_files; the
    /// `input` of track_video then only names it).
    std::vector<std::string> input_files;
    int threads = 0;  ///< detection workers; 0 = all cores (the output does not depend on it)
    /// Each frame starts from the one before (DiskLocator: several times less work per frame,
    /// same accuracy); false = every frame from scratch (locate()), frames dealt to the workers in turn.
    bool warm_start = true;
    /// With warm_start: the horizontal strips of each frame (strips.hpp), each with its own
    /// locator seeing every frame in order, shared by the workers; 0 = by the image
    /// (auto_strip_count: height and large radius). Never derived from `threads`, so that the
    /// output is bit-identical for any thread count; more strips than workers are taken in turn.
    int n_strips = 0;
    /// Static background (plate texture, illumination) and stuck (hot/dead) pixels measured
    /// from `background_frames` frames spread over the range and taken out of every frame before
    /// detection — each only when the measurement finds it (docs/tracking.md, "Static
    /// background"); false = never.
    bool static_background = true;
    int background_frames = 48;
    double fps = 0;        ///< frames/s when known (frame time stamps = frame / fps)
    double px_per_mm = 0;  ///< image calibration when known
    /// Region of interest: window_rect or window_circle (detections outside are dropped);
    /// unbounded = the whole image.
    Geometry roi;
    /// Detections whose species confidence is below this link as "unknown species" (so one
    /// mis-sized detection cannot break a track); the vote fixes them afterwards.
    double link_species_confidence = 0.9;
    /// Every this many frames of the range (frame 0, N, 2N, …) each strip's locator starts from
    /// scratch, in every run: the frames from there on depend only on the video and the linker's
    /// state, so a run resumed from a checkpoint gives the file an uninterrupted one gives. Costs
    /// one frame from scratch per strip every N frames. 0 = never.
    std::int64_t restart_every = 1000;
    /// When set: a checkpoint folder (detail/checkpoint.hpp). Every restart_every frames the
    /// frames so far are saved there; a run that finds segments of the same input and settings
    /// resumes after the last one. Removed when the output is committed.
    std::string checkpoint_dir;
    /// When set and it becomes true (e.g. from a SIGINT handler), the run stops reading frames
    /// and track_video throws Interrupted: the sink is not committed (no output), the spool is
    /// removed, the checkpoints written so far stay.
    const std::atomic<bool>* cancel = nullptr;
    std::string parameters;  ///< the command line / settings recorded in the file
    bool progress = false;   ///< progress line (frames/s, ETA) on stderr
    void validate() const;   ///< throws ParameterError naming the field
};

/// track_video stopped because TrackParams::cancel became true.
class Interrupted : public Error {
public:
    Interrupted(const std::string& what, std::int64_t frames_done) : Error(what), frames_done(frames_done) {}
    std::int64_t frames_done;  ///< frames linked (and checkpointed up to the last segment) before the stop
};

struct TrackSummary {
    std::string input, output;
    std::int64_t frames = 0;         ///< frames in the output (decoded + undecodable)
    std::int64_t decode_errors = 0;  ///< frames counted and skipped
    std::int64_t detections = 0;
    std::int64_t tracks = 0;
    bool truncated = false;  ///< the input ended early; output marked incomplete
    double seconds = 0;
    /// of which: from the start to the first frame linked (opening, each locator's first frame from scratch)
    double seconds_first_frame = 0;
    /// of which: from the last frame linked to the output committed (the species vote, the file's last
    /// chunks)
    double seconds_final = 0;
    std::int64_t resumed_frames = 0;  ///< frames taken from a checkpoint instead of the video
    /// Time in each part, summed over the threads doing it (s): decoding frames (reader thread),
    /// locating disks (workers), linking, writing (the sink's appends, species and commit).
    double seconds_decode = 0, seconds_detect = 0, seconds_link = 0, seconds_write = 0;
    std::vector<double> radii;    ///< radii used (px)
    std::string radii_estimate;   ///< the estimate's summary when the radii were estimated, else empty
    std::string edge_thresholds;  ///< adapt_thresholds: what was measured and used, else empty
    std::string packing_region;   ///< TrackParams::packing_region: what was found, else empty
    std::string background;       ///< what the static-background measurement found ("" = not run)
};

/// Where the trajectories go. The tracking module does not depend on the HDF5 store; the
/// adapter StoreSink (apps/vibra/track_store.hpp, compiled by targets that link vibra::store)
/// writes the vibra file. The rows are handed over while the video is tracked, so that a file
/// writer compresses and writes them as they come; only the species (a vote over each whole
/// trajectory) wait for the end.
class TrajectorySink {
public:
    virtual ~TrajectorySink() = default;
    /// Called once, before the first frame, with the metadata known then (the final metadata
    /// come with commit). Columns: frame, particle, x, y, species + radius, quality,
    /// species_confidence.
    virtual void open(const Metadata& meta) = 0;
    /// The rows of the next `n_frames` frames, sorted by (frame, particle). Their species and
    /// species_confidence are each detection's own: the final ones follow by append_species().
    virtual void append(const TrajectoryTable& rows, std::int64_t n_frames) = 0;
    /// The final species and confidences of the next rows, in the order of append(), after the
    /// last append; every row's before commit.
    virtual void append_species(const std::vector<std::int8_t>& species,
                                const std::vector<float>& confidence) = 0;
    virtual void set_diagnostic(const std::string& name, std::vector<std::int64_t> values,
                                const std::string& units) = 0;
    /// The final metadata and per-frame columns; the output becomes visible. A sink that is
    /// destroyed without commit (the run failed) leaves no output.
    virtual void commit(const Metadata& meta, const FrameColumns& fc) = 0;
};

/// Tracks one input into `sink`; `spool_path` is a temporary file for each row's particle and
/// own species until the vote (removed at the end). Throws IoError / FormatError (unreadable,
/// empty, frame size change): an unreadable or empty input before the sink is opened, a frame
/// size change after (the sink is then not committed). A truncated input yields
/// metadata.incomplete and summary.truncated = true.
TrackSummary track_video(const std::string& input, TrajectorySink& sink, const std::string& spool_path,
                         const TrackParams& p);

}  // namespace vibra::tracking
