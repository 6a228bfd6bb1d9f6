// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/analysis/defects.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <numeric>
#include <string>

#include "detail/collective_stream.hpp"
#include "detail/numeric.hpp"
#include "vibra/core/assignment.hpp"
#include "vibra/core/cell_list.hpp"
#include "vibra/core/error.hpp"
#include "vibra/core/periodic.hpp"

namespace vibra::analysis {

namespace {

using detail::kPi;

struct UnionFind {
    std::vector<std::size_t> parent;
    explicit UnionFind(std::size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), std::size_t{0}); }
    std::size_t find(std::size_t a) {
        while (parent[a] != a) a = parent[a] = parent[parent[a]];
        return a;
    }
    void unite(std::size_t a, std::size_t b) {
        a = find(a), b = find(b);
        if (a != b) parent[std::max(a, b)] = std::min(a, b);
    }
};

bool usable(double ux, double uy, double thr) {
    const double m2 = ux * ux + uy * uy;
    return m2 > 0 && m2 >= thr * thr && std::isfinite(m2);
}

// Merge charged cells; links = pairs of indices into `cells` that touch (share an edge or a corner).
template <class Pos>
std::vector<Defect> merge_cells(std::span<const std::size_t> cells, std::span<const int> q,
                                const std::vector<std::pair<std::size_t, std::size_t>>& links, Pos&& pos,
                                bool merge) {
    std::vector<Defect> out;
    if (!merge) {
        for (std::size_t k = 0; k < cells.size(); ++k) {
            auto [x, y] = pos(cells[k], cells[k]);
            out.push_back({x, y, q[k], 1});
        }
        return out;
    }
    UnionFind uf(cells.size());
    for (auto [a, b] : links) uf.unite(a, b);
    std::vector<double> sx(cells.size(), 0), sy(cells.size(), 0);
    std::vector<int> cnt(cells.size(), 0), qs(cells.size(), 0);
    for (std::size_t k = 0; k < cells.size(); ++k) {
        const auto r = uf.find(k);
        auto [x, y] =
            pos(cells[r], cells[k]);  // position of k relative to the cluster root (periodic unwrap)
        sx[r] += x, sy[r] += y, ++cnt[r], qs[r] += q[k];
    }
    for (std::size_t k = 0; k < cells.size(); ++k) {
        if (cnt[k] == 0 || qs[k] == 0) continue;
        out.push_back({sx[k] / cnt[k], sy[k] / cnt[k], qs[k], cnt[k]});
    }
    return out;
}

// Minimum-cost matching of a sparse bipartite candidate list (a, b, cost): split into connected
// components, each solved by the core assignment solver with `unmatched` per unmatched item.
// Returns the partner of each a (−1 = none).
struct Candidate {
    std::size_t a, b;
    double cost;
};
std::vector<std::int64_t> match_sparse(std::size_t na, std::size_t nb, const std::vector<Candidate>& cand,
                                       double unmatched) {
    std::vector<std::int64_t> link(na, -1);
    if (cand.empty()) return link;
    UnionFind uf(na + nb);
    for (const auto& c : cand) uf.unite(c.a, na + c.b);
    std::vector<std::vector<std::size_t>> comp_cands(na + nb);
    for (std::size_t k = 0; k < cand.size(); ++k) comp_cands[uf.find(cand[k].a)].push_back(k);
    std::vector<std::int64_t> la(na, -1), lb(nb, -1);
    for (const auto& ks : comp_cands) {
        if (ks.empty()) continue;
        std::vector<std::size_t> as, bs;
        for (auto k : ks) {
            if (la[cand[k].a] < 0)
                la[cand[k].a] = static_cast<std::int64_t>(as.size()), as.push_back(cand[k].a);
            if (lb[cand[k].b] < 0)
                lb[cand[k].b] = static_cast<std::int64_t>(bs.size()), bs.push_back(cand[k].b);
        }
        std::vector<double> cost(as.size() * bs.size(), kForbidden);
        for (auto k : ks)
            cost[static_cast<std::size_t>(la[cand[k].a]) * bs.size() +
                 static_cast<std::size_t>(lb[cand[k].b])] = cand[k].cost;
        const auto sol = solve_assignment_with_unmatched(cost, as.size(), bs.size(), unmatched);
        for (std::size_t r = 0; r < as.size(); ++r) {
            const auto c = sol.row_to_col[r];
            if (c >= 0 && std::isfinite(cost[r * bs.size() + static_cast<std::size_t>(c)]))
                link[as[r]] = static_cast<std::int64_t>(bs[static_cast<std::size_t>(c)]);
        }
    }
    return link;
}

}  // namespace

void DefectParams::validate() const {
    if (!(min_magnitude >= 0) || !std::isfinite(min_magnitude))
        throw ParameterError("defects min_magnitude must be ≥ 0, got " + std::to_string(min_magnitude));
    if (max_core < 0) throw ParameterError("defects max_core must be ≥ 0, got " + std::to_string(max_core));
    if (!(max_edge >= 0) || !std::isfinite(max_edge))
        throw ParameterError("defects max_edge must be ≥ 0, got " + std::to_string(max_edge));
}

void DefectTrackParams::validate() const {
    if (!(max_step > 0) || !std::isfinite(max_step))
        throw ParameterError("defect tracking max_step must be > 0, got " + std::to_string(max_step));
    if (!(pair_distance > 0) || !std::isfinite(pair_distance))
        throw ParameterError("defect tracking pair_distance must be > 0, got " +
                             std::to_string(pair_distance));
    if (geometry.periodic() &&
        2 * std::max(max_step, pair_distance) >= std::min(geometry.lx(), geometry.ly()))
        throw ParameterError(
            "defect tracking: max_step and pair_distance must be below half the periodic box");
}

double wrap_angle(double a) {
    a = std::remainder(a, 2 * kPi);  // [−π, π]
    if (a <= -kPi) a += 2 * kPi;
    return a;
}

int winding_number(std::span<const double> th) {
    double s = 0;
    for (std::size_t k = 0; k < th.size(); ++k) s += wrap_angle(th[(k + 1) % th.size()] - th[k]);
    return static_cast<int>(std::lround(s / (2 * kPi)));
}

namespace {

// Calls f(i, j, i1, j1) for every plaquette with all four corners usable.
template <class F>
void for_each_plaquette(const GridField& f, const DefectParams& p, F&& fn) {
    const auto& g = f.grid;
    if (g.nx < 2 || g.ny < 2) return;
    std::vector<std::uint8_t> ok(g.size());
    for (std::size_t k = 0; k < g.size(); ++k)
        ok[k] = f.valid[k] && usable(f.ux[k], f.uy[k], p.min_magnitude);
    const std::size_t ni = g.periodic ? g.nx : g.nx - 1, nj = g.periodic ? g.ny : g.ny - 1;
    for (std::size_t j = 0; j < nj; ++j) {
        const std::size_t j1 = (j + 1) % g.ny;
        for (std::size_t i = 0; i < ni; ++i) {
            const std::size_t i1 = (i + 1) % g.nx;
            if (ok[j * g.nx + i] && ok[j * g.nx + i1] && ok[j1 * g.nx + i1] && ok[j1 * g.nx + i])
                fn(i, j, i1, j1);
        }
    }
}

}  // namespace

std::vector<std::int8_t> plaquette_charges(const GridField& f, const DefectParams& p) {
    p.validate();
    const auto& g = f.grid;
    std::vector<std::int8_t> q(g.size(), 0);
    auto th = [&](std::size_t i, std::size_t j) {
        return std::atan2(f.uy[j * g.nx + i], f.ux[j * g.nx + i]);
    };
    for_each_plaquette(f, p, [&](std::size_t i, std::size_t j, std::size_t i1, std::size_t j1) {
        const double a[4] = {th(i, j), th(i1, j), th(i1, j1), th(i, j1)};
        q[j * g.nx + i] = static_cast<std::int8_t>(winding_number(a));
    });
    return q;
}

std::size_t evaluated_plaquettes(const GridField& f, const DefectParams& p) {
    std::size_t n = 0;
    for_each_plaquette(f, p, [&](std::size_t, std::size_t, std::size_t, std::size_t) { ++n; });
    return n;
}

namespace {

// Charges hidden in small sub-threshold cores (see DefectParams::max_core).
std::vector<Defect> core_defects(const GridField& f, const DefectParams& p,
                                 const std::vector<std::int8_t>& q8) {
    const auto& g = f.grid;
    const auto nx = static_cast<std::int64_t>(g.nx), ny = static_cast<std::int64_t>(g.ny);
    std::vector<std::uint8_t> ok(g.size());
    for (std::size_t k = 0; k < g.size(); ++k)
        ok[k] = f.valid[k] && usable(f.ux[k], f.uy[k], p.min_magnitude);
    std::vector<std::int64_t> label(g.size(), -1);
    std::vector<Defect> out;
    std::vector<std::size_t> stack, members;
    std::int64_t next = 0;
    for (std::size_t s0 = 0; s0 < g.size(); ++s0) {
        if (!f.valid[s0] || ok[s0] || label[s0] >= 0) continue;
        // 8-connected cluster of weak (valid, below threshold) nodes.
        const std::int64_t id = next++;
        members.clear();
        stack.assign(1, s0);
        label[s0] = id;
        while (!stack.empty()) {
            const auto c = stack.back();
            stack.pop_back();
            members.push_back(c);
            const auto ci = static_cast<std::int64_t>(c % g.nx), cj = static_cast<std::int64_t>(c / g.nx);
            for (std::int64_t dj = -1; dj <= 1; ++dj)
                for (std::int64_t di = -1; di <= 1; ++di) {
                    const auto ii = ci + di, jj = cj + dj;
                    if (ii < 0 || jj < 0 || ii >= nx || jj >= ny) continue;
                    const auto k = static_cast<std::size_t>(jj * nx + ii);
                    if (f.valid[k] && !ok[k] && label[k] < 0) label[k] = id, stack.push_back(k);
                }
        }
        std::int64_t i0 = nx, i1 = -1, j0 = ny, j1 = -1;
        double sx = 0, sy = 0;
        for (auto c : members) {
            const auto ci = static_cast<std::int64_t>(c % g.nx), cj = static_cast<std::int64_t>(c / g.nx);
            i0 = std::min(i0, ci), i1 = std::max(i1, ci), j0 = std::min(j0, cj), j1 = std::max(j1, cj);
            sx += g.x(static_cast<std::size_t>(ci)), sy += g.y(static_cast<std::size_t>(cj));
        }
        if (i1 - i0 + 1 > p.max_core || j1 - j0 + 1 > p.max_core) continue;
        const std::int64_t I0 = i0 - 1, I1 = i1 + 1, J0 = j0 - 1, J1 = j1 + 1;
        if (I0 < 0 || J0 < 0 || I1 >= nx || J1 >= ny) continue;
        // Other weak nodes inside the ring would be counted twice: skip.
        bool clean = true;
        for (std::int64_t j = J0 + 1; j < J1 && clean; ++j)
            for (std::int64_t i = I0 + 1; i < I1 && clean; ++i) {
                const auto k = static_cast<std::size_t>(j * nx + i);
                if (f.valid[k] && !ok[k] && label[k] != id) clean = false;
                if (!f.valid[k]) clean = false;
            }
        if (!clean) continue;
        std::vector<std::size_t> ring;
        for (std::int64_t i = I0; i <= I1; ++i) ring.push_back(static_cast<std::size_t>(J0 * nx + i));
        for (std::int64_t j = J0 + 1; j <= J1; ++j) ring.push_back(static_cast<std::size_t>(j * nx + I1));
        for (std::int64_t i = I1 - 1; i >= I0; --i) ring.push_back(static_cast<std::size_t>(J1 * nx + i));
        for (std::int64_t j = J1 - 1; j > J0; --j) ring.push_back(static_cast<std::size_t>(j * nx + I0));
        std::vector<double> th;
        bool ring_ok = true;
        for (auto k : ring) {
            if (!ok[k]) {
                ring_ok = false;
                break;
            }
            th.push_back(std::atan2(f.uy[k], f.ux[k]));
        }
        if (!ring_ok) continue;
        int inner = 0;
        for (std::int64_t j = J0; j < J1; ++j)
            for (std::int64_t i = I0; i < I1; ++i) inner += q8[static_cast<std::size_t>(j * nx + i)];
        const int qc = winding_number(th) - inner;
        if (qc != 0) {
            const auto m = static_cast<double>(members.size());
            out.push_back({sx / m, sy / m, qc, static_cast<int>(members.size())});
        }
    }
    return out;
}

}  // namespace

std::vector<Defect> defects_on_grid(const GridField& f, const DefectParams& p) {
    const auto q8 = plaquette_charges(f, p);
    const auto& g = f.grid;
    std::vector<std::size_t> cells;
    std::vector<int> q;
    for (std::size_t k = 0; k < q8.size(); ++k)
        if (q8[k] != 0) cells.push_back(k), q.push_back(q8[k]);
    // Charged plaquettes touching by an edge or a corner (a charge-2 core may split diagonally).
    std::vector<std::pair<std::size_t, std::size_t>> links;
    {
        std::vector<std::int64_t> slot(g.size(), -1);
        for (std::size_t k = 0; k < cells.size(); ++k) slot[cells[k]] = static_cast<std::int64_t>(k);
        const auto nx = static_cast<std::int64_t>(g.nx), ny = static_cast<std::int64_t>(g.ny);
        for (std::size_t k = 0; k < cells.size(); ++k) {
            const auto i = static_cast<std::int64_t>(cells[k] % g.nx),
                       j = static_cast<std::int64_t>(cells[k] / g.nx);
            for (std::int64_t dj = -1; dj <= 1; ++dj)
                for (std::int64_t di = -1; di <= 1; ++di) {
                    std::int64_t ii = i + di, jj = j + dj;
                    if (g.periodic)
                        ii = (ii + nx) % nx, jj = (jj + ny) % ny;
                    else if (ii < 0 || jj < 0 || ii >= nx || jj >= ny)
                        continue;
                    const auto o = slot[static_cast<std::size_t>(jj * nx + ii)];
                    if (o > static_cast<std::int64_t>(k)) links.emplace_back(k, static_cast<std::size_t>(o));
                }
        }
    }
    // Plaquette centre of cell c, unwrapped to lie near the centre of cell `root` on a periodic grid.
    auto pos = [&](std::size_t root, std::size_t c) {
        double x = g.x(c % g.nx) + 0.5 * g.hx, y = g.y(c / g.nx) + 0.5 * g.hy;
        if (g.periodic) {
            const double rx = g.x(root % g.nx) + 0.5 * g.hx, ry = g.y(root / g.nx) + 0.5 * g.hy;
            x -= image_shift(x - rx, g.lx());
            y -= image_shift(y - ry, g.ly());
        }
        return std::pair{x, y};
    };
    auto out = merge_cells(cells, q, links, pos, p.merge);
    if (p.max_core > 0 && p.min_magnitude > 0) {
        auto cores = core_defects(f, p, q8);
        out.insert(out.end(), cores.begin(), cores.end());
    }
    if (g.periodic)  // fold merged positions back into the box
        for (auto& d : out) {
            d.x = g.x0 + std::fmod(std::fmod(d.x - g.x0, g.lx()) + g.lx(), g.lx());
            d.y = g.y0 + std::fmod(std::fmod(d.y - g.y0, g.ly()) + g.ly(), g.ly());
        }
    return out;
}

std::vector<Defect> defects_on_triangulation(std::span<const double> x, std::span<const double> y,
                                             std::span<const double> ux, std::span<const double> uy,
                                             const Triangulation& tri, const DefectParams& p) {
    p.validate();
    if (x.size() != y.size() || x.size() != ux.size() || x.size() != uy.size())
        throw ParameterError("defects_on_triangulation: x, y, ux, uy differ in length");
    const double me2 = p.max_edge * p.max_edge;
    std::vector<std::size_t> cells;
    std::vector<int> q;
    for (std::size_t t = 0; t < tri.triangles.size(); ++t) {
        const auto& v = tri.triangles[t];
        bool ok = true;
        double th[3];
        for (int e = 0; e < 3 && ok; ++e) {
            const auto a = static_cast<std::size_t>(v[e]), b = static_cast<std::size_t>(v[(e + 1) % 3]);
            if (a >= x.size()) throw ParameterError("defects_on_triangulation: triangle vertex out of range");
            ok = usable(ux[a], uy[a], p.min_magnitude);
            if (ok && p.max_edge > 0) {
                const double dx = x[b] - x[a], dy = y[b] - y[a];
                ok = dx * dx + dy * dy <= me2;
            }
            th[e] = std::atan2(uy[a], ux[a]);
        }
        if (!ok) continue;
        const int c = winding_number(th);
        if (c != 0) cells.push_back(t), q.push_back(c);
    }
    // Charged triangles sharing a vertex.
    std::vector<std::pair<std::size_t, std::size_t>> links;
    {
        std::vector<std::pair<std::int32_t, std::size_t>> vt;  // (vertex, index into cells)
        for (std::size_t k = 0; k < cells.size(); ++k)
            for (auto v : tri.triangles[cells[k]]) vt.emplace_back(v, k);
        std::sort(vt.begin(), vt.end());
        for (std::size_t a = 0; a + 1 < vt.size(); ++a)
            if (vt[a].first == vt[a + 1].first) links.emplace_back(vt[a].second, vt[a + 1].second);
    }
    auto pos = [&](std::size_t, std::size_t c) {
        const auto& v = tri.triangles[c];
        return std::pair{(x[v[0]] + x[v[1]] + x[v[2]]) / 3, (y[v[0]] + y[v[1]] + y[v[2]]) / 3};
    };
    return merge_cells(cells, q, links, pos, p.merge);
}

std::optional<int> boundary_winding(const GridField& f, const DefectParams& p) {
    const auto& g = f.grid;
    if (g.nx < 2 || g.ny < 2) return std::nullopt;
    std::vector<std::size_t> ring;
    for (std::size_t i = 0; i < g.nx; ++i) ring.push_back(i);                        // bottom, →
    for (std::size_t j = 1; j < g.ny; ++j) ring.push_back(j * g.nx + g.nx - 1);      // right, ↑
    for (std::size_t i = g.nx - 1; i-- > 0;) ring.push_back((g.ny - 1) * g.nx + i);  // top, ←
    for (std::size_t j = g.ny - 1; j-- > 1;) ring.push_back(j * g.nx);               // left, ↓
    std::vector<double> th;
    for (auto k : ring) {
        if (!f.valid[k] || !usable(f.ux[k], f.uy[k], p.min_magnitude)) return std::nullopt;
        th.push_back(std::atan2(f.uy[k], f.ux[k]));
    }
    return winding_number(th);
}

// ---------------------------------------------------------------------------------------------

DefectTracks track_defects(std::span<const DefectFrame> frames, const DefectTrackParams& p) {
    p.validate();
    DefectTracks tr;
    tr.track_of.resize(frames.size());
    auto new_track = [&](std::size_t k, std::size_t d) {
        const auto id = static_cast<std::int64_t>(tr.charge.size());
        tr.charge.push_back(frames[k].defects[d].charge);
        tr.first_frame.push_back(frames[k].frame);
        tr.last_frame.push_back(frames[k].frame);
        tr.length.push_back(1);
        return id;
    };
    if (frames.empty()) return tr;
    for (std::size_t d = 0; d < frames[0].defects.size(); ++d) tr.track_of[0].push_back(new_track(0, d));

    const double step2 = p.max_step * p.max_step, pair2 = p.pair_distance * p.pair_distance;
    const Geometry& G = p.geometry;
    auto sep = [&](const Defect& a, const Defect& b) {  // b − a, minimum image when periodic
        double dx = b.x - a.x, dy = b.y - a.y;
        if (G.periodic()) dx = minimum_image(dx, G.lx()), dy = minimum_image(dy, G.ly());
        return std::pair{dx, dy};
    };
    auto midpoint = [&](const Defect& a, const Defect& b) {
        const auto [dx, dy] = sep(a, b);
        double x = a.x + 0.5 * dx, y = a.y + 0.5 * dy;
        if (G.periodic())
            x -= G.lx() * std::floor((x - G.x0) / G.lx()), y -= G.ly() * std::floor((y - G.y0) / G.ly());
        return std::pair{x, y};
    };
    // Pairs +1 members of `a` with −1 members of `b` (indices into defects of frame ka / kb) by
    // minimum squared distance within pair_distance.
    auto pair_up = [&](const std::vector<std::size_t>& plus, const std::vector<std::size_t>& minus,
                       std::size_t kp, std::size_t km) {
        std::vector<std::pair<std::size_t, std::size_t>> out;
        std::vector<Candidate> cand;
        for (std::size_t a = 0; a < plus.size(); ++a)
            for (std::size_t b = 0; b < minus.size(); ++b) {
                const auto& A = frames[kp].defects[plus[a]];
                const auto& B = frames[km].defects[minus[b]];
                const auto [dx, dy] = sep(A, B);
                const double d2 = dx * dx + dy * dy;
                if (d2 <= pair2) cand.push_back({a, b, d2});
            }
        const auto link = match_sparse(plus.size(), minus.size(), cand, 0.5 * pair2 * (1 + 1e-9));
        for (std::size_t a = 0; a < plus.size(); ++a)
            if (link[a] >= 0) out.emplace_back(plus[a], minus[static_cast<std::size_t>(link[a])]);
        return out;
    };

    for (std::size_t k = 0; k + 1 < frames.size(); ++k) {
        const auto& A = frames[k].defects;
        const auto& B = frames[k + 1].defects;
        std::vector<Candidate> cand;
        if (!A.empty() && !B.empty()) {
            std::vector<double> bx(B.size()), by(B.size());
            for (std::size_t b = 0; b < B.size(); ++b) bx[b] = B[b].x, by[b] = B[b].y;
            CellList cl(bx, by, p.max_step * (1 + 1e-12), G.periodic() ? G : Geometry{});
            for (std::size_t a = 0; a < A.size(); ++a)
                cl.for_each_near(A[a].x, A[a].y, [&](std::size_t b, double, double, double r2) {
                    if (A[a].charge == B[b].charge && r2 <= step2) cand.push_back({a, b, r2});
                });
        }
        const auto link = match_sparse(A.size(), B.size(), cand, 0.5 * step2 * (1 + 1e-9));
        std::vector<std::uint8_t> taken(B.size(), 0);
        for (auto l : link)
            if (l >= 0) taken[static_cast<std::size_t>(l)] = 1;
        tr.track_of[k + 1].assign(B.size(), -1);
        for (std::size_t a = 0; a < A.size(); ++a) {
            if (link[a] < 0) continue;
            const auto id = tr.track_of[k][a];
            tr.track_of[k + 1][static_cast<std::size_t>(link[a])] = id;
            tr.last_frame[static_cast<std::size_t>(id)] = frames[k + 1].frame;
            ++tr.length[static_cast<std::size_t>(id)];
        }
        for (std::size_t b = 0; b < B.size(); ++b)
            if (tr.track_of[k + 1][b] < 0) tr.track_of[k + 1][b] = new_track(k + 1, b);
        // Annihilations: ±1 track ends in frame k; creations: ±1 track starts in frame k+1.
        std::vector<std::size_t> end_p, end_m, new_p, new_m;
        for (std::size_t a = 0; a < A.size(); ++a)
            if (link[a] < 0) {
                if (A[a].charge == 1) end_p.push_back(a);
                if (A[a].charge == -1) end_m.push_back(a);
            }
        for (std::size_t b = 0; b < B.size(); ++b)
            if (!taken[b]) {
                if (B[b].charge == 1) new_p.push_back(b);
                if (B[b].charge == -1) new_m.push_back(b);
            }
        for (auto [a, b] : pair_up(end_p, end_m, k, k)) {
            const auto [x, y] = midpoint(A[a], A[b]);
            tr.events.push_back({frames[k + 1].frame, x, y, -1, tr.track_of[k][a], tr.track_of[k][b]});
        }
        for (auto [a, b] : pair_up(new_p, new_m, k + 1, k + 1)) {
            const auto [x, y] = midpoint(B[a], B[b]);
            tr.events.push_back(
                {frames[k + 1].frame, x, y, +1, tr.track_of[k + 1][a], tr.track_of[k + 1][b]});
        }
    }
    const auto f0 = frames.front().frame, f1 = frames.back().frame;
    tr.censored.resize(tr.n_tracks());
    for (std::size_t t = 0; t < tr.n_tracks(); ++t)
        tr.censored[t] = tr.first_frame[t] == f0 || tr.last_frame[t] == f1;
    return tr;
}

void defect_msd(std::span<const DefectFrame> frames, const DefectTracks& tracks, std::size_t max_lag,
                std::vector<double>& msd, std::vector<std::int64_t>& count, const Geometry& g) {
    msd.assign(max_lag + 1, 0.0);
    count.assign(max_lag + 1, 0);
    // Positions of each track by sampled-frame index (tracks have no gaps).
    std::vector<std::vector<std::pair<double, double>>> path(tracks.n_tracks());
    for (std::size_t k = 0; k < frames.size() && k < tracks.track_of.size(); ++k)
        for (std::size_t d = 0; d < frames[k].defects.size(); ++d) {
            auto& pth = path[static_cast<std::size_t>(tracks.track_of[k][d])];
            double x = frames[k].defects[d].x, y = frames[k].defects[d].y;
            if (g.periodic() && !pth.empty()) {  // unwrap: previous position + minimum-image step
                double dx = x - pth.back().first, dy = y - pth.back().second;
                dx = minimum_image(dx, g.lx()), dy = minimum_image(dy, g.ly());
                x = pth.back().first + dx, y = pth.back().second + dy;
            }
            pth.emplace_back(x, y);
        }
    for (const auto& pth : path)
        for (std::size_t m = 0; m <= max_lag && m < pth.size(); ++m)
            for (std::size_t s = 0; s + m < pth.size(); ++s) {
                const double dx = pth[s + m].first - pth[s].first, dy = pth[s + m].second - pth[s].second;
                msd[m] += dx * dx + dy * dy;
                ++count[m];
            }
    for (std::size_t m = 0; m <= max_lag; ++m)
        msd[m] = count[m] ? msd[m] / static_cast<double>(count[m]) : std::numeric_limits<double>::quiet_NaN();
}

DefectPairCorrelation::DefectPairCorrelation(double r_max, double dr, std::span<const double> rx,
                                             std::span<const double> ry)
    : r_max_(r_max), dr_(dr) {
    if (!(r_max > 0) || !(dr > 0) || dr > r_max)
        throw ParameterError("defect pair correlation: need 0 < dr ≤ r_max, got dr=" + std::to_string(dr) +
                             " r_max=" + std::to_string(r_max));
    const auto nb = static_cast<std::size_t>(std::ceil(r_max / dr));
    ref_p_.assign(nb, 0.0);
    pairs_.assign(nb, 0.0);
    qq_.assign(nb, 0.0);
    if (rx.size() >= 2) {
        CellList cl(rx, ry, r_max, Geometry{});
        cl.for_each_pair([&](std::size_t, std::size_t, double, double, double r2) {
            const auto b = static_cast<std::size_t>(std::sqrt(r2) / dr_);
            if (b < nb) ref_p_[b] += 1;
        });
        const double tot = 0.5 * static_cast<double>(rx.size()) * static_cast<double>(rx.size() - 1);
        for (auto& v : ref_p_) v /= tot;
    }
}

void DefectPairCorrelation::add(std::span<const Defect> d) {
    const auto nb = pairs_.size();
    for (std::size_t i = 0; i < d.size(); ++i)
        for (std::size_t j = i + 1; j < d.size(); ++j) {
            const double r = std::hypot(d[j].x - d[i].x, d[j].y - d[i].y);
            if (r >= r_max_) continue;
            const auto b = static_cast<std::size_t>(r / dr_);
            if (b >= nb) continue;
            pairs_[b] += 1;
            qq_[b] += d[i].charge * d[j].charge;
        }
    total_pairs_ +=
        0.5 * static_cast<double>(d.size()) * static_cast<double>(d.size() > 0 ? d.size() - 1 : 0);
}

std::vector<double> DefectPairCorrelation::r() const {
    std::vector<double> r(pairs_.size());
    for (std::size_t b = 0; b < r.size(); ++b) r[b] = (static_cast<double>(b) + 0.5) * dr_;
    return r;
}

std::vector<double> DefectPairCorrelation::g_dd() const {
    std::vector<double> g(pairs_.size(), std::numeric_limits<double>::quiet_NaN());
    for (std::size_t b = 0; b < g.size(); ++b)
        if (ref_p_[b] > 0 && total_pairs_ > 0) g[b] = pairs_[b] / total_pairs_ / ref_p_[b];
    return g;
}

std::vector<double> DefectPairCorrelation::c_qq() const {
    std::vector<double> c(pairs_.size(), std::numeric_limits<double>::quiet_NaN());
    for (std::size_t b = 0; b < c.size(); ++b)
        if (pairs_[b] > 0) c[b] = qq_[b] / pairs_[b];
    return c;
}

}  // namespace vibra::analysis

// ---------------------------------------------------------------------------------------------
// The defects analysis (/analysis/defects)

namespace vibra::analysis {

namespace {

double rms_vectors(std::span<const double> ux, std::span<const double> uy) {
    double s = 0;
    for (std::size_t i = 0; i < ux.size(); ++i) s += ux[i] * ux[i] + uy[i] * uy[i];
    return ux.empty() ? std::numeric_limits<double>::quiet_NaN()
                      : std::sqrt(s / static_cast<double>(ux.size()));
}

/// Area of the Delaunay triangles whose three edges were evaluated (vertices above the threshold,
/// edges up to max_edge): the area the defect density refers to.
double evaluated_triangle_area(const Displacements& d, std::span<const double> vx, std::span<const double> vy,
                               const Triangulation& tri, const DefectParams& p) {
    double a = 0;
    for (const auto& t : tri.triangles) {
        bool ok = true;
        for (int e = 0; e < 3 && ok; ++e) {
            const auto u = static_cast<std::size_t>(t[e]), v = static_cast<std::size_t>(t[(e + 1) % 3]);
            const double m2 = vx[u] * vx[u] + vy[u] * vy[u];
            ok = m2 > 0 && m2 >= p.min_magnitude * p.min_magnitude &&
                 std::hypot(d.x[v] - d.x[u], d.y[v] - d.y[u]) <= p.max_edge;
        }
        if (ok) a += 0.5 * orient2d(d.x[t[0]], d.y[t[0]], d.x[t[1]], d.y[t[1]], d.x[t[2]], d.y[t[2]]);
    }
    return a;
}

/// The computed frames of lag li, in order (computed start indices form a prefix 0…K−1).
std::vector<DefectFrame> sampled_frames(const DefectAnalysisResult& r, std::size_t li) {
    std::vector<DefectFrame> seq;
    for (std::size_t k = 0; k < r.n_times; ++k)
        if (r.done[li * r.n_times + k]) seq.push_back(r.frames[li][k]);
    return seq;
}

}  // namespace

std::int64_t defect_stride_for_memory(const FieldSettings& s, std::int64_t memory_bytes) {
    const double per_start =
        kDefectBytesPerNode * static_cast<double>(s.grid.size()) * static_cast<double>(s.lags.size());
    const std::int64_t span = s.n_frames - s.lags.front();
    const auto fit = std::max<std::int64_t>(
        1, static_cast<std::int64_t>(static_cast<double>(memory_bytes / 2) / per_start));
    return std::max<std::int64_t>(1, (span + fit - 1) / fit);
}

DefectAnalysisResult compute_defects(const TrajectorySource& src, const DefectAnalysisParams& p) {
    const auto& s = p.field;
    const std::size_t nl = s.lags.size(), nt = static_cast<std::size_t>(s.n_times);
    DefectAnalysisResult r;
    r.n_times = nt;
    r.frames.assign(nl, std::vector<DefectFrame>(nt));
    r.done.assign(nl * nt, 0);
    r.area.assign(nl * nt, std::numeric_limits<double>::quiet_NaN());
    r.threshold_used.assign(nl * nt, std::numeric_limits<double>::quiet_NaN());
    // Each (lag, start) pair writes only its own entries: the pairs may run on several threads.
    detail::stream_displacements(
        src, s,
        [&](std::size_t li, std::int64_t k, Displacements& d, std::size_t) {
            const std::size_t at = li * nt + static_cast<std::size_t>(k);
            DefectParams dp;
            dp.merge = p.merge;
            DefectFrame& df = r.frames[li][static_cast<std::size_t>(k)];
            df.frame = d.frame;
            if (!p.delaunay) {
                const auto F = detail::field_of(s, d);
                dp.min_magnitude = p.threshold >= 0 ? p.threshold : p.threshold_rms * detail::rms_valid(F);
                if (!std::isfinite(dp.min_magnitude)) dp.min_magnitude = 0;
                df.defects = defects_on_grid(F, dp);
                r.area[at] = static_cast<double>(evaluated_plaquettes(F, dp)) * s.grid.hx * s.grid.hy;
            } else {
                std::vector<double> vx, vy;
                if (p.smooth > 0)
                    smooth_at_points(d.x, d.y, d.ux, d.uy, s.geometry, p.smooth, s.cg.cutoff, vx, vy);
                else
                    vx = d.ux, vy = d.uy;
                dp.min_magnitude = p.threshold >= 0 ? p.threshold : p.threshold_rms * rms_vectors(vx, vy);
                if (!std::isfinite(dp.min_magnitude)) dp.min_magnitude = 0;
                dp.max_edge = p.max_edge;
                const auto tri = delaunay(d.x, d.y);
                df.defects = defects_on_triangulation(d.x, d.y, vx, vy, tri, dp);
                r.area[at] = evaluated_triangle_area(d, vx, vy, tri, dp);
            }
            r.threshold_used[at] = dp.min_magnitude;
            r.done[at] = 1;
        },
        {}, p.threads);
    // Reference points for the defect pair correlation: grid nodes inside the region.
    for (std::size_t j = 0; j < s.grid.ny; ++j)
        for (std::size_t i = 0; i < s.grid.nx; ++i)
            if (s.region.kind != GeometryKind::window_circle || s.region.contains(s.grid.x(i), s.grid.y(j)))
                r.ref_x.push_back(s.grid.x(i)), r.ref_y.push_back(s.grid.y(j));
    // Per lag: the consecutive computed frames, tracked.
    for (std::size_t li = 0; li < nl; ++li)
        r.tracks.push_back(track_defects(sampled_frames(r, li), p.tracks));
    return r;
}

ResultGroup to_group(const DefectAnalysisResult& r, const DefectAnalysisParams& p,
                     const TrajectorySource& src) {
    constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
    const auto& s = p.field;
    const std::size_t nl = s.lags.size(), nt = r.n_times;
    ResultGroup g;
    g.name = "defects";
    detail::record_field_settings(s, g.attrs);
    g.attrs["route"] = std::string(p.delaunay ? "delaunay" : "grid");
    g.attrs["stride_rule"] =
        std::string(!p.stride_from_memory ? "given"
                                          : "every frame while the defect tables fit half of --memory "
                                            "(16 bytes per grid node, start frame and lag)");
    g.attrs["threshold"] = p.threshold;
    g.attrs["threshold_rms_factor"] = p.threshold_rms;
    g.attrs["threshold_rule"] =
        std::string(p.threshold >= 0 ? "absolute" : "threshold_rms_factor x rms|u| per frame");
    g.attrs["merge"] = std::string(p.merge ? "on" : "off");
    g.attrs["max_edge"] = p.max_edge;
    g.attrs["delaunay_smoothing"] = p.smooth;
    g.attrs["track_max_step"] = p.tracks.max_step;
    g.attrs["pair_distance"] = p.tracks.pair_distance;
    g.attrs["charge_convention"] = std::string(
        "+1 vortex-like, -1 saddle-like; winding of atan2(uy,ux), differences wrapped to (-pi,pi]");
    g.attrs["event_frame_convention"] =
        std::string("creation: first frame with the pair; annihilation: first frame without it");
    detail::common_arrays(g, src, s, "sample_frame");

    std::vector<std::int64_t> rf, rl, rc, rcells, rtrack, offsets{0}, counts(nl * nt, 0), nplus(nl * nt, 0),
        nminus(nl * nt, 0);
    std::vector<double> rxv, ryv, rtime, density(nl * nt, kNaN);
    const auto& fc = src.frame_columns();
    for (std::size_t li = 0; li < nl; ++li) {
        const auto seq = sampled_frames(r, li);
        const auto& tracks = r.tracks[li];
        std::size_t q = 0;
        for (std::size_t k = 0; k < nt; ++k) {
            const std::size_t at = li * nt + k;
            if (r.done[at]) {
                const auto& df = r.frames[li][k];
                for (std::size_t d = 0; d < df.defects.size(); ++d) {
                    const auto& D = df.defects[d];
                    rf.push_back(df.frame);
                    rtime.push_back(frame_time(src.meta(), fc, 0, df.frame));
                    rl.push_back(s.lags[li]);
                    rxv.push_back(D.x);
                    ryv.push_back(D.y);
                    rc.push_back(D.charge);
                    rcells.push_back(D.cells);
                    rtrack.push_back(tracks.track_of[q][d]);
                    if (D.charge > 0) ++nplus[at];
                    if (D.charge < 0) ++nminus[at];
                }
                counts[at] = static_cast<std::int64_t>(df.defects.size());
                density[at] = r.area[at] > 0 ? static_cast<double>(df.defects.size()) / r.area[at] : kNaN;
                ++q;
            }
            offsets.push_back(static_cast<std::int64_t>(rf.size()));
        }
        // Per-lag tracking results.
        ResultGroup sub;
        sub.name = "lag_" + std::to_string(s.lags[li]);
        sub.attrs["lag_frames"] = s.lags[li];
        std::vector<std::int64_t> tc(tracks.charge.begin(), tracks.charge.end()),
            cens(tracks.censored.begin(), tracks.censored.end());
        std::vector<double> life;
        for (std::size_t t = 0; t < tracks.n_tracks(); ++t)
            life.push_back(frame_time(src.meta(), fc, 0, tracks.last_frame[t]) -
                           frame_time(src.meta(), fc, 0, tracks.first_frame[t]));
        sub.add_int("track_charge", tc, "1");
        sub.add_int("track_first_frame", tracks.first_frame, "frame");
        sub.add_int("track_last_frame", tracks.last_frame, "frame");
        sub.add_int("track_length", tracks.length, "1").attrs["meaning"] =
            std::string("sampled frames in which the track is seen");
        sub.add("track_lifetime", life, s.T).attrs["meaning"] =
            std::string("time(last) - time(first); censored tracks are lower bounds");
        sub.add_int("track_censored", cens, "1");
        std::vector<std::int64_t> ef, et;
        std::vector<double> ex, ey, etime;
        std::int64_t ncre = 0, nann = 0;
        for (const auto& e : tracks.events) {
            ef.push_back(e.frame);
            etime.push_back(frame_time(src.meta(), fc, 0, e.frame));
            et.push_back(e.type);
            ex.push_back(e.x);
            ey.push_back(e.y);
            (e.type > 0 ? ncre : nann)++;
        }
        sub.add_int("event_frame", ef, "frame");
        sub.add("event_time", etime, s.T);
        sub.add_int("event_type", et, "1").attrs["meaning"] =
            std::string("+1 pair creation, -1 pair annihilation");
        sub.add("event_x", ex, s.L);
        sub.add("event_y", ey, s.L);
        sub.attrs["n_creations"] = ncre;
        sub.attrs["n_annihilations"] = nann;
        std::vector<double> msd, msd_t;
        std::vector<std::int64_t> msd_n;
        defect_msd(seq, tracks, static_cast<std::size_t>(p.msd_lags), msd, msd_n, s.geometry);
        for (std::size_t m = 0; m < msd.size(); ++m)
            msd_t.push_back(frame_time(src.meta(), fc, 0, static_cast<std::int64_t>(m) * s.stride) -
                            frame_time(src.meta(), fc, 0, 0));
        sub.add("msd_lag_time", msd_t, s.T);
        sub.add("msd", msd, s.L + "^2");
        sub.add_int("msd_count", msd_n, "1");
        DefectPairCorrelation pc(p.rmax, p.dr, r.ref_x, r.ref_y);
        for (const auto& df : seq) pc.add(df.defects);
        sub.add("r", pc.r(), s.L);
        sub.add("g_dd", pc.g_dd(), "1").attrs["normalisation"] = std::string(
            "pair-distance probability of the grid nodes of the region (window geometry cancels)");
        sub.add("c_qq", pc.c_qq(), "1").attrs["meaning"] =
            std::string("mean q_i q_j of defect pairs per bin");
        sub.add("pair_counts", pc.pair_counts(), "1");
        g.groups.push_back(std::move(sub));
    }
    g.add_int("lag", rl, "frame");
    g.add_int("frame", rf, "frame");
    g.add("defect_time", rtime, s.T);
    g.add("x", rxv, s.L);
    g.add("y", ryv, s.L);
    g.add_int("charge", rc, "1");
    g.add_int("cells", rcells, "1");
    g.add_int("track", rtrack, "1");
    g.add_int("frame_offsets", offsets, "1").attrs["layout"] = std::string(
        "rows of (lag index l, start index k) are [offsets[l*n_times+k], offsets[l*n_times+k+1])");
    auto& c = g.add_int("counts", counts, "1");
    c.shape = {nl, nt};
    auto& cp = g.add_int("n_plus", nplus, "1");
    cp.shape = {nl, nt};
    auto& cm = g.add_int("n_minus", nminus, "1");
    cm.shape = {nl, nt};
    g.add2d("density", density, nl, nt, "1/" + s.L + "^2").attrs["meaning"] =
        std::string("defects per evaluated area");
    g.add2d("evaluated_area", r.area, nl, nt, s.L + "^2");
    g.add2d("threshold_used", r.threshold_used, nl, nt, s.field_unit());
    return g;
}

}  // namespace vibra::analysis
