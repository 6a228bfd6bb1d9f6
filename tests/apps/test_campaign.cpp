// SPDX-License-Identifier: GPL-3.0-or-later
// The pieces of `vibra batch` on their own: the campaign table read from a simulated run's results
// (every observable equals what its analysis wrote; k_gap and the defect density included), block
// standard errors on an analytic series, the straggler report, table files (HDF5 + CSV) round
// trips, settings precedence and shards.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "batch/campaign.hpp"
#include "batch/dataset.hpp"
#include "batch/runner.hpp"
#include "test_support.hpp"
#include "vibra/store/results_file.hpp"
#include "vibra/store/table_file.hpp"

using namespace vibra;
using namespace vibra::app::batch;
namespace fs = std::filesystem;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

namespace {
std::string q(const std::string& s) { return "'" + s + "'"; }
double attr(const Attributes& a, const std::string& k) {
    const auto& v = a.at(k);
    return std::holds_alternative<double>(v) ? std::get<double>(v)
                                             : static_cast<double>(std::get<std::int64_t>(v));
}
template <class T>
const std::vector<T>& column(const store::Table& t, const std::string& name) {
    INFO("column " << name);
    const auto* c = t.find(name);
    REQUIRE(c != nullptr);
    return std::get<std::vector<T>>(c->data);
}
}  // namespace

TEST_CASE("block standard error: analytic block means, constants, too-short series", "[unit]") {
    std::vector<double> x;
    for (int b = 0; b < 10; ++b)
        for (int i = 0; i < 5; ++i) x.push_back(b);
    // block means 0..9: sample std sqrt(110/12), over sqrt(10)
    REQUIRE_THAT(block_standard_error(x), WithinRel(std::sqrt(110.0 / 12.0) / std::sqrt(10.0), 1e-12));
    x.insert(x.begin() + 3, std::nan(""));  // NaN values are left out
    REQUIRE_THAT(block_standard_error(x), WithinRel(std::sqrt(110.0 / 12.0) / std::sqrt(10.0), 1e-12));
    REQUIRE(block_standard_error(std::vector<double>(30, 0.25)) == 0.0);
    REQUIRE(std::isnan(block_standard_error(std::vector<double>(9, 1.0))));
}

TEST_CASE("campaign row of a simulated run: every observable is its analysis' own value", "[integration]") {
    test::TempDir d("campaign_sim");
    const auto sim = d.file("sim.h5"), res = d.file("res.h5");
    REQUIRE(test::run_vibra("simulate -o " + q(sim) +
                            " --n-small 200 --n-large 200 --packing-fraction 0.7 --frames 600 --seed 2 -q")
                .exit_code == 0);
    const auto r = test::run_vibra(
        "analyze " + q(sim) + " -o " + q(res) +
        " --only gr,psi6,voronoi,msd,temperature,velocity_distribution,currents,kgap,defects -q");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const fs::path out = d.path() / "out";
    fs::create_directories(out / "sim");
    fs::copy_file(sim, out / "sim" / "trajectories.h5");
    fs::copy_file(res, out / "sim" / "results.h5");
    write_state((out / "sim" / "batch_state.txt").string(),
                {{"status", "ok"}, {"track.tracks", "400"}, {"track.wall_s", "2.5"}});
    Dataset ds;
    ds.source = "manifest.toml";
    ds.controls = {"phi_nominal", "label"};
    ds.videos.push_back({"sim", sim, {}, {}, {{"phi_nominal", "0.7"}, {"label", "a, \"quoted\" one"}}});
    ds.videos.push_back({"later", d.file("later.avi"), {}, {}, {{"phi_nominal", "0.8"}}});
    const auto t = collect_campaign(ds, out.string());
    REQUIRE(t.rows() == 2);
    REQUIRE(column<std::string>(t, "status") == std::vector<std::string>{"ok", "pending"});
    REQUIRE(column<double>(t, "phi_nominal") == std::vector<double>{0.7, 0.8});
    REQUIRE(column<std::string>(t, "label")[0] == "a, \"quoted\" one");
    REQUIRE(column<std::int64_t>(t, "tracks")[0] == 400);
    REQUIRE(column<std::int64_t>(t, "frames")[0] == 600);
    REQUIRE(column<double>(t, "track_wall_s")[0] == 2.5);

    const auto at = [&](const std::string& g) { return store::read_results_attrs(res, g); };
    REQUIRE(column<double>(t, "phi")[0] == attr(at("voronoi"), "phi_mean"));
    REQUIRE_THAT(column<double>(t, "phi")[0], WithinAbs(0.7, 0.01));
    REQUIRE(column<double>(t, "temperature_ratio")[0] == attr(at("temperature"), "ratio_mean"));
    REQUIRE(column<double>(t, "beta_small")[0] == attr(at("velocity_distribution"), "beta_small"));
    REQUIRE(column<double>(t, "beta_large_ci_high")[0] ==
            attr(at("velocity_distribution"), "beta_ci_high_large"));
    REQUIRE(column<double>(t, "kurtosis_large")[0] == attr(at("velocity_distribution"), "kurtosis_large"));
    REQUIRE(column<double>(t, "D_small")[0] == attr(at("msd"), "diffusion_coefficient_small"));
    REQUIRE(column<double>(t, "g_peak")[0] == attr(at("gr"), "g_peak"));
    REQUIRE(column<double>(t, "psi6_mean")[0] == attr(at("psi6"), "mean_abs_psi6"));
    REQUIRE(column<double>(t, "psi6_global")[0] == attr(at("psi6"), "psi6_global_mean"));
    REQUIRE(column<double>(t, "psi6_global_err")[0] > 0);
    {  // g_err in the bin nearest r_peak
        const auto gr = store::read_results(res, "gr");
        const auto& rr = std::get<std::vector<double>>(gr.find("r")->data);
        const auto& ge = std::get<std::vector<double>>(gr.find("g_err")->data);
        const auto k = std::min_element(rr.begin(), rr.end(),
                                        [&](double a, double b) {
                                            return std::abs(a - attr(gr.attrs, "r_peak")) <
                                                   std::abs(b - attr(gr.attrs, "r_peak"));
                                        }) -
                       rr.begin();
        REQUIRE(column<double>(t, "g_peak_err")[0] == ge[static_cast<std::size_t>(k)]);
        REQUIRE(column<double>(t, "g_peak_err")[0] > 0);
    }
    const auto kgap = store::read_results(res, "kgap");
    const auto pole =
        std::find_if(kgap.groups.begin(), kgap.groups.end(), [](const auto& g) { return g.name == "pole"; });
    REQUIRE(pole != kgap.groups.end());
    REQUIRE(column<double>(t, "k_gap")[0] == attr(pole->attrs, "k_gap"));
    REQUIRE(column<double>(t, "k_gap_err")[0] == attr(pole->attrs, "k_gap_err"));
    REQUIRE(column<double>(t, "k_gap")[0] > 0);
    // defect density: the shortest lag's mean over start frames, from the (lag, frame) array
    const auto defects = store::read_results(res, "defects");
    const auto* rho = defects.find("density");
    REQUIRE(rho != nullptr);
    double s = 0, n = 0;
    for (std::size_t i = 0; i < rho->shape[1]; ++i) {
        const double v = std::get<std::vector<double>>(rho->data)[i];
        if (std::isfinite(v)) s += v, n += 1;
    }
    REQUIRE_THAT(column<double>(t, "defect_density")[0], WithinRel(s / n, 1e-12));
    // units follow the file: a simulation's lengths in sigma, times in tau
    REQUIRE(t.find("D_small")->units ==
            column<std::string>(t, "length_unit")[0] + "^2/" + column<std::string>(t, "time_unit")[0]);
    // the pending row has no observables
    REQUIRE(std::isnan(column<double>(t, "phi")[1]));

    // written and read back: HDF5 exactly, CSV with quoting and NaN as empty
    write_campaign(t, out.string());
    const auto back = store::read_table_h5((out / "campaign.h5").string(), kCampaignSchema, "campaign");
    REQUIRE(back.columns.size() == t.columns.size());
    for (std::size_t j = 0; j < t.columns.size(); ++j) {
        INFO(t.columns[j].name);
        REQUIRE(back.columns[j].name == t.columns[j].name);
        REQUIRE(back.columns[j].units == t.columns[j].units);
        if (const auto* v = std::get_if<std::vector<double>>(&t.columns[j].data)) {
            const auto& w = std::get<std::vector<double>>(back.columns[j].data);
            for (std::size_t i = 0; i < v->size(); ++i)
                REQUIRE((std::isnan((*v)[i]) ? std::isnan(w[i]) : w[i] == (*v)[i]));
        } else {
            REQUIRE(back.columns[j].data == t.columns[j].data);
        }
    }
    const auto csv = test::read_text((out / "campaign.csv").string());
    REQUIRE_THAT(csv, Catch::Contains("\"a, \"\"quoted\"\" one\""));
    REQUIRE_THAT(csv, Catch::StartsWith("name,input,status,stage,error,"));
}

TEST_CASE("straggler report: a video over 2x the median time per frame, with the reasons", "[unit]") {
    store::Table t;
    t.columns = {
        {"name", "", std::vector<std::string>{"a", "b", "c", "slow", "codec"}, ""},
        {"input", "", std::vector<std::string>{"a.avi", "b.avi", "c.avi", "slow.avi", "codec.mp4"}, ""},
        {"status", "", std::vector<std::string>{"ok", "ok", "ok", "ok", "ok"}, ""},
        {"track_wall_s", "s", std::vector<double>{10, 11, 9, 30, 25}, ""},
        {"track_cpu_s", "s", std::vector<double>{18, 20, 17, 57, 48}, ""},
        {"frames", "frame", std::vector<std::int64_t>{1000, 1000, 1000, 1000, 1000}, ""},
        {"particles_per_frame", "1", std::vector<double>{2000, 2000, 2100, 6000, 2000}, ""},
        {"image_pixels", "px^2", std::vector<std::int64_t>{1 << 20, 1 << 20, 1 << 20, 1 << 20, 1 << 20}, ""},
        {"track_decode_s", "s", std::vector<double>{1, 1, 1, 2, 20}, ""},
    };
    const auto lines = straggler_report(t);
    REQUIRE(lines.size() == 2);
    REQUIRE_THAT(lines[0], Catch::StartsWith("slow: 30.00 ms/frame, 2.73x the median") &&
                               Catch::Contains("3.0x the median particles per frame"));
    REQUIRE_THAT(lines[1], Catch::StartsWith("codec:") && Catch::Contains("video codec (.mp4)") &&
                               Catch::Contains("decoding the video takes 80% of the tracking time"));
    REQUIRE_THAT(lines[0], !Catch::Contains("decoding"));
    REQUIRE_THAT(lines[1], !Catch::Contains("particles"));
}

TEST_CASE(
    "settings: later flags replace earlier ones, radius flags and region flags exclude each other, shards "
    "cover "
    "the set once",
    "[unit]") {
    std::vector<Flag> f;
    set_flag(f, {"--radii", "auto"});
    set_flag(f, {"--radius-small", "6"});
    set_flag(f, {"--radius-large", "8"});
    REQUIRE(f == std::vector<Flag>{{"--radius-small", "6"}, {"--radius-large", "8"}});
    set_flag(f, {"--fps", "100"});
    set_flag(f, {"--fps", "200"});
    set_flag(f, {"--radius", "7"});
    REQUIRE(f == std::vector<Flag>{{"--fps", "200"}, {"--radius", "7"}});
    // One region: a video's --roi-circle replaces the batch's --roi full, and the other way round.
    set_flag(f, {"--roi", "full"});
    set_flag(f, {"--roi-circle", "50,50,40"});
    REQUIRE(f == std::vector<Flag>{{"--fps", "200"}, {"--radius", "7"}, {"--roi-circle", "50,50,40"}});
    set_flag(f, {"--roi", "0,0,90,90"});
    REQUIRE(f == std::vector<Flag>{{"--fps", "200"}, {"--radius", "7"}, {"--roi", "0,0,90,90"}});
    std::vector<VideoEntry> v(7);
    for (int i = 0; i < 7; ++i) v[static_cast<std::size_t>(i)].name = std::to_string(i);
    std::vector<std::string> seen;
    for (int s = 0; s < 3; ++s)
        for (const auto& e : shard(v, s, 3)) seen.push_back(e.name);
    std::sort(seen.begin(), seen.end());
    REQUIRE(seen == std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6"});
    REQUIRE(shard(v, 1, 3).size() == 2);
    REQUIRE(shard(v, 0, 3).front().name == "0");
}
