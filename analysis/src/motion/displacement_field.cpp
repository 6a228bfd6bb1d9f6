// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/analysis/displacement_field.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "detail/collective_stream.hpp"
#include "vibra/analysis/delaunay.hpp"
#include "vibra/analysis/velocity_correlation.hpp"
#include "vibra/core/cell_list.hpp"
#include "vibra/core/error.hpp"
#include "vibra/core/periodic.hpp"

namespace vibra::analysis {

FrameSnapshot snapshot_of(const Trajectory& block, std::int64_t f) {
    FrameSnapshot s;
    s.frame = f;
    const auto b = static_cast<std::size_t>(block.index.begin(f)),
               e = static_cast<std::size_t>(block.index.end(f));
    s.id.reserve(e - b);
    s.x.reserve(e - b);
    s.y.reserve(e - b);
    for (std::size_t r = b; r < e; ++r) {
        if (block.rows.particle[r] < 0) continue;
        if (!std::isfinite(block.rows.x[r]) || !std::isfinite(block.rows.y[r])) continue;
        s.id.push_back(block.rows.particle[r]);
        s.x.push_back(block.rows.x[r]);
        s.y.push_back(block.rows.y[r]);
    }
    // Tables are sorted by (frame, particle); keep the guarantee even for hand-made input.
    if (!std::is_sorted(s.id.begin(), s.id.end())) {
        std::vector<std::size_t> o(s.id.size());
        for (std::size_t i = 0; i < o.size(); ++i) o[i] = i;
        std::sort(o.begin(), o.end(), [&](auto a, auto c) { return s.id[a] < s.id[c]; });
        FrameSnapshot t;
        t.frame = f;
        for (auto i : o) t.id.push_back(s.id[i]), t.x.push_back(s.x[i]), t.y.push_back(s.y[i]);
        s = std::move(t);
    }
    return s;
}

FieldDrift field_drift_from_string(const std::string& s) {
    if (s == "none") return FieldDrift::none;
    if (s == "mean") return FieldDrift::mean;
    throw ParameterError("drift: '" + s + "' is not one of none, mean");
}

Displacements displacements(const FrameSnapshot& a, const FrameSnapshot& b, const Geometry& g,
                            FieldDrift drift) {
    Displacements d;
    d.frame = a.frame;
    d.lag = b.frame - a.frame;
    const double lx = g.lx(), ly = g.ly();
    std::size_t i = 0, j = 0;
    while (i < a.id.size() && j < b.id.size()) {
        if (a.id[i] < b.id[j]) {
            ++i;
        } else if (b.id[j] < a.id[i]) {
            ++j;
        } else {
            double dx = b.x[j] - a.x[i], dy = b.y[j] - a.y[i];
            if (g.periodic()) {
                dx = minimum_image(dx, lx);
                dy = minimum_image(dy, ly);
            }
            d.id.push_back(a.id[i]);
            d.x.push_back(a.x[i]);
            d.y.push_back(a.y[i]);
            d.ux.push_back(dx);
            d.uy.push_back(dy);
            ++i, ++j;
        }
    }
    if (drift == FieldDrift::mean && !d.id.empty()) {
        double mx = 0, my = 0;
        for (std::size_t k = 0; k < d.size(); ++k) mx += d.ux[k], my += d.uy[k];
        mx /= static_cast<double>(d.size());
        my /= static_cast<double>(d.size());
        for (std::size_t k = 0; k < d.size(); ++k) d.ux[k] -= mx, d.uy[k] -= my;
        d.drift_x = mx, d.drift_y = my;
    }
    return d;
}

Geometry field_region(const Geometry& g, std::span<const double> x, std::span<const double> y) {
    switch (g.kind) {
        case GeometryKind::periodic_box:
        case GeometryKind::window_rect:
            return g;
        case GeometryKind::window_circle: {
            Geometry c = g;  // keep the circle for contains(); x0..y1 = bounding square
            c.x0 = g.cx - g.r, c.x1 = g.cx + g.r, c.y0 = g.cy - g.r, c.y1 = g.cy + g.r;
            return c;
        }
        case GeometryKind::unbounded:
        default: {
            double xmin = std::numeric_limits<double>::infinity(), xmax = -xmin, ymin = xmin, ymax = -xmin;
            for (std::size_t i = 0; i < x.size(); ++i) {
                if (!std::isfinite(x[i]) || !std::isfinite(y[i])) continue;
                xmin = std::min(xmin, x[i]), xmax = std::max(xmax, x[i]);
                ymin = std::min(ymin, y[i]), ymax = std::max(ymax, y[i]);
            }
            if (!(xmin < xmax) || !(ymin < ymax))
                throw ParameterError("field region: the data have no extent (need points spread in x and y)");
            return Geometry::rect(xmin, ymin, xmax, ymax);
        }
    }
}

Grid make_grid(const Geometry& region, double spacing) {
    if (!(spacing > 0) || !std::isfinite(spacing))
        throw ParameterError("grid spacing must be > 0, got " + std::to_string(spacing));
    const double lx = region.x1 - region.x0, ly = region.y1 - region.y0;
    if (!(lx > 0) || !(ly > 0)) throw ParameterError("grid: the region has no extent");
    Grid gr;
    gr.x0 = region.x0, gr.y0 = region.y0;
    gr.nx = static_cast<std::size_t>(std::max(2.0, std::round(lx / spacing)));
    gr.ny = static_cast<std::size_t>(std::max(2.0, std::round(ly / spacing)));
    if (gr.nx * gr.ny > (std::size_t{1} << 26))
        throw ParameterError("grid spacing " + std::to_string(spacing) + " gives more than 2^26 nodes");
    gr.hx = lx / static_cast<double>(gr.nx);
    gr.hy = ly / static_cast<double>(gr.ny);
    gr.periodic = region.periodic();
    return gr;
}

double mean_spacing(double area, std::size_t n) {
    if (n == 0 || !(area > 0)) return 0;
    return std::sqrt(area / static_cast<double>(n));
}

void CoarseGrainParams::validate() const {
    if (!(sigma > 0) || !std::isfinite(sigma))
        throw ParameterError("coarse-graining sigma must be > 0, got " + std::to_string(sigma));
    if (!(cutoff >= 1) || !std::isfinite(cutoff))
        throw ParameterError("coarse-graining cutoff must be ≥ 1 (in sigma), got " + std::to_string(cutoff));
    if (!(min_weight > 0) || !std::isfinite(min_weight))
        throw ParameterError("coarse-graining min_weight must be > 0, got " + std::to_string(min_weight));
}

std::size_t GridField::n_valid() const {
    return static_cast<std::size_t>(std::count(valid.begin(), valid.end(), std::uint8_t{1}));
}

GridField coarse_grain(const Grid& grid, std::span<const double> x, std::span<const double> y,
                       std::span<const double> ux, std::span<const double> uy, const Geometry& region,
                       const CoarseGrainParams& p) {
    p.validate();
    if (x.size() != y.size() || x.size() != ux.size() || x.size() != uy.size())
        throw ParameterError("coarse_grain: x, y, ux, uy differ in length");
    GridField f;
    f.grid = grid;
    const std::size_t M = grid.size();
    f.ux.assign(M, 0.0);
    f.uy.assign(M, 0.0);
    f.weight.assign(M, 0.0);
    f.valid.assign(M, 0);
    const double rc = p.cutoff * p.sigma, rc2 = rc * rc, inv2s2 = 1.0 / (2 * p.sigma * p.sigma);
    const auto nx = static_cast<std::int64_t>(grid.nx), ny = static_cast<std::int64_t>(grid.ny);
    const bool per = grid.periodic;
    if (per && (rc > 0.5 * grid.lx() || rc > 0.5 * grid.ly()))
        throw ParameterError("coarse_grain: kernel support " + std::to_string(rc) +
                             " exceeds half the periodic box");
    // Scatter each point onto the nodes within its kernel support (O(N) for fixed σ/h).
    for (std::size_t n = 0; n < x.size(); ++n) {
        if (!std::isfinite(x[n]) || !std::isfinite(y[n]) || !std::isfinite(ux[n]) || !std::isfinite(uy[n]))
            continue;
        const double fx = (x[n] - grid.x0) / grid.hx - 0.5, fy = (y[n] - grid.y0) / grid.hy - 0.5;
        auto i0 = static_cast<std::int64_t>(std::ceil(fx - rc / grid.hx));
        auto i1 = static_cast<std::int64_t>(std::floor(fx + rc / grid.hx));
        auto j0 = static_cast<std::int64_t>(std::ceil(fy - rc / grid.hy));
        auto j1 = static_cast<std::int64_t>(std::floor(fy + rc / grid.hy));
        if (!per) {
            i0 = std::max<std::int64_t>(i0, 0), j0 = std::max<std::int64_t>(j0, 0);
            i1 = std::min(i1, nx - 1), j1 = std::min(j1, ny - 1);
        }
        for (std::int64_t j = j0; j <= j1; ++j) {
            const double dy = (static_cast<double>(j) + 0.5) * grid.hy + grid.y0 - y[n];
            const std::int64_t jj = per ? ((j % ny) + ny) % ny : j;
            for (std::int64_t i = i0; i <= i1; ++i) {
                const double dx = (static_cast<double>(i) + 0.5) * grid.hx + grid.x0 - x[n];
                const double r2 = dx * dx + dy * dy;
                if (r2 >= rc2) continue;
                const std::int64_t ii = per ? ((i % nx) + nx) % nx : i;
                const auto k = static_cast<std::size_t>(jj * nx + ii);
                const double w = std::exp(-r2 * inv2s2);
                f.weight[k] += w;
                f.ux[k] += w * ux[n];
                f.uy[k] += w * uy[n];
            }
        }
    }
    const bool check_region = region.kind == GeometryKind::window_circle;
    for (std::size_t j = 0; j < grid.ny; ++j) {
        for (std::size_t i = 0; i < grid.nx; ++i) {
            const std::size_t k = j * grid.nx + i;
            bool ok = f.weight[k] >= p.min_weight;
            if (ok && check_region) ok = region.contains(grid.x(i), grid.y(j));
            if (ok) {
                f.ux[k] /= f.weight[k];
                f.uy[k] /= f.weight[k];
                f.valid[k] = 1;
            } else {
                f.ux[k] = f.uy[k] = 0;
            }
        }
    }
    return f;
}

void smooth_at_points(std::span<const double> x, std::span<const double> y, std::span<const double> ux,
                      std::span<const double> uy, const Geometry& g, double sigma, double cutoff,
                      std::vector<double>& sx, std::vector<double>& sy) {
    if (!(sigma > 0)) throw ParameterError("smooth_at_points: sigma must be > 0");
    const std::size_t n = x.size();
    sx.assign(n, 0.0);
    sy.assign(n, 0.0);
    std::vector<double> w(n, 1.0);  // self weight exp(0) = 1
    for (std::size_t i = 0; i < n; ++i) sx[i] = ux[i], sy[i] = uy[i];
    if (n == 0) return;
    const double inv2s2 = 1.0 / (2 * sigma * sigma);
    CellList cl(x, y, cutoff * sigma, g);
    cl.for_each_pair([&](std::size_t i, std::size_t j, double, double, double r2) {
        const double e = std::exp(-r2 * inv2s2);
        w[i] += e, w[j] += e;
        sx[i] += e * ux[j], sy[i] += e * uy[j];
        sx[j] += e * ux[i], sy[j] += e * uy[i];
    });
    for (std::size_t i = 0; i < n; ++i) sx[i] /= w[i], sy[i] /= w[i];
}

// ---------------------------------------------------------------------------------------------
// The field analysis

FieldResult compute_field(const TrajectorySource& src, const FieldParams& p) {
    constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
    const auto& s = p.field;
    const std::size_t nl = s.lags.size(), nt = static_cast<std::size_t>(s.n_times), M = s.grid.size();
    FieldResult r;
    r.kinetic_energy.assign(nl * nt, kNaN), r.polar_order.assign(nl * nt, kNaN),
        r.n_particles.assign(nl * nt, kNaN);
    r.valid_fraction.assign(nl * nt, kNaN), r.grid_rms.assign(nl * nt, kNaN);
    auto& ke = r.kinetic_energy;
    auto& polar = r.polar_order;
    auto& npart = r.n_particles;
    auto& vfrac = r.valid_fraction;
    auto& rms = r.grid_rms;
    // Snapshot start indices per lag: evenly spaced over the start frames that lag allows.
    std::vector<std::vector<std::int64_t>> snap_k(nl);
    for (std::size_t li = 0; li < nl; ++li) {
        const std::int64_t kmax = (s.n_frames - 1 - s.lags[li]) / s.stride;  // last usable start index
        if (kmax < 0) continue;
        for (std::int64_t q = 0; q < p.snapshots; ++q) {
            const std::int64_t k =
                p.snapshots == 1 ? 0 : (q * kmax) / std::max<std::int64_t>(1, p.snapshots - 1);
            if (snap_k[li].empty() || snap_k[li].back() != k) snap_k[li].push_back(k);
        }
    }
    auto& snaps = r.snapshots;
    snaps.resize(nl);
    const auto is_snapshot = [&](std::size_t li, std::int64_t k) {
        return std::find(snap_k[li].begin(), snap_k[li].end(), k) != snap_k[li].end();
    };
    // Per pair on the worker threads; a snapshot's field and triangles go to its batch slot and
    // are appended in stream order.
    struct Slot {
        GridField F;
        std::vector<std::array<std::int32_t, 3>> triangles;
    };
    std::vector<Slot> slots(4 * static_cast<std::size_t>(std::max(1, p.threads)));
    const auto map = [&](std::size_t li, std::int64_t k, Displacements& d, std::size_t slot) {
        const std::size_t at = li * nt + static_cast<std::size_t>(k);
        double e = 0;
        for (std::size_t i = 0; i < d.size(); ++i) e += d.ux[i] * d.ux[i] + d.uy[i] * d.uy[i];
        ke[at] = d.size() ? 0.5 * e / static_cast<double>(d.size()) : kNaN;
        polar[at] = polar_order(d.ux, d.uy);
        npart[at] = static_cast<double>(d.size());
        auto F = detail::field_of(s, d);
        vfrac[at] = static_cast<double>(F.n_valid()) / static_cast<double>(M);
        rms[at] = detail::rms_valid(F);
        if (!is_snapshot(li, k)) return;
        slots[slot].F = std::move(F);
        // The Delaunay alternative: the particle vectors on their triangulation (piecewise-linear
        // field), vertex indices local to the snapshot.
        slots[slot].triangles = delaunay(d.x, d.y).triangles;
    };
    const auto reduce = [&](std::size_t li, std::int64_t k, Displacements& d, std::size_t slot) {
        if (!is_snapshot(li, k)) return;
        const auto& F = slots[slot].F;
        auto& sn = snaps[li];
        for (std::size_t m = 0; m < M; ++m) {
            sn.ux.push_back(F.valid[m] ? F.ux[m] : kNaN);
            sn.uy.push_back(F.valid[m] ? F.uy[m] : kNaN);
        }
        sn.px.insert(sn.px.end(), d.x.begin(), d.x.end());
        sn.py.insert(sn.py.end(), d.y.begin(), d.y.end());
        sn.pux.insert(sn.pux.end(), d.ux.begin(), d.ux.end());
        sn.puy.insert(sn.puy.end(), d.uy.begin(), d.uy.end());
        for (const auto& t : slots[slot].triangles)
            for (auto v : t) sn.tri.push_back(v);
        sn.tri_offsets.push_back(static_cast<std::int64_t>(sn.tri.size() / 3));
        sn.offsets.push_back(static_cast<std::int64_t>(sn.px.size()));
        sn.frames.push_back(d.frame);
    };
    detail::stream_displacements(src, s, map, reduce, p.threads);
    return r;
}

ResultGroup to_group(const FieldResult& r, const FieldParams& p, const TrajectorySource& src) {
    const auto& s = p.field;
    const std::size_t nl = s.lags.size(), nt = static_cast<std::size_t>(s.n_times);
    ResultGroup g;
    g.name = "field";
    detail::record_field_settings(s, g.attrs);
    g.attrs["kinetic_energy_definition"] = std::string("1/2 <|u|^2> over the particles of each start frame");
    detail::common_arrays(g, src, s);
    std::vector<double> gx(s.grid.nx), gy(s.grid.ny);
    for (std::size_t i = 0; i < s.grid.nx; ++i) gx[i] = s.grid.x(i);
    for (std::size_t j = 0; j < s.grid.ny; ++j) gy[j] = s.grid.y(j);
    g.add("grid_x", gx, s.L);
    g.add("grid_y", gy, s.L);
    g.add2d("kinetic_energy", r.kinetic_energy, nl, nt, s.energy_unit());
    g.add2d("polar_order", r.polar_order, nl, nt, "1");
    g.add2d("n_particles", r.n_particles, nl, nt, "1");
    g.add2d("valid_fraction", r.valid_fraction, nl, nt, "1");
    g.add2d("grid_rms", r.grid_rms, nl, nt, s.field_unit());
    for (std::size_t li = 0; li < nl; ++li) {
        const auto& sn = r.snapshots[li];
        ResultGroup sub;
        sub.name = "lag_" + std::to_string(s.lags[li]);
        sub.attrs["lag_frames"] = s.lags[li];
        const std::size_t ns = sn.frames.size();
        sub.add_int("snapshot_frames", sn.frames, "frame");
        detail::add3d(sub, "ux", sn.ux, ns, s.grid.ny, s.grid.nx, s.field_unit());
        detail::add3d(sub, "uy", sn.uy, ns, s.grid.ny, s.grid.nx, s.field_unit());
        sub.add_int("particle_offsets", sn.offsets, "1");
        sub.add("particle_x", sn.px, s.L);
        sub.add("particle_y", sn.py, s.L);
        sub.add("particle_ux", sn.pux, s.field_unit());
        sub.add("particle_uy", sn.puy, s.field_unit());
        const std::size_t ntri = sn.tri.size() / 3;
        auto& tr = sub.add_int("triangles", sn.tri, "1");
        tr.shape = {ntri, 3};
        tr.attrs["meaning"] = std::string(
            "Delaunay triangles (counter-clockwise) of each snapshot's particles; indices local to the "
            "snapshot");
        sub.add_int("triangle_offsets", sn.tri_offsets, "1");
        g.groups.push_back(std::move(sub));
    }
    return g;
}

}  // namespace vibra::analysis
