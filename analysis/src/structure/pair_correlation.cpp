// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/analysis/pair_correlation.hpp"

#include "detail/numeric.hpp"
#include "detail/pair_grid.hpp"
#include "detail/parallel.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "vibra/core/error.hpp"
#include "vibra/core/interrupt.hpp"
#include "vibra/core/progress.hpp"
#include "vibra/core/workers.hpp"

namespace vibra::analysis {

namespace {
using detail::kNaN;
}

StructureFrame structure_frame(const Trajectory& t, std::int64_t f) {
    StructureFrame out;
    out.frame = f;
    out.time = frame_time(t.meta, t.frames, t.index.first_frame, f);
    const auto& m = t.meta;
    const auto& rows = t.rows;
    const auto b = static_cast<std::size_t>(t.index.begin(f)), e = static_cast<std::size_t>(t.index.end(f));
    Geometry g = m.geometry;
    if (g.kind == GeometryKind::unbounded) {
        double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
        for (std::size_t r = b; r < e; ++r) {
            if (!std::isfinite(rows.x[r]) || !std::isfinite(rows.y[r])) continue;
            x0 = std::min(x0, rows.x[r]), x1 = std::max(x1, rows.x[r]);
            y0 = std::min(y0, rows.y[r]), y1 = std::max(y1, rows.y[r]);
        }
        if (!(x1 > x0) || !(y1 > y0)) {  // fewer than two distinct points: an empty frame
            out.window = Geometry::rect(0, 0, 1, 1);
            return out;
        }
        g = Geometry::rect(x0, y0, x1, y1);
    }
    out.window = g;
    const bool has_radius = !rows.radius.empty();
    const bool has_diam = !m.species_diameters.empty();
    const std::size_t n = e - b;
    out.x.reserve(n), out.y.reserve(n), out.species.reserve(n), out.particle.reserve(n);
    for (std::size_t r = b; r < e; ++r) {
        double x = rows.x[r], y = rows.y[r];
        if (!std::isfinite(x) || !std::isfinite(y)) continue;
        if (g.periodic()) {
            x -= g.lx() * std::floor((x - g.x0) / g.lx());
            y -= g.ly() * std::floor((y - g.y0) / g.ly());
            if (x >= g.x1) x = g.x0;  // rounding at the upper edge
            if (y >= g.y1) y = g.y0;
        } else if (!g.contains(x, y)) {
            continue;  // detections outside the window are cropped consistently with |W|
        }
        const std::int8_t s = rows.species.empty() ? kSpeciesUnknown : rows.species[r];
        out.x.push_back(x);
        out.y.push_back(y);
        out.species.push_back(s);
        out.particle.push_back(rows.particle[r]);
        if (has_radius || has_diam) {
            double rad = kNaN;
            if (has_diam && s >= 0 && static_cast<std::size_t>(s) < m.species_diameters.size())
                rad = 0.5 * m.species_diameters[static_cast<std::size_t>(s)];
            else if (has_radius && std::isfinite(rows.radius[r]) && rows.radius[r] > 0)
                rad = rows.radius[r];
            out.radius.push_back(rad);
        }
    }
    return out;
}

namespace {

// Reads the source block by block (skipping blocks without a sampled frame) and hands each block
// with its sampled frames (every `stride`-th, from frame 0) to `fn`; one progress line.
void for_each_sampled_block(
    const TrajectorySource& source, std::int64_t stride, bool progress, const std::string& label,
    std::int64_t block_rows,
    const std::function<void(const Trajectory&, const std::vector<std::int64_t>&)>& fn) {
    if (stride < 1)
        throw ParameterError(label + ": frame stride must be >= 1, got " + std::to_string(stride));
    const std::int64_t T = source.n_frames();
    const std::int64_t block = frames_per_block(source, std::max<std::int64_t>(1, block_rows));
    Progress bar(label, T, progress && Progress::stderr_is_interactive());
    std::vector<std::int64_t> frames;
    for (std::int64_t first = 0; first < T; first += block) {
        const std::int64_t next_sample = ((first + stride - 1) / stride) * stride;
        if (next_sample >= first + block) continue;  // only read blocks that contain a sampled frame
        const Trajectory t = source.read_frames(first, block);
        frames.clear();
        for (std::int64_t f = next_sample; f < first + t.index.n_frames(); f += stride) frames.push_back(f);
        fn(t, frames);
        bar.update(std::min(T, first + block));
    }
    bar.finish();
}

}  // namespace

void for_each_structure_frame(const TrajectorySource& source, std::int64_t stride,
                              const std::function<void(const StructureFrame&)>& fn, bool progress,
                              const std::string& label, std::int64_t block_rows) {
    for_each_sampled_block(source, stride, progress, label, block_rows,
                           [&](const Trajectory& t, const std::vector<std::int64_t>& frames) {
                               for (const auto f : frames) {
                                   throw_if_interrupted();  // Ctrl-C between frames, not only between blocks
                                   fn(structure_frame(t, f));
                               }
                           });
}

void for_each_structure_frame_parallel(const TrajectorySource& source, std::int64_t stride, int threads,
                                       const std::function<void(const StructureFrame&, int)>& fn,
                                       bool progress, const std::string& label, std::int64_t block_rows) {
    const int n_threads = std::clamp(threads, 1, kStructureLanes);
    std::size_t seen = 0;  // sampled frames before this block: the lanes continue across blocks
    for_each_sampled_block(
        source, stride, progress, label, block_rows,
        [&](const Trajectory& t, const std::vector<std::int64_t>& frames) {
            const auto lane_of = [&](std::size_t k) {
                return static_cast<int>((seen + k) % kStructureLanes);
            };
            const auto run = [&](int w) {
                for (std::size_t k = 0; k < frames.size(); ++k) {
                    if (w == 0) throw_if_interrupted();  // carried to the caller like any worker exception
                    if (lane_of(k) % n_threads == w) fn(structure_frame(t, frames[k]), lane_of(k));
                }
            };
            run_workers(n_threads, run);
            seen += frames.size();
        });
}

void for_each_structure_frame_batched(const TrajectorySource& source, std::int64_t stride, int threads,
                                      const std::function<void(const StructureFrame&, std::size_t)>& map,
                                      const std::function<void(const StructureFrame&, std::size_t)>& reduce,
                                      bool progress, const std::string& label, std::int64_t block_rows) {
    const int n_threads = std::max(1, threads);
    const std::size_t batch = structure_batch(threads);
    std::vector<StructureFrame> frames_of_batch(batch);
    for_each_sampled_block(
        source, stride, progress, label, block_rows,
        [&](const Trajectory& t, const std::vector<std::int64_t>& frames) {
            for (std::size_t k0 = 0; k0 < frames.size(); k0 += batch) {
                throw_if_interrupted();  // Ctrl-C between batches of frames, not only between blocks
                const std::size_t nb = std::min(batch, frames.size() - k0);
                detail::parallel_for_each(nb, n_threads, [&](std::size_t s, int) {
                    frames_of_batch[s] = structure_frame(t, frames[k0 + s]);
                    map(frames_of_batch[s], s);
                });
                for (std::size_t s = 0; s < nb; ++s) reduce(frames_of_batch[s], s);
            }
        });
}

void PairCorrelation::merge(const PairCorrelation& o) {
    if (o.p_.r_max != p_.r_max || o.p_.bins != p_.bins || o.p_.edge != p_.edge)
        throw ParameterError("gr: cannot merge accumulators with different parameters");
    for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 2; ++b) {
            for (std::size_t k = 0; k < num_[a][b].size(); ++k) num_[a][b][k] += o.num_[a][b][k];
            norm_[a][b] += o.norm_[a][b];
        }
    for (std::size_t k = 0; k < num_tot_.size(); ++k) {
        num_tot_[k] += o.num_tot_[k];
        sum_gf_[k] += o.sum_gf_[k];
        sum_gf2_[k] += o.sum_gf2_[k];
    }
    norm_tot_ += o.norm_tot_;
    sum_density_ += o.sum_density_, sum_density_s_ += o.sum_density_s_, sum_density_l_ += o.sum_density_l_;
    frames_ += o.frames_, ns_ += o.ns_, nl_ += o.nl_, nu_ += o.nu_;
}

void PairCorrelationParams::validate() const {
    if (!(r_max > 0) || !std::isfinite(r_max))
        throw ParameterError("gr: r_max must be > 0, got " + std::to_string(r_max));
    if (bins < 1 || bins > 10'000'000)
        throw ParameterError("gr: bins must be in [1, 1e7], got " + std::to_string(bins));
}

double circle_fraction_inside_disk(double d, double r, double R) {
    if (r <= 0 || d + r <= R) return 1.0;
    if (d <= 0) return 0.0;  // r > R around the centre: entirely outside
    const double c = (R * R - d * d - r * r) / (2.0 * d * r);
    if (c >= 1) return 1.0;
    if (c <= -1) return 0.0;
    return 1.0 - std::acos(c) / M_PI;
}

PairCorrelation::PairCorrelation(const PairCorrelationParams& p) : p_(p) {
    p_.validate();
    const auto nb = static_cast<std::size_t>(p_.bins);
    for (auto& row : num_)
        for (auto& v : row) v.assign(nb, 0.0);
    num_tot_.assign(nb, 0.0);
    sum_gf_.assign(nb, 0.0);
    sum_gf2_.assign(nb, 0.0);
}

void PairCorrelation::accumulate(const StructureFrame& fr) {
    if (fr.size() < 2) return;  // no pair: contributes nothing (and an unbounded frame has no window)
    const Geometry& w = fr.window;
    const double area = w.area();
    if (!(area > 0)) throw ParameterError("gr: frame " + std::to_string(fr.frame) + ": window has no area");
    const double rmax = p_.r_max;
    switch (w.kind) {
        case GeometryKind::periodic_box:
            if (rmax > 0.5 * std::min(w.lx(), w.ly()))
                throw ParameterError("gr: r_max " + std::to_string(rmax) +
                                     " exceeds half the periodic box (" +
                                     std::to_string(0.5 * std::min(w.lx(), w.ly())) + ")");
            break;
        case GeometryKind::window_circle:
            if (rmax >= 2 * w.r)
                throw ParameterError("gr: r_max " + std::to_string(rmax) +
                                     " must be below the window diameter " + std::to_string(2 * w.r));
            break;
        default:
            if (rmax >= std::min(w.lx(), w.ly()))
                throw ParameterError(
                    "gr: r_max " + std::to_string(rmax) + " must be below the short side of the window " +
                    std::to_string(std::min(w.lx(), w.ly())) + " at frame " + std::to_string(fr.frame));
    }
    const std::size_t n = fr.size();
    std::int64_t cnt[2] = {0, 0};
    for (auto s : fr.species) {
        if (s == kSpeciesSmall)
            ++cnt[0];
        else if (s == kSpeciesLarge)
            ++cnt[1];
    }
    ns_ += cnt[0], nl_ += cnt[1], nu_ += static_cast<std::int64_t>(n) - cnt[0] - cnt[1];
    for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 2; ++b)
            norm_[a][b] +=
                static_cast<double>(cnt[a]) * static_cast<double>(cnt[b] - (a == b ? 1 : 0)) / area;
    const double nd = static_cast<double>(n);
    const double norm_f = n > 1 ? nd * (nd - 1) / area : 0.0;
    norm_tot_ += norm_f;
    sum_density_ += nd / area, sum_density_s_ += static_cast<double>(cnt[0]) / area;
    sum_density_l_ += static_cast<double>(cnt[1]) / area;
    ++frames_;

    const auto nb = static_cast<std::size_t>(p_.bins);
    const double dr = rmax / static_cast<double>(p_.bins);
    std::vector<double>& tot = tot_;
    tot.assign(nb, 0.0);
    if (n >= 2) {
        const bool corr = p_.edge == EdgeCorrection::automatic;
        std::vector<double>& dcen = dcen_;  // distance to the circle's centre
        if (w.kind == GeometryKind::window_circle) {
            dcen.resize(n);
            for (std::size_t i = 0; i < n; ++i) dcen[i] = std::hypot(fr.x[i] - w.cx, fr.y[i] - w.cy);
        }
        thread_local detail::PairGrid grid;  // buffers reused frame after frame on each thread
        grid.build(fr.x, fr.y, rmax, w);
        if (corr && w.kind != GeometryKind::periodic_box)
            add_weighted_pairs(grid, fr, dr, area, dcen, tot);
        else
            add_counted_pairs(grid, fr, dr, tot);
    }
    for (std::size_t k = 0; k < nb; ++k) {
        num_tot_[k] += tot[k];
        if (norm_f > 0) {
            const double r0 = dr * static_cast<double>(k), r1 = r0 + dr;
            const double gf = tot[k] / (norm_f * M_PI * (r1 * r1 - r0 * r0));
            sum_gf_[k] += gf;
            sum_gf2_[k] += gf * gf;
        }
    }
}

// Weight 1 (periodic box, or no edge correction): integer counts per bin and ordered species pair
// (species 0, 1, other), added to the double sums once per frame. Integers below 2⁵³ are exact in
// a double, so this equals adding 1 per pair to the sums, in any order, to the bit.
void PairCorrelation::add_counted_pairs(const detail::PairGrid& grid, const StructureFrame& fr, double dr,
                                        std::vector<double>& tot) {
    const auto nb = static_cast<std::size_t>(p_.bins);
    auto& code = code_;  // 0 small, 1 large, 2 anything else
    code.resize(fr.size());
    for (std::size_t i = 0; i < fr.size(); ++i) {
        const auto s = fr.species[i];
        code[i] = static_cast<std::uint8_t>(s == kSpeciesSmall ? 0 : s == kSpeciesLarge ? 1 : 2);
    }
    auto& counts = counts_;  // [bin][3 × code(i) + code(j)]
    counts.assign(9 * nb, 0);
    grid.for_each_pair([&](std::size_t i, std::size_t j, double, double, double r2) {
        const auto bin = static_cast<std::size_t>(std::sqrt(r2) / dr);
        if (bin < nb) ++counts[9 * bin + 3u * code[i] + code[j]];
    });
    for (std::size_t k = 0; k < nb; ++k) {
        const std::int64_t* c = &counts[9 * k];
        std::int64_t all = 0;
        for (int q = 0; q < 9; ++q) all += c[q];
        tot[k] = 2.0 * static_cast<double>(all);  // each pair counts for both of its particles
        for (int a = 0; a < 2; ++a)
            for (int b = 0; b < 2; ++b) num_[a][b][k] += static_cast<double>(c[3 * a + b] + c[3 * b + a]);
    }
}

// Edge-corrected windows: translation (rectangle) or isotropic (circle) weights per pair.
void PairCorrelation::add_weighted_pairs(const detail::PairGrid& grid, const StructureFrame& fr, double dr,
                                         double area, const std::vector<double>& dcen,
                                         std::vector<double>& tot) {
    const auto nb = static_cast<std::size_t>(p_.bins);
    const Geometry& w = fr.window;
    grid.for_each_pair([&](std::size_t i, std::size_t j, double dx, double dy, double r2) {
        const double r = std::sqrt(r2);
        const auto bin = static_cast<std::size_t>(r / dr);
        if (bin >= nb) return;
        double wij = 1, wji = 1;
        if (w.kind == GeometryKind::window_circle) {
            const double fi = circle_fraction_inside_disk(dcen[i], r, w.r);
            const double fj = circle_fraction_inside_disk(dcen[j], r, w.r);
            wij = fi > 0 ? 1.0 / fi : 0.0;
            wji = fj > 0 ? 1.0 / fj : 0.0;
        } else {
            wij = wji = area / ((w.lx() - std::abs(dx)) * (w.ly() - std::abs(dy)));
        }
        tot[bin] += wij + wji;
        const auto si = fr.species[i], sj = fr.species[j];
        if (si >= 0 && si < 2 && sj >= 0 && sj < 2) {
            num_[si][sj][bin] += wij;
            num_[sj][si][bin] += wji;
        }
    });
}

PairCorrelationResult PairCorrelation::result() const {
    PairCorrelationResult out;
    const auto nb = static_cast<std::size_t>(p_.bins);
    const double dr = p_.r_max / static_cast<double>(p_.bins);
    out.r.resize(nb), out.r_edges.resize(nb + 1), out.g.resize(nb), out.g_err.resize(nb);
    out.g_ss.resize(nb), out.g_sl.resize(nb), out.g_ll.resize(nb);
    out.frames = frames_, out.n_small = ns_, out.n_large = nl_, out.n_unknown = nu_;
    const double fr = frames_ > 0 ? static_cast<double>(frames_) : kNaN;
    out.density = sum_density_ / fr, out.density_small = sum_density_s_ / fr,
    out.density_large = sum_density_l_ / fr;
    auto ratio = [](double num, double den) { return den > 0 ? num / den : kNaN; };
    for (std::size_t k = 0; k <= nb; ++k) out.r_edges[k] = dr * static_cast<double>(k);
    for (std::size_t k = 0; k < nb; ++k) {
        const double r0 = out.r_edges[k], r1 = out.r_edges[k + 1];
        const double shell = M_PI * (r1 * r1 - r0 * r0);
        out.r[k] = 0.5 * (r0 + r1);
        out.g[k] = ratio(num_tot_[k], norm_tot_ * shell);
        out.g_ss[k] = ratio(num_[0][0][k], norm_[0][0] * shell);
        out.g_ll[k] = ratio(num_[1][1][k], norm_[1][1] * shell);
        out.g_sl[k] = ratio(num_[0][1][k] + num_[1][0][k], (norm_[0][1] + norm_[1][0]) * shell);
        if (frames_ >= 2) {
            const double m = sum_gf_[k] / fr;
            const double var = std::max(0.0, (sum_gf2_[k] / fr - m * m) * fr / (fr - 1));
            out.g_err[k] = std::sqrt(var / fr);
        } else {
            out.g_err[k] = kNaN;
        }
    }
    return out;
}

GrPeak gr_peak(std::span<const double> edges, std::span<const double> g, double density) {
    GrPeak pk;
    const std::size_t n = g.size();
    if (n == 0 || edges.size() != n + 1) return pk;
    std::size_t p = n;
    for (std::size_t k = 0; k < n; ++k)
        if (std::isfinite(g[k]) && (p == n || g[k] > g[p])) p = k;
    if (p == n) {
        pk.r_peak = pk.g_peak = pk.r_min = pk.coordination = kNaN;
        return pk;
    }
    pk.r_peak = 0.5 * (edges[p] + edges[p + 1]);
    pk.g_peak = g[p];
    std::size_t m = n;
    for (std::size_t k = p + 1; k < n; ++k) {
        if (!std::isfinite(g[k])) continue;
        if (g[k] < 1 && (k + 1 == n || !std::isfinite(g[k + 1]) || g[k] <= g[k + 1])) {
            m = k;
            break;
        }
    }
    if (m == n) {
        pk.r_min = pk.coordination = kNaN;
        return pk;
    }
    pk.r_min = 0.5 * (edges[m] + edges[m + 1]);
    double z = 0;
    for (std::size_t k = 0; k <= m; ++k) {
        if (!std::isfinite(g[k])) continue;
        const double a = M_PI * (edges[k + 1] * edges[k + 1] - edges[k] * edges[k]);
        z += (k == m ? 0.5 : 1.0) * g[k] * a;
    }
    pk.coordination = density * z;
    return pk;
}

// ---------------------------------------------------------------------------------------------
// Structure defaults and the g(r) analysis

StructureDefaults structure_defaults(const TrajectorySource& src) {
    StructureDefaults ff;
    const std::int64_t T = src.n_frames();
    for (std::int64_t f = 0; f < T; f += std::max<std::int64_t>(1, T / 20)) {
        const auto t = src.read_frames(f, 1);
        const auto fr = structure_frame(t, f);
        if (fr.size() < 2) continue;
        ff.window = fr.window;
        ff.n = static_cast<std::int64_t>(fr.size());
        ff.spacing = std::sqrt(fr.window.area() / static_cast<double>(fr.size()));
        return ff;
    }
    throw ParameterError(src.meta().source.file + ": no frame with at least two particles");
}

double default_rmax(const StructureDefaults& ff) {
    const Geometry& w = ff.window;
    double lim = 0;
    if (w.periodic())
        lim = 0.499 * std::min(w.lx(), w.ly());
    else if (w.kind == GeometryKind::window_circle)
        lim = 0.5 * w.r;
    else
        lim = 0.25 * std::min(w.lx(), w.ly());
    return std::min(lim, 10 * ff.spacing);
}

std::string edge_name(const Geometry& w, EdgeCorrection e) {
    if (w.periodic()) return "none (periodic, minimum image)";
    if (e == EdgeCorrection::none) return "none";
    return w.kind == GeometryKind::window_circle ? "isotropic (Ripley)" : "translation (Ohser-Stoyan)";
}

GrResult compute_gr(const TrajectorySource& src, const GrParams& p) {
    GrResult out;
    const auto defaults = structure_defaults(src);
    out.window = defaults.window;
    out.pair = p.pair;
    if (!(out.pair.r_max > 0)) out.pair.r_max = default_rmax(defaults);
    out.stride = p.stride;
    const int threads = std::max(1, p.threads);
    std::vector<PairCorrelation> accs(static_cast<std::size_t>(kStructureLanes),
                                      PairCorrelation(out.pair));  // one per lane
    for_each_structure_frame_parallel(
        src, out.stride, threads,
        [&](const StructureFrame& f, int w) { accs[static_cast<std::size_t>(w)].accumulate(f); }, p.progress,
        "gr");
    for (std::size_t w = 1; w < accs.size(); ++w) accs[0].merge(accs[w]);
    out.g = accs[0].result();
    return out;
}

ResultGroup to_group(const GrResult& res, const Metadata& m) {
    const std::string L = m.length_unit;
    const auto& r = res.g;
    const auto& p = res.pair;
    const auto stride = res.stride;
    ResultGroup g;
    g.name = "gr";
    g.add("r", r.r, L);
    g.add("r_edges", r.r_edges, L);
    g.add("g", r.g, "1");
    g.add("g_err", r.g_err, "1").attrs["meaning"] =
        std::string("standard error of g from the frame-to-frame scatter");
    g.attrs["r_max"] = p.r_max;
    g.attrs["bins"] = p.bins;
    g.attrs["frame_stride"] = stride;
    g.attrs["frames"] = r.frames;
    g.attrs["geometry"] = std::string(to_string(res.window.kind));
    g.attrs["edge_correction"] = edge_name(res.window, p.edge);
    g.attrs["normalisation"] =
        std::string("ratio of sums over frames: sum w_ij / (sum N_a (N_b - delta_ab)/|W| * annulus area)");
    g.attrs["density"] = r.density;
    const auto pk = gr_peak(r.r_edges, r.g, r.density);
    g.attrs["r_peak"] = pk.r_peak;
    g.attrs["g_peak"] = pk.g_peak;
    g.attrs["r_min"] = pk.r_min;
    g.attrs["coordination"] = pk.coordination;
    if (r.has_partials()) {
        g.add("g_small_small", r.g_ss, "1");
        g.add("g_small_large", r.g_sl, "1");
        g.add("g_large_large", r.g_ll, "1");
        struct P {
            const char* name;
            const std::vector<double>* g;
            double rho_nb;  // density of the neighbour species
        };
        const P parts[] = {{"small_small", &r.g_ss, r.density_small},
                           {"small_large", &r.g_sl, r.density_large},
                           {"large_large", &r.g_ll, r.density_large}};
        for (const auto& q : parts) {
            const auto k = gr_peak(r.r_edges, *q.g, q.rho_nb);
            const std::string s = q.name;
            g.attrs["r_peak_" + s] = k.r_peak;
            g.attrs["g_peak_" + s] = k.g_peak;
            g.attrs["r_min_" + s] = k.r_min;
            g.attrs["coordination_" + s] =
                k.coordination;  // neighbours of the second species around the first
        }
        const auto ls = gr_peak(r.r_edges, r.g_sl, r.density_small);
        g.attrs["coordination_large_small"] = ls.coordination;
        g.attrs["density_small"] = r.density_small;
        g.attrs["density_large"] = r.density_large;
    }
    g.attrs["particle_frames_small"] = r.n_small;
    g.attrs["particle_frames_large"] = r.n_large;
    g.attrs["particle_frames_unknown"] = r.n_unknown;
    return g;
}

}  // namespace vibra::analysis
