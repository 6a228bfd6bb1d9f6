// SPDX-License-Identifier: GPL-3.0-or-later
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "vibra/analysis/clusters.hpp"
#include "vibra/core/error.hpp"
#include "structure_fixtures.hpp"

using namespace vibra;
using namespace vibra::analysis;

namespace {
StructureFrame hand_built(const Geometry& g) {
    StructureFrame f;
    f.window = g;
    auto add = [&](double x, double y, double r) {
        f.x.push_back(x), f.y.push_back(y), f.species.push_back(r < 0.45 ? 0 : 1), f.radius.push_back(r);
    };
    add(15, 15, 0.5);     // 0: isolated
    add(2, 2, 0.5);       // 1: chain of three, gaps 1.05 < 1.1
    add(3.05, 2, 0.5);    // 2
    add(4.1, 2, 0.5);     // 3
    add(15, 5, 0.5);      // 4: 1.15 > 1.1 from 5 → two singletons
    add(16.15, 5, 0.5);   // 5
    add(0.2, 18, 0.5);    // 6: bonded to 7 across the periodic edge (distance 0.7)
    add(19.5, 18, 0.5);   // 7
    add(10, 10, 0.35);    // 8: small–large pair at 0.93 < 1.1 × 0.85 = 0.935
    add(10.93, 10, 0.5);  // 9
    add(10, 13, 0.35);    // 10: small–large at 0.94 > 0.935 → not bonded
    add(10.94, 13, 0.5);  // 11
    return f;
}
}  // namespace

TEST_CASE("clusters of a hand-built configuration", "[unit]") {
    const auto f = hand_built(Geometry::periodic(0, 0, 20, 20));
    const auto c = find_clusters(f, ClusterParams{});
    REQUIRE(c.size == std::vector<std::int64_t>{3, 2, 2, 1, 1, 1, 1, 1});
    REQUIRE(c.label[1] == 0);
    REQUIRE(c.label[2] == 0);
    REQUIRE(c.label[3] == 0);
    // ties broken by the smallest member index: pair {6,7} before pair {8,9}
    REQUIRE(c.label[6] == 1);
    REQUIRE(c.label[7] == 1);
    REQUIRE(c.label[8] == 2);
    REQUIRE(c.label[9] == 2);
    REQUIRE(c.label[4] != c.label[5]);
    REQUIRE(c.label[10] != c.label[11]);
    REQUIRE(std::none_of(c.boundary.begin(), c.boundary.end(), [](auto b) { return b != 0; }));

    SECTION("relabel invariance: the partition does not depend on particle order") {
        std::vector<std::size_t> perm(f.size());
        std::iota(perm.begin(), perm.end(), std::size_t{0});
        std::mt19937_64 rng(3);
        std::shuffle(perm.begin(), perm.end(), rng);
        StructureFrame g;
        g.window = f.window;
        for (auto i : perm)
            g.x.push_back(f.x[i]), g.y.push_back(f.y[i]), g.species.push_back(f.species[i]),
                g.radius.push_back(f.radius[i]);
        const auto d = find_clusters(g, ClusterParams{});
        REQUIRE(d.size == c.size);
        for (std::size_t a = 0; a < f.size(); ++a)
            for (std::size_t b = 0; b < f.size(); ++b)
                REQUIRE((c.label[perm[a]] == c.label[perm[b]]) == (d.label[a] == d.label[b]));
    }
    SECTION("in a window the pair across the edge splits and edge clusters are flagged") {
        const auto w = find_clusters(hand_built(Geometry::rect(0, 0, 20, 20)), ClusterParams{});
        REQUIRE(w.size == std::vector<std::int64_t>{3, 2, 1, 1, 1, 1, 1, 1, 1});
        REQUIRE(w.boundary[static_cast<std::size_t>(w.label[6])] == 1);
        REQUIRE(w.boundary[static_cast<std::size_t>(w.label[7])] == 1);
        REQUIRE(w.boundary[static_cast<std::size_t>(w.label[0])] == 0);
        REQUIRE(w.boundary[0] == 0);
    }
    SECTION("distance cut-off instead of contacts") {
        ClusterParams p;
        p.r_cut = 1.2;
        const auto d = find_clusters(f, p);
        REQUIRE(d.size == std::vector<std::int64_t>{3, 2, 2, 2, 2, 1});
    }
    SECTION("accumulated size distribution") {
        ClusterAccumulator acc(ClusterParams{});
        acc.accumulate(f);
        acc.accumulate(f);
        const auto r = acc.result();
        REQUIRE(r.size == std::vector<std::int64_t>{1, 2, 3});
        REQUIRE(r.count == std::vector<double>{10, 4, 2});
        REQUIRE(r.largest == std::vector<double>{3, 3});
        REQUIRE_THAT(r.weight_average[0], Catch::Matchers::WithinAbs((9.0 + 4 + 4 + 5) / 12.0, 1e-12));
        REQUIRE_THAT(r.mean_size, Catch::Matchers::WithinAbs(12.0 / 8.0, 1e-12));
    }
}

TEST_CASE("clusters: a touching lattice is one cluster, sparse points are singletons", "[unit]") {
    StructureFrame f;
    f.window = Geometry::periodic(0, 0, 10, 10 * std::sqrt(3.0) / 2);
    for (int j = 0; j < 10; ++j)
        for (int i = 0; i < 10; ++i)
            f.x.push_back(i + 0.5 * (j % 2)), f.y.push_back(j * std::sqrt(3.0) / 2), f.species.push_back(0),
                f.radius.push_back(0.5);
    auto c = find_clusters(f, ClusterParams{});
    REQUIRE(c.size == std::vector<std::int64_t>{100});
    for (auto& r : f.radius) r = 0.3;  // contact distance 0.66 < 1
    c = find_clusters(f, ClusterParams{});
    REQUIRE(c.size.size() == 100);
    f.radius.clear();
    REQUIRE_THROWS_WITH(find_clusters(f, ClusterParams{}), Catch::Contains("--clusters-rcut"));
}

TEST_CASE("clusters: spanning and radius of gyration", "[unit]") {
    auto chain = [](const Geometry& g, double y, int n, double step, double x0) {
        StructureFrame f;
        f.window = g;
        for (int i = 0; i < n; ++i) {
            double x = x0 + i * step;
            if (g.periodic()) x -= g.lx() * std::floor((x - g.x0) / g.lx());
            f.x.push_back(x), f.y.push_back(y), f.species.push_back(0), f.radius.push_back(0.5);
        }
        return f;
    };
    SECTION("periodic: a closed ring around the box spans, an open chain does not") {
        const auto g = Geometry::periodic(0, 0, 10, 10);
        const auto ring = find_clusters(chain(g, 5, 10, 1.0, 0.5), ClusterParams{});
        REQUIRE(ring.size == std::vector<std::int64_t>{10});
        REQUIRE(ring.spanning[0] == 1);
        const auto open =
            find_clusters(chain(g, 5, 9, 1.0, 7.3), ClusterParams{});  // crosses the edge, no loop
        REQUIRE(open.size == std::vector<std::int64_t>{9});
        REQUIRE(open.spanning[0] == 0);
        // unwrapped across the edge: 9 points spaced 1 → Rg² = (9² − 1)/12
        REQUIRE_THAT(open.radius_of_gyration[0], Catch::Matchers::WithinAbs(std::sqrt(80.0 / 12.0), 1e-9));
    }
    SECTION("rectangle: edge to edge spans") {
        const auto g = Geometry::rect(0, 0, 10, 10);
        const auto full = find_clusters(chain(g, 5, 10, 1.0, 0.5), ClusterParams{});
        REQUIRE(full.spanning[0] == 1);
        const auto part = find_clusters(chain(g, 5, 6, 1.0, 2.0), ClusterParams{});
        REQUIRE(part.spanning[0] == 0);
        ClusterAccumulator acc(ClusterParams{});
        acc.accumulate(chain(g, 5, 10, 1.0, 0.5));
        acc.accumulate(chain(g, 5, 6, 1.0, 2.0));
        const auto r = acc.result();
        REQUIRE(r.spanning == std::vector<double>{1, 0});
        REQUIRE_THAT(r.largest_rg[1], Catch::Matchers::WithinAbs(std::sqrt(35.0 / 12.0), 1e-9));
    }
}

TEST_CASE("continuum percolation of Poisson disks: wrapping appears around eta_c = 1.128", "[unit]") {
    // Overlapping disks of radius a (bond if r < 2a); reduced density eta = n pi a^2. Threshold
    // eta_c = 1.1281 (Mertens & Moore 2012). Box 40a: the transition is a few tenths wide.
    std::mt19937_64 rng(99);
    std::uniform_real_distribution<double> u(0, 40);
    ClusterParams p;
    p.r_cut = 2.0;
    auto wrap_fraction = [&](double eta) {
        const int n = static_cast<int>(std::lround(eta * 1600 / M_PI));
        int spans = 0;
        for (int rep = 0; rep < 40; ++rep) {
            StructureFrame f;
            f.window = Geometry::periodic(0, 0, 40, 40);
            for (int i = 0; i < n; ++i) f.x.push_back(u(rng)), f.y.push_back(u(rng)), f.species.push_back(0);
            const auto c = find_clusters(f, p);
            spans += c.spanning[0];
        }
        return spans / 40.0;
    };
    const double lo = wrap_fraction(0.8), mid = wrap_fraction(1.128), hi = wrap_fraction(1.5);
    INFO("wrapping fraction at eta 0.8, 1.128, 1.5: " << lo << ", " << mid << ", " << hi);
    REQUIRE(lo < 0.15);
    REQUIRE(hi > 0.85);
    // at threshold the probability of wrapping in either direction of a square torus is universal,
    // R_e = 0.690 (Pinson 1994; Newman & Ziff 2000); 40 samples: ± 3 × 0.073
    REQUIRE(mid > 0.69 - 0.22);
    REQUIRE(mid < 0.69 + 0.22);
}

TEST_CASE("clusters over a source: identical for 1, 2 and 3 threads, and to adding frame by frame",
          "[unit]") {
    const std::int64_t T = 23;  // 23 frames: batches of 4, 8 and 12 end part-full
    const auto src = test::random_frames(
        Geometry::periodic(0, 0, 24, 20), T, [](auto f) { return 300 - 3 * f; }, 5);
    ClustersParams q;
    q.stride = 2;
    ClusterAccumulator serial(q.clusters);
    for (std::int64_t f = 0; f < T; f += q.stride)
        serial.accumulate(structure_frame(src.read_frames(f, 1), f));
    const auto ref = serial.result();
    REQUIRE(ref.frame.size() == 12);
    REQUIRE(ref.count.size() > 3);  // clusters of several sizes
    for (int threads : {1, 2, 3}) {
        INFO(threads << " threads");
        q.threads = threads;
        const auto r = compute_clusters(src, q).r;
        REQUIRE(r.frame == ref.frame);
        REQUIRE(r.count == ref.count);
        REQUIRE(r.count_interior == ref.count_interior);
        REQUIRE(r.largest == ref.largest);
        REQUIRE(r.n_clusters == ref.n_clusters);
        REQUIRE(r.weight_average == ref.weight_average);
        REQUIRE(r.spanning == ref.spanning);
        REQUIRE(r.largest_rg == ref.largest_rg);
        REQUIRE(r.mean_size == ref.mean_size);
    }
}
