// SPDX-License-Identifier: GPL-3.0-or-later
// Linker: exact small cases (conflicts, memory, species) and the acceptance statistics of
// the acceptance cases (docs/tracking.md section 10) on 200-frame tracks at packing fraction 0.6 (2000 disks
// → 398 000 links per case).
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <vector>

#include "vibra/core/error.hpp"
#include "vibra/core/soft_disk.hpp"
#include "vibra/tracking/link.hpp"

using namespace vibra;
using namespace vibra::tracking;

TEST_CASE("linker resolves a conflict by minimum total cost", "[unit]") {
    LinkParams p;
    p.max_step = 3;
    Linker L(p);
    std::vector<double> x0{0, 2.5}, y0{0, 0};
    auto a = L.link(x0, y0);
    REQUIRE(a == std::vector<std::int64_t>{0, 1});
    // Tracks at 0 and 2.5, detections at 1.3 and 3.9. Greedy nearest-first would give track 1 →
    // 1.3 (1.44) and leave track 0 and 3.9 unmatched; the minimum total cost is {0→1.3, 1→3.9}:
    // 1.69 + 1.96 = 3.65 < 1.44 + 2·4.5 (two unmatched ends at max_step²/2 each).
    std::vector<double> x1{3.9, 1.3}, y1{0, 0};
    auto b = L.link(x1, y1);
    REQUIRE(b[0] == 1);
    REQUIRE(b[1] == 0);
    REQUIRE(L.last_stats().links == 2);
    REQUIRE(L.last_stats().new_tracks == 0);
}

TEST_CASE("linker memory closes gaps and drops old tracks", "[unit]") {
    LinkParams p;
    p.max_step = 2;
    p.memory = 2;
    Linker L(p);
    std::vector<double> x{10}, y{10}, none;
    REQUIRE(L.link(x, y)[0] == 0);
    REQUIRE(L.link(none, none).empty());
    REQUIRE(L.link(none, none).empty());
    std::vector<double> x2{11};
    REQUIRE(L.link(x2, y)[0] == 0);  // back after 2 missed frames
    REQUIRE(L.last_stats().links == 1);
    for (int i = 0; i < 3; ++i) L.link(none, none);
    REQUIRE(L.last_stats().lost_tracks == 1);  // third missed frame ends it
    REQUIRE(L.link(x2, y)[0] == 1);
    REQUIRE(L.last_stats().new_tracks == 1);
}

TEST_CASE("linker prefers the same species and predicts velocity", "[unit]") {
    LinkParams p;
    p.max_step = 2;
    Linker L(p);
    std::vector<double> x{0}, y{0};
    std::vector<std::int8_t> s0{0}, s1{1};
    L.link(x, y, s0);
    // A same-species candidate wins even when a different-species detection is closer.
    std::vector<double> xa{0.3, 1.0}, ya{0, 0};
    std::vector<std::int8_t> sa{1, 0};
    const auto ida = L.link(xa, ya, sa);
    REQUIRE(ida[1] == 0);  // the species-0 detection continues track 0
    REQUIRE(ida[0] == 1);  // the species-1 one starts a new track
    // A track and a detection of different species link only when neither has any candidate
    // of its own species (a size call that flipped on real video must not break the track).
    Linker L2(p);
    L2.link(x, y, s0);
    std::vector<double> x1{0.5};
    REQUIRE(L2.link(x1, y, s1)[0] == 0);
    REQUIRE(L2.last_stats().links == 1);
    REQUIRE(L2.last_stats().lost_tracks == 0);

    // Accelerating start 0, 1.5, 4.5, 7.5, … (steps 1.5 then 3 px) with max_step 2: only the
    // constant-velocity prediction keeps one track.
    for (bool predict : {true, false}) {
        p.predict = predict;
        p.max_step = 2;
        Linker P(p);
        for (int f = 0; f < 10; ++f) {
            std::vector<double> xf{f == 0 ? 0.0 : 3.0 * f - 1.5}, yf{0};
            P.link(xf, yf);
        }
        if (predict)
            REQUIRE(P.n_tracks() == 1);
        else
            REQUIRE(P.n_tracks() == 9);
    }

    LinkParams bad;
    bad.max_step = 0;
    REQUIRE_THROWS_AS(Linker(bad), ParameterError);
    bad.max_step = 1;
    bad.memory = -1;
    REQUIRE_THROWS_AS(bad.validate(), ParameterError);
}

namespace {

struct Case {
    double step_rms;  // per-axis RMS of a step between frames, in units of the mean spacing
    double speed;     // common (ballistic) speed per frame, units of the spacing (0 = none)
    double max_step;  // units of the spacing
    bool predict;
};

// Fraction of correct links over all consecutive-frame pairs of every particle.
//
// Model of the motion: the structure of a φ = 0.6 packing (the core soft-disk simulator's
// jittered lattice, 1000 + 1000 disks of diameter 12 and 16 px) is kept, each disk rattles in
// its cage, x_t = x̄ + ξ_t with ξ_t i.i.d. Gaussian of per-axis σ = step_rms/√2 (so the step
// x_{t+1} − x_t has per-axis RMS step_rms), and for the ballistic case the whole packing moves
// at `speed` per frame in a slowly turning direction (0.05 rad per frame). Independent random
// walks would turn the packing into an ideal gas within a few frames, with overlapping
// particles no linker can tell apart; disks cannot overlap, so that is not a tracking case.
double link_accuracy(const Case& c, std::uint64_t seed, double& ms_per_frame_per_2000,
                     double& step_measured) {
    SoftDiskParams sp;
    sp.n_small = 1000;
    sp.n_large = 1000;
    sp.diameter_small = 12;
    sp.diameter_large = 16;
    sp.packing_fraction = 0.6;
    sp.periodic = false;
    sp.seed = seed;
    SoftDiskSimulator sim(sp);
    const std::vector<double> bx = sim.x(), by = sim.y();
    const std::size_t n = bx.size();
    const double spacing = std::sqrt(sim.geometry().area() / static_cast<double>(n));
    std::mt19937_64 rng(seed * 7 + 1);
    std::normal_distribution<double> g(0.0, 1.0);
    const double sigma = (c.speed > 0 ? 0.02 : c.step_rms / std::sqrt(2.0)) * spacing;
    LinkParams p;
    p.max_step = c.max_step * spacing;
    p.predict = c.predict;
    Linker L(p);
    std::vector<std::int64_t> prev;
    std::int64_t correct = 0, total = 0;
    const int frames = 200;
    std::vector<std::size_t> perm(n);  // detection order shuffled every frame
    for (std::size_t i = 0; i < n; ++i) perm[i] = i;
    std::vector<double> x(n), y(n), px(n), py(n), xs(n), ys(n);
    double seconds = 0, sum_step2 = 0, drift_x = 0, drift_y = 0, angle = 0.3;
    for (int f = 0; f < frames; ++f) {
        for (std::size_t i = 0; i < n; ++i) {
            x[i] = bx[i] + drift_x + sigma * g(rng);
            y[i] = by[i] + drift_y + sigma * g(rng);
            if (f > 0) sum_step2 += 0.5 * ((x[i] - px[i]) * (x[i] - px[i]) + (y[i] - py[i]) * (y[i] - py[i]));
        }
        px = x, py = y;
        drift_x += c.speed * spacing * std::cos(angle);
        drift_y += c.speed * spacing * std::sin(angle);
        angle += 0.05;
        std::shuffle(perm.begin(), perm.end(), rng);
        for (std::size_t k = 0; k < n; ++k) xs[k] = x[perm[k]], ys[k] = y[perm[k]];
        const auto t0 = std::chrono::steady_clock::now();
        const auto ids = L.link(xs, ys);
        seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::vector<std::int64_t> id_of(n);
        for (std::size_t k = 0; k < n; ++k) id_of[perm[k]] = ids[k];
        if (!prev.empty())
            for (std::size_t i = 0; i < n; ++i) {
                ++total;
                correct += id_of[i] == prev[i];
            }
        prev = id_of;
    }
    step_measured = std::sqrt(sum_step2 / static_cast<double>(total)) / spacing;
    ms_per_frame_per_2000 = 1e3 * seconds / frames * 2000.0 / static_cast<double>(n);
    return static_cast<double>(correct) / static_cast<double>(total);
}

}  // namespace

TEST_CASE("linking accuracy on 200-frame tracks at packing fraction 0.6", "[unit]") {
    double ms = 0, step = 0;
    SECTION("random steps 0.1 x spacing: >= 99.95% links correct") {
        const double acc = link_accuracy({0.1, 0, 0.5, false}, 11, ms, step);
        INFO("accuracy " << acc << ", " << ms << " ms/frame/2000 disks");
        REQUIRE_THAT(step, Catch::Matchers::WithinAbs(0.1, 0.002));
        REQUIRE(acc >= 0.9995);
    }
    SECTION("random steps 0.2 x spacing: >= 99% links correct") {
        const double acc = link_accuracy({0.2, 0, 0.8, false}, 12, ms, step);
        INFO("accuracy " << acc << ", " << ms << " ms/frame/2000 disks");
        REQUIRE_THAT(step, Catch::Matchers::WithinAbs(0.2, 0.004));
        REQUIRE(acc >= 0.99);
    }
    SECTION("ballistic 0.4 x spacing per frame with prediction: >= 99.9%") {
        const double acc = link_accuracy({0, 0.4, 0.6, true}, 13, ms, step);
        INFO("accuracy " << acc << ", " << ms << " ms/frame/2000 disks");
        REQUIRE(acc >= 0.999);
    }
}
