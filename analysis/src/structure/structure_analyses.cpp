// SPDX-License-Identifier: GPL-3.0-or-later
// The structure analyses offered by `vibra analyze` (see registry.hpp): gr, sk, psi6, voronoi,
// clusters, number_fluctuations. Each streams over frames through the TrajectorySource and writes
// one group /analysis/<name> following docs/hdf5-layout.md (methods in docs/analysis-structure.md).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "vibra/analysis/bond_order.hpp"
#include "vibra/analysis/clusters.hpp"
#include "vibra/analysis/number_fluctuations.hpp"
#include "vibra/analysis/pair_correlation.hpp"
#include "vibra/analysis/registry.hpp"
#include "vibra/analysis/structure_factor.hpp"
#include "vibra/analysis/voronoi.hpp"
#include "vibra/core/error.hpp"

namespace vibra::analysis {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using FirstFrame = StructureDefaults;
FirstFrame first_frame(const TrajectorySource& src) { return structure_defaults(src); }

std::string geometry_name(const Geometry& w) { return to_string(w.kind); }

std::int64_t positive(const AnalysisContext& ctx, const std::string& flag) {
    const auto v = ctx.integer(flag);
    if (v < 1) throw ParameterError("--" + flag + " must be >= 1, got " + std::to_string(v));
    return v;
}

double positive_number(const AnalysisContext& ctx, const std::string& flag) {
    const auto v = ctx.number(flag);
    if (!(v > 0) || !std::isfinite(v))
        throw ParameterError("--" + flag + " must be > 0, got " + ctx.text(flag));
    return v;
}

bool flag_bool(const AnalysisContext& ctx, const std::string& flag) {
    const auto& s = ctx.text(flag);
    if (s == "1" || s == "true" || s == "yes") return true;
    if (s == "0" || s == "false" || s == "no") return false;
    throw ParameterError("--" + flag + ": expected 0 or 1, got '" + s + "'");
}

// ------------------------------------------------------------------------------------------ gr
std::vector<ResultGroup> run_gr(const AnalysisContext& ctx) {
    GrParams p;
    p.pair.r_max = ctx.is_set("gr-rmax") ? positive_number(ctx, "gr-rmax") : 0.0;
    p.pair.bins = positive(ctx, "gr-bins");
    const auto& edge = ctx.text("gr-edge");
    if (edge == "none")
        p.pair.edge = EdgeCorrection::none;
    else if (edge != "auto")
        throw ParameterError("--gr-edge must be 'auto' or 'none', got '" + edge + "'");
    p.stride = positive(ctx, "gr-stride");
    p.threads = std::max(1, ctx.threads);
    p.progress = ctx.progress;
    return {to_group(compute_gr(ctx.source, p), ctx.source.meta())};
}

// ------------------------------------------------------------------------------------------ sk
std::vector<ResultGroup> run_sk(const AnalysisContext& ctx) {
    SkParams p;
    p.sk.k_max = ctx.is_set("sk-kmax") ? positive_number(ctx, "sk-kmax") : 0.0;
    p.sk.bins = positive(ctx, "sk-bins");
    p.sk.max_vectors_per_bin = ctx.integer("sk-max-vectors");
    p.stride = ctx.is_set("sk-stride") ? positive(ctx, "sk-stride") : 0;
    p.progress = ctx.progress;
    return {to_group(compute_sk(ctx.source, p), ctx.source.meta())};
}

// ---------------------------------------------------------------------------------------- psi6
std::vector<ResultGroup> run_psi6(const AnalysisContext& ctx) {
    const auto& m = ctx.source.meta();
    Psi6Params q;
    auto& p = q.acc;
    p.bond.order = static_cast<int>(positive(ctx, "psi6-order"));
    p.bond.neighbours = bond_neighbours_from_string(ctx.text("psi6-neighbours"));
    p.bond.weighted = flag_bool(ctx, "psi6-weighted");
    if (p.bond.neighbours == BondNeighbours::cutoff) {
        if (ctx.is_set("psi6-rcut")) {
            p.bond.r_cut = positive_number(ctx, "psi6-rcut");
            q.r_cut_source = "option";
        } else if (ctx.earlier && ctx.earlier->count("gr") && ctx.earlier->at("gr").attrs.count("r_min") &&
                   std::isfinite(std::get<double>(ctx.earlier->at("gr").attrs.at("r_min")))) {
            p.bond.r_cut = std::get<double>(ctx.earlier->at("gr").attrs.at("r_min"));
            q.r_cut_source = "first minimum of g(r)";
        } else if (!m.species_diameters.empty()) {
            p.bond.r_cut = 1.4 * *std::max_element(m.species_diameters.begin(), m.species_diameters.end());
            q.r_cut_source = "1.4 x largest species diameter";
        } else {
            throw ParameterError(
                "psi6: cut-off neighbours need --psi6-rcut (no g(r) minimum or species diameters known)");
        }
    }
    p.r_max = ctx.is_set("psi6-rmax") ? positive_number(ctx, "psi6-rmax") : 0.0;
    p.bins = positive(ctx, "psi6-bins");
    q.stride = positive(ctx, "psi6-stride");
    q.per_particle = flag_bool(ctx, "psi6-per-particle");
    q.progress = ctx.progress;
    return {to_group(compute_psi6(ctx.source, q), m)};
}

// ------------------------------------------------------------------------------------- voronoi
std::vector<ResultGroup> run_voronoi(const AnalysisContext& ctx) {
    const auto& src = ctx.source;
    const auto& m = src.meta();
    const std::string L = m.length_unit, T = m.time_unit;
    const auto ff = first_frame(src);
    VoronoiParams vp;
    vp.radical = flag_bool(ctx, "voronoi-radical");
    const auto stride = positive(ctx, "voronoi-stride");
    const auto hb = static_cast<std::size_t>(positive(ctx, "voronoi-bins"));
    const bool keep_boundary = flag_bool(ctx, "voronoi-include-boundary");
    std::vector<double> t, phi, phi_vor, n_in, n_bd, rho_vor;
    std::vector<std::int64_t> tf;
    std::vector<double> hist[3];
    for (auto& h : hist) h.assign(hb, 0.0);
    double cnt[3] = {0, 0, 0}, area_sum[3] = {0, 0, 0}, phi_cnt[3] = {0, 0, 0}, phi_sum[3] = {0, 0, 0},
           phi_sum2[3] = {0, 0, 0};
    std::int64_t brute = 0;
    bool sizes_checked = false, any_sizes = false;
    for_each_structure_frame(
        src, stride,
        [&](const StructureFrame& f) {
            if (!sizes_checked && vp.radical && (f.radius.empty()))
                throw ParameterError(src.meta().source.file +
                                     ": voronoi: packing fractions need particle sizes "
                                     "(metadata species_diameters or a radius column); none are given");
            sizes_checked = true;
            const auto v = radical_voronoi(f, vp);
            brute += v.brute_force_cells;
            // Packing fractions need the particles' sizes (either tessellation); without them
            // (plain cells only) the cells' areas and density are still measured, φ is NaN.
            const bool sized = !v.particle_radius.empty();
            any_sizes = any_sizes || sized;
            const auto lphi = local_packing_fraction(v);
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
        ctx.progress, "voronoi");
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
    g.attrs["geometry"] = geometry_name(ff.window);
    g.attrs["frame_stride"] = stride;
    g.attrs["bins"] = static_cast<std::int64_t>(hb);
    g.attrs["brute_force_cells"] = brute;
    return {g};
}

// ------------------------------------------------------------------------------------ clusters
std::vector<ResultGroup> run_clusters(const AnalysisContext& ctx) {
    const auto& src = ctx.source;
    const std::string T = src.meta().time_unit;
    ClusterParams p;
    p.lambda = positive_number(ctx, "clusters-lambda");
    std::string rcut_source = "";
    if (ctx.is_set("clusters-rcut")) {
        p.r_cut = positive_number(ctx, "clusters-rcut");
        rcut_source = "option";
    } else {
        const auto t0 = src.read_frames(0, 1);
        const bool sizes = !src.meta().species_diameters.empty() || !t0.rows.radius.empty();
        if (!sizes && ctx.earlier && ctx.earlier->count("gr") && ctx.earlier->at("gr").attrs.count("r_min") &&
            std::isfinite(std::get<double>(ctx.earlier->at("gr").attrs.at("r_min")))) {
            p.r_cut = std::get<double>(ctx.earlier->at("gr").attrs.at("r_min"));
            rcut_source = "first minimum of g(r) (no particle sizes known)";
        }
    }
    const auto stride = positive(ctx, "clusters-stride");
    ClusterAccumulator acc(p);
    for_each_structure_frame(
        src, stride, [&](const StructureFrame& f) { acc.accumulate(f); }, ctx.progress, "clusters");
    const auto r = acc.result();
    ResultGroup g;
    g.name = "clusters";
    g.add_int("size", r.size, "1");
    g.add("count", r.count, "1");
    g.add("count_interior", r.count_interior, "1").attrs["meaning"] =
        std::string("clusters not reaching the window boundary (all of them in a periodic box)");
    g.add("probability", r.probability, "1");
    g.add("t", r.t, T);
    g.add_int("t_frames", r.frame, "frame");
    g.add("largest", r.largest, "1");
    g.add("largest_fraction", r.largest_fraction, "1");
    g.add("n_clusters", r.n_clusters, "1");
    g.add("weight_average_size", r.weight_average, "1");
    g.add("spanning", r.spanning, "1").attrs["meaning"] =
        std::string("1 when a cluster wraps around the periodic box / reaches opposite window edges");
    g.add("largest_rg", r.largest_rg, src.meta().length_unit);
    g.attrs["criterion"] = std::string(p.r_cut > 0 ? "r_ij < r_cut" : "r_ij < lambda (d_i + d_j)/2");
    g.attrs["lambda"] = p.lambda;
    g.attrs["r_cut"] = p.r_cut;
    if (!rcut_source.empty()) g.attrs["r_cut_source"] = rcut_source;
    g.attrs["frame_stride"] = stride;
    g.attrs["mean_size"] = r.mean_size;
    return {g};
}

// ------------------------------------------------------------------------- number_fluctuations
std::vector<ResultGroup> run_nf(const AnalysisContext& ctx) {
    const auto& src = ctx.source;
    const std::string L = src.meta().length_unit;
    const auto ff = first_frame(src);
    NumberFluctuationParams p;
    if (ctx.is_set("number-fluctuations-sizes")) p.sizes = ctx.numbers("number-fluctuations-sizes");
    p.n_sizes = positive(ctx, "number-fluctuations-n-sizes");
    const auto stride = positive(ctx, "number-fluctuations-stride");
    NumberFluctuationAccumulator acc(p);
    for_each_structure_frame(
        src, stride, [&](const StructureFrame& f) { acc.accumulate(f); }, ctx.progress,
        "number_fluctuations");
    const auto r = acc.result();
    ResultGroup g;
    g.name = "number_fluctuations";
    g.add("ell", r.ell, L);
    g.add("boxes", r.boxes, "1");
    g.add("mean_n", r.mean, "1");
    g.add("var_n", r.var, "1");
    const bool partials =
        std::any_of(r.mean_small.begin(), r.mean_small.end(), [](double v) { return v > 0; }) &&
        std::any_of(r.mean_large.begin(), r.mean_large.end(), [](double v) { return v > 0; });
    if (partials) {
        g.add("mean_n_small", r.mean_small, "1");
        g.add("var_n_small", r.var_small, "1");
        g.add("mean_n_large", r.mean_large, "1");
        g.add("var_n_large", r.var_large, "1");
        g.attrs["exponent_small"] = r.exponent_small;
        g.attrs["exponent_large"] = r.exponent_large;
    }
    g.attrs["exponent"] = r.exponent;
    g.attrs["exponent_meaning"] = std::string("a in var_n ~ mean_n^a (Poisson 1); dN ~ <N>^(a/2)");
    g.attrs["alpha"] = 0.5 * r.exponent;
    g.attrs["fit"] = std::string("least squares in log-log over sizes with mean_n >= 1");
    g.attrs["boxes_layout"] = std::string("non-overlapping square tiles centred in the region");
    g.attrs["region"] =
        std::string(ff.window.kind == GeometryKind::window_circle ? "square inscribed in the circle"
                                                                  : "whole box / window");
    g.attrs["frame_stride"] = stride;
    g.attrs["frames"] = r.frames;
    return {g};
}

}  // namespace

std::vector<AnalysisSpec> structure_analyses() {
    std::vector<AnalysisSpec> out;
    out.push_back(
        {"gr",
         "pair correlation g(r) and partials (edge-corrected in windows)",
         {{"gr-rmax", "largest r (length unit); default: min(half box | quarter window side, 10 spacings)",
           "", OptionType::number, 0, kInf},
          {"gr-bins", "number of r bins", "100", OptionType::integer, 1, kInf},
          {"gr-stride", "use every n-th frame", "1", OptionType::integer, 1, kInf},
          {"gr-edge",
           "edge correction: auto (translation/isotropic) or none",
           "auto",
           OptionType::text,
           -kInf,
           kInf,
           {"auto", "none"}}},
         run_gr,
         true});
    out.push_back(
        {"sk",
         "partial static structure factors S_ab(k)",
         {{"sk-kmax", "largest |k| (rad per length unit); default 3 x 2pi/mean spacing", "",
           OptionType::number, 0, kInf},
          {"sk-bins", "number of |k| shells", "60", OptionType::integer, 1, kInf},
          {"sk-max-vectors", "k-vectors kept per shell (0 = all)", "100", OptionType::integer, 0, kInf},
          {"sk-stride", "use every n-th frame; default: at most 200 frames", "", OptionType::integer, 1,
           kInf}},
         run_sk,
         true});
    out.push_back(
        {"psi6",
         "bond-orientational order: local psi6, global |<psi6>|, g6(r)",
         {{"psi6-neighbours",
           "voronoi (radical when sizes are known) or cutoff",
           "voronoi",
           OptionType::text,
           -kInf,
           kInf,
           {"voronoi", "cutoff"}},
          {"psi6-rcut", "cut-off (length unit) for cutoff neighbours; default: first minimum of g(r)", "",
           OptionType::number, 0, kInf},
          {"psi6-order", "n of psi_n", "6", OptionType::integer, 1, kInf},
          {"psi6-weighted", "1: weight Voronoi bonds by edge length", "0", OptionType::boolean},
          {"psi6-rmax", "g6 range (length unit); default as gr-rmax", "", OptionType::number, 0, kInf},
          {"psi6-bins", "g6 bins", "100", OptionType::integer, 1, kInf},
          {"psi6-stride", "use every n-th frame", "1", OptionType::integer, 1, kInf},
          {"psi6-per-particle", "1: also write local psi6 per particle (/analysis/psi6/local)", "0",
           OptionType::boolean}},
         run_psi6,
         true});
    out.push_back(
        {"voronoi",
         "radical Voronoi local packing fraction and global phi(t)",
         {{"voronoi-radical", "1: radical (power) cells, 0: plain Voronoi", "1", OptionType::boolean},
          {"voronoi-bins", "histogram bins of the local packing fraction over [0,1]", "100",
           OptionType::integer, 1, kInf},
          {"voronoi-include-boundary", "1: keep cells touching the window boundary", "0",
           OptionType::boolean},
          {"voronoi-stride", "use every n-th frame", "1", OptionType::integer, 1, kInf}},
         run_voronoi,
         true});
    out.push_back(
        {"clusters",
         "contact clusters (union-find) and their size distribution",
         {{"clusters-lambda", "bond if r < lambda (d_i + d_j)/2", "1.1", OptionType::number, 0, kInf},
          {"clusters-rcut", "bond if r < rcut instead (length unit)", "", OptionType::number, 0, kInf},
          {"clusters-stride", "use every n-th frame", "1", OptionType::integer, 1, kInf}},
         run_clusters,
         true});
    out.push_back(
        {"number_fluctuations",
         "number fluctuations var(N) vs <N> in square sub-boxes",
         {{"number-fluctuations-sizes", "comma-separated box sides (length unit); default log-spaced", "",
           OptionType::list, 0, kInf},
          {"number-fluctuations-n-sizes", "number of automatic box sides", "12", OptionType::integer, 1,
           kInf},
          {"number-fluctuations-stride", "use every n-th frame", "1", OptionType::integer, 1, kInf}},
         run_nf,
         true});
    return out;
}

}  // namespace vibra::analysis
