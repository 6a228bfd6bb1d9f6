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

VoronoiTessellation radical_voronoi(const StructureFrame& fr, const VoronoiParams& p) {
    p.validate();
    const std::size_t n = fr.size();
    const Geometry& w = fr.window;
    VoronoiTessellation out;
    out.area.assign(n, 0.0);
    out.boundary.assign(n, 0);
    out.radius.assign(n, 0.0);
    out.offsets.assign(n + 1, 0);
    if (n == 0) return out;
    // The particles' own sizes (unknown → the mean of the known): the cells' weights in a
    // radical tessellation, and every cell's packing fraction in either.
    if (fr.radius.size() == n) {
        double sum = 0;
        std::int64_t cnt = 0;
        for (double r : fr.radius)
            if (std::isfinite(r) && r > 0) sum += r, ++cnt;
        if (cnt > 0) {
            const double mean = sum / static_cast<double>(cnt);
            out.particle_radius.resize(n);
            for (std::size_t i = 0; i < n; ++i)
                out.particle_radius[i] =
                    (std::isfinite(fr.radius[i]) && fr.radius[i] > 0) ? fr.radius[i] : mean;
        }
    }
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
    double rmax_part = 0;
    for (double r : out.radius) rmax_part = std::max(rmax_part, r);

    const double area_w = w.area();
    double S = p.search_radius > 0 ? p.search_radius : 3.0 * std::sqrt(area_w / static_cast<double>(n));
    if (w.periodic()) S = std::min(S, 0.499 * std::min(w.lx(), w.ly()));
    S = std::max(S, 1e-12);
    const CellList cl(fr.x, fr.y, S, w);

    // Bounding polygon in absolute coordinates (counter-clockwise).
    double bx0, by0, bx1, by1;
    if (w.kind == GeometryKind::window_circle) {
        bx0 = w.cx - w.r, bx1 = w.cx + w.r, by0 = w.cy - w.r, by1 = w.cy + w.r;
    } else {
        bx0 = w.x0, bx1 = w.x1, by0 = w.y0, by1 = w.y1;
    }

    struct Cand {
        double d2, dx, dy;
        std::int64_t j;
    };
    std::vector<Cand> cand;
    std::vector<Vertex> poly, tmp;
    std::vector<std::uint8_t> used(n, 0);
    std::vector<std::size_t> used_list;
    std::vector<std::int64_t> nb;
    std::vector<double> nbl;

    std::vector<std::unique_ptr<CellList>> levels;  // levels[k]: cut-off S·2^k (levels[0] unused: `cl`)
    levels.push_back(nullptr);
    auto radius_of = [&](std::size_t level) { return S * std::ldexp(1.0, static_cast<int>(level)); };
    const double span = std::hypot(bx1 - bx0, by1 - by0);

    for (std::size_t i = 0; i < n; ++i) {
        const double xi = fr.x[i], yi = fr.y[i], Ri2 = out.radius[i] * out.radius[i];
        poly.clear();
        if (w.periodic()) {
            const double hx = 0.5 * w.lx(), hy = 0.5 * w.ly();
            poly = {{-hx, -hy, -1}, {hx, -hy, -1}, {hx, hy, -1}, {-hx, hy, -1}};
        } else {
            poly = {{bx0 - xi, by0 - yi, -1},
                    {bx1 - xi, by0 - yi, -1},
                    {bx1 - xi, by1 - yi, -1},
                    {bx0 - xi, by1 - yi, -1}};
        }
        cand.clear();
        cl.for_each_near(xi, yi, [&](std::size_t j, double dx, double dy, double r2) {
            if (j != i) cand.push_back({r2, dx, dy, static_cast<std::int64_t>(j)});
        });
        std::sort(cand.begin(), cand.end(), [](const Cand& a, const Cand& b) { return a.d2 < b.d2; });
        auto cut = [&](const Cand& c) {
            if (c.d2 <= 0) return;  // coincident detections: no radical line
            const double Rj = out.radius[static_cast<std::size_t>(c.j)];
            const double b = 0.5 * (c.d2 + Ri2 - Rj * Rj);
            clip(poly, tmp, c.dx, c.dy, b, c.j);
        };
        for (const auto& c : cand) {
            cut(c);
            used[static_cast<std::size_t>(c.j)] = 1;
            used_list.push_back(static_cast<std::size_t>(c.j));
            if (poly.empty()) break;
        }
        // Every particle not tried yet, nearest first (periodic: with the 3×3 images, so that cells
        // larger than half the box are right too), until even the largest radius cannot reach.
        auto brute = [&](std::size_t self, double rho) {
            cand.clear();
            const int im = w.periodic() ? 1 : 0;
            for (std::size_t j = 0; j < n; ++j) {
                double dx0 = fr.x[j] - xi, dy0 = fr.y[j] - yi;
                cl.wrap(dx0, dy0);
                for (int ox = -im; ox <= im; ++ox)
                    for (int oy = -im; oy <= im; ++oy) {
                        const bool base = ox == 0 && oy == 0;
                        if (base && (j == self || used[j])) continue;
                        const double dx = dx0 + ox * (im ? w.lx() : 0.0), dy = dy0 + oy * (im ? w.ly() : 0.0);
                        cand.push_back({dx * dx + dy * dy, dx, dy, static_cast<std::int64_t>(j)});
                    }
            }
            std::sort(cand.begin(), cand.end(), [](const Cand& a, const Cand& b) { return a.d2 < b.d2; });
            double rho_c = rho;
            for (const auto& c : cand) {
                const double D = std::sqrt(c.d2);
                const double Rj = out.radius[static_cast<std::size_t>(c.j)];
                if (D > rho_c && (D - rho_c) * (D - rho_c) - Rj * Rj >= rho_c * rho_c - Ri2) {
                    if ((D - rho_c) * (D - rho_c) - rmax_part * rmax_part >= rho_c * rho_c - Ri2) break;
                    continue;
                }
                cut(c);
                if (poly.empty()) break;
                rho_c = max_vertex_distance(poly);
            }
        };
        // Security: a particle at distance D can cut the cell only if (D − ρ)² − R_j² < ρ² − R_i²
        // (ρ = farthest vertex), so all particles within `need` = ρ + sqrt(ρ² + R_max² − R_i²) must
        // have been tried. Grow the search radius (cell lists of 2S, 4S, … built on demand) until
        // that holds; beyond half a periodic box (or the whole window) try every particle.
        std::size_t level = 0;
        while (!poly.empty()) {
            const double rho = max_vertex_distance(poly);
            const double need = rho + std::sqrt(std::max(0.0, rho * rho + rmax_part * rmax_part - Ri2));
            if (need <= radius_of(level)) break;
            ++level;
            if (level == 1) ++out.brute_force_cells;
            const double R = radius_of(level);
            if ((w.periodic() && R > 0.499 * std::min(w.lx(), w.ly())) || R > 2 * span) {
                brute(i, rho);
                break;
            }
            while (levels.size() <= level)
                levels.push_back(std::make_unique<CellList>(fr.x, fr.y, radius_of(levels.size()), w));
            cand.clear();
            levels[level]->for_each_near(xi, yi, [&](std::size_t j, double dx, double dy, double r2) {
                if (j != i && !used[j]) cand.push_back({r2, dx, dy, static_cast<std::int64_t>(j)});
            });
            std::sort(cand.begin(), cand.end(), [](const Cand& a, const Cand& b) { return a.d2 < b.d2; });
            for (const auto& c : cand) {
                cut(c);
                used[static_cast<std::size_t>(c.j)] = 1;
                used_list.push_back(static_cast<std::size_t>(c.j));
                if (poly.empty()) break;
            }
        }
        for (auto j : used_list) used[j] = 0;
        used_list.clear();

        nb.clear();
        nbl.clear();
        bool touches = false;
        double a = 0;
        if (poly.size() >= 3) {
            a = polygon_area(poly);
            const double tol = 1e-9 * std::sqrt(std::max(a, 0.0));
            for (std::size_t k = 0; k < poly.size(); ++k) {
                const auto& P = poly[k];
                const auto& Q = poly[(k + 1) % poly.size()];
                const double len = std::hypot(Q.x - P.x, Q.y - P.y);
                if (len <= tol) continue;
                if (P.label < 0) {
                    touches = !w.periodic();  // periodic: the box edge is an own-image bisector
                } else {
                    // a neighbour may contribute one edge only; merge defensively
                    auto it = std::find(nb.begin(), nb.end(), P.label);
                    if (it == nb.end()) {
                        nb.push_back(P.label);
                        nbl.push_back(len);
                    } else {
                        nbl[static_cast<std::size_t>(it - nb.begin())] += len;
                    }
                }
            }
            if (w.kind == GeometryKind::window_circle)
                for (const auto& v : poly) {
                    const double ux = v.x + xi - w.cx, uy = v.y + yi - w.cy;
                    if (ux * ux + uy * uy > w.r * w.r * (1 + 1e-12)) touches = true;
                }
        }
        out.area[i] = std::max(a, 0.0);
        out.boundary[i] = touches ? 1 : 0;
        out.neighbour.insert(out.neighbour.end(), nb.begin(), nb.end());
        out.edge_length.insert(out.edge_length.end(), nbl.begin(), nbl.end());
        out.offsets[i + 1] = static_cast<std::int64_t>(out.neighbour.size());
    }
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

}  // namespace vibra::analysis
