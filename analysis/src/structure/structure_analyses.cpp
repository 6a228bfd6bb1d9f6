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
    p.sk.threads = std::max(1, ctx.threads);
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
    q.threads = std::max(1, ctx.threads);
    q.progress = ctx.progress;
    return {to_group(compute_psi6(ctx.source, q), m)};
}

// ------------------------------------------------------------------------------------- voronoi
std::vector<ResultGroup> run_voronoi(const AnalysisContext& ctx) {
    VoronoiAnalysisParams q;
    q.cells.radical = flag_bool(ctx, "voronoi-radical");
    q.stride = positive(ctx, "voronoi-stride");
    q.bins = positive(ctx, "voronoi-bins");
    q.include_boundary = flag_bool(ctx, "voronoi-include-boundary");
    q.threads = std::max(1, ctx.threads);
    q.progress = ctx.progress;
    return {to_group(compute_voronoi_analysis(ctx.source, q), ctx.source.meta())};
}

// ------------------------------------------------------------------------------------ clusters
std::vector<ResultGroup> run_clusters(const AnalysisContext& ctx) {
    const auto& src = ctx.source;
    ClustersParams q;
    auto& p = q.clusters;
    p.lambda = positive_number(ctx, "clusters-lambda");
    if (ctx.is_set("clusters-rcut")) {
        p.r_cut = positive_number(ctx, "clusters-rcut");
        q.r_cut_source = "option";
    } else {
        const auto t0 = src.read_frames(0, 1);
        const bool sizes = !src.meta().species_diameters.empty() || !t0.rows.radius.empty();
        if (!sizes && ctx.earlier && ctx.earlier->count("gr") && ctx.earlier->at("gr").attrs.count("r_min") &&
            std::isfinite(std::get<double>(ctx.earlier->at("gr").attrs.at("r_min")))) {
            p.r_cut = std::get<double>(ctx.earlier->at("gr").attrs.at("r_min"));
            q.r_cut_source = "first minimum of g(r) (no particle sizes known)";
        }
    }
    q.stride = positive(ctx, "clusters-stride");
    q.threads = std::max(1, ctx.threads);
    q.progress = ctx.progress;
    return {to_group(compute_clusters(src, q), src.meta())};
}

// ------------------------------------------------------------------------- number_fluctuations
std::vector<ResultGroup> run_nf(const AnalysisContext& ctx) {
    NumberFluctuationsParams q;
    if (ctx.is_set("number-fluctuations-sizes")) q.boxes.sizes = ctx.numbers("number-fluctuations-sizes");
    q.boxes.n_sizes = positive(ctx, "number-fluctuations-n-sizes");
    q.stride = positive(ctx, "number-fluctuations-stride");
    q.threads = std::max(1, ctx.threads);
    q.progress = ctx.progress;
    return {to_group(compute_number_fluctuations(ctx.source, q), ctx.source.meta())};
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
