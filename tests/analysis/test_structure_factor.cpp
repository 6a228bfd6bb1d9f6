// SPDX-License-Identifier: GPL-3.0-or-later
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>

#include "vibra/analysis/structure_factor.hpp"
#include "vibra/core/error.hpp"

using namespace vibra;
using namespace vibra::analysis;
using Catch::Matchers::WithinAbs;

namespace {
StructureFrame poisson(const Geometry& g, int n, std::mt19937_64& rng) {
    std::uniform_real_distribution<double> u(0, 1);
    StructureFrame f;
    f.window = g;
    while (static_cast<int>(f.size()) < n) {
        double x, y;
        if (g.kind == GeometryKind::window_circle) {
            x = g.cx + g.r * (2 * u(rng) - 1), y = g.cy + g.r * (2 * u(rng) - 1);
            if (!g.contains(x, y)) continue;
        } else {
            x = g.x0 + g.lx() * u(rng), y = g.y0 + g.ly() * u(rng);
        }
        f.x.push_back(x), f.y.push_back(y), f.species.push_back(u(rng) < 0.5 ? 0 : 1);
    }
    return f;
}

void check_ideal(const Geometry& g, std::uint64_t seed, const std::string& kset) {
    std::mt19937_64 rng(seed);
    StructureFactorParams p;
    p.k_max = 8, p.bins = 20, p.max_vectors_per_bin = 60;
    StructureFactor sk(p);
    const int frames = 60;
    for (int f = 0; f < frames; ++f) sk.accumulate(poisson(g, 600, rng));
    const auto r = sk.result();
    REQUIRE(r.k_set == kset);
    int used = 0;
    for (std::size_t b = 0; b < r.k.size(); ++b) {
        if (r.n_vectors[b] == 0) continue;
        ++used;
        const double err = 1.0 / std::sqrt(static_cast<double>(r.n_vectors[b] * frames));
        INFO("bin " << b << " k=" << r.k[b] << " S=" << r.sk[b] << " n=" << r.n_vectors[b]);
        REQUIRE(r.k[b] >= r.k_edges[b]);
        REQUIRE(r.k[b] <= r.k_edges[b + 1]);
        REQUIRE(std::abs(r.sk[b] - 1) < 5 * err);
        REQUIRE(std::abs(r.sk_ss[b] - 1) < 5 * err * 1.5);
        REQUIRE(std::abs(r.sk_ll[b] - 1) < 5 * err * 1.5);
        REQUIRE(std::abs(r.sk_sl[b]) < 5 * err);
    }
    REQUIRE(used >= 15);
}
}  // namespace

TEST_CASE("S(k) of an ideal gas is 1: periodic box and windows", "[unit]") {
    SECTION("periodic") { check_ideal(Geometry::periodic(0, 0, 40, 30), 1, "reciprocal_lattice"); }
    SECTION("rectangle, Hann taper") { check_ideal(Geometry::rect(-5, 2, 35, 32), 2, "hann_window_lattice"); }
    SECTION("circle, inscribed square") { check_ideal(Geometry::circle(0, 0, 22), 3, "hann_window_lattice"); }
}

TEST_CASE("S(k) without the taper's exact zeros would leak: the k set skips |n|,|m| < 2", "[unit]") {
    // a uniform deterministic grid in a window: all S(k) at the kept vectors are tiny except Bragg peaks
    StructureFrame f;
    f.window = Geometry::rect(0, 0, 30, 30);
    for (int j = 0; j < 60; ++j)
        for (int i = 0; i < 60; ++i)
            f.x.push_back(0.25 + 0.5 * i), f.y.push_back(0.25 + 0.5 * j), f.species.push_back(0);
    StructureFactorParams p;
    p.k_max = 6, p.bins = 30, p.max_vectors_per_bin = 0;
    StructureFactor sk(p);
    sk.accumulate(f);
    const auto r = sk.result();
    for (std::size_t b = 0; b < r.k.size(); ++b)
        if (r.n_vectors[b] > 0) REQUIRE(r.sk[b] < 1e-6);  // first Bragg peak at 2π/0.5 ≈ 12.6 > k_max
}

TEST_CASE("S(k) of a triangular lattice: Bragg peak at 4pi/(sqrt3 a) with S = N", "[unit]") {
    const int nx = 16, ny = 14;
    const double a = 1.0, h = std::sqrt(3.0) / 2;
    StructureFrame f;
    f.window = Geometry::periodic(0, 0, nx * a, ny * h);
    for (int j = 0; j < ny; ++j)
        for (int i = 0; i < nx; ++i)
            f.x.push_back((i + 0.5 * (j % 2)) * a), f.y.push_back(j * h), f.species.push_back(0);
    StructureFactorParams p;
    p.k_max = 9, p.bins = 90, p.max_vectors_per_bin = 0;
    StructureFactor sk(p);
    sk.accumulate(f);
    const auto r = sk.result();
    const double G = 4 * M_PI / (std::sqrt(3.0) * a);
    const auto [kp, sp] = sk_first_peak(r, r.sk, 1.0);
    REQUIRE_THAT(kp, WithinAbs(G, 0.1));
    // the shell average contains the 3 half-plane Bragg vectors of the first star, S = N each
    const auto b = static_cast<std::size_t>(G / 0.1);
    REQUIRE_THAT(sp, WithinAbs(224.0 * 3.0 / static_cast<double>(r.n_vectors[b]), 1e-6));
    for (std::size_t k = 0; k < b; ++k)
        if (r.n_vectors[k] > 0) REQUIRE(r.sk[k] < 1e-18);
}

TEST_CASE("S(k) parameters are validated", "[unit]") {
    StructureFactorParams p;
    p.k_max = 0;
    REQUIRE_THROWS_WITH(p.validate(), Catch::Contains("k_max"));
}

TEST_CASE("S(k): identical results for 1 and 3 threads", "[unit]") {
    for (const Geometry& g : {Geometry::periodic(0, 0, 40, 30), Geometry::circle(0, 0, 22)}) {
        StructureFactorParams p;
        p.k_max = 8, p.bins = 20, p.max_vectors_per_bin = 60;
        StructureFactorParams p3 = p;
        p3.threads = 3;
        StructureFactor one(p), three(p3);
        std::mt19937_64 rng(7);
        for (int f = 0; f < 5; ++f) {
            const StructureFrame fr = poisson(g, 700, rng);
            one.accumulate(fr), three.accumulate(fr);
        }
        const auto a = one.result(), b = three.result();
        REQUIRE(a.sk.size() == b.sk.size());
        for (std::size_t k = 0; k < a.sk.size(); ++k) {
            INFO("bin " << k);
            CHECK(std::memcmp(&a.sk[k], &b.sk[k], sizeof(double)) == 0);
            CHECK(std::memcmp(&a.sk_ss[k], &b.sk_ss[k], sizeof(double)) == 0);
            CHECK(std::memcmp(&a.sk_sl[k], &b.sk_sl[k], sizeof(double)) == 0);
            CHECK(std::memcmp(&a.sk_ll[k], &b.sk_ll[k], sizeof(double)) == 0);
        }
    }
    StructureFactorParams bad;
    bad.threads = 0;
    CHECK_THROWS_WITH(StructureFactor(bad), Catch::Contains("threads"));
}
