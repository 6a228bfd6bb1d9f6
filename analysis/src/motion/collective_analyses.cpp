// SPDX-License-Identifier: GPL-3.0-or-later
// The collective-motion analyses of `vibra analyze` (docs/collective-motion.md §2–§4):
// field, defects, correlations, spectra, evolution: their flags mapped to the Params of
// compute_field, compute_defects, … (each in its module, streaming through
// detail/collective_stream.hpp). Definitions, defaults and what is a choice rather than a
// confirmed method: docs/collective-motion.md.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "detail/collective_stream.hpp"
#include "vibra/analysis/defects.hpp"
#include "vibra/analysis/delaunay.hpp"
#include "vibra/analysis/energy_spectra.hpp"
#include "vibra/analysis/evolution.hpp"
#include "vibra/analysis/registry.hpp"
#include "vibra/analysis/velocity_correlation.hpp"

namespace vibra::analysis {

namespace {

// ---------------------------------------------------------------------------------------------
// field

std::vector<AnalysisOption> field_spec_options() {
    auto o = detail::field_options("field", "");
    o.push_back({"field-snapshots",
                 "number of start frames whose full grid field and particle displacements are stored", "3",
                 OptionType::integer, 0, kInf});
    return o;
}

ResultGroup run_field(const AnalysisContext& ctx) {
    FieldParams p;
    p.field = detail::resolve_field_settings(ctx, "field");
    p.snapshots = ctx.integer("field-snapshots");
    if (p.snapshots < 0) throw ParameterError("--field-snapshots must be ≥ 0");
    p.threads = std::max(1, ctx.threads);
    return to_group(compute_field(ctx.source, p), p, ctx.source);
}

// ---------------------------------------------------------------------------------------------
// defects

std::vector<AnalysisOption> defects_spec_options() {
    auto o = detail::field_options("defects", "");
    for (auto& op : o)
        if (op.flag == "defects-stride")
            op.help =
                "use start frames t = 0, s, 2s, … (frames; empty = every frame while the defect tables fit "
                "half of "
                "--memory, 16 bytes per grid node, start frame and lag; else the smallest stride that fits)";
    o.insert(
        o.end(),
        {
            {"defects-route",
             "loops: grid (plaquettes of the coarse-grained field) | delaunay (triangles of the particles)",
             "grid",
             OptionType::text,
             -kInf,
             kInf,
             {"grid", "delaunay"}},
            {"defects-threshold",
             "skip loops touching |u| below this, field unit (empty = defects-threshold-rms × rms|u| of the "
             "frame)",
             "", OptionType::number, 0, kInf},
            {"defects-threshold-rms", "relative threshold used when defects-threshold is empty", "0.1",
             OptionType::number, 0, kInf},
            {"defects-merge",
             "merge adjacent charged cells into one defect: on | off",
             "on",
             OptionType::text,
             -kInf,
             kInf,
             {"on", "off"}},
            {"defects-max-edge",
             "delaunay: skip triangles with an edge longer than this, length unit (empty = 3 mean spacings)",
             "", OptionType::number, 0, kInf},
            {"defects-smooth",
             "delaunay: Gaussian smoothing width at the particles, length unit (0 = raw displacements)", "0",
             OptionType::number, 0, kInf},
            {"defects-max-step",
             "tracking: largest defect step between sampled frames, length unit (empty = 3 grid spacings)",
             "", OptionType::number, 0, kInf},
            {"defects-pair-distance",
             "creation/annihilation: +1/−1 within this distance, length unit (empty = 3 grid spacings)", "",
             OptionType::number, 0, kInf},
            {"defects-rmax",
             "pair correlations up to this separation, length unit (empty = half the smaller region side)",
             "", OptionType::number, 0, kInf},
            {"defects-dr", "pair-correlation bin width, length unit (empty = grid spacing)", "",
             OptionType::number, 0, kInf},
            {"defects-msd-lags", "defect MSD up to this many sampled steps", "50", OptionType::integer, 1,
             kInf},
        });
    return o;
}

ResultGroup run_defects(const AnalysisContext& ctx) {
    DefectAnalysisParams p;
    p.field = detail::resolve_field_settings(ctx, "defects");
    if (!ctx.is_set("defects-stride")) {
        p.field.stride = defect_stride_for_memory(p.field, ctx.memory_bytes);
        p.field.n_times = (p.field.n_frames - p.field.lags.front() + p.field.stride - 1) / p.field.stride;
        p.stride_from_memory = true;
    }
    const auto& s = p.field;
    const auto& route = ctx.text("defects-route");
    if (route != "grid" && route != "delaunay")
        throw ParameterError("--defects-route: '" + route + "' is not one of grid, delaunay");
    p.delaunay = route == "delaunay";
    p.threshold = ctx.is_set("defects-threshold") ? ctx.number("defects-threshold") : -1.0;
    p.threshold_rms = ctx.number("defects-threshold-rms");
    if (ctx.is_set("defects-threshold") && !(p.threshold >= 0))
        throw ParameterError("--defects-threshold must be ≥ 0");
    if (!(p.threshold_rms >= 0)) throw ParameterError("--defects-threshold-rms must be ≥ 0");
    const auto& merge = ctx.text("defects-merge");
    if (merge != "on" && merge != "off")
        throw ParameterError("--defects-merge: '" + merge + "' is not on or off");
    p.merge = merge == "on";
    const double h = std::max(s.grid.hx, s.grid.hy);
    p.max_edge = ctx.is_set("defects-max-edge") ? ctx.number("defects-max-edge") : 3 * s.mean_spacing;
    p.smooth = ctx.number("defects-smooth");
    p.threads = std::max(1, ctx.threads);
    if (!(p.smooth >= 0)) throw ParameterError("--defects-smooth must be ≥ 0");
    p.tracks.max_step = ctx.is_set("defects-max-step") ? ctx.number("defects-max-step") : 3 * h;
    p.tracks.pair_distance =
        ctx.is_set("defects-pair-distance") ? ctx.number("defects-pair-distance") : 3 * h;
    p.tracks.geometry = s.geometry;
    p.tracks.validate();
    p.rmax =
        ctx.is_set("defects-rmax") ? ctx.number("defects-rmax") : 0.5 * std::min(s.grid.lx(), s.grid.ly());
    p.dr = ctx.is_set("defects-dr") ? ctx.number("defects-dr") : h;
    p.msd_lags = ctx.integer("defects-msd-lags");
    if (p.msd_lags < 0) throw ParameterError("--defects-msd-lags must be ≥ 0");
    return to_group(compute_defects(ctx.source, p), p, ctx.source);
}

// ---------------------------------------------------------------------------------------------
// correlations

std::vector<AnalysisOption> correlations_spec_options() {
    auto o = detail::field_options("correlations", "");
    o.insert(
        o.end(),
        {
            {"correlations-rmax",
             "largest separation, length unit (empty = min(15 mean spacings, a quarter of the smaller side))",
             "", OptionType::number, 0, kInf},
            {"correlations-dr", "bin width, length unit (empty = half a mean spacing)", "",
             OptionType::number, 0, kInf},
            {"correlations-mean",
             "subtract the frame mean before correlating: subtract | keep",
             "subtract",
             OptionType::text,
             -kInf,
             kInf,
             {"subtract", "keep"}},
            {"correlations-fit-floor", "exponential fit of C(r) over bins while C > floor·C(first bin)",
             "0.1353352832366127", OptionType::number},
        });
    return o;
}

ResultGroup run_correlations(const AnalysisContext& ctx) {
    CorrelationsParams p;
    p.field = detail::resolve_field_settings(ctx, "correlations");
    if (ctx.is_set("correlations-rmax")) p.corr.r_max = ctx.number("correlations-rmax");
    if (ctx.is_set("correlations-dr")) p.corr.dr = ctx.number("correlations-dr");
    const auto& mean = ctx.text("correlations-mean");
    if (mean != "subtract" && mean != "keep")
        throw ParameterError("--correlations-mean: '" + mean + "' is not subtract or keep");
    p.corr.subtract_mean = mean == "subtract";
    p.fit_floor = ctx.number("correlations-fit-floor");
    if (!(p.fit_floor > 0 && p.fit_floor < 1))
        throw ParameterError("--correlations-fit-floor must be in (0, 1)");
    p.threads = std::max(1, ctx.threads);
    return to_group(compute_correlations(ctx.source, p), p, ctx.source);
}

// ---------------------------------------------------------------------------------------------
// spectra

std::vector<AnalysisOption> spectra_spec_options() {
    auto o = detail::field_options("spectra", "");
    o.insert(
        o.end(),
        {
            {"spectra-taper",
             "window before the FFT: hann | tukey | none",
             "hann",
             OptionType::text,
             -kInf,
             kInf,
             {"hann", "tukey", "none"}},
            {"spectra-tukey-alpha", "tapered fraction of the Tukey window", "0.5", OptionType::number, 0, 1},
            {"spectra-gradient",
             "derivatives in the nonlinear term: fd2 | spectral",
             "fd2",
             OptionType::text,
             -kInf,
             kInf,
             {"fd2", "spectral"}},
            {"spectra-kmin", "lower end of the power-law fit band, rad/length (empty = 4 Δk)", "",
             OptionType::number, 0, kInf},
            {"spectra-kmax", "upper end of the fit band, rad/length (empty = min(1/σ, π/(2h)))", "",
             OptionType::number, 0, kInf},
            {"spectra-deconvolve",
             "divide E_iso(k) (used for the fits) by the Gaussian kernel's exp(−k²σ²): on | off",
             "on",
             OptionType::text,
             -kInf,
             kInf,
             {"on", "off"}},
            {"spectra-fst-scales",
             "filter-space-technique scales ℓ, length unit, comma-separated (empty = σ·{1,2,4,8} below a "
             "quarter of the side)",
             "", OptionType::list, 0, kInf},
        });
    return o;
}

ResultGroup run_spectra(const AnalysisContext& ctx) {
    SpectraParams p;
    p.field = detail::resolve_field_settings(ctx, "spectra");
    p.taper_name = ctx.text("spectra-taper");
    p.gradient_name = ctx.text("spectra-gradient");
    p.spectrum.taper = taper_from_string(p.taper_name);
    p.spectrum.tukey_alpha = ctx.number("spectra-tukey-alpha");
    p.spectrum.gradient = gradient_from_string(p.gradient_name);
    p.spectrum.validate();
    const auto& dec = ctx.text("spectra-deconvolve");
    if (dec != "on" && dec != "off")
        throw ParameterError("--spectra-deconvolve: '" + dec + "' is not on or off");
    p.deconvolve = dec == "on";
    if (ctx.is_set("spectra-kmin")) p.k_min = ctx.number("spectra-kmin");
    if (ctx.is_set("spectra-kmax")) p.k_max = ctx.number("spectra-kmax");
    if (ctx.is_set("spectra-fst-scales")) p.fst_scales = ctx.numbers("spectra-fst-scales");
    p.threads = ctx.threads;
    return to_group(compute_spectra(ctx.source, p), p, ctx.source);
}

// ---------------------------------------------------------------------------------------------
// evolution

std::vector<AnalysisOption> evolution_spec_options() {
    return {
        {"evolution-segments", "number of linear segments (stages) of the piecewise fit in log time", "3",
         OptionType::integer, 1, kInf},
        {"evolution-min-points", "minimum points per segment", "3", OptionType::integer, 1, kInf},
        {"evolution-lag",
         "lag Δt (frames) whose series are summarised (empty = the first lag of the earlier groups, else 1)",
         "", OptionType::integer, 1, kInf},
        {"evolution-stride",
         "start-frame stride when a series must be computed here (empty = the analysis default)", "",
         OptionType::integer, 1, kInf},
    };
}

std::vector<AnalysisSpec> specs();  // below

// A series (time, value) for lag `lag` from a group: value array `name` shaped [n_lags][n_times].
bool extract_series(const ResultGroup& g, const std::string& name, std::int64_t lag, std::vector<double>& t,
                    std::vector<double>& v) {
    const auto* lags = g.find("lags");
    const auto* time = g.find("time");
    const auto* arr = g.find(name);
    if (!lags || !time || !arr) return false;
    const auto* lv = std::get_if<std::vector<std::int64_t>>(&lags->data);
    const auto* tv = std::get_if<std::vector<double>>(&time->data);
    const auto* av = std::get_if<std::vector<double>>(&arr->data);
    if (!lv || !tv || !av) return false;
    const auto it = std::find(lv->begin(), lv->end(), lag);
    if (it == lv->end()) return false;
    const auto li = static_cast<std::size_t>(it - lv->begin()), nt = tv->size();
    if (av->size() < (li + 1) * nt) return false;
    t = *tv;
    v.assign(av->begin() + static_cast<std::ptrdiff_t>(li * nt),
             av->begin() + static_cast<std::ptrdiff_t>((li + 1) * nt));
    return true;
}

ResultGroup run_evolution(const AnalysisContext& ctx) {
    PiecewiseParams pp;
    const auto segs = ctx.integer("evolution-segments"), minp = ctx.integer("evolution-min-points");
    if (segs < 1) throw ParameterError("--evolution-segments must be ≥ 1, got " + std::to_string(segs));
    if (minp < 2) throw ParameterError("--evolution-min-points must be ≥ 2, got " + std::to_string(minp));
    pp.segments = static_cast<std::size_t>(segs), pp.min_points = static_cast<std::size_t>(minp);
    const auto& src = ctx.source;
    const auto& meta = src.meta();
    std::int64_t lag = 1;
    if (ctx.is_set("evolution-lag")) {
        lag = ctx.integer("evolution-lag");
        if (lag < 1) throw ParameterError("--evolution-lag must be ≥ 1");
    } else if (ctx.earlier) {
        for (const char* n : {"field", "defects", "correlations", "spectra"}) {
            const auto it = ctx.earlier->find(n);
            if (it == ctx.earlier->end()) continue;
            if (const auto* l = it->second.find("lags"))
                if (const auto* lv = std::get_if<std::vector<std::int64_t>>(&l->data); lv && !lv->empty()) {
                    lag = lv->front();
                    break;
                }
        }
    }
    struct Series {
        const char* out;
        const char* group;
        const char* array;
        std::string units;
    };
    const std::string L = meta.length_unit;
    const std::vector<Series> series{{"kinetic_energy", "field", "kinetic_energy", ""},
                                     {"defect_density", "defects", "density", "1/" + L + "^2"},
                                     {"xi", "correlations", "xi", L},
                                     {"spectral_slope", "spectra", "slope", "1"}};
    EvolutionParams ep;
    ep.fit = pp;
    ep.lag = lag;
    ep.frame_interval = meta.frame_interval;
    std::vector<EvolutionSeries> in;
    const auto all = specs();
    for (const auto& se : series) {
        EvolutionSeries es;
        es.name = se.out;
        es.origin = "earlier";
        const ResultGroup* grp = nullptr;
        ResultGroup computed;
        if (ctx.earlier) {
            const auto it = ctx.earlier->find(se.group);
            if (it != ctx.earlier->end()) grp = &it->second;
        }
        if (!grp || !extract_series(*grp, se.array, lag, es.time, es.value)) {
            // Compute with the analysis' own defaults for this lag.
            const auto sp = std::find_if(all.begin(), all.end(),
                                         [&](const AnalysisSpec& a) { return a.name == se.group; });
            std::map<std::string, std::string> opts;
            for (const auto& o : sp->options) opts[o.flag] = o.default_value;
            opts[std::string(se.group) + "-lags"] = std::to_string(lag);
            if (ctx.is_set("evolution-stride"))
                opts[std::string(se.group) + "-stride"] = ctx.text("evolution-stride");
            AnalysisContext sub{src, opts, false, ctx.threads, nullptr};
            computed = sp->run(sub).front();
            es.origin = "computed";
            if (!extract_series(computed, se.array, lag, es.time, es.value)) continue;
            grp = &computed;
        }
        es.units = se.units;
        if (es.units.empty())
            if (const auto* a = grp->find(se.array)) es.units = a->units;
        in.push_back(std::move(es));
    }
    return to_group(compute_evolution(in, ep), ep, meta);
}

std::vector<AnalysisSpec> specs() {
    std::vector<AnalysisSpec> v;
    v.push_back(
        {"field",
         "displacement field u = r(t+Δt) − r(t), coarse-grained on a grid (snapshots, energy, polar order)",
         field_spec_options(),
         [](const AnalysisContext& c) { return std::vector<ResultGroup>{run_field(c)}; }, false});
    v.push_back({"defects",
                 "vortex-like (+1) and saddle-like (−1) defects of the displacement field, tracks, events, "
                 "correlations",
                 defects_spec_options(),
                 [](const AnalysisContext& c) { return std::vector<ResultGroup>{run_defects(c)}; }, false});
    v.push_back(
        {"correlations", "spatial displacement correlation C_vv(r), correlation length ξ(t), polar order",
         correlations_spec_options(),
         [](const AnalysisContext& c) { return std::vector<ResultGroup>{run_correlations(c)}; }, false});
    v.push_back({"spectra",
                 "energy spectra E(k), transfer T(k), flux Π(k) (spectral and filter-space), slopes vs Δt",
                 spectra_spec_options(),
                 [](const AnalysisContext& c) { return std::vector<ResultGroup>{run_spectra(c)}; }, false});
    v.push_back({"evolution", "kinetic energy, defect density, ξ, spectral slope vs time with change points",
                 evolution_spec_options(),
                 [](const AnalysisContext& c) { return std::vector<ResultGroup>{run_evolution(c)}; }, false});
    return v;
}

}  // namespace

std::vector<AnalysisSpec> collective_analyses() { return specs(); }

}  // namespace vibra::analysis
