// SPDX-License-Identifier: GPL-3.0-or-later
// Velocities from positions (central or forward finite differences on the actual frame times,
// so dropped frames and irregular time stamps are handled) and the per-particle time series the
// single-particle dynamics (MSD, VACF, VDOS, F_s, temperatures, P(v)) are built from.
//
// stream_tracks() turns a TrajectorySource into one Track per particle id: positions unwrapped
// (periodic boxes), drift-corrected (none / low-pass / full centre of mass), NaN in gaps, with
// velocities (given, or by differences). The ids, lifetimes, species votes and drift come from one
// scan of the frames, the series from a particle-major copy of the trajectory (TrackCache: built
// by one more pass, shared by every analysis of a run through TrackStreamParams::cache), so the
// time is linear in the number of frames. The ids are cut into particle blocks whose summed
// lifetimes stay below TrackStreamParams::max_cells. Memory: O(max_cells) doubles × 4 (x, y, vx,
// vy) + one frame block + O(n_ids + n_frames), plus the copy when it is held in memory.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "vibra/core/dense.hpp"
#include "vibra/core/trajectory_source.hpp"

namespace vibra::analysis {

class TrackCache;

/// How velocities are obtained.
enum class VelocityScheme {
    automatic,  ///< `given` when the table has velocities, else `central`
    given,      ///< vx, vy columns of the table
    central,    ///< v(t) = (r(t+1) − r(t−1)) / (t(t+1) − t(t−1)); NaN at track ends and next to gaps
    forward,    ///< v(t) = (r(t+1) − r(t)) / (t(t+1) − t(t)); NaN at the last frame and before gaps
};
const char* to_string(VelocityScheme s);
/// "auto", "given", "central", "forward"; anything else throws ParameterError naming `flag`.
VelocityScheme velocity_scheme_from_string(const std::string& s, const std::string& flag = "velocity");

/// Drift removal before dynamics (docs/analysis-dynamics.md, "Common machinery").
enum class DriftMode {
    none,     ///< keep all motion (collective flow can be physical in active systems)
    lowpass,  ///< subtract the centred moving average (window drift_window frames) of the mean drift
    com,      ///< subtract the full per-frame mean displacement of particles present in consecutive frames
};
const char* to_string(DriftMode d);
/// "none", "lowpass", "com"; anything else throws ParameterError naming `flag`.
DriftMode drift_mode_from_string(const std::string& s, const std::string& flag = "drift");

/// Finite-difference velocity of one coordinate series: x[i] at times t[i] (NaN = absent),
/// result v[i] (same length) in x-unit per t-unit, NaN where the stencil is incomplete.
/// Exact for linear motion on any (irregular) time grid. `scheme` must be central or forward.
void finite_difference(std::span<const double> x, std::span<const double> t, VelocityScheme scheme,
                       std::span<double> v);

/// Fills b.vx, b.vy of a dense block from its positions by finite differences (central or
/// forward); `frame_times[k]` is the time of frame b.first_frame + k (time unit). Frames
/// outside the block are not used, so the first/last frame of the block get NaN (central).
void fill_velocities(DenseBlock& b, std::span<const double> frame_times, VelocityScheme scheme);

/// One particle's series over its lifetime [first_frame, first_frame + size()).
struct Track {
    std::int64_t id = 0;
    std::int8_t species = -1;  ///< majority vote over its rows: 0 small, 1 large, −1 unknown
    std::int64_t first_frame = 0;
    std::vector<double> x, y;    ///< unwrapped, drift-corrected, length unit; NaN in gaps
    std::vector<double> vx, vy;  ///< length/time unit; NaN where unknown (empty if not requested)
    std::size_t size() const { return x.size(); }
};

struct TrackStreamParams {
    VelocityScheme scheme = VelocityScheme::automatic;  ///< see VelocityScheme
    DriftMode drift = DriftMode::none;                  ///< see DriftMode
    std::int64_t drift_window = 51;     ///< frames of the low-pass moving average (odd, ≥ 1)
    bool velocities = true;             ///< compute/fill vx, vy
    std::int64_t max_cells = 1 << 21;   ///< summed track lifetimes (frames) per particle block
    std::int64_t block_rows = 1 << 18;  ///< rows per frame block read from the source
    bool progress = false;              ///< progress line on stderr
    /// Shared particle-major copy of the source (null, or built from another source: a private
    /// one is built for the call).
    TrackCache* cache = nullptr;
    /// Fill each particle block by reading again the frames it spans instead of using a copy:
    /// the path before TrackCache (O(blocks × frames) reads), kept to check the copy against.
    bool rescan = false;
    int threads = 1;        ///< threads unwrapping / differencing a block's tracks
    void validate() const;  ///< throws ParameterError naming the field
};

/// What stream_tracks saw and did (for result attributes).
struct TrackStreamInfo {
    std::int64_t n_frames = 0;
    std::vector<double> frame_times;                    ///< time of each frame (time unit)
    VelocityScheme scheme = VelocityScheme::automatic;  ///< scheme actually used
    DriftMode drift = DriftMode::none;
    std::int64_t drift_window = 0;
    std::vector<double> drift_x, drift_y;  ///< cumulative drift subtracted from positions, per frame
    std::int64_t n_tracks = 0, n_small = 0, n_large = 0, n_unknown = 0;
    std::int64_t particle_blocks = 0;  ///< particle blocks (each one read of the copy)
    std::int64_t max_block_cells = 0;  ///< largest summed lifetime of one particle block
    bool periodic = false;
    bool velocities = false;  ///< velocities were filled (false: `scheme` is irrelevant)
};

/// Streams every linked particle (id ≥ 0) as a Track to `fn`, in ascending id order.
TrackStreamInfo stream_tracks(const TrajectorySource& src, const TrackStreamParams& p,
                              const std::function<void(const Track&)>& fn);

/// Same, one particle block at a time (its tracks in ascending id order; blocks in ascending id
/// order, cut by max_cells only, so the same for any thread count): for analyses that work on a
/// block's tracks in parallel and then add their contributions in track order.
TrackStreamInfo stream_track_blocks(const TrajectorySource& src, const TrackStreamParams& p,
                                    const std::function<void(std::vector<Track>&)>& fn);

/// Relative mass of species a (m ∝ d², small = 1) from Metadata::species_diameters; 1 when unknown.
double species_mass(const Metadata& m, int species);

}  // namespace vibra::analysis
