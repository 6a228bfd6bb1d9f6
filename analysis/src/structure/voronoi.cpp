// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/analysis/voronoi.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "vibra/core/cell_list.hpp"
#include "vibra/core/error.hpp"

namespace vibra::analysis {

namespace {

struct Vertex {
    double x, y;
    std::int64_t label;  // source of the edge starting at this vertex: neighbour index, −1 = boundary
};

/// Clips polygon `poly` (counter-clockwise) by {p : p·(dx,dy) ≤ b}; the new edge gets `label`.
/// Returns false when nothing changed.
bool clip(std::vector<Vertex>& poly, std::vector<Vertex>& tmp, double dx, double dy, double b,
          std::int64_t label) {
    bool any_out = false;
    for (const auto& v : poly)
        if (v.x * dx + v.y * dy > b) {
            any_out = true;
            break;
        }
    if (!any_out) return false;
    tmp.clear();
    const std::size_t n = poly.size();
    for (std::size_t k = 0; k < n; ++k) {
        const Vertex& P = poly[k];
        const Vertex& Q = poly[(k + 1) % n];
        const double sp = P.x * dx + P.y * dy - b, sq = Q.x * dx + Q.y * dy - b;
        const bool pin = sp <= 0, qin = sq <= 0;
        if (pin) tmp.push_back(P);
        if (pin != qin) {
            const double t = sp / (sp - sq);
            Vertex I{P.x + t * (Q.x - P.x), P.y + t * (Q.y - P.y), pin ? label : P.label};
            tmp.push_back(I);
        }
    }
    poly.swap(tmp);
    return true;
}

double polygon_area(const std::vector<Vertex>& poly) {
    double a = 0;
    const std::size_t n = poly.size();
    for (std::size_t k = 0; k < n; ++k) {
        const auto& P = poly[k];
        const auto& Q = poly[(k + 1) % n];
        a += P.x * Q.y - Q.x * P.y;
    }
    return 0.5 * a;
}

double max_vertex_distance(const std::vector<Vertex>& poly) {
    double m = 0;
    for (const auto& v : poly) m = std::max(m, v.x * v.x + v.y * v.y);
    return std::sqrt(m);
}

}  // namespace

void VoronoiParams::validate() const {
    if (!(search_radius >= 0) || !std::isfinite(search_radius))
        throw ParameterError("voronoi: search_radius must be >= 0 (0 = automatic), got " +
                             std::to_string(search_radius));
}

namespace {

/// The particles' own sizes (unknown → the mean of the known; empty when none is known): the
/// cells' weights in a radical tessellation, and every cell's packing fraction in either.
std::vector<double> particle_radii(const StructureFrame& fr) {
    const std::size_t n = fr.size();
    std::vector<double> out;
    if (fr.radius.size() != n) return out;
    double sum = 0;
    std::int64_t cnt = 0;
    for (double r : fr.radius)
        if (std::isfinite(r) && r > 0) sum += r, ++cnt;
    if (cnt == 0) return out;
    const double mean = sum / static_cast<double>(cnt);
    out.resize(n);
    for (std::size_t i = 0; i < n; ++i)
        out[i] = (std::isfinite(fr.radius[i]) && fr.radius[i] > 0) ? fr.radius[i] : mean;
    return out;
}

/// Builds the cells one particle at a time: seed (the bounding polygon around the particle) →
/// clip (by the radical lines of the particles within the search radius, nearest first, then
/// within 2S, 4S, … until no farther particle can cut it, or all of them) → cell (area,
/// neighbours with their edge lengths, boundary flag).
class VoronoiBuilder {
public:
    VoronoiBuilder(const StructureFrame& fr, const VoronoiParams& p, VoronoiTessellation& out)
        : fr_(fr),
          w_(fr.window),
          out_(out),
          n_(fr.size()),
          S_(search_radius(fr, p)),
          cl_(fr.x, fr.y, S_, w_),
          used_(n_, 0) {
        for (double r : out.radius) rmax_part_ = std::max(rmax_part_, r);
        // Bounding polygon in absolute coordinates (counter-clockwise).
        if (w_.kind == GeometryKind::window_circle) {
            bx0_ = w_.cx - w_.r, bx1_ = w_.cx + w_.r, by0_ = w_.cy - w_.r, by1_ = w_.cy + w_.r;
        } else {
            bx0_ = w_.x0, bx1_ = w_.x1, by0_ = w_.y0, by1_ = w_.y1;
        }
        levels_.push_back(nullptr);  // levels_[k]: cut-off S·2^k (levels_[0] unused: `cl_`)
        span_ = std::hypot(bx1_ - bx0_, by1_ - by0_);
    }

    void cell(std::size_t i) {
        xi_ = fr_.x[i];
        yi_ = fr_.y[i];
        Ri2_ = out_.radius[i] * out_.radius[i];
        seed();
        cand_.clear();
        cl_.for_each_near(xi_, yi_, [&](std::size_t j, double dx, double dy, double r2) {
            if (j != i) cand_.push_back({r2, dx, dy, static_cast<std::int64_t>(j)});
        });
        clip_by_candidates();
        grow(i);
        for (auto j : used_list_) used_[j] = 0;
        used_list_.clear();
        record(i);
    }

private:
    struct Cand {
        double d2, dx, dy;
        std::int64_t j;
    };

    static double search_radius(const StructureFrame& fr, const VoronoiParams& p) {
        const Geometry& w = fr.window;
        const double area_w = w.area();
        double S =
            p.search_radius > 0 ? p.search_radius : 3.0 * std::sqrt(area_w / static_cast<double>(fr.size()));
        if (w.periodic()) S = std::min(S, 0.499 * std::min(w.lx(), w.ly()));
        return std::max(S, 1e-12);
    }

    double radius_of(std::size_t level) const { return S_ * std::ldexp(1.0, static_cast<int>(level)); }

    /// The starting polygon, relative to particle i: the box (periodic) or the window's bounds.
    void seed() {
        poly_.clear();
        if (w_.periodic()) {
            const double hx = 0.5 * w_.lx(), hy = 0.5 * w_.ly();
            poly_ = {{-hx, -hy, -1}, {hx, -hy, -1}, {hx, hy, -1}, {-hx, hy, -1}};
        } else {
            poly_ = {{bx0_ - xi_, by0_ - yi_, -1},
                     {bx1_ - xi_, by0_ - yi_, -1},
                     {bx1_ - xi_, by1_ - yi_, -1},
                     {bx0_ - xi_, by1_ - yi_, -1}};
        }
    }

    /// Clips the cell by the radical line between i and candidate c; true when the cell changed.
    bool cut(const Cand& c) {
        if (c.d2 <= 0) return false;  // coincident detections: no radical line
        const double Rj = out_.radius[static_cast<std::size_t>(c.j)];
        const double b = 0.5 * (c.d2 + Ri2_ - Rj * Rj);
        return clip(poly_, tmp_, c.dx, c.dy, b, c.j);
    }

    /// Sorts the candidates nearest first and cuts by each (marked as tried) until the cell is
    /// empty, or until no farther candidate can cut it: a line at distance D with R_j ≤ R_max
    /// leaves every vertex (|v| ≤ ρ) inside once (D − ρ)² > ρ² + R_max² − R_i² (with a margin for
    /// rounding), and that holds for all larger D too. Those candidates would not change the
    /// polygon (clip leaves it as it is), and ρ + sqrt(ρ² + R_max² − R_i²) < D is then within
    /// this search radius, so grow() stops here: the cells are those of trying them all.
    void clip_by_candidates() {
        std::sort(cand_.begin(), cand_.end(), [](const Cand& a, const Cand& b) { return a.d2 < b.d2; });
        double rho = max_vertex_distance(poly_);
        for (const auto& c : cand_) {
            const double D = std::sqrt(c.d2);
            if (D > rho) {
                const double slack = (D - rho) * (D - rho) - (rho * rho + rmax_part_ * rmax_part_ - Ri2_);
                if (slack > 1e-9 * (D * D + rho * rho + rmax_part_ * rmax_part_ + Ri2_)) break;
            }
            if (cut(c)) rho = max_vertex_distance(poly_);
            used_[static_cast<std::size_t>(c.j)] = 1;
            used_list_.push_back(static_cast<std::size_t>(c.j));
            if (poly_.empty()) break;
        }
    }

    // Security: a particle at distance D can cut the cell only if (D − ρ)² − R_j² < ρ² − R_i²
    // (ρ = farthest vertex), so all particles within `need` = ρ + sqrt(ρ² + R_max² − R_i²) must
    // have been tried. Grow the search radius (cell lists of 2S, 4S, … built on demand) until
    // that holds; beyond half a periodic box (or the whole window) try every particle.
    void grow(std::size_t i) {
        std::size_t level = 0;
        while (!poly_.empty()) {
            const double rho = max_vertex_distance(poly_);
            const double need = rho + std::sqrt(std::max(0.0, rho * rho + rmax_part_ * rmax_part_ - Ri2_));
            if (need <= radius_of(level)) break;
            ++level;
            if (level == 1) ++out_.brute_force_cells;
            const double R = radius_of(level);
            if ((w_.periodic() && R > 0.499 * std::min(w_.lx(), w_.ly())) || R > 2 * span_) {
                brute(i, rho);
                break;
            }
            while (levels_.size() <= level)
                levels_.push_back(std::make_unique<CellList>(fr_.x, fr_.y, radius_of(levels_.size()), w_));
            cand_.clear();
            levels_[level]->for_each_near(xi_, yi_, [&](std::size_t j, double dx, double dy, double r2) {
                if (j != i && !used_[j]) cand_.push_back({r2, dx, dy, static_cast<std::int64_t>(j)});
            });
            clip_by_candidates();
        }
    }

    // Every particle not tried yet, nearest first (periodic: with the 3×3 images, so that cells
    // larger than half the box are right too), until even the largest radius cannot reach.
    void brute(std::size_t self, double rho) {
        cand_.clear();
        const int im = w_.periodic() ? 1 : 0;
        for (std::size_t j = 0; j < n_; ++j) {
            double dx0 = fr_.x[j] - xi_, dy0 = fr_.y[j] - yi_;
            cl_.wrap(dx0, dy0);
            for (int ox = -im; ox <= im; ++ox)
                for (int oy = -im; oy <= im; ++oy) {
                    const bool base = ox == 0 && oy == 0;
                    if (base && (j == self || used_[j])) continue;
                    const double dx = dx0 + ox * (im ? w_.lx() : 0.0), dy = dy0 + oy * (im ? w_.ly() : 0.0);
                    cand_.push_back({dx * dx + dy * dy, dx, dy, static_cast<std::int64_t>(j)});
                }
        }
        std::sort(cand_.begin(), cand_.end(), [](const Cand& a, const Cand& b) { return a.d2 < b.d2; });
        double rho_c = rho;
        for (const auto& c : cand_) {
            const double D = std::sqrt(c.d2);
            const double Rj = out_.radius[static_cast<std::size_t>(c.j)];
            if (D > rho_c && (D - rho_c) * (D - rho_c) - Rj * Rj >= rho_c * rho_c - Ri2_) {
                if ((D - rho_c) * (D - rho_c) - rmax_part_ * rmax_part_ >= rho_c * rho_c - Ri2_) break;
                continue;
            }
            cut(c);
            if (poly_.empty()) break;
            rho_c = max_vertex_distance(poly_);
        }
    }

    /// Area, neighbours (one merged edge length each) and boundary flag of cell i, appended to out.
    void record(std::size_t i) {
        nb_.clear();
        nbl_.clear();
        bool touches = false;
        double a = 0;
        if (poly_.size() >= 3) {
            a = polygon_area(poly_);
            const double tol = 1e-9 * std::sqrt(std::max(a, 0.0));
            for (std::size_t k = 0; k < poly_.size(); ++k) {
                const auto& P = poly_[k];
                const auto& Q = poly_[(k + 1) % poly_.size()];
                const double len = std::hypot(Q.x - P.x, Q.y - P.y);
                if (len <= tol) continue;
                if (P.label < 0) {
                    touches = !w_.periodic();  // periodic: the box edge is an own-image bisector
                } else {
                    // a neighbour may contribute one edge only; merge defensively
                    auto it = std::find(nb_.begin(), nb_.end(), P.label);
                    if (it == nb_.end()) {
                        nb_.push_back(P.label);
                        nbl_.push_back(len);
                    } else {
                        nbl_[static_cast<std::size_t>(it - nb_.begin())] += len;
                    }
                }
            }
            if (w_.kind == GeometryKind::window_circle)
                for (const auto& v : poly_) {
                    const double ux = v.x + xi_ - w_.cx, uy = v.y + yi_ - w_.cy;
                    if (ux * ux + uy * uy > w_.r * w_.r * (1 + 1e-12)) touches = true;
                }
        }
        out_.area[i] = std::max(a, 0.0);
        out_.boundary[i] = touches ? 1 : 0;
        out_.neighbour.insert(out_.neighbour.end(), nb_.begin(), nb_.end());
        out_.edge_length.insert(out_.edge_length.end(), nbl_.begin(), nbl_.end());
        out_.offsets[i + 1] = static_cast<std::int64_t>(out_.neighbour.size());
    }

    const StructureFrame& fr_;
    const Geometry& w_;
    VoronoiTessellation& out_;
    const std::size_t n_;
    const double S_;
    const CellList cl_;
    double rmax_part_ = 0, span_ = 0;
    double bx0_ = 0, by0_ = 0, bx1_ = 0, by1_ = 0;
    double xi_ = 0, yi_ = 0, Ri2_ = 0;  ///< the current particle
    std::vector<Cand> cand_;
    std::vector<Vertex> poly_, tmp_;
    std::vector<std::uint8_t> used_;  ///< tried already for the current cell
    std::vector<std::size_t> used_list_;
    std::vector<std::int64_t> nb_;
    std::vector<double> nbl_;
    std::vector<std::unique_ptr<CellList>> levels_;
};

}  // namespace

VoronoiTessellation radical_voronoi(const StructureFrame& fr, const VoronoiParams& p) {
    p.validate();
    const std::size_t n = fr.size();
    VoronoiTessellation out;
    out.area.assign(n, 0.0);
    out.boundary.assign(n, 0);
    out.radius.assign(n, 0.0);
    out.offsets.assign(n + 1, 0);
    if (n == 0) return out;
    out.particle_radius = particle_radii(fr);
    if (p.radical) {
        if (fr.radius.size() != n)
            throw ParameterError(
                "voronoi: frame " + std::to_string(fr.frame) +
                ": the radical tessellation needs particle sizes (metadata species_diameters "
                "or a radius column); none are given");
        if (out.particle_radius.empty())
            throw ParameterError("voronoi: frame " + std::to_string(fr.frame) +
                                 ": no particle has a known size (species_diameters / radius column)");
        out.radius = out.particle_radius;
    }
    VoronoiBuilder b(fr, p, out);
    for (std::size_t i = 0; i < n; ++i) b.cell(i);
    return out;
}

std::vector<double> local_packing_fraction(const VoronoiTessellation& v) {
    std::vector<double> phi(v.area.size(), std::numeric_limits<double>::quiet_NaN());
    if (v.particle_radius.size() != phi.size()) return phi;  // no sizes
    for (std::size_t i = 0; i < phi.size(); ++i) {
        const double r = v.particle_radius[i];
        if (v.area[i] > 0) phi[i] = M_PI * r * r / v.area[i];
    }
    return phi;
}

// ---------------------------------------------------------------------------------------------
// The voronoi analysis

VoronoiAnalysisResult compute_voronoi_analysis(const TrajectorySource& src, const VoronoiAnalysisParams& q) {
    constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
    VoronoiAnalysisResult res;
    res.params = q;
    res.window = structure_defaults(src).window;
    const VoronoiParams& vp = q.cells;
    const auto stride = q.stride;
    const auto hb = static_cast<std::size_t>(q.bins);
    const bool keep_boundary = q.include_boundary;
    auto& t = res.t;
    auto& phi = res.phi;
    auto& phi_vor = res.phi_voronoi;
    auto& n_in = res.n_cells;
    auto& n_bd = res.n_boundary;
    auto& rho_vor = res.density_voronoi;
    auto& tf = res.frame;
    auto& hist = res.hist;
    for (auto& h : hist) h.assign(hb, 0.0);
    auto& cnt = res.cells;
    auto& area_sum = res.area_sum;
    auto& phi_cnt = res.phi_count;
    auto& phi_sum = res.phi_sum;
    auto& phi_sum2 = res.phi_sum2;
    auto& brute = res.brute_force_cells;
    auto& any_sizes = res.any_sizes;
    struct Share {  // one frame's cells, computed in parallel with the other frames of its batch
        VoronoiTessellation v;
        std::vector<double> lphi;
    };
    std::vector<Share> shares(structure_batch(q.threads));
    // Radical cells of a frame without sizes are left to the in-order step, which reports the
    // first sampled frame's problem (as a sequential run would) or tessellates an empty frame.
    const auto tessellate = [&](const StructureFrame& f, std::size_t s) {
        shares[s].v = radical_voronoi(f, vp);
        shares[s].lphi = local_packing_fraction(shares[s].v);
    };
    const auto map = [&](const StructureFrame& f, std::size_t s) {
        if (!(vp.radical && f.radius.empty())) tessellate(f, s);
    };
    bool sizes_checked = false;
    for_each_structure_frame_batched(
        src, stride, q.threads, map,
        [&](const StructureFrame& f, std::size_t s) {
            if (!sizes_checked && vp.radical && (f.radius.empty()))
                throw ParameterError(src.meta().source.file +
                                     ": voronoi: packing fractions need particle sizes "
                                     "(metadata species_diameters or a radius column); none are given");
            sizes_checked = true;
            if (vp.radical && f.radius.empty()) tessellate(f, s);
            const auto& v = shares[s].v;
            const auto& lphi = shares[s].lphi;
            brute += v.brute_force_cells;
            // Packing fractions need the particles' sizes (either tessellation); without them
            // (plain cells only) the cells' areas and density are still measured, φ is NaN.
            const bool sized = !v.particle_radius.empty();
            any_sizes = any_sizes || sized;
            double disk = 0, disk_in = 0, cell_in = 0, nin = 0, nbd = 0;
            for (std::size_t i = 0; i < f.size(); ++i) {
                const double a = sized ? M_PI * v.particle_radius[i] * v.particle_radius[i] : 0.0;
                disk += a;
                if (v.boundary[i] && !keep_boundary) {
                    ++nbd;
                    continue;
                }
                if (!(v.area[i] > 0)) continue;  // an empty power cell
                nin += 1;
                disk_in += a, cell_in += v.area[i];
                const int s = f.species[i] == kSpeciesSmall ? 0 : f.species[i] == kSpeciesLarge ? 1 : -1;
                for (int k : {s, 2}) {
                    if (k < 0) continue;
                    cnt[k] += 1, area_sum[k] += v.area[i];
                    if (!sized) continue;
                    const auto bin = std::min(
                        hb - 1, static_cast<std::size_t>(std::max(0.0, lphi[i]) * static_cast<double>(hb)));
                    hist[k][bin] += 1, phi_cnt[k] += 1;
                    phi_sum[k] += lphi[i], phi_sum2[k] += lphi[i] * lphi[i];
                }
            }
            t.push_back(f.time), tf.push_back(f.frame);
            phi.push_back(sized ? disk / f.window.area() : kNaN);
            phi_vor.push_back(sized && cell_in > 0 ? disk_in / cell_in : kNaN);
            rho_vor.push_back(cell_in > 0 ? nin / cell_in : kNaN);
            n_in.push_back(nin), n_bd.push_back(nbd);
        },
        q.progress, "voronoi");
    return res;
}

ResultGroup to_group(const VoronoiAnalysisResult& res, const Metadata& m) {
    constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
    const std::string L = m.length_unit, T = m.time_unit;
    const VoronoiParams& vp = res.params.cells;
    const auto stride = res.params.stride;
    const auto hb = static_cast<std::size_t>(res.params.bins);
    const bool keep_boundary = res.params.include_boundary;
    const auto& t = res.t;
    const auto& phi = res.phi;
    const auto& phi_vor = res.phi_voronoi;
    const auto& n_in = res.n_cells;
    const auto& n_bd = res.n_boundary;
    const auto& rho_vor = res.density_voronoi;
    const auto& tf = res.frame;
    const auto& hist = res.hist;
    const auto& cnt = res.cells;
    const auto& area_sum = res.area_sum;
    const auto& phi_cnt = res.phi_count;
    const auto& phi_sum = res.phi_sum;
    const auto& phi_sum2 = res.phi_sum2;
    const auto brute = res.brute_force_cells;
    const bool any_sizes = res.any_sizes;
    ResultGroup g;
    g.name = "voronoi";
    g.add("t", t, T);
    g.add_int("t_frames", tf, "frame");
    g.add("phi", phi, "1").attrs["meaning"] =
        std::string("sum of particle areas (centres in the window) / window area");
    g.add("phi_voronoi", phi_vor, "1").attrs["meaning"] =
        std::string("particle area / cell area over the cells used");
    g.add("density_voronoi", rho_vor, "1/" + L + "^2");
    g.add("n_cells", n_in, "1");
    g.add("n_boundary", n_bd, "1");
    std::vector<double> edges(hb + 1);
    for (std::size_t k = 0; k <= hb; ++k) edges[k] = static_cast<double>(k) / static_cast<double>(hb);
    g.add("phi_local_edges", edges, "1");
    const bool partials = cnt[0] > 0 && cnt[1] > 0;
    const char* suffix[3] = {"_small", "_large", ""};
    for (int s = 2; s >= 0; --s) {
        if (s < 2 && !partials) continue;
        std::vector<double> h(hb);
        for (std::size_t k = 0; k < hb; ++k)
            h[k] = phi_cnt[s] > 0 ? hist[s][k] / phi_cnt[s] * static_cast<double>(hb) : kNaN;
        g.add(std::string("phi_local_hist") + suffix[s], h, "1");
        const double mean = phi_cnt[s] > 0 ? phi_sum[s] / phi_cnt[s] : kNaN;
        g.attrs[std::string("phi_local_mean") + suffix[s]] = mean;
        g.attrs[std::string("phi_local_var") + suffix[s]] =
            phi_cnt[s] > 1 ? phi_sum2[s] / phi_cnt[s] - mean * mean : kNaN;
        g.attrs[std::string("cell_area_mean") + suffix[s]] = cnt[s] > 0 ? area_sum[s] / cnt[s] : kNaN;
    }
    double pm = 0, pn = 0;
    for (double v : phi)
        if (std::isfinite(v)) pm += v, pn += 1;
    g.attrs["phi_mean"] = pn > 0 ? pm / pn : kNaN;
    g.attrs["tessellation"] = std::string(vp.radical ? "radical (power)" : "plain");
    g.attrs["sizes"] = std::string(!any_sizes                     ? "none (packing fractions NaN)"
                                   : !m.species_diameters.empty() ? "species_diameters"
                                                                  : "radius column");
    g.attrs["boundary_cells"] =
        std::string(keep_boundary ? "included (clipped to the window bounding box)" : "excluded");
    g.attrs["geometry"] = std::string(to_string(res.window.kind));
    g.attrs["frame_stride"] = stride;
    g.attrs["bins"] = static_cast<std::int64_t>(hb);
    g.attrs["brute_force_cells"] = brute;
    return g;
}

}  // namespace vibra::analysis
