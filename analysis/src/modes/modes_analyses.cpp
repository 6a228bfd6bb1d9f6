// SPDX-License-Identifier: GPL-3.0-or-later
// The collective-mode analyses offered by `vibra analyze` (see registry.hpp and
// docs/collective-modes.md): currents, kgap, tvdos, covariance_vdos.
#include <algorithm>
#include <cmath>

#include "vibra/analysis/covariance_vdos.hpp"
#include "vibra/analysis/currents.hpp"
#include "vibra/analysis/kgap.hpp"
#include "vibra/analysis/registry.hpp"
#include "vibra/analysis/transverse_vdos.hpp"
#include "vibra/core/error.hpp"

namespace vibra::analysis {

namespace {

bool boolean(const AnalysisContext& ctx, const std::string& flag) {
    const auto& s = ctx.text(flag);
    if (s == "1" || s == "true" || s == "yes" || s == "on") return true;
    if (s == "0" || s == "false" || s == "no" || s == "off" || s.empty()) return false;
    throw ParameterError("--" + flag + ": '" + s + "' is not a boolean (0/1)");
}

double number_or(const AnalysisContext& ctx, const std::string& flag, double dflt) {
    return ctx.is_set(flag) ? ctx.number(flag) : dflt;
}

CurrentsParams currents_params(const AnalysisContext& ctx) {
    CurrentsParams p;
    p.k_max = number_or(ctx, "currents-kmax", 0);
    p.k_min = number_or(ctx, "currents-kmin", 0);
    p.dk = number_or(ctx, "currents-dk", 0);
    p.segment = ctx.integer("currents-segment");
    p.max_lag = ctx.integer("currents-max-lag");
    p.omega_max = number_or(ctx, "currents-omega-max", 0);
    p.blocks = ctx.integer("currents-blocks");
    p.taper = ctx.number("currents-taper");
    p.subtract_mean = boolean(ctx, "currents-subtract-mean");
    p.mass_weighted = boolean(ctx, "currents-mass");
    p.threads = std::max(1, ctx.threads);
    p.memory_bytes = ctx.memory_bytes;
    p.velocity = velocity_scheme_from_string(ctx.text("currents-velocity"), "currents-velocity");
    p.validate();
    return p;
}

double attr_number(const ResultGroup& g, const std::string& name) {
    const auto it = g.attrs.find(name);
    if (it == g.attrs.end()) return NAN;
    if (const double* d = std::get_if<double>(&it->second)) return *d;
    return NAN;
}

AnalysisSpec currents_spec() {
    return AnalysisSpec{
        "currents",
        "current correlations C_L(k,t), C_T(k,t), spectra C(k,w), peak dispersion (number- and "
        "mass-weighted)",
        {{"currents-kmax", "largest |k|, rad/length (default: 2-D Debye wavenumber sqrt(4 pi rho))", "",
          OptionType::number, 0, kInf},
         {"currents-kmin", "smallest |k|, rad/length", "0", OptionType::number, 0, kInf},
         {"currents-dk", "shell width, rad/length (default: max(2pi/Lx, 2pi/Ly))", "", OptionType::number, 0,
          kInf},
         {"currents-segment", "frames per Welch segment (even; 0 = min(T, 256))", "0", OptionType::integer, 0,
          kInf},
         {"currents-max-lag", "lags of C(k,t), frames (0 = segment/2)", "0", OptionType::integer, 0, kInf},
         {"currents-omega-max", "largest omega kept in C(k,w), rad/time (default Nyquist)", "",
          OptionType::number, 0, kInf},
         {"currents-blocks", "time blocks of per-block C(k,t) (kgap bootstrap input; 0 = none)", "10",
          OptionType::integer, 0, kInf},
         {"currents-taper", "Tukey fraction of the spatial taper in windows (0 = hard edge)", "0.2",
          OptionType::number, 0, 1},
         {"currents-subtract-mean", "subtract the mean velocity per frame (0/1)", "1", OptionType::boolean},
         {"currents-mass", "also mass-weighted currents, masses ~ d^2 (0/1)", "1", OptionType::boolean},
         {"currents-velocity",
          "velocity scheme: auto | given | central | forward",
          "auto",
          OptionType::text,
          -kInf,
          kInf,
          {"auto", "given", "central", "forward"}}},
        [](const AnalysisContext& ctx) {
            const auto r = compute_currents(ctx.source, currents_params(ctx));
            return std::vector<ResultGroup>{to_group(r, ctx.source.meta())};
        }};
}

AnalysisSpec kgap_spec() {
    return AnalysisSpec{
        "kgap",
        "dispersion and k-gap: damped-oscillator (pole) and peak fits of w^2 = c^2 k^2 - 1/(4 tau^2), block "
        "bootstrap",
        {{"kgap-kmin", "smallest |k| of the dispersion fits, rad/length (default: first propagating shell)",
          "0", OptionType::number, 0, kInf},
         {"kgap-kmax", "largest |k| of the dispersion fits, rad/length (default: all shells)", "0",
          OptionType::number, 0, kInf},
         {"kgap-fit-time", "lags used in the per-shell oscillator fit, time (default: all)", "0",
          OptionType::number, 0, kInf},
         {"kgap-lag-window",
          "window on C_T(k,t) before the peak transform: none | tukey | hann",
          "tukey",
          OptionType::text,
          -kInf,
          kInf,
          {"none", "tukey", "hann"}},
         {"kgap-bootstrap", "bootstrap replicates over time blocks", "200", OptionType::integer, 10, kInf},
         {"kgap-seed", "bootstrap seed", "1", OptionType::integer, 0, kInf},
         {"kgap-cl-shells", "lowest shells for c_L (slope of the longitudinal peak)", "3",
          OptionType::integer, 1, kInf}},
        [](const AnalysisContext& ctx) {
            KgapParams p;
            p.k_min = ctx.number("kgap-kmin");
            p.k_max = ctx.number("kgap-kmax");
            p.fit_time = ctx.number("kgap-fit-time");
            p.lag_window = ctx.text("kgap-lag-window");
            p.bootstrap = static_cast<int>(ctx.integer("kgap-bootstrap"));
            p.seed = static_cast<std::uint64_t>(ctx.integer("kgap-seed"));
            p.cl_shells = static_cast<int>(ctx.integer("kgap-cl-shells"));
            p.threads = std::max(1, ctx.threads);
            // `needs` below: vibra analyze runs currents first (with its own flags' values) when
            // kgap is asked for alone, so the input is always the currents group of this run.
            if (!ctx.earlier || !ctx.earlier->count("currents"))
                throw ParameterError(
                    "kgap needs the currents group of the same run (run with --only currents,kgap)");
            const KgapInput in = kgap_input(ctx.earlier->at("currents"));
            const std::string from = "earlier currents group";
            ResultGroup g = to_group(fit_kgap(in, p), ctx.source.meta());
            g.attrs["currents_source"] = from;
            return std::vector<ResultGroup>{g};
        },
        true,
        {"currents"}};
}

AnalysisSpec tvdos_spec() {
    return AnalysisSpec{
        "tvdos",
        "transverse/longitudinal VDOS from current spectra up to k_D, D/w vs Debye, per-particle band "
        "contributions",
        {{"tvdos-kmax", "largest |k|, rad/length (default: Debye wavenumber)", "", OptionType::number, 0,
          kInf},
         {"tvdos-segment", "frames per segment (even; 0 = min(T, 256))", "0", OptionType::integer, 0, kInf},
         {"tvdos-band", "band of the per-particle map: lo,hi in rad/time (default: 0 to Nyquist)", "",
          OptionType::list, 0, kInf},
         {"tvdos-omega-max", "largest omega written, rad/time (default Nyquist)", "", OptionType::number, 0,
          kInf},
         {"tvdos-ct", "transverse sound speed for the Debye level, length/time (default: kgap pole c)", "",
          OptionType::number, 0, kInf},
         {"tvdos-cl", "longitudinal sound speed, length/time (default: kgap c_l)", "", OptionType::number, 0,
          kInf},
         {"tvdos-taper", "Tukey fraction of the spatial taper in windows", "0.2", OptionType::number, 0, 1},
         {"tvdos-per-particle", "compute the per-particle map (0/1)", "1", OptionType::boolean},
         {"tvdos-velocity",
          "velocity scheme: auto | given | central | forward",
          "auto",
          OptionType::text,
          -kInf,
          kInf,
          {"auto", "given", "central", "forward"}}},
        [](const AnalysisContext& ctx) {
            TransverseVdosParams p;
            p.k_max = number_or(ctx, "tvdos-kmax", 0);
            p.segment = ctx.integer("tvdos-segment");
            if (ctx.is_set("tvdos-band")) {
                const auto b = ctx.numbers("tvdos-band");
                if (b.size() != 2) throw ParameterError("--tvdos-band: expected lo,hi");
                p.band_min = b[0];
                p.band_max = b[1];
            }
            p.omega_max = number_or(ctx, "tvdos-omega-max", 0);
            std::string cs = "option";
            if (ctx.is_set("tvdos-ct")) p.c_t = ctx.number("tvdos-ct");
            if (ctx.is_set("tvdos-cl")) p.c_l = ctx.number("tvdos-cl");
            if (ctx.earlier && ctx.earlier->count("kgap")) {
                const ResultGroup& k = ctx.earlier->at("kgap");
                if (!ctx.is_set("tvdos-cl")) {
                    const double c = attr_number(k, "c_l");
                    if (std::isfinite(c) && c > 0) p.c_l = c;
                }
                if (!ctx.is_set("tvdos-ct"))
                    for (const auto& sg : k.groups)
                        if (sg.name == "pole") {
                            const double c = attr_number(sg, "c");
                            if (std::isfinite(c) && c > 0) p.c_t = c;
                        }
                cs = "kgap results unless given";
            }
            p.taper = ctx.number("tvdos-taper");
            p.per_particle = boolean(ctx, "tvdos-per-particle");
            p.velocity = velocity_scheme_from_string(ctx.text("tvdos-velocity"), "tvdos-velocity");
            p.threads = std::max(1, ctx.threads);
            ResultGroup g = to_group(compute_transverse_vdos(ctx.source, p), ctx.source.meta());
            g.attrs["sound_speed_source"] = cs;
            return std::vector<ResultGroup>{g};
        }};
}

AnalysisSpec covariance_vdos_spec() {
    return AnalysisSpec{
        "covariance_vdos",
        "VDOS of solid-like states from the displacement covariance matrix (refuses when frames < 10 x 2N)",
        {{"covariance-vdos-force", "compute even when frames < 10 x 2N (0/1)", "0", OptionType::boolean},
         {"covariance-vdos-temperature", "k_B T in m0 length^2/time^2 (default: from velocities)", "",
          OptionType::number, 0, kInf},
         {"covariance-vdos-com", "remove the centre-of-mass displacement per frame (0/1)", "1",
          OptionType::boolean},
         {"covariance-vdos-mass", "mass-weight with m ~ d^2 (0/1)", "1", OptionType::boolean},
         {"covariance-vdos-bins", "histogram bins", "60", OptionType::integer, 1, kInf}},
        [](const AnalysisContext& ctx) {
            CovarianceVdosParams p;
            p.force = boolean(ctx, "covariance-vdos-force");
            p.temperature = number_or(ctx, "covariance-vdos-temperature", 0);
            p.subtract_com = boolean(ctx, "covariance-vdos-com");
            p.mass_weighted = boolean(ctx, "covariance-vdos-mass");
            p.bins = ctx.integer("covariance-vdos-bins");
            p.threads = std::max(1, ctx.threads);
            return std::vector<ResultGroup>{
                to_group(compute_covariance_vdos(ctx.source, p), ctx.source.meta())};
        },
        false};
}

}  // namespace

// One AnalysisSpec per analysis (its flags, their defaults and ranges, and how they map to its
// Params), in the order `vibra analyze` runs them (kgap after the currents it reads).
std::vector<AnalysisSpec> modes_analyses() {
    return {currents_spec(), kgap_spec(), tvdos_spec(), covariance_vdos_spec()};
}

}  // namespace vibra::analysis
