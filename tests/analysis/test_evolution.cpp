// SPDX-License-Identifier: GPL-3.0-or-later
// Change points by piecewise-linear fits, and the five collective analyses run end to end through
// the registry on a trajectory with a known displacement field (rigid rotation: one +1 defect).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <random>

#include "vibra/analysis/evolution.hpp"
#include "vibra/analysis/registry.hpp"
#include "vibra/core/error.hpp"
#include "vibra/core/trajectory_source.hpp"

using namespace vibra;
using namespace vibra::analysis;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

TEST_CASE("piecewise-linear fit finds known change points", "[unit]") {
    std::mt19937_64 rng(4);
    std::normal_distribution<double> g(0, 0.01);
    std::vector<double> x, y;
    for (int i = 0; i < 80; ++i) {
        const double t = std::log(1.0 + i);
        x.push_back(t);
        double v = i < 20 ? 1.0 * t : (i < 50 ? 3.5 - 0.8 * (t - std::log(21.0)) : 0.4 + 0.3 * t);
        y.push_back(v + g(rng));
    }
    PiecewiseParams p;
    p.segments = 3;
    const auto fit = piecewise_linear_fit(x, y, p);
    REQUIRE(fit.starts == std::vector<std::size_t>{0, 20, 50});
    REQUIRE(fit.change_x.size() == 2);
    REQUIRE_THAT(fit.change_x[0], WithinAbs(x[20], 1e-12));
    REQUIRE_THAT(fit.slopes[0], WithinAbs(1.0, 0.05));
    REQUIRE_THAT(fit.slopes[1], WithinAbs(-0.8, 0.05));
    REQUIRE_THAT(fit.slopes[2], WithinAbs(0.3, 0.05));
    SECTION("one segment is a straight-line fit; too few points reduce the segments") {
        p.segments = 1;
        REQUIRE(piecewise_linear_fit(x, y, p).change_x.empty());
        p.segments = 5, p.min_points = 30;
        REQUIRE(piecewise_linear_fit(x, y, p).starts.size() == 2);
        p.min_points = 1;
        REQUIRE_THROWS_AS(piecewise_linear_fit(x, y, p), ParameterError);
    }
}

namespace {

const double kOmega = 0.01, kCx = 20.3, kCy = 19.6;

/// Particles on a jittered lattice inside a disk, rotating rigidly about (kCx, kCy).
Trajectory rotating_disk(int T) {
    std::mt19937_64 rng(8);
    std::uniform_real_distribution<double> j(-0.2, 0.2);
    std::vector<double> x0, y0;
    for (int a = 0; a < 41; ++a)
        for (int b = 0; b < 41; ++b) {
            const double x = a + j(rng), y = b + j(rng);
            if (std::hypot(x - kCx, y - kCy) < 18.5) x0.push_back(x), y0.push_back(y);
        }
    Trajectory t;
    t.meta.length_unit = "px";
    t.meta.time_unit = "frame";
    t.meta.geometry = Geometry::circle(kCx, kCy, 19);
    for (int f = 0; f < T; ++f)
        for (std::size_t i = 0; i < x0.size(); ++i) {
            const double a = kOmega * f, dx = x0[i] - kCx, dy = y0[i] - kCy;
            t.rows.push(f, static_cast<std::int64_t>(i), kCx + std::cos(a) * dx - std::sin(a) * dy,
                        kCy + std::sin(a) * dx + std::cos(a) * dy, kSpeciesSmall);
        }
    t.index = build_frame_index(t.rows, 0, T);
    return t;
}

const AnalysisSpec& spec(const std::vector<AnalysisSpec>& all, const std::string& n) {
    for (const auto& s : all)
        if (s.name == n) return s;
    FAIL("no analysis " << n);
    return all.front();
}

std::map<std::string, std::string> defaults(const AnalysisSpec& s) {
    std::map<std::string, std::string> o;
    for (const auto& a : s.options) o[a.flag] = a.default_value;
    return o;
}

template <class T>
const std::vector<T>& data(const ResultGroup& g, const std::string& n) {
    const auto* a = g.find(n);
    REQUIRE(a != nullptr);
    return std::get<std::vector<T>>(a->data);
}

}  // namespace

TEST_CASE("collective analyses end to end on a rigidly rotating disk", "[unit]") {
    const int T = 24;
    InMemorySource src(rotating_disk(T));
    const auto all = collective_analyses();
    std::map<std::string, ResultGroup> earlier;

    // field: ½⟨|u|²⟩ = (1 − cos ωL)⟨|r − c|²⟩ exactly.
    auto fo = defaults(spec(all, "field"));
    fo["field-lags"] = "1,4";
    fo["field-stride"] = "2";
    AnalysisContext fc{src, fo, false, 1, &earlier};
    const auto field = spec(all, "field").run(fc).front();
    REQUIRE(field.name == "field");
    {
        const auto& tr = src.trajectory();
        double r2 = 0;
        const auto n = tr.index.count(0);
        for (std::int64_t r = 0; r < n; ++r)
            r2 += std::pow(tr.rows.x[r] - kCx, 2) + std::pow(tr.rows.y[r] - kCy, 2);
        r2 /= static_cast<double>(n);
        const auto& ke = data<double>(field, "kinetic_energy");
        const std::size_t nt = data<std::int64_t>(field, "frame").size();
        REQUIRE(nt == 12);
        REQUIRE_THAT(ke[0], WithinRel((1 - std::cos(kOmega)) * r2, 1e-9));
        REQUIRE_THAT(ke[nt], WithinRel((1 - std::cos(4 * kOmega)) * r2, 1e-9));
        REQUIRE(std::isnan(ke[nt + 11]));  // start frame 22 + lag 4 is beyond the data
        REQUIRE(field.groups.size() == 2);
        const auto& tri = data<std::int64_t>(field.groups[0], "triangles");
        const auto& toff = data<std::int64_t>(field.groups[0], "triangle_offsets");
        const auto& poff = data<std::int64_t>(field.groups[0], "particle_offsets");
        REQUIRE(toff.size() == 4);  // 3 snapshots
        REQUIRE(tri.size() == 3 * static_cast<std::size_t>(toff.back()));
        // Euler for a disk of n points: about 2n triangles.
        const auto n0 = poff[1] - poff[0], t0 = toff[1] - toff[0];
        REQUIRE(t0 > n0);
        REQUIRE(t0 < 2 * n0);
        REQUIRE(field.find("kinetic_energy")->units == "px^2");
    }
    earlier["field"] = field;

    // defects: one +1 at the centre in every frame, one track per lag, no events.
    auto dop = defaults(spec(all, "defects"));
    dop["defects-lags"] = "1,3";
    AnalysisContext dc{src, dop, false, 1, &earlier};
    const auto def = spec(all, "defects").run(dc).front();
    {
        const auto& counts = data<std::int64_t>(def, "counts");
        const auto& charge = data<std::int64_t>(def, "charge");
        const auto& x = data<double>(def, "x");
        const auto& y = data<double>(def, "y");
        const auto nt = data<std::int64_t>(def, "sample_frame").size();
        REQUIRE(nt == static_cast<std::size_t>(T - 1));
        for (std::size_t k = 0; k < nt; ++k) REQUIRE(counts[k] == 1);  // lag 1: every start frame
        for (std::size_t k = 0; k + 3 < static_cast<std::size_t>(T); ++k)
            REQUIRE(counts[nt + k] == 1);  // lag 3
        for (std::size_t r = 0; r < charge.size(); ++r) {
            REQUIRE(charge[r] == 1);
            REQUIRE_THAT(x[r], WithinAbs(kCx, 1.0));
            REQUIRE_THAT(y[r], WithinAbs(kCy, 1.0));
        }
        REQUIRE(data<std::int64_t>(def, "frame_offsets").size() == 2 * nt + 1);
        REQUIRE(def.groups.size() == 2);
        for (const auto& sub : def.groups) {
            REQUIRE(data<std::int64_t>(sub, "track_charge").size() == 1);
            REQUIRE(data<std::int64_t>(sub, "event_type").empty());
        }
        const auto& dens = data<double>(def, "density");
        REQUIRE(dens[0] > 0);
        REQUIRE(dens[0] < 1.0 / 100);  // one defect in an area of hundreds of px²
    }
    earlier["defects"] = def;

    auto co = defaults(spec(all, "correlations"));
    co["correlations-lags"] = "1";
    AnalysisContext cc{src, co, false, 1, &earlier};
    const auto cor = spec(all, "correlations").run(cc).front();
    {
        const auto& c = data<double>(cor, "c_vv");
        std::size_t b = 0;
        while (b < c.size() && std::isnan(c[b])) ++b;  // no pairs closer than the lattice spacing
        REQUIRE(b < 3);
        REQUIRE(c[b] > 0.9);  // neighbours move alike
        REQUIRE(data<double>(cor, "polar_order").size() == data<std::int64_t>(cor, "frame").size());
    }
    earlier["correlations"] = cor;

    auto so = defaults(spec(all, "spectra"));
    so["spectra-lags"] = "1,2";
    AnalysisContext sc{src, so, false, 1, &earlier};
    const auto spe = spec(all, "spectra").run(sc).front();
    {
        const auto& k = data<double>(spe, "k");
        const auto& e = data<double>(spe, "e");
        const auto& energy = data<double>(spe, "energy");
        const double dk = std::get<double>(spe.attrs.at("dk"));
        double sum = 0;
        for (std::size_t n = 0; n < k.size(); ++n) sum += e[n] * dk;  // lag 1, first start frame
        REQUIRE_THAT(sum, WithinRel(energy[0], 1e-10));
        // A rigid rotation has a larger displacement over 2 frames: 4× the energy.
        REQUIRE_THAT(energy[data<std::int64_t>(spe, "frame").size()], WithinRel(4 * energy[0], 1e-3));
    }
    earlier["spectra"] = spe;

    auto eo = defaults(spec(all, "evolution"));
    eo["evolution-segments"] = "2";
    AnalysisContext ec{src, eo, false, 1, &earlier};
    const auto evo = spec(all, "evolution").run(ec).front();
    for (const char* n : {"kinetic_energy", "defect_density", "xi", "spectral_slope"}) {
        INFO(n);
        const auto* a = evo.find(n);
        REQUIRE(a != nullptr);
        REQUIRE(std::get<std::string>(a->attrs.at("origin")) == "earlier");
        REQUIRE(evo.find(std::string(n) + "_change_times") != nullptr);
    }
    REQUIRE(data<double>(evo, "kinetic_energy").size() == 12);  // the field group's start frames
    SECTION("without earlier groups the series are computed") {
        AnalysisContext alone{src, eo, false, 1, nullptr};
        const auto e2 = spec(all, "evolution").run(alone).front();
        const auto* a = e2.find("defect_density");
        REQUIRE(a != nullptr);
        REQUIRE(std::get<std::string>(a->attrs.at("origin")) == "computed");
        REQUIRE(data<double>(e2, "defect_density_change_times").size() <= 2);
    }
    SECTION("bad options are parameter errors") {
        auto bad = dop;
        bad["defects-route"] = "voronoi";
        AnalysisContext b{src, bad, false, 1, &earlier};
        REQUIRE_THROWS_AS(spec(all, "defects").run(b), ParameterError);
        bad = dop;
        bad["defects-lags"] = "0";
        AnalysisContext b2{src, bad, false, 1, &earlier};
        REQUIRE_THROWS_AS(spec(all, "defects").run(b2), ParameterError);
    }
    SECTION("Delaunay route finds the same vortex") {
        auto d2 = dop;
        d2["defects-route"] = "delaunay";
        d2["defects-lags"] = "2";
        d2["defects-threshold"] = "0";
        AnalysisContext b{src, d2, false, 1, &earlier};
        const auto g = spec(all, "defects").run(b).front();
        const auto& charge = data<std::int64_t>(g, "charge");
        REQUIRE(charge.size() == static_cast<std::size_t>(T - 2));
        for (auto q : charge) REQUIRE(q == 1);
    }
}

TEST_CASE("defects: every frame by default, a stride when the tables would not fit half of the memory budget",
          "[unit]") {
    const int T = 40;
    InMemorySource src(rotating_disk(T));
    const auto all = collective_analyses();
    auto o = defaults(spec(all, "defects"));
    o["defects-lags"] = "1,3";
    AnalysisContext full{src, o, false, 1, nullptr};
    const auto g1 = spec(all, "defects").run(full).front();
    REQUIRE(std::get<std::int64_t>(g1.attrs.at("stride_frames")) == 1);
    const auto field =
        spec(all, "field").run(AnalysisContext{src, defaults(spec(all, "field")), false, 1, nullptr}).front();
    const auto nodes =
        data<double>(field, "grid_x").size() * data<double>(field, "grid_y").size();  // the same default grid
    // 39 start frames × 2 lags × 16 bytes per node: a budget of twice 10 start frames' worth → stride 4
    AnalysisContext small{
        src, o, false, 1, nullptr, nullptr, static_cast<std::int64_t>(2 * 10 * 2 * 16 * nodes)};
    const auto g4 = spec(all, "defects").run(small).front();
    CHECK(std::get<std::int64_t>(g4.attrs.at("stride_frames")) == 4);
    CHECK(data<std::int64_t>(g4, "sample_frame") ==
          std::vector<std::int64_t>{0, 4, 8, 12, 16, 20, 24, 28, 32, 36});
    for (auto c : data<std::int64_t>(g4, "counts"))
        CHECK(c == 1);  // the one vortex at every sampled frame of lag 1
    // given explicitly: the budget does not matter
    o["defects-stride"] = "1";
    AnalysisContext given{src, o, false, 1, nullptr, nullptr, 1};
    CHECK(std::get<std::int64_t>(spec(all, "defects").run(given).front().attrs.at("stride_frames")) == 1);
}

namespace {
/// Bitwise equality of two result groups: every array, attribute and sub-group (NaN equals NaN).
void require_identical(const ResultGroup& a, const ResultGroup& b) {
    REQUIRE(a.name == b.name);
    const auto same_bytes = [](const auto& x, const auto& y) {
        return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(x[0])) == 0;
    };
    REQUIRE(a.arrays.size() == b.arrays.size());
    for (std::size_t k = 0; k < a.arrays.size(); ++k) {
        INFO(a.name << "/" << a.arrays[k].name);
        REQUIRE(a.arrays[k].shape == b.arrays[k].shape);
        REQUIRE(a.arrays[k].data.index() == b.arrays[k].data.index());
        std::visit(
            [&](const auto& x) {
                REQUIRE(same_bytes(x, std::get<std::decay_t<decltype(x)>>(b.arrays[k].data)));
            },
            a.arrays[k].data);
    }
    REQUIRE(a.attrs.size() == b.attrs.size());
    for (const auto& [key, v] : a.attrs) {
        INFO(a.name << " attribute " << key);
        REQUIRE(b.attrs.count(key));
        const auto& w = b.attrs.at(key);
        if (const auto* d = std::get_if<double>(&v))
            REQUIRE(std::memcmp(d, &std::get<double>(w), sizeof(double)) == 0);
        else if (const auto* dv = std::get_if<std::vector<double>>(&v))
            REQUIRE(same_bytes(*dv, std::get<std::vector<double>>(w)));
        else
            REQUIRE(v == w);
    }
    REQUIRE(a.groups.size() == b.groups.size());
    for (std::size_t k = 0; k < a.groups.size(); ++k) require_identical(a.groups[k], b.groups[k]);
}
}  // namespace

TEST_CASE(
    "defects (both routes), field, correlations and spectra: identical for 1, 2 and 3 threads on random "
    "walkers",
    "[unit]") {
    // Independent random walkers in a periodic box: the displacement field is noise, full of ±1 defects.
    const auto g = Geometry::periodic(0, 0, 30, 30);
    std::mt19937_64 rng(12);
    std::uniform_real_distribution<double> u(0, 1);
    std::normal_distribution<double> step(0, 0.3);
    Trajectory t;
    t.meta.length_unit = "px";
    t.meta.time_unit = "frame";
    t.meta.geometry = g;
    const int T = 30, n = 600;
    std::vector<double> x(n), y(n);
    for (int i = 0; i < n; ++i)
        x[static_cast<std::size_t>(i)] = 30 * u(rng), y[static_cast<std::size_t>(i)] = 30 * u(rng);
    for (int f = 0; f < T; ++f)
        for (int i = 0; i < n; ++i) {
            auto& xi = x[static_cast<std::size_t>(i)];
            auto& yi = y[static_cast<std::size_t>(i)];
            if (f > 0) xi = std::fmod(xi + step(rng) + 30, 30.0), yi = std::fmod(yi + step(rng) + 30, 30.0);
            t.rows.push(f, i, xi, yi, kSpeciesSmall);
        }
    t.index = build_frame_index(t.rows, 0, T);
    InMemorySource src(std::move(t));
    const auto all = collective_analyses();
    const auto identical_runs = [&](const std::string& name, std::map<std::string, std::string> o) {
        o[name + "-lags"] = "1,3";
        o[name + "-stride"] = "1";  // 29 + 27 pairs: batches of 4, 8 and 12 end part-full
        std::vector<ResultGroup> runs;
        for (int threads : {1, 2, 3}) {
            AnalysisContext c{src, o, false, threads, nullptr};
            runs.push_back(spec(all, name).run(c).front());
        }
        require_identical(runs[1], runs[0]);
        require_identical(runs[2], runs[0]);
        return runs[0];
    };
    for (const char* route : {"grid", "delaunay"}) {
        INFO("route " << route);
        auto o = defaults(spec(all, "defects"));
        o["defects-route"] = route;
        const auto g = identical_runs("defects", o);
        const auto& counts = data<std::int64_t>(g, "counts");
        REQUIRE(std::accumulate(counts.begin(), counts.end(), std::int64_t{0}) > 500);
    }
    // field (snapshots kept in order) and correlations (merged in order) run on the same batches
    REQUIRE(identical_runs("field", defaults(spec(all, "field"))).groups.size() == 2);
    REQUIRE(!data<double>(identical_runs("correlations", defaults(spec(all, "correlations"))), "xi").empty());
    auto so = defaults(spec(all, "spectra"));
    so["spectra-fst-scales"] = "2,4";  // the filter-space flux too
    REQUIRE(!data<double>(identical_runs("spectra", so), "energy").empty());
}
