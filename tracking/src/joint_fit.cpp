// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/tracking/joint_fit.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "vibra/core/error.hpp"

namespace vibra::tracking {

void JointFitParams::validate() const {
    auto bad = [](const char* f, double v, const char* rule) {
        throw ParameterError(std::string("joint fit: ") + f + " must be " + rule + ", got " + std::to_string(v));
    };
    if (sweeps < 1) bad("sweeps", sweeps, ">= 1");
    if (!(inner >= 0.5)) bad("inner", inner, ">= 0.5 px");
    if (!(outer >= 0.5)) bad("outer", outer, ">= 0.5 px");
    if (!(template_bin >= 0.02 && template_bin <= 0.5)) bad("template_bin", template_bin, "in [0.02, 0.5] px");
    if (!(outlier_sigma == 0 || outlier_sigma >= 2)) bad("outlier_sigma", outlier_sigma, "0 (off) or >= 2");
    if (!(max_radius_offset >= 0 && max_radius_offset < 0.5)) bad("max_radius_offset", max_radius_offset, "in [0, 0.5)");
}

namespace {

// Radial profile of one species on nodes u_k = k·h (u = ρ − δR), linear between nodes, 0 beyond.
struct Template {
    double h = 0.1;
    double r_nominal = 0;  // px: the given radius
    double r_edge = 0;     // px: steepest outer edge of the measured profile
    std::vector<float> v;  // S(u_k), intensity units relative to the background
    float at(float u, float& slope) const {
        const float t = u / static_cast<float>(h);
        const auto n = static_cast<int>(v.size());
        int k = static_cast<int>(t);
        if (t < 0) {
            slope = 0;
            return v.empty() ? 0.0f : v[0];
        }
        if (k >= n - 1) {
            slope = 0;
            return k == n - 1 ? v[static_cast<std::size_t>(n - 1)] * (1.0f - (t - static_cast<float>(k))) : 0.0f;
        }
        const float f = t - static_cast<float>(k);
        const float a = v[static_cast<std::size_t>(k)], b = v[static_cast<std::size_t>(k) + 1];
        slope = (b - a) / static_cast<float>(h);
        return a + f * (b - a);
    }
};

// Accumulates samples (u, y) into template bins.
struct TemplateSum {
    std::vector<double> s;
    std::vector<double> n;
    void reset(std::size_t k) { s.assign(k, 0.0), n.assign(k, 0.0); }
    // linear splitting between the two nearest nodes keeps the estimate unbiased between nodes
    void add(double t, double y) {
        const auto k = static_cast<std::ptrdiff_t>(std::floor(t));
        const double f = t - static_cast<double>(k);
        const auto m = static_cast<std::ptrdiff_t>(s.size());
        if (k >= 0 && k < m) s[static_cast<std::size_t>(k)] += (1 - f) * y, n[static_cast<std::size_t>(k)] += 1 - f;
        if (k + 1 >= 0 && k + 1 < m) s[static_cast<std::size_t>(k + 1)] += f * y, n[static_cast<std::size_t>(k + 1)] += f;
    }
};

// Visits the pixels of the disk footprint ρ ∈ [r_in, r_out] about (cx, cy): f(px, py, dx, dy, ρ).
template <class F>
inline void for_footprint(int w, int h, double cx, double cy, double r_in, double r_out, F&& f) {
    const double ro2 = r_out * r_out, ri2 = r_in > 0 ? r_in * r_in : -1.0;
    const int y0 = std::max(0, static_cast<int>(std::ceil(cy - r_out))), y1 = std::min(h - 1, static_cast<int>(std::floor(cy + r_out)));
    for (int py = y0; py <= y1; ++py) {
        const double dy = py - cy, dy2 = dy * dy;
        const double half = std::sqrt(std::max(0.0, ro2 - dy2));
        const int x0 = std::max(0, static_cast<int>(std::ceil(cx - half))), x1 = std::min(w - 1, static_cast<int>(std::floor(cx + half)));
        const auto fdy = static_cast<float>(dy);
        for (int px = x0; px <= x1; ++px) {
            const auto dx = static_cast<float>(px - cx);
            const double r2 = static_cast<double>(dx) * dx + dy2;
            if (r2 > ro2 || r2 < ri2) continue;
            f(px, py, dx, fdy, static_cast<float>(std::sqrt(r2)));
        }
    }
}

// Solves the 5×5 symmetric system A x = b (packed as full matrix) by Cholesky; false when not
// positive definite.
bool solve5(double A[5][5], const double b[5], double x[5]) {
    double L[5][5] = {};
    for (int i = 0; i < 5; ++i)
        for (int j = 0; j <= i; ++j) {
            double s = A[i][j];
            for (int k = 0; k < j; ++k) s -= L[i][k] * L[j][k];
            if (i == j) {
                if (!(s > 1e-12 * std::max(1.0, std::abs(A[i][i])))) return false;
                L[i][i] = std::sqrt(s);
            } else {
                L[i][j] = s / L[j][j];
            }
        }
    double y[5];
    for (int i = 0; i < 5; ++i) {
        double s = b[i];
        for (int k = 0; k < i; ++k) s -= L[i][k] * y[k];
        y[i] = s / L[i][i];
    }
    for (int i = 4; i >= 0; --i) {
        double s = y[i];
        for (int k = i + 1; k < 5; ++k) s -= L[k][i] * x[k];
        x[i] = s / L[i][i];
    }
    return true;
}

struct DiskState {
    double x, y, dr, b, a;
    int s;
    bool ok;
};

}  // namespace

void joint_fit(const cv::Mat& image, std::vector<Particle>& parts, std::span<const double> radii, const JointFitParams& p) {
    p.validate();
    if (image.empty() || image.channels() != 1 || (image.depth() != CV_8U && image.depth() != CV_16U))
        throw ParameterError("joint_fit: need a non-empty grey 8- or 16-bit image");
    if (radii.empty() || radii.size() > 2) throw ParameterError("joint_fit: need 1 or 2 radii");
    const std::size_t n = parts.size();
    if (n == 0) return;
    const int w = image.cols, h = image.rows;
    cv::Mat I;
    image.convertTo(I, CV_32F);
    const int ns = static_cast<int>(radii.size());
    const double hb = p.template_bin;

    std::vector<Template> tpl(static_cast<std::size_t>(ns));
    for (int s = 0; s < ns; ++s) {
        auto& t = tpl[static_cast<std::size_t>(s)];
        t.h = hb;
        t.r_nominal = radii[static_cast<std::size_t>(s)];
        const double umax = t.r_nominal + p.outer;
        t.v.assign(static_cast<std::size_t>(std::ceil(umax / hb)) + 2, 0.0f);
    }
    auto radius_of = [&](const DiskState& d) { return tpl[static_cast<std::size_t>(d.s)].r_nominal + d.dr; };
    auto max_dr = [&](int s) { return p.max_radius_offset * tpl[static_cast<std::size_t>(s)].r_nominal; };

    std::vector<DiskState> st(n);
    for (std::size_t i = 0; i < n; ++i) {
        const int s = ns == 2 ? (parts[i].species == 1 ? 1 : 0) : 0;
        st[i] = {parts[i].x, parts[i].y, 0.0, 0.0, 1.0, s, true};
    }

    // Neighbour lists (centres within the reach of two footprints).
    const double r_big = *std::max_element(radii.begin(), radii.end()) * (1 + p.max_radius_offset) + p.outer;
    std::vector<std::vector<std::uint32_t>> nb(n);
    {
        const double cell = 2 * r_big + 2;
        const int gw = std::max(1, static_cast<int>(std::ceil(w / cell))), gh = std::max(1, static_cast<int>(std::ceil(h / cell)));
        std::vector<std::vector<std::uint32_t>> grid(static_cast<std::size_t>(gw * gh));
        auto cell_of = [&](double x, double y, int& cx, int& cy) {
            cx = std::clamp(static_cast<int>(x / cell), 0, gw - 1), cy = std::clamp(static_cast<int>(y / cell), 0, gh - 1);
        };
        for (std::size_t i = 0; i < n; ++i) {
            int cx, cy;
            cell_of(st[i].x, st[i].y, cx, cy);
            grid[static_cast<std::size_t>(cy * gw + cx)].push_back(static_cast<std::uint32_t>(i));
        }
        for (std::size_t i = 0; i < n; ++i) {
            int cx, cy;
            cell_of(st[i].x, st[i].y, cx, cy);
            for (int yy = std::max(0, cy - 1); yy <= std::min(gh - 1, cy + 1); ++yy)
                for (int xx = std::max(0, cx - 1); xx <= std::min(gw - 1, cx + 1); ++xx)
                    for (auto j : grid[static_cast<std::size_t>(yy * gw + xx)])
                        if (j != i && std::hypot(st[j].x - st[i].x, st[j].y - st[i].y) < cell) nb[i].push_back(j);
        }
    }

    // 1. First templates: raw intensities about the starting centres, pixels closer to a
    //    neighbour's edge than to the own edge (+1 px) left out; background = the outer end.
    {
        std::vector<TemplateSum> acc(static_cast<std::size_t>(ns));
        for (int s = 0; s < ns; ++s) acc[static_cast<std::size_t>(s)].reset(tpl[static_cast<std::size_t>(s)].v.size());
        for (std::size_t i = 0; i < n; ++i) {
            const auto& t = tpl[static_cast<std::size_t>(st[i].s)];
            const double R = t.r_nominal;
            auto& a = acc[static_cast<std::size_t>(st[i].s)];
            for_footprint(w, h, st[i].x, st[i].y, 0.0, R + p.outer, [&](int px, int py, float, float, float rho) {
                const double own = std::abs(rho - R);
                for (auto j : nb[i]) {
                    const double Rj = tpl[static_cast<std::size_t>(st[j].s)].r_nominal;
                    const double dj = std::abs(std::hypot(px - st[j].x, py - st[j].y) - Rj);
                    if (dj < own + 1.0 || std::hypot(px - st[j].x, py - st[j].y) < Rj) return;
                }
                a.add(rho / hb, I.at<float>(py, px));
            });
        }
        for (int s = 0; s < ns; ++s) {
            auto& t = tpl[static_cast<std::size_t>(s)];
            const auto& a = acc[static_cast<std::size_t>(s)];
            // background: mean over the last 0.6 px of the support
            double bs = 0, bn = 0;
            const auto m = t.v.size();
            for (std::size_t k = 0; k < m; ++k)
                if (static_cast<double>(k) * hb >= t.r_nominal + p.outer - 0.6 && a.n[k] > 0) bs += a.s[k], bn += a.n[k];
            const double bg = bn > 0 ? bs / bn : 0.0;
            double last = 0;
            for (std::size_t k = 0; k < m; ++k) {
                if (a.n[k] > 0.5) last = a.s[k] / a.n[k] - bg;
                t.v[k] = static_cast<float>(last);
            }
            t.v.back() = 0.0f;
            for (std::size_t i = 0; i < n; ++i)
                if (st[i].s == s) st[i].b = bg;
        }
    }

    auto measure_edges = [&]() {
        for (auto& t : tpl) {
            // steepest change of the profile in [0.75 R, R + outer − 0.5]
            const auto m = static_cast<std::ptrdiff_t>(t.v.size());
            std::ptrdiff_t best = -1;
            double bv = -1;
            auto slope = [&](std::ptrdiff_t k) { return std::abs(double(t.v[static_cast<std::size_t>(k + 1)]) - t.v[static_cast<std::size_t>(k - 1)]); };
            for (std::ptrdiff_t k = 1; k + 1 < m; ++k) {
                const double u = static_cast<double>(k) * t.h;
                if (u < 0.75 * t.r_nominal || u > t.r_nominal + p.outer - 0.5) continue;
                if (slope(k) > bv) bv = slope(k), best = k;
            }
            double d = 0;
            if (best > 1 && best + 2 < m) {
                const double a = slope(best - 1), c = slope(best + 1), den = a - 2 * bv + c;
                if (den < 0) d = std::clamp(0.5 * (a - c) / den, -0.5, 0.5);
            }
            t.r_edge = best > 0 ? (static_cast<double>(best) + d) * t.h : t.r_nominal;
        }
    };
    measure_edges();

    cv::Mat M(h, w, CV_32F);
    auto render_model = [&]() {
        M.setTo(0);
        for (std::size_t i = 0; i < n; ++i) {
            const auto& d = st[i];
            if (!d.ok) continue;
            const auto& t = tpl[static_cast<std::size_t>(d.s)];
            const auto a = static_cast<float>(d.a), dr = static_cast<float>(d.dr);
            for_footprint(w, h, d.x, d.y, 0.0, radius_of(d) + p.outer, [&](int px, int py, float, float, float rho) {
                float sl;
                M.at<float>(py, px) += a * t.at(rho - dr, sl);
            });
        }
    };
    auto rebuild_templates = [&]() {
        std::vector<TemplateSum> acc(static_cast<std::size_t>(ns));
        for (int s = 0; s < ns; ++s) acc[static_cast<std::size_t>(s)].reset(tpl[static_cast<std::size_t>(s)].v.size());
        for (std::size_t i = 0; i < n; ++i) {
            const auto& d = st[i];
            if (!d.ok || !(d.a > 0)) continue;
            const auto& t = tpl[static_cast<std::size_t>(d.s)];
            auto& ac = acc[static_cast<std::size_t>(d.s)];
            const auto a = static_cast<float>(d.a), dr = static_cast<float>(d.dr), b = static_cast<float>(d.b);
            for_footprint(w, h, d.x, d.y, 0.0, radius_of(d) + p.outer, [&](int px, int py, float, float, float rho) {
                float sl;
                const float own = a * t.at(rho - dr, sl);
                const float y = (I.at<float>(py, px) - b - (M.at<float>(py, px) - own)) / a;
                ac.add((rho - dr) / hb, y);
            });
        }
        for (int s = 0; s < ns; ++s) {
            auto& t = tpl[static_cast<std::size_t>(s)];
            const auto& a = acc[static_cast<std::size_t>(s)];
            for (std::size_t k = 0; k < t.v.size(); ++k)
                if (a.n[k] > 0.5) t.v[k] = static_cast<float>(a.s[k] / a.n[k]);
            t.v.back() = 0.0f;
        }
        measure_edges();
    };

    // Moves disk i's light in the model image from state `o` to state `nd` (one pass over the
    // union of both footprints).
    auto move_light = [&](const DiskState& o, const DiskState& nd) {
        const auto& ot = tpl[static_cast<std::size_t>(o.s)];
        const auto& nt = tpl[static_cast<std::size_t>(nd.s)];
        const double rr_old = o.ok ? radius_of(o) + p.outer : 0.0, rr_new = nd.ok ? radius_of(nd) + p.outer : 0.0;
        const double cxm = 0.5 * (o.x + nd.x), cym = 0.5 * (o.y + nd.y);
        const double reach = std::max(rr_old, rr_new) + 0.5 * std::hypot(nd.x - o.x, nd.y - o.y) + 1;
        const auto oa = static_cast<float>(o.a), odr = static_cast<float>(o.dr);
        const auto na = static_cast<float>(nd.a), ndr = static_cast<float>(nd.dr);
        for_footprint(w, h, cxm, cym, 0.0, reach, [&](int px, int py, float, float, float) {
            float sl, val = 0;
            const double ox = px - o.x, oy = py - o.y, o2 = ox * ox + oy * oy;
            if (o2 <= rr_old * rr_old) val -= oa * ot.at(static_cast<float>(std::sqrt(o2)) - odr, sl);
            const double ex = px - nd.x, ey = py - nd.y, e2 = ex * ex + ey * ey;
            if (e2 <= rr_new * rr_new) val += na * nt.at(static_cast<float>(std::sqrt(e2)) - ndr, sl);
            M.at<float>(py, px) += val;
        });
    };

    // One Gauss–Newton step of disk i against the current model image (Gauss–Seidel: the model
    // image is updated at once). Returns the centre step (px); accumulates residual statistics.
    double r2sum = 0, r2n = 0;
    auto step_disk = [&](std::size_t i, float clip) -> double {
        const DiskState d = st[i];
        if (!d.ok) return 0.0;
        const auto& t = tpl[static_cast<std::size_t>(d.s)];
        const double R = radius_of(d);
        const auto a = static_cast<float>(d.a), dr = static_cast<float>(d.dr), b = static_cast<float>(d.b);
        double A[5][5] = {}, v[5] = {};
        double rr = 0, cnt = 0;
        for_footprint(w, h, d.x, d.y, std::max(0.0, R - p.inner), R + p.outer, [&](int px, int py, float dx, float dy, float rho) {
            float sl;
            const float S = t.at(rho - dr, sl);
            const float r = I.at<float>(py, px) - b - M.at<float>(py, px);
            if (std::abs(r) > clip) return;
            rr += static_cast<double>(r) * r, cnt += 1;
            const float inv = rho > 1e-6f ? 1.0f / rho : 0.0f;
            const float g = -a * sl;
            const double J[5] = {g * dx * inv, g * dy * inv, g, 1.0, S};
            for (int u = 0; u < 5; ++u) {
                v[u] += J[u] * r;
                for (int q = 0; q <= u; ++q) A[u][q] += J[u] * J[q];
            }
        });
        r2sum += rr, r2n += cnt;
        for (int u = 0; u < 5; ++u)
            for (int q = u + 1; q < 5; ++q) A[u][q] = A[q][u];
        double x[5];
        DiskState nd = d;
        if (cnt < 12 || !solve5(A, v, x)) {
            nd.ok = false;
        } else {
            double sx = x[0], sy = x[1];
            const double step = std::hypot(sx, sy);
            if (step > 1.0) sx /= step, sy /= step;  // at most 1 px per step
            nd.x = d.x + sx, nd.y = d.y + sy;
            nd.dr = std::clamp(d.dr + std::clamp(x[2], -1.0, 1.0), -max_dr(d.s), max_dr(d.s));
            nd.b = d.b + x[3];
            nd.a = d.a + x[4];
            if (!(nd.a > 0.2)) nd.ok = false;
        }
        move_light(d, nd);
        st[i] = nd;
        return nd.ok ? std::hypot(nd.x - d.x, nd.y - d.y) : 0.0;
    };

    // Residual sum of squares of disk i's footprint if its own light were `alt` instead.
    auto own_sse = [&](std::size_t i, const DiskState& alt, float clip) {
        const DiskState& d = st[i];
        const auto& t = tpl[static_cast<std::size_t>(d.s)];
        const auto& at = tpl[static_cast<std::size_t>(alt.s)];
        const double rr = std::max(radius_of(d), radius_of(alt)) + p.outer;
        const auto a = static_cast<float>(d.a), dr = static_cast<float>(d.dr), b = static_cast<float>(d.b);
        const auto aa = static_cast<float>(alt.a), adr = static_cast<float>(alt.dr), ab = static_cast<float>(alt.b);
        double sse = 0;
        for_footprint(w, h, d.x, d.y, 0.0, rr, [&](int px, int py, float, float, float rho) {
            float sl;
            const float others = M.at<float>(py, px) - (rho <= radius_of(d) + p.outer ? a * t.at(rho - dr, sl) : 0.0f);
            const double ex = px - alt.x, ey = py - alt.y;
            const auto ar = static_cast<float>(std::sqrt(ex * ex + ey * ey));
            const float mine = ar <= radius_of(alt) + p.outer ? aa * at.at(ar - adr, sl) : 0.0f;
            const float r = I.at<float>(py, px) - ab - others - mine;
            sse += std::min(static_cast<double>(r) * r, static_cast<double>(clip) * clip);
        });
        return sse;
    };

    // A disk whose fitted radius left its template's edge by more than a quarter of the size
    // difference is tried with the other template (centre and light kept, δR = 0) and takes
    // the one with the smaller residual.
    auto reconsider_species = [&](float clip) {
        if (ns != 2) return;
        const double gap = std::abs(tpl[1].r_edge - tpl[0].r_edge);
        for (std::size_t i = 0; i < n; ++i) {
            const DiskState d = st[i];
            if (!d.ok || std::abs(d.dr) < 0.25 * gap) continue;
            DiskState alt = d;
            alt.s = 1 - d.s;
            alt.dr = std::clamp(tpl[static_cast<std::size_t>(d.s)].r_edge + d.dr - tpl[static_cast<std::size_t>(alt.s)].r_edge,
                                -max_dr(alt.s), max_dr(alt.s));
            if (std::abs(alt.dr) > 0.5 * gap) alt.dr = 0;
            if (own_sse(i, alt, clip) < own_sse(i, d, clip)) {
                move_light(d, alt);
                st[i] = alt;
            }
        }
    };

    // Full sweeps, then sweeps over the disks that still move (and their neighbours).
    render_model();
    std::vector<double> moved(n, 1.0);
    double rms = 0;
    float clip = 1e30f;
    auto finish_sweep = [&]() {
        rms = r2n > 0 ? std::sqrt(r2sum / r2n) : 0.0;
        r2sum = r2n = 0;
        if (p.outlier_sigma > 0 && rms > 0) clip = static_cast<float>(p.outlier_sigma * rms);
    };
    for (int sweep = 0; sweep < p.sweeps; ++sweep) {
        for (std::size_t i = 0; i < n; ++i) moved[i] = step_disk(i, clip);
        finish_sweep();
        if (sweep == 0) {
            rebuild_templates();
            render_model();
        }
        if (sweep == 0 || sweep == 2) reconsider_species(clip);
    }
    std::vector<char> active(n);
    for (int extra = 0; extra < p.max_extra_sweeps; ++extra) {
        std::size_t n_active = 0;
        std::fill(active.begin(), active.end(), 0);
        for (std::size_t i = 0; i < n; ++i)
            if (moved[i] > p.tolerance) {
                active[i] = 1;
                for (auto j : nb[i]) active[j] = 1;
            }
        for (std::size_t i = 0; i < n; ++i) {
            if (!active[i]) {
                moved[i] = 0;
                continue;
            }
            ++n_active;
            moved[i] = step_disk(i, clip);
        }
        r2sum = r2n = 0;
        if (n_active == 0) break;
        if (extra == 0) reconsider_species(clip);
    }
    for (std::size_t i = 0; i < n; ++i) {
        auto& q = parts[i];
        const auto& d = st[i];
        if (!d.ok) continue;  // keeps the starting values
        q.x = d.x, q.y = d.y;
        q.species = static_cast<std::int8_t>(d.s);
        q.radius = static_cast<float>(tpl[static_cast<std::size_t>(d.s)].r_edge + d.dr);
    }
}

}  // namespace vibra::tracking
