// SPDX-License-Identifier: GPL-3.0-or-later
// The single-particle dynamics analyses offered by `vibra analyze` (see registry.hpp and
// docs/analysis-dynamics.md): msd (+ msd/van_hove), vacf, vdos, fs, temperature, velocity_distribution.
#include <cmath>

#include "vibra/analysis/msd.hpp"
#include "vibra/analysis/registry.hpp"
#include "vibra/analysis/self_intermediate.hpp"
#include "vibra/analysis/temperature.hpp"
#include "vibra/analysis/vacf.hpp"
#include "vibra/analysis/vdos.hpp"
#include "vibra/analysis/velocities.hpp"
#include "vibra/analysis/velocity_distribution.hpp"
#include "vibra/core/error.hpp"

namespace vibra::analysis {

namespace {

std::int64_t lag_option(const AnalysisContext& ctx, const std::string& flag) {
    if (!ctx.is_set(flag)) return -1;
    const auto v = ctx.integer(flag);
    if (v < 0) throw ParameterError("--" + flag + " must be >= 0, got " + std::to_string(v));
    return v;
}

std::vector<std::int64_t> int_list(const AnalysisContext& ctx, const std::string& flag) {
    std::vector<std::int64_t> out;
    if (!ctx.is_set(flag) || ctx.text(flag) == "none") return out;
    for (double v : ctx.numbers(flag)) {
        if (v != std::floor(v) || v < 1)
            throw ParameterError("--" + flag + ": lags must be positive integers (frames)");
        out.push_back(static_cast<std::int64_t>(v));
    }
    return out;
}

/// Functions of the lag need a lag > 0: at least 2 frames.
void need_two_frames(const AnalysisContext& ctx, const std::string& name) {
    if (ctx.source.n_frames() < 2)
        throw InsufficientData(name + ": " + std::to_string(ctx.source.n_frames()) +
                               " frame(s): a function of the lag needs at least 2 frames");
}

bool flag_bool(const AnalysisContext& ctx, const std::string& flag) {
    const auto& s = ctx.text(flag);
    if (s == "1" || s == "true" || s == "yes" || s == "on") return true;
    if (s == "0" || s == "false" || s == "no" || s == "off" || s.empty()) return false;
    throw ParameterError("--" + flag + ": '" + s + "' is not a boolean (0/1)");
}

std::vector<AnalysisOption> stream_options(const std::string& n, bool velocity) {
    std::vector<AnalysisOption> o{
        {n + "-drift",
         "drift removal: none | lowpass | com (full per-frame centre of mass)",
         "none",
         OptionType::text,
         -kInf,
         kInf,
         {"none", "lowpass", "com"}},
        {n + "-drift-window", "frames of the low-pass moving average (lowpass drift)", "51",
         OptionType::integer, 1, kInf},
        {n + "-block-cells", "summed track lifetimes (frames) per particle block: memory bound", "2097152",
         OptionType::integer, 1, kInf},
    };
    if (velocity)
        o.push_back({n + "-velocity",
                     "velocity scheme: auto | given | central | forward",
                     "auto",
                     OptionType::text,
                     -kInf,
                     kInf,
                     {"auto", "given", "central", "forward"}});
    return o;
}

template <class P>
void read_stream(const AnalysisContext& ctx, const std::string& n, P& p) {
    p.drift = drift_mode_from_string(ctx.text(n + "-drift"), n + "-drift");
    p.drift_window = ctx.integer(n + "-drift-window");
    p.max_cells = ctx.integer(n + "-block-cells");
    p.progress = ctx.progress;
    p.cache = ctx.tracks;
    p.threads = ctx.threads;
}

std::vector<AnalysisOption> concat(std::vector<AnalysisOption> a, const std::vector<AnalysisOption>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

AnalysisSpec msd_spec() {
    return AnalysisSpec{
        "msd",
        "mean square displacement (gap-aware FFT), alpha2, sigma_loc; self van Hove (sub-group msd/van_hove)",
        concat({{"msd-max-lag", "largest lag, frames (default n_frames/2)", "", OptionType::integer, 0, kInf},
                {"msd-min-pairs", "lags with fewer (particle, t) pairs are NaN", "1", OptionType::number},
                {"msd-vanhove-lags",
                 "lags (frames) of G_s, comma-separated; 'none' = skip",
                 "1,10,100",
                 OptionType::list,
                 1,
                 kInf,
                 {"none"}},
                {"msd-vanhove-bins", "bins of G_s(dx) per lag", "101", OptionType::integer, 1, kInf},
                {"msd-vanhove-range", "G_s half-range in units of sqrt(MSD(lag)/2)", "5", OptionType::number,
                 0, kInf},
                {"msd-sigma-fit-lags", "lags 1..n of the short-lag fit giving sigma_loc", "5",
                 OptionType::integer, 1, kInf}},
               stream_options("msd", false)),
        [](const AnalysisContext& ctx) {
            need_two_frames(ctx, "msd");
            MsdParams p;
            read_stream(ctx, "msd", p);
            p.max_lag = lag_option(ctx, "msd-max-lag");
            p.min_pairs = ctx.number("msd-min-pairs");
            p.vanhove_lags = int_list(ctx, "msd-vanhove-lags");
            p.vanhove_bins = ctx.integer("msd-vanhove-bins");
            p.vanhove_range = ctx.number("msd-vanhove-range");
            p.sigma_fit_lags = ctx.integer("msd-sigma-fit-lags");
            return std::vector<ResultGroup>{to_group(compute_msd(ctx.source, p), p, ctx.source.meta())};
        }};
}

AnalysisSpec vacf_spec() {
    return AnalysisSpec{
        "vacf", "velocity autocorrelation <v(0).v(t)> (FFT, gap-aware), per species",
        concat(
            {{"vacf-max-lag", "largest lag, frames (default n_frames/2)", "", OptionType::integer, 0, kInf},
             {"vacf-min-pairs", "lags with fewer pairs are NaN", "1", OptionType::number}},
            stream_options("vacf", true)),
        [](const AnalysisContext& ctx) {
            need_two_frames(ctx, "vacf");
            VacfParams p;
            read_stream(ctx, "vacf", p);
            p.scheme = velocity_scheme_from_string(ctx.text("vacf-velocity"), "vacf-velocity");
            p.max_lag = lag_option(ctx, "vacf-max-lag");
            p.min_pairs = ctx.number("vacf-min-pairs");
            return std::vector<ResultGroup>{to_group(compute_vacf(ctx.source, p), p, ctx.source.meta())};
        }};
}

AnalysisSpec vdos_spec() {
    return AnalysisSpec{
        "vdos",
        "vibrational density of states (default: Welch-averaged |FT of the velocities|^2 per particle, "
        "non-negative); reduced D/omega",
        concat({{"vdos-max-lag",
                 "M: resolution pi/(M dt), segments of 2M frames (welch; default min(n_frames/2, 128)) or "
                 "VACF length (default n_frames/2)",
                 "", OptionType::integer, 1, kInf},
                {"vdos-window",
                 "window on each velocity segment (welch) or on the VACF: hann | none",
                 "hann",
                 OptionType::text,
                 -kInf,
                 kInf,
                 {"hann", "none"}},
                {"vdos-estimator",
                 "welch (|FT v|^2, non-negative) | unbiased (cosine transform of the per-pair VACF mean; may "
                 "go negative) | biased",
                 "welch",
                 OptionType::text,
                 -kInf,
                 kInf,
                 {"welch", "unbiased", "biased"}},
                {"vdos-min-run", "welch: velocity runs shorter than this are not used, frames", "16",
                 OptionType::integer, 2, kInf},
                {"vdos-transfer-correction", "1 = divide by the finite-difference |H(omega)|^2", "0",
                 OptionType::boolean},
                {"vdos-transfer-cutoff", "correct only up to this fraction of the Nyquist frequency", "0.5",
                 OptionType::number, 0, 1}},
               stream_options("vdos", true)),
        [](const AnalysisContext& ctx) {
            VdosParams p;
            read_stream(ctx, "vdos", p.vacf);
            p.vacf.scheme = velocity_scheme_from_string(ctx.text("vdos-velocity"), "vdos-velocity");
            p.vacf.max_lag = lag_option(ctx, "vdos-max-lag");
            p.window = vdos_window_from_string(ctx.text("vdos-window"));
            p.estimator = vdos_estimator_from_string(ctx.text("vdos-estimator"));
            p.min_run = ctx.integer("vdos-min-run");
            p.transfer_correction = flag_bool(ctx, "vdos-transfer-correction");
            p.transfer_cutoff = ctx.number("vdos-transfer-cutoff");
            return std::vector<ResultGroup>{to_group(compute_vdos(ctx.source, p), p, ctx.source.meta())};
        }};
}

AnalysisSpec fs_spec() {
    return AnalysisSpec{
        "fs", "self intermediate scattering function F_s(k,t) and tau_alpha",
        concat({{"fs-k", "wave numbers, rad/length, comma-separated (default: S(k) peak, else 2 pi/d_small)",
                 "", OptionType::list, 0, kInf},
                {"fs-directions", "k directions averaged over [0, pi)", "8", OptionType::integer, 1, kInf},
                {"fs-max-lag", "largest lag, frames (default n_frames/2)", "", OptionType::integer, 0, kInf},
                {"fs-min-pairs", "lags with fewer pairs are NaN", "1", OptionType::number}},
               stream_options("fs", false)),
        [](const AnalysisContext& ctx) {
            need_two_frames(ctx, "fs");
            FsParams p;
            read_stream(ctx, "fs", p);
            if (ctx.is_set("fs-k")) p.k = ctx.numbers("fs-k");
            p.directions = ctx.integer("fs-directions");
            p.max_lag = lag_option(ctx, "fs-max-lag");
            p.min_pairs = ctx.number("fs-min-pairs");
            const ResultGroup* sk = nullptr;
            if (ctx.earlier)
                if (auto it = ctx.earlier->find("sk"); it != ctx.earlier->end()) sk = &it->second;
            return std::vector<ResultGroup>{to_group(compute_fs(ctx.source, p, sk), p, ctx.source.meta())};
        }};
}

AnalysisSpec temperature_spec() {
    return AnalysisSpec{
        "temperature", "granular temperature per species vs time and T_large/T_small (mass ~ d^2)",
        stream_options("temperature", true), [](const AnalysisContext& ctx) {
            TemperatureParams p;
            read_stream(ctx, "temperature", p);
            p.scheme = velocity_scheme_from_string(ctx.text("temperature-velocity"), "temperature-velocity");
            return std::vector<ResultGroup>{to_group(compute_temperature(ctx.source, p), ctx.source.meta())};
        }};
}

AnalysisSpec velocity_distribution_spec() {
    return AnalysisSpec{
        "velocity_distribution",
        "P(v) of rms-scaled components and speeds; tail exponent beta by MLE with block bootstrap",
        concat(
            {{"velocity-distribution-threshold", "tail threshold, rms units", "1.5", OptionType::number, 0,
              kInf},
             {"velocity-distribution-scan", "thresholds of the scan, comma-separated",
              "1.5,1.75,2,2.25,2.5,2.75,3", OptionType::list, 0, kInf},
             {"velocity-distribution-variable",
              "fitted variable: component | speed",
              "component",
              OptionType::text,
              -kInf,
              kInf,
              {"component", "speed"}},
             {"velocity-distribution-bootstrap", "bootstrap replicates", "200", OptionType::integer, 1, kInf},
             {"velocity-distribution-blocks", "time blocks of the block bootstrap", "50", OptionType::integer,
              1, kInf},
             {"velocity-distribution-bins", "histogram bins of P(c)", "201", OptionType::integer, 1, kInf},
             {"velocity-distribution-seed", "bootstrap random seed", "20240601", OptionType::integer, 0,
              kInf}},
            stream_options("velocity-distribution", true)),
        [](const AnalysisContext& ctx) {
            VelocityDistributionParams p;
            read_stream(ctx, "velocity-distribution", p);
            p.scheme = velocity_scheme_from_string(ctx.text("velocity-distribution-velocity"),
                                                   "velocity-distribution-velocity");
            p.threshold = ctx.number("velocity-distribution-threshold");
            p.scan = ctx.numbers("velocity-distribution-scan");
            const auto& var = ctx.text("velocity-distribution-variable");
            if (var != "component" && var != "speed")
                throw ParameterError("--velocity-distribution-variable: '" + var +
                                     "' is not component or speed");
            p.fit_speed = var == "speed";
            p.bootstrap = ctx.integer("velocity-distribution-bootstrap");
            p.blocks = ctx.integer("velocity-distribution-blocks");
            p.bins = ctx.integer("velocity-distribution-bins");
            p.seed = static_cast<std::uint64_t>(ctx.integer("velocity-distribution-seed"));
            return std::vector<ResultGroup>{
                to_group(compute_velocity_distribution(ctx.source, p), p, ctx.source.meta())};
        }};
}

}  // namespace

// One AnalysisSpec per analysis (its flags, their defaults and ranges, and how they map to its
// Params), in the order `vibra analyze` runs them.
std::vector<AnalysisSpec> dynamics_analyses() {
    return {msd_spec(), vacf_spec(),        vdos_spec(),
            fs_spec(),  temperature_spec(), velocity_distribution_spec()};
}

}  // namespace vibra::analysis
