// SPDX-License-Identifier: GPL-3.0-or-later
#include "campaign.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "runner.hpp"
#include "vibra/core/error.hpp"
#include "vibra/store/results_file.hpp"
#include "vibra/store/trajectory_file.hpp"

namespace vibra::app::batch {

namespace fs = std::filesystem;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double num(const Attributes& a, const std::string& key) {
    const auto it = a.find(key);
    if (it == a.end()) return kNaN;
    if (const auto* d = std::get_if<double>(&it->second)) return *d;
    if (const auto* i = std::get_if<std::int64_t>(&it->second)) return static_cast<double>(*i);
    return kNaN;
}

double to_double(const std::string& s) {
    if (s.empty()) return kNaN;
    try {
        std::size_t pos = 0;
        const double v = std::stod(s, &pos);
        return pos == s.size() ? v : kNaN;
    } catch (const std::exception&) {
        return kNaN;
    }
}

double block_error(const ResultGroup& g, const std::string& array) {
    const auto* a = g.find(array);
    if (!a || a->data.index() != 0) return kNaN;
    return block_standard_error(std::get<std::vector<double>>(a->data));
}

/// Columns built row by row: numbers, integers or text, each with its units and meaning.
class TableBuilder {
public:
    void text(const std::string& name, const std::string& v, const std::string& desc) {
        auto& c = col(name, "", desc, std::vector<std::string>{});
        std::get<std::vector<std::string>>(c.data).back() = v;
    }
    void number(const std::string& name, double v, const std::string& units, const std::string& desc) {
        auto& c = col(name, units, desc, std::vector<double>{});
        std::get<std::vector<double>>(c.data).back() = v;
    }
    void integer(const std::string& name, std::int64_t v, const std::string& units, const std::string& desc) {
        auto& c = col(name, units, desc, std::vector<std::int64_t>{});
        std::get<std::vector<std::int64_t>>(c.data).back() = v;
    }
    void next_row() {
        ++rows_;
        for (auto& c : cols_) std::visit([&](auto& v) { v.resize(rows_, blank(v)); }, c.data);
    }
    std::vector<store::TableColumn> take() { return std::move(cols_); }

private:
    template <class V>
    static typename V::value_type blank(const V&) {
        if constexpr (std::is_same_v<V, std::vector<double>>)
            return kNaN;
        else if constexpr (std::is_same_v<V, std::vector<std::int64_t>>)
            return -1;
        else
            return {};
    }
    template <class V>
    store::TableColumn& col(const std::string& name, const std::string& units, const std::string& desc,
                            V empty) {
        for (auto& c : cols_)
            if (c.name == name) {
                if (!std::holds_alternative<V>(c.data))
                    throw ParameterError("campaign column " + name + " changes type");
                if (c.units.empty() && !units.empty()) c.units = units;
                return c;
            }
        empty.resize(rows_, blank(empty));  // earlier rows without this column
        cols_.push_back({name, units, std::move(empty), desc});
        return cols_.back();
    }
    std::vector<store::TableColumn> cols_;
    std::size_t rows_ = 0;
};

struct Units {
    std::string L = "px", T = "frame";
};

void add_stage_times(TableBuilder& b, const State& st, const std::string& stage) {
    b.number(stage + "_wall_s", to_double(st.count(stage + ".wall_s") ? st.at(stage + ".wall_s") : ""), "s",
             "wall-clock time of the " + stage + " stage");
    b.number(stage + "_cpu_s", to_double(st.count(stage + ".cpu_s") ? st.at(stage + ".cpu_s") : ""), "s",
             "CPU time (user + system, all threads) of the " + stage + " stage");
    b.number(stage + "_peak_rss_mb",
             to_double(st.count(stage + ".peak_rss_mb") ? st.at(stage + ".peak_rss_mb") : ""), "MB",
             "peak resident memory of the " + stage + " stage");
}

void add_trajectory_facts(TableBuilder& b, const std::string& path, Units& u) {
    store::TrajectoryReader r(path);
    const auto& m = r.meta();
    u.L = m.length_unit;
    u.T = m.time_unit;
    b.integer("frames", r.n_frames(), "frame", "frames in the trajectory file");
    b.number("particles_per_frame",
             r.n_frames() > 0 ? static_cast<double>(r.n_rows()) / static_cast<double>(r.n_frames()) : kNaN,
             "1", "mean detections per frame");
    b.number("fps", m.time_unit == "s" && m.frame_interval > 0 ? 1.0 / m.frame_interval : kNaN, "1/s",
             "frame rate (NaN when unknown: times in frames)");
    b.number("px_per_mm", m.px_per_mm ? *m.px_per_mm : kNaN, "px/mm", "image calibration (NaN when unknown)");
    b.integer("image_pixels", m.image_width * m.image_height, "px^2", "pixels per frame");
    b.text("incomplete", m.incomplete ? "yes" : "no", "the input was truncated; what was read is kept");
}

void add_observables(TableBuilder& b, const std::string& path, Units& u) {
    const auto groups = store::list_results(path);
    const auto has = [&](const std::string& g) {
        return std::find(groups.begin(), groups.end(), g) != groups.end();
    };
    const auto attrs = [&](const std::string& g) {
        return has(g) ? store::read_results_attrs(path, g) : Attributes{};
    };
    // The observables' units are those the analyses saw (vibra analyze --units: mm and s when
    // the trajectory records the scale and the rate).
    const Metadata im = store::read_results_input_meta(path);
    u.L = im.length_unit, u.T = im.time_unit;
    const std::string L = u.L, T = u.T;
    {
        const auto g = has("voronoi") ? store::read_results(path, "voronoi") : ResultGroup{};
        b.number("phi", num(g.attrs, "phi_mean"), "1",
                 "measured packing fraction: disk areas / window area, mean over frames");
        b.number("phi_err", block_error(g, "phi"), "1", "standard error of phi from 10 blocks of frames");
    }
    {
        const auto g = has("temperature") ? store::read_results(path, "temperature") : ResultGroup{};
        b.number("temperature_ratio", num(g.attrs, "ratio_mean"), "1",
                 "granular temperature ratio T_large / T_small");
        b.number("temperature_ratio_err", block_error(g, "ratio"), "1",
                 "standard error of the ratio from 10 blocks of frames");
    }
    const auto vd = attrs("velocity_distribution");
    const auto msd = attrs("msd");
    for (const std::string sp : {"small", "large"}) {
        const std::string s = "_" + sp;
        b.number("beta" + s, num(vd, "beta" + s), "1",
                 "velocity-tail exponent beta, P(c) ~ exp(-(c/c0)^beta), " + sp + " disks");
        b.number("beta" + s + "_ci_low", num(vd, "beta_ci_low" + s), "1",
                 "95% confidence interval of beta (block bootstrap), low");
        b.number("beta" + s + "_ci_high", num(vd, "beta_ci_high" + s), "1",
                 "95% confidence interval of beta, high");
        b.number("kurtosis" + s, num(vd, "kurtosis" + s), "1",
                 "<c^4>/<c^2>^2 of the velocity components (3 for a Gaussian)");
        b.number("D" + s, num(msd, "diffusion_coefficient" + s), L + "^2/" + T,
                 "diffusion coefficient, long-time MSD slope / 4 (2-D)");
        b.number("D" + s + "_err", num(msd, "diffusion_coefficient_err" + s), L + "^2/" + T,
                 "standard error of D");
    }
    {
        const auto g = has("gr") ? store::read_results(path, "gr") : ResultGroup{};
        const double r_peak = num(g.attrs, "r_peak");
        double err = kNaN;  // g_err (frame-to-frame scatter) in the bin of the peak
        const auto* r = g.find("r");
        const auto* e = g.find("g_err");
        if (r && e && r->data.index() == 0 && e->data.index() == 0 && std::isfinite(r_peak)) {
            const auto& rv = std::get<std::vector<double>>(r->data);
            const auto& ev = std::get<std::vector<double>>(e->data);
            std::size_t best = 0;
            for (std::size_t i = 1; i < rv.size() && i < ev.size(); ++i)
                if (std::abs(rv[i] - r_peak) < std::abs(rv[best] - r_peak)) best = i;
            if (best < ev.size()) err = ev[best];
        }
        b.number("g_peak", num(g.attrs, "g_peak"), "1", "height of the first peak of g(r) (all particles)");
        b.number("g_peak_err", err, "1", "standard error of g in the peak's bin (frame-to-frame scatter)");
        b.number("r_peak", r_peak, L, "position of the first peak of g(r)");
    }
    {
        const auto g = has("psi6") ? store::read_results(path, "psi6") : ResultGroup{};
        b.number("psi6_mean", num(g.attrs, "mean_abs_psi6"), "1",
                 "<|psi6|>: the local bond order's modulus, mean over particles and frames");
        b.number("psi6_global", num(g.attrs, "psi6_global_mean"), "1",
                 "|<psi6>| over each frame (global order), mean over frames");
        b.number("psi6_global_err", block_error(g, "psi6_global"), "1",
                 "standard error of psi6_global from 10 blocks of frames");
    }
    {
        double kg = kNaN, kge = kNaN;
        if (has("kgap")) {
            const auto g = store::read_results(path, "kgap");
            for (const auto& sub : g.groups)
                if (sub.name == "pole" || std::isnan(kg)) {
                    kg = num(sub.attrs, "k_gap");
                    kge = num(sub.attrs, "k_gap_err");
                }
        }
        b.number("k_gap", kg, "1/" + L, "transverse k-gap from the fit omega^2 = c^2 k^2 - 1/(4 tau^2)");
        b.number("k_gap_err", kge, "1/" + L, "bootstrap error of k_gap");
    }
    {
        double rho = kNaN;
        if (has("defects")) {  // density: (lag, start frame); the shortest lag's mean over start frames
            const auto g = store::read_results(path, "defects");
            if (const auto* a = g.find("density"); a && a->data.index() == 0 && !a->shape.empty()) {
                const auto& d = std::get<std::vector<double>>(a->data);
                const std::size_t nt = a->shape.size() > 1 ? a->shape[1] : d.size();
                double s = 0, n = 0;
                for (std::size_t i = 0; i < nt && i < d.size(); ++i)
                    if (std::isfinite(d[i])) s += d[i], n += 1;
                rho = n > 0 ? s / n : kNaN;
            }
        }
        b.number("defect_density", rho, "1/" + L + "^2",
                 "mean density of vortex-like defects (|winding| = 1) at the shortest displacement lag");
    }
}

}  // namespace

double block_standard_error(const std::vector<double>& series) {
    std::vector<double> x;
    for (double v : series)
        if (std::isfinite(v)) x.push_back(v);
    constexpr std::size_t kBlocks = 10;
    if (x.size() < kBlocks) return kNaN;
    std::vector<double> means(kBlocks, 0.0);
    for (std::size_t b = 0; b < kBlocks; ++b) {
        const std::size_t lo = b * x.size() / kBlocks, hi = (b + 1) * x.size() / kBlocks;
        for (std::size_t i = lo; i < hi; ++i) means[b] += x[i];
        means[b] /= static_cast<double>(hi - lo);
    }
    double m = 0, v = 0;
    for (double y : means) m += y;
    m /= kBlocks;
    for (double y : means) v += (y - m) * (y - m) / (kBlocks - 1);
    return std::sqrt(v / kBlocks);
}

store::Table collect_campaign(const Dataset& ds, const std::string& outdir) {
    TableBuilder b;
    for (const auto& v : ds.videos) {
        b.next_row();
        const fs::path dir = fs::path(outdir) / v.name;
        const State st = read_state((dir / "batch_state.txt").string());
        const auto get = [&](const std::string& k) { return st.count(k) ? st.at(k) : std::string(); };
        b.text("name", v.name, "the video's folder under OUTDIR");
        b.text("input", v.input, "the video as given");
        std::string status = st.empty() ? "pending" : get("status");
        std::string error = get("error");
        b.text("input_checksum", get("input_checksum"), "sha256 of the input (of every file, for a folder)");
        for (const auto& name : ds.controls) {
            std::string val;
            for (const auto& [k, x] : v.controls)
                if (k == name) val = x;
            b.text("control_" + name, val, "control parameter from the manifest");
        }
        const auto count = [&](const std::string& k) {  // -1 when absent or unreadable
            const double v = to_double(get(k));
            return std::isfinite(v) ? static_cast<std::int64_t>(v) : std::int64_t{-1};
        };
        b.integer("tracks", count("track.tracks"), "1", "trajectories (particle ids)");
        b.integer("undecodable_frames", count("track.decode_errors"), "frame", "frames counted and skipped");
        for (const auto* stage : {"track", "analyze", "figures"}) add_stage_times(b, st, stage);
        for (const auto& [part, what] : std::vector<std::pair<std::string, std::string>>{
                 {"decode", "decoding frames (the reader thread)"},
                 {"detect", "locating disks, summed over the worker threads"},
                 {"link", "linking frames into trajectories"},
                 {"write", "writing the trajectory file"}})
            b.number("track_" + part + "_s", to_double(get("track.seconds_" + part)), "s",
                     "tracking's time " + what);
        Units u;
        const auto traj = (dir / "trajectories.h5").string();
        const auto res = (dir / "results.h5").string();
        try {
            if (fs::exists(traj)) add_trajectory_facts(b, traj, u);
            if (fs::exists(res) && status == "ok") add_observables(b, res, u);
        } catch (const std::exception& e) {
            status = "failed";
            error = std::string("cannot read the results: ") + e.what();
        }
        for (const auto& [k, val] : st)
            if (k.rfind("analysis_time.", 0) == 0)
                b.number("time_" + k.substr(14), to_double(val), "s", "wall-clock time of this analysis");
        b.text("status", status, "ok, failed, pending (not processed yet) or interrupted");
        b.text("stage", get("stage"), "the stage that failed (track, analyze, figures)");
        b.text("error", error, "why the video failed");
        b.text("length_unit", u.L, "length unit of the observables");
        b.text("time_unit", u.T, "time unit of the observables");
    }
    auto cols = b.take();
    // Control columns that hold numbers become numeric columns.
    for (auto& c : cols) {
        if (c.name.rfind("control_", 0) != 0) continue;
        const auto& s = std::get<std::vector<std::string>>(c.data);
        std::vector<double> x;
        bool numeric = true;
        for (const auto& t : s) {
            x.push_back(to_double(t));
            numeric &= t.empty() || !std::isnan(x.back());
        }
        const std::string bare = c.name.substr(8);
        const bool clash =
            std::any_of(cols.begin(), cols.end(), [&](const auto& o) { return o.name == bare; });
        if (!clash) c.name = bare;  // a control named like an observable (e.g. phi) keeps its prefix
        if (numeric) c.data = std::move(x), c.units = "1";
    }
    // Identity and status first, then controls, then the rest in insertion order.
    std::stable_partition(cols.begin(), cols.end(), [](const auto& c) {
        return c.name == "name" || c.name == "input" || c.name == "status" || c.name == "stage" ||
               c.name == "error";
    });
    store::Table t;
    t.schema = kCampaignSchema;
    t.group = "campaign";
    t.attrs["dataset"] = ds.source;
    t.columns = std::move(cols);
    return t;
}

void write_campaign(const store::Table& t, const std::string& outdir) {
    store::write_table_h5((fs::path(outdir) / "campaign.h5").string(), t);
    store::write_table_csv((fs::path(outdir) / "campaign.csv").string(), t);
}

std::vector<std::string> straggler_report(const store::Table& t) {
    const auto* name = t.find("name");
    const auto* status = t.find("status");
    const auto* wall = t.find("track_wall_s");
    const auto* cpu = t.find("track_cpu_s");
    const auto* frames = t.find("frames");
    const auto* parts = t.find("particles_per_frame");
    const auto* pixels = t.find("image_pixels");
    const auto* input = t.find("input");
    const auto* decode = t.find("track_decode_s");
    if (!name || !status || !wall || !frames || !cpu || !parts || !pixels || !input) return {};
    const auto& N = std::get<std::vector<std::string>>(name->data);
    const auto& S = std::get<std::vector<std::string>>(status->data);
    const auto& W = std::get<std::vector<double>>(wall->data);
    const auto& C = std::get<std::vector<double>>(cpu->data);
    const auto& F = std::get<std::vector<std::int64_t>>(frames->data);
    const auto& P = std::get<std::vector<double>>(parts->data);
    const auto& X = std::get<std::vector<std::int64_t>>(pixels->data);
    const auto& I = std::get<std::vector<std::string>>(input->data);
    std::vector<std::size_t> ok;
    for (std::size_t i = 0; i < N.size(); ++i)
        if (S[i] == "ok" && F[i] > 0 && std::isfinite(W[i])) ok.push_back(i);
    if (ok.size() < 3) return {};
    const auto median = [&](auto f) {
        std::vector<double> v;
        for (auto i : ok) v.push_back(f(i));
        std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
        return v[v.size() / 2];
    };
    const auto rate = [&](std::size_t i) { return W[i] / static_cast<double>(F[i]); };
    const double m_rate = median(rate), m_parts = median([&](auto i) { return P[i]; });
    const double m_px = median([&](auto i) { return static_cast<double>(X[i]); });
    const double m_util = median([&](auto i) { return C[i] / W[i]; });
    std::vector<std::string> out;
    for (auto i : ok) {
        if (!(rate(i) > 2 * m_rate)) continue;
        std::ostringstream os;
        os.precision(2);
        os << N[i] << ": " << std::fixed << rate(i) * 1e3 << " ms/frame, " << rate(i) / m_rate
           << "x the median; ";
        std::vector<std::string> why;
        std::ostringstream w;
        w.precision(1);
        w << std::fixed;
        if (P[i] > 1.5 * m_parts)
            w << P[i] / m_parts << "x the median particles per frame", why.push_back(w.str()), w.str("");
        if (X[i] > 1.5 * m_px)
            w << static_cast<double>(X[i]) / m_px << "x the median pixels per frame", why.push_back(w.str()),
                w.str("");
        if (C[i] / W[i] < 0.6 * m_util)
            w << "CPU busy only " << C[i] / W[i] << " of the wall time (median " << m_util
              << "): waiting for the disk or for other processes",
                why.push_back(w.str()), w.str("");
        if (decode) {
            const double share = std::get<std::vector<double>>(decode->data)[i] / W[i];
            if (share > 0.5)
                w.precision(0),
                    w << "decoding the video takes " << 100 * share << "% of the tracking time (codec-bound)",
                    why.push_back(w.str()), w.str(""), w.precision(1);
        }
        const auto ext = fs::path(I[i]).extension().string();
        if (ext == ".mp4" || ext == ".mov" || ext == ".mkv" || ext == ".m4v" || ext == ".wmv")
            why.push_back("decoded by a video codec (" + ext + ")");
        if (why.empty()) why.push_back("no cause found in particles, frame size, codec or CPU share");
        for (std::size_t k = 0; k < why.size(); ++k) os << (k ? "; " : "") << why[k];
        out.push_back(os.str());
    }
    return out;
}

}  // namespace vibra::app::batch
