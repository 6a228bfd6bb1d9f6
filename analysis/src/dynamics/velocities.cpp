// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/analysis/velocities.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "detail/parallel.hpp"
#include "detail/track_scan.hpp"
#include "detail/numeric.hpp"
#include "vibra/analysis/track_cache.hpp"
#include "vibra/core/error.hpp"
#include "vibra/core/periodic.hpp"
#include "vibra/core/progress.hpp"

namespace vibra::analysis {

namespace {
using detail::kNaN;

// Centred moving average of width w over the valid entries only (shrinking windows at the ends;
// entries without data, e.g. the drift increment of frame 0, neither count nor get a value).
std::vector<double> moving_average(const std::vector<double>& a, const std::vector<char>& valid,
                                   std::int64_t w) {
    const auto n = static_cast<std::int64_t>(a.size());
    std::vector<double> prefix(a.size() + 1, 0.0), count(a.size() + 1, 0.0);
    for (std::int64_t i = 0; i < n; ++i) {
        prefix[i + 1] = prefix[i] + (valid[i] ? a[i] : 0.0);
        count[i + 1] = count[i] + (valid[i] ? 1.0 : 0.0);
    }
    std::vector<double> out(a.size(), 0.0);
    const std::int64_t h = w / 2;
    for (std::int64_t i = 0; i < n; ++i) {
        if (!valid[i]) continue;
        const std::int64_t lo = std::max<std::int64_t>(0, i - h), hi = std::min(n, i + h + 1);
        out[i] = (prefix[hi] - prefix[lo]) / (count[hi] - count[lo]);
    }
    return out;
}

// Strided finite difference: element k at x[k*stride].
void diff_strided(const double* x, const double* t, std::size_t n, std::size_t stride, VelocityScheme s,
                  double* v) {
    for (std::size_t k = 0; k < n; ++k) {
        double val = kNaN;
        if (s == VelocityScheme::central) {
            if (k > 0 && k + 1 < n) {
                const double a = x[(k - 1) * stride], b = x[(k + 1) * stride];
                if (!std::isnan(a) && !std::isnan(b) && !std::isnan(x[k * stride]))
                    val = (b - a) / (t[k + 1] - t[k - 1]);
            }
        } else {
            if (k + 1 < n) {
                const double a = x[k * stride], b = x[(k + 1) * stride];
                if (!std::isnan(a) && !std::isnan(b)) val = (b - a) / (t[k + 1] - t[k]);
            }
        }
        v[k * stride] = val;
    }
}
}  // namespace

const char* to_string(VelocityScheme s) {
    switch (s) {
        case VelocityScheme::automatic:
            return "auto";
        case VelocityScheme::given:
            return "given";
        case VelocityScheme::central:
            return "central";
        case VelocityScheme::forward:
            return "forward";
    }
    return "?";
}

VelocityScheme velocity_scheme_from_string(const std::string& s, const std::string& flag) {
    if (s == "auto" || s.empty()) return VelocityScheme::automatic;
    if (s == "given") return VelocityScheme::given;
    if (s == "central") return VelocityScheme::central;
    if (s == "forward") return VelocityScheme::forward;
    throw ParameterError("--" + flag + ": '" + s + "' is not one of auto, given, central, forward");
}

const char* to_string(DriftMode d) {
    switch (d) {
        case DriftMode::none:
            return "none";
        case DriftMode::lowpass:
            return "lowpass";
        case DriftMode::com:
            return "com";
    }
    return "?";
}

DriftMode drift_mode_from_string(const std::string& s, const std::string& flag) {
    if (s == "none" || s.empty()) return DriftMode::none;
    if (s == "lowpass" || s == "low-pass") return DriftMode::lowpass;
    if (s == "com") return DriftMode::com;
    throw ParameterError("--" + flag + ": '" + s + "' is not one of none, lowpass, com");
}

void finite_difference(std::span<const double> x, std::span<const double> t, VelocityScheme scheme,
                       std::span<double> v) {
    if (scheme != VelocityScheme::central && scheme != VelocityScheme::forward)
        throw ParameterError("finite_difference: scheme must be central or forward");
    if (t.size() != x.size() || v.size() != x.size())
        throw ParameterError("finite_difference: x, t and v must have the same length");
    diff_strided(x.data(), t.data(), x.size(), 1, scheme, v.data());
}

void fill_velocities(DenseBlock& b, std::span<const double> frame_times, VelocityScheme scheme) {
    if (scheme != VelocityScheme::central && scheme != VelocityScheme::forward)
        throw ParameterError("fill_velocities: scheme must be central or forward");
    const auto T = static_cast<std::size_t>(b.n_frames);
    if (frame_times.size() != T)
        throw ParameterError("fill_velocities: frame_times must have n_frames entries");
    const std::size_t N = b.n_particles();
    b.vx.assign(T * N, kNaN);
    b.vy.assign(T * N, kNaN);
    for (std::size_t i = 0; i < N; ++i) {
        diff_strided(b.x.data() + i, frame_times.data(), T, N, scheme, b.vx.data() + i);
        diff_strided(b.y.data() + i, frame_times.data(), T, N, scheme, b.vy.data() + i);
    }
}

void TrackStreamParams::validate() const {
    if (drift_window < 1)
        throw ParameterError("drift_window must be >= 1, got " + std::to_string(drift_window));
    if (max_cells < 1) throw ParameterError("max_cells must be >= 1, got " + std::to_string(max_cells));
    if (block_rows < 1) throw ParameterError("block_rows must be >= 1, got " + std::to_string(block_rows));
}

double species_mass(const Metadata& m, int species) {
    if (species < 0 || m.species_diameters.size() < 2 || m.species_diameters[0] <= 0) return 1.0;
    if (static_cast<std::size_t>(species) >= m.species_diameters.size()) return 1.0;
    const double r = m.species_diameters[static_cast<std::size_t>(species)] / m.species_diameters[0];
    return r * r;
}

namespace {
/// Fills the raw (as stored) positions and given velocities of one particle block by reading
/// again the frames it spans: the path before TrackCache, O(blocks × frames) reads.
void fill_by_rescan(const TrajectorySource& src, const detail::TrackScan& sc, std::size_t i0,
                    std::int64_t fmin, std::int64_t fmax, std::int64_t fpb, bool want_given,
                    std::vector<Track>& tracks) {
    const std::span<const std::int64_t> bid(sc.ids.data() + i0, tracks.size());
    for (std::int64_t first = fmin; first <= fmax; first += fpb) {
        const Trajectory tr = src.read_frames(first, std::min(fpb, fmax + 1 - first));
        const auto& r = tr.rows;
        for (std::size_t k = 0; k < r.size(); ++k) {
            const std::int64_t id = r.particle[k];
            if (id < bid.front() || id > bid.back()) continue;
            const auto it = std::lower_bound(bid.begin(), bid.end(), id);
            if (it == bid.end() || *it != id) continue;
            Track& tk = tracks[static_cast<std::size_t>(it - bid.begin())];
            const auto s = static_cast<std::size_t>(r.frame[k] - tk.first_frame);
            tk.x[s] = r.x[k];
            tk.y[s] = r.y[k];
            if (want_given && r.has_velocity()) {
                tk.vx[s] = r.vx[k];
                tk.vy[s] = r.vy[k];
            }
        }
    }
}

/// Same, from the particle-major copy: read in place when it is in memory, else chunk by chunk
/// (through one buffer of a chunk's part of the block).
void fill_from_cache(const TrackCache::Impl& c, std::size_t i0, bool want_given, std::vector<double>& scratch,
                     std::vector<Track>& tracks) {
    const auto C = static_cast<std::size_t>(c.cols);
    c.slices(i0, i0 + tracks.size(), scratch,
             [&](std::size_t j, std::int64_t at, std::int64_t count, const double* p) {
                 Track& tk = tracks[j - i0];
                 for (auto s = static_cast<std::size_t>(at); s < static_cast<std::size_t>(at + count);
                      ++s, p += C) {
                     tk.x[s] = p[0];
                     tk.y[s] = p[1];
                     if (want_given && C == 4) {
                         tk.vx[s] = p[2];
                         tk.vy[s] = p[3];
                     }
                 }
             });
}
}  // namespace

namespace {

/// The time of every frame, checked increasing.
std::vector<double> checked_frame_times(const TrajectorySource& src) {
    const Metadata& meta = src.meta();
    const std::int64_t T = src.n_frames();
    std::vector<double> times(static_cast<std::size_t>(T));
    for (std::int64_t f = 0; f < T; ++f) times[f] = frame_time(meta, src.frame_columns(), 0, f);
    for (std::int64_t f = 1; f < T; ++f)
        if (!(times[f] > times[f - 1]))
            throw FormatError(at_frame(meta.source.file.empty() ? "trajectory" : meta.source.file, f,
                                       "frame times are not increasing"));
    return times;
}

/// The scan (ids, lifetimes, species votes, drift, mean given velocity): from the shared
/// particle-major copy, a private one, or (rescan) a pass of our own.
struct ScanSource {
    std::unique_ptr<TrackCache> own;
    TrackCache::Impl* cache = nullptr;  ///< the particle-major copy; null with rescan
    detail::TrackScan own_scan;
    const detail::TrackScan& scan() const { return cache ? cache->scan : own_scan; }
};

ScanSource obtain_scan(const TrajectorySource& src, const TrackStreamParams& p) {
    ScanSource s;
    if (!p.rescan) {
        TrackCache* c = p.cache && &p.cache->source() == &src ? p.cache : nullptr;
        if (!c) {
            TrackCacheParams cp;
            cp.block_rows = p.block_rows;
            cp.progress = p.progress;
            s.own = std::make_unique<TrackCache>(src, cp);
            c = s.own.get();
        }
        c->build();
        s.cache = &c->impl();
    } else {
        s.own_scan = detail::scan_tracks(src, p.block_rows, p.progress);
    }
    return s;
}

/// Cumulative drift into info.drift_x/y; returns the mean flow per frame (smoothed with the
/// low-pass drift) that is subtracted from given velocities.
std::pair<std::vector<double>, std::vector<double>> cumulative_drift(const detail::TrackScan& sc,
                                                                     const TrackStreamParams& p,
                                                                     std::int64_t T, TrackStreamInfo& info) {
    std::vector<double> dx = sc.dx, dy = sc.dy;
    info.drift_x.assign(static_cast<std::size_t>(T), 0.0);
    info.drift_y.assign(static_cast<std::size_t>(T), 0.0);
    std::vector<double> uxs(static_cast<std::size_t>(T), 0.0), uys(static_cast<std::size_t>(T), 0.0);
    if (p.drift == DriftMode::none) return {std::move(uxs), std::move(uys)};
    if (p.drift == DriftMode::lowpass) {
        dx = moving_average(dx, sc.d_ok, p.drift_window);
        dy = moving_average(dy, sc.d_ok, p.drift_window);
        uxs = moving_average(sc.ux, sc.u_ok, p.drift_window);
        uys = moving_average(sc.uy, sc.u_ok, p.drift_window);
    } else {
        uxs = sc.ux;
        uys = sc.uy;
    }
    double cx = 0, cy = 0;
    for (std::int64_t f = 0; f < T; ++f) {
        if (f > 0) {
            cx += dx[f];
            cy += dy[f];
        }
        info.drift_x[f] = cx;
        info.drift_y[f] = cy;
    }
    return {std::move(uxs), std::move(uys)};
}

/// A particle block: tracks [i0, i1) of the scan, their cells and the frames they span.
struct BlockExtent {
    std::size_t i1 = 0;
    std::int64_t cells = 0, fmin = 0, fmax = -1;
};

/// The largest block from i0 on with at most max_cells cells (at least one track).
BlockExtent next_block(const detail::TrackScan& sc, std::size_t i0, std::int64_t max_cells, std::int64_t T) {
    BlockExtent b;
    b.i1 = i0;
    b.fmin = T;
    while (b.i1 < sc.ids.size()) {
        const std::int64_t len = sc.last[b.i1] - sc.first[b.i1] + 1;
        if (b.i1 > i0 && b.cells + len > max_cells) break;
        b.cells += len;
        b.fmin = std::min(b.fmin, sc.first[b.i1]);
        b.fmax = std::max(b.fmax, sc.last[b.i1]);
        ++b.i1;
    }
    return b;
}

/// Tracks [i0, i1) with their ids, first frames and species, all positions (velocities) NaN.
std::vector<Track> empty_tracks(const detail::TrackScan& sc, std::size_t i0, std::size_t i1,
                                bool velocities) {
    std::vector<Track> tracks(i1 - i0);
    for (std::size_t j = 0; j < tracks.size(); ++j) {
        const std::size_t q = i0 + j;
        Track& tk = tracks[j];
        tk.id = sc.ids[q];
        tk.first_frame = sc.first[q];
        tk.species = sc.n_small[q] == 0 && sc.n_large[q] == 0 ? kSpeciesUnknown
                     : sc.n_large[q] > sc.n_small[q]          ? kSpeciesLarge
                                                              : kSpeciesSmall;
        const auto len = static_cast<std::size_t>(sc.last[q] - sc.first[q] + 1);
        tk.x.assign(len, kNaN);
        tk.y.assign(len, kNaN);
        if (velocities) {
            tk.vx.assign(len, kNaN);
            tk.vy.assign(len, kNaN);
        }
    }
    return tracks;
}

/// One track as read → as streamed: unwrapped (periodic), the drift subtracted, velocities
/// (given minus the mean flow u, or finite differences of the corrected positions).
void correct_track(Track& tk, const TrackStreamInfo& info, const std::vector<double>& uxs,
                   const std::vector<double>& uys, bool want_given, double Lx, double Ly) {
    double px = kNaN, py = kNaN, ux_ = 0, uy_ = 0;
    for (std::size_t s = 0; s < tk.size(); ++s) {
        const auto f = static_cast<std::size_t>(tk.first_frame) + s;
        if (want_given) {  // given velocities minus the (smoothed) mean flow
            tk.vx[s] -= uxs[f];
            tk.vy[s] -= uys[f];
        }
        if (std::isnan(tk.x[s]) || std::isnan(tk.y[s])) {
            tk.x[s] = tk.y[s] = kNaN;
            continue;
        }
        if (info.periodic) {
            if (!std::isnan(px)) {
                ux_ += minimum_image_if_periodic(tk.x[s] - px, Lx);
                uy_ += minimum_image_if_periodic(tk.y[s] - py, Ly);
            } else {
                ux_ = tk.x[s];
                uy_ = tk.y[s];
            }
            px = tk.x[s];
            py = tk.y[s];
            tk.x[s] = ux_;
            tk.y[s] = uy_;
        }
        tk.x[s] -= info.drift_x[f];
        tk.y[s] -= info.drift_y[f];
    }
    if (info.velocities && !want_given) {
        const std::span<const double> tt(info.frame_times.data() + tk.first_frame, tk.size());
        finite_difference(tk.x, tt, info.scheme, tk.vx);
        finite_difference(tk.y, tt, info.scheme, tk.vy);
    }
}

void count_species(const std::vector<Track>& tracks, TrackStreamInfo& info) {
    for (const Track& tk : tracks) {
        if (tk.species == kSpeciesSmall)
            ++info.n_small;
        else if (tk.species == kSpeciesLarge)
            ++info.n_large;
        else
            ++info.n_unknown;
    }
}

}  // namespace

// Steps: frame times → scan → drift → per particle block: extent → read (cache or rescan) →
// correct each track (any thread) → fn.
TrackStreamInfo stream_track_blocks(const TrajectorySource& src, const TrackStreamParams& p,
                                    const std::function<void(std::vector<Track>&)>& fn) {
    p.validate();
    const Metadata& meta = src.meta();
    TrackStreamInfo info;
    const std::int64_t T = src.n_frames();
    info.n_frames = T;
    info.drift = p.drift;
    info.drift_window = p.drift == DriftMode::lowpass ? p.drift_window : 0;
    info.periodic = meta.geometry.periodic();
    const double Lx = info.periodic ? meta.geometry.lx() : 0.0, Ly = info.periodic ? meta.geometry.ly() : 0.0;
    info.frame_times = checked_frame_times(src);
    const std::int64_t fpb = std::max<std::int64_t>(1, frames_per_block(src, p.block_rows));

    const ScanSource scan = obtain_scan(src, p);
    const detail::TrackScan& sc = scan.scan();
    const bool has_vel = sc.has_vel;
    if (p.scheme == VelocityScheme::given && !has_vel)
        throw ParameterError("velocity scheme 'given' requested but the input has no vx/vy columns");
    info.scheme = p.scheme == VelocityScheme::automatic
                      ? (has_vel ? VelocityScheme::given : VelocityScheme::central)
                      : p.scheme;
    info.velocities = p.velocities;
    const auto flow = cumulative_drift(sc, p, T, info);  // (u_x, u_y) per frame

    info.n_tracks = static_cast<std::int64_t>(sc.ids.size());
    Progress prog("tracks", info.n_tracks, p.progress);
    std::size_t done = 0;
    std::vector<double> scratch;
    const bool want_given = p.velocities && info.scheme == VelocityScheme::given;
    for (std::size_t i0 = 0; i0 < sc.ids.size();) {
        const BlockExtent blk = next_block(sc, i0, p.max_cells, T);
        ++info.particle_blocks;
        info.max_block_cells = std::max(info.max_block_cells, blk.cells);
        std::vector<Track> tracks = empty_tracks(sc, i0, blk.i1, p.velocities);
        if (scan.cache)
            fill_from_cache(*scan.cache, i0, want_given, scratch, tracks);
        else
            fill_by_rescan(src, sc, i0, blk.fmin, blk.fmax, fpb, want_given, tracks);
        detail::parallel_for(tracks.size(), p.threads, [&](std::size_t b, std::size_t e, int) {
            for (std::size_t j = b; j < e; ++j)
                correct_track(tracks[j], info, flow.first, flow.second, want_given, Lx, Ly);
        });
        count_species(tracks, info);
        fn(tracks);
        done += tracks.size();
        prog.update(static_cast<std::int64_t>(done));
        i0 = blk.i1;
    }
    return info;
}

TrackStreamInfo stream_tracks(const TrajectorySource& src, const TrackStreamParams& p,
                              const std::function<void(const Track&)>& fn) {
    return stream_track_blocks(src, p, [&](std::vector<Track>& block) {
        for (const Track& tk : block) fn(tk);
    });
}

}  // namespace vibra::analysis
