// SPDX-License-Identifier: GPL-3.0-or-later
#include <catch2/catch.hpp>

#include <cmath>

#include "dynamics_synth.hpp"
#include "vibra/analysis/velocities.hpp"
#include "vibra/core/error.hpp"

using namespace vibra;
using namespace vibra::analysis;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

TEST_CASE("central and forward differences are exact for linear motion on irregular times", "[unit]") {
    const std::vector<double> t{0.0, 0.1, 0.35, 0.4, 1.0, 1.7, 1.75};
    std::vector<double> x(t.size());
    for (std::size_t i = 0; i < t.size(); ++i) x[i] = 3.0 - 2.5 * t[i];
    std::vector<double> v(t.size());
    finite_difference(x, t, VelocityScheme::central, v);
    CHECK(std::isnan(v.front()));
    CHECK(std::isnan(v.back()));
    for (std::size_t i = 1; i + 1 < t.size(); ++i) CHECK_THAT(v[i], WithinAbs(-2.5, 1e-12));
    finite_difference(x, t, VelocityScheme::forward, v);
    CHECK(std::isnan(v.back()));
    for (std::size_t i = 0; i + 1 < t.size(); ++i) CHECK_THAT(v[i], WithinAbs(-2.5, 1e-12));
}

TEST_CASE("differences are NaN next to gaps, never across them", "[unit]") {
    const std::vector<double> t{0, 1, 2, 3, 4, 5};
    const std::vector<double> x{0, 1, test::kNaN, 3, 4, 5};
    std::vector<double> v(6);
    finite_difference(x, t, VelocityScheme::central, v);
    CHECK(std::isnan(v[1]));
    CHECK(std::isnan(v[2]));
    CHECK(std::isnan(v[3]));
    CHECK_THAT(v[4], WithinAbs(1.0, 1e-14));
    finite_difference(x, t, VelocityScheme::forward, v);
    CHECK_THAT(v[0], WithinAbs(1.0, 1e-14));
    CHECK(std::isnan(v[1]));
    CHECK(std::isnan(v[2]));
    CHECK_THAT(v[3], WithinAbs(1.0, 1e-14));
    REQUIRE_THROWS_AS(finite_difference(x, t, VelocityScheme::given, v), ParameterError);
}

TEST_CASE("fill_velocities on a dense block", "[unit]") {
    DenseBlock b;
    b.n_frames = 4;
    b.ids = {0, 1};
    b.x = {0, 10, 1, 12, 2, 14, 3, 16};  // [t*N+i]
    b.y = {0, 0, 0.5, -1, 1, -2, 1.5, -3};
    const std::vector<double> times{0, 1, 2, 3};
    fill_velocities(b, times, VelocityScheme::central);
    CHECK_THAT(b.vx[b.at(1, 0)], WithinAbs(1.0, 1e-14));
    CHECK_THAT(b.vx[b.at(2, 1)], WithinAbs(2.0, 1e-14));
    CHECK_THAT(b.vy[b.at(2, 1)], WithinAbs(-1.0, 1e-14));
    CHECK(std::isnan(b.vx[b.at(0, 0)]));
    CHECK(std::isnan(b.vx[b.at(3, 1)]));
}

TEST_CASE("stream_tracks: irregular time stamps, periodic unwrapping, particle blocks", "[unit]") {
    // two particles moving at constant velocity through a periodic box of side 10, frames at
    // irregular times: central differences must give the exact velocity after unwrapping.
    const std::vector<double> times{0, 0.5, 0.7, 1.5, 2.0, 2.2, 3.0, 3.1};
    test::Series s;
    const double v[2][2] = {{4.0, -1.0}, {-3.0, 2.5}};
    s.x.assign(2, std::vector<double>(times.size()));
    s.y = s.x;
    s.species = {0, 1};
    for (int i = 0; i < 2; ++i)
        for (std::size_t f = 0; f < times.size(); ++f) {
            s.x[i][f] = std::fmod(std::fmod(1.0 + v[i][0] * times[f], 10.0) + 10.0, 10.0);
            s.y[i][f] = std::fmod(std::fmod(5.0 + v[i][1] * times[f], 10.0) + 10.0, 10.0);
        }
    s.x[1][4] = test::kNaN;  // gap
    s.y[1][4] = test::kNaN;
    Metadata m;
    m.time_unit = std::string("s");  // (not = "s": GCC 12 -Wrestrict false positive)
    m.geometry = Geometry::periodic(0, 0, 10, 10);
    auto src = test::make_source(s, m, times);
    TrackStreamParams p;
    p.max_cells = 1;  // one particle per block: exercises the particle-block passes
    int seen = 0;
    const auto info = stream_tracks(src, p, [&](const Track& tk) {
        ++seen;
        const int i = static_cast<int>(tk.id);
        REQUIRE(tk.size() == times.size());
        for (std::size_t f = 0; f < tk.size(); ++f) {
            if (i == 1 && f == 4) {
                CHECK(std::isnan(tk.x[f]));
                continue;
            }
            CHECK_THAT(tk.x[f] - tk.x[0], WithinAbs(v[i][0] * times[f], 1e-9));
            CHECK_THAT(tk.y[f] - tk.y[0], WithinAbs(v[i][1] * times[f], 1e-9));
            const bool interior = f > 0 && f + 1 < tk.size() && !(i == 1 && (f == 3 || f == 5));
            if (interior) {
                CHECK_THAT(tk.vx[f], WithinAbs(v[i][0], 1e-9));
                CHECK_THAT(tk.vy[f], WithinAbs(v[i][1], 1e-9));
            } else {
                CHECK(std::isnan(tk.vx[f]));
            }
        }
        CHECK(tk.species == i);
    });
    CHECK(seen == 2);
    CHECK(info.particle_blocks == 2);
    CHECK(info.scheme == VelocityScheme::central);
    CHECK(info.n_small == 1);
    CHECK(info.n_large == 1);
}

TEST_CASE("stream_tracks: given velocities and com drift removal", "[unit]") {
    auto s = test::random_walks(50, 40, 0.1, 7, 0.3, -0.2);
    s.vx.assign(50, std::vector<double>(40, 0.0));
    s.vy = s.vx;
    for (auto& r : s.vx)
        for (auto& v : r) v = 1.0;  // given velocity 1 everywhere, mean 1 per frame
    auto src = test::make_source(s, Metadata{});
    TrackStreamParams p;
    p.drift = DriftMode::com;
    double sum_dx = 0, sum_v = 0;
    const auto info = stream_tracks(src, p, [&](const Track& tk) {
        sum_dx += tk.x.back() - tk.x.front();
        sum_v += std::abs(tk.vx[3]);
    });
    CHECK(info.scheme == VelocityScheme::given);
    CHECK_THAT(sum_dx, WithinAbs(0.0, 1e-9));  // com drift removed exactly: the mean displacement is 0
    CHECK_THAT(sum_v, WithinAbs(0.0, 1e-12));  // mean given velocity subtracted
    CHECK_THAT(info.drift_x.back(), WithinRel(0.3 * 39, 0.1));
    REQUIRE_THROWS_AS(drift_mode_from_string("bogus"), ParameterError);
    REQUIRE_THROWS_AS(velocity_scheme_from_string("bogus"), ParameterError);
}

#include "vibra/analysis/registry.hpp"

TEST_CASE("registered dynamics analyses run with their default options", "[unit]") {
    auto walks = test::random_walks(30, 80, 0.2, 3);
    Metadata m;
    m.species_diameters = {1.0, 1.4};
    m.time_unit = std::string("s");  // (not = "s": GCC 12 -Wrestrict false positive)
    m.frame_interval = 0.01;
    auto src = test::make_source(walks, m);
    const auto specs = dynamics_analyses();
    std::vector<std::string> names;
    for (const auto& s : specs) {
        names.push_back(s.name);
        AnalysisContext ctx{src, {}, false, 1, nullptr};
        for (const auto& o : s.options) {
            CHECK(o.flag.rfind(flag_prefix(s.name) + "-", 0) ==
                  0);  // flags carry the analysis name as prefix
            ctx.options[o.flag] = o.default_value;
        }
        const auto groups = s.run(ctx);
        REQUIRE(!groups.empty());
        CHECK(groups.front().name == s.name);
        for (const auto& g : groups)
            for (const auto& a : g.arrays) {
                INFO(g.name << "/" << a.name);
                CHECK(!a.units.empty());
            }
        // a malformed option value is a ParameterError naming the flag
        if (!s.options.empty()) {
            AnalysisContext bad = ctx;
            bad.options[flag_prefix(s.name) + "-drift"] = "sideways";
            REQUIRE_THROWS_AS(s.run(bad), ParameterError);
        }
    }
    CHECK(names ==
          std::vector<std::string>{"msd", "vacf", "vdos", "fs", "temperature", "velocity_distribution"});
}
