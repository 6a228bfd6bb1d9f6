// SPDX-License-Identifier: GPL-3.0-or-later
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>

#include "vibra/analysis/bond_order.hpp"
#include "vibra/core/error.hpp"
#include "vibra/core/periodic.hpp"
#include "vibra/core/trajectory_source.hpp"

using namespace vibra;
using namespace vibra::analysis;
using Catch::Matchers::WithinAbs;

namespace {
/// Triangular lattice rotated by `angle`, cropped to the window (all points for periodic).
StructureFrame lattice(const Geometry& g, int nx, int ny, double a, double angle, bool square = false) {
    StructureFrame f;
    f.window = g;
    const double h = square ? a : std::sqrt(3.0) / 2 * a;
    const double c = std::cos(angle), s = std::sin(angle);
    for (int j = 0; j < ny; ++j)
        for (int i = 0; i < nx; ++i) {
            const double lx = (i + (square ? 0.0 : 0.5 * (j % 2))) * a, ly = j * h;
            double x = lx, y = ly;
            if (!g.periodic()) {
                x = g.x0 + 0.5 * g.lx() + c * (lx - 0.5 * nx * a) - s * (ly - 0.5 * ny * h);
                y = g.y0 + 0.5 * g.ly() + s * (lx - 0.5 * nx * a) + c * (ly - 0.5 * ny * h);
                if (!g.contains(x, y)) continue;
            }
            f.x.push_back(x), f.y.push_back(y), f.species.push_back((i + j) % 2 ? 1 : 0),
                f.radius.push_back(0.5);
        }
    return f;
}
}  // namespace

TEST_CASE("psi6 of a perfect triangular lattice is 1", "[unit]") {
    const int nx = 16, ny = 14;
    const auto g = Geometry::periodic(0, 0, nx, ny * std::sqrt(3.0) / 2);
    const auto f = lattice(g, nx, ny, 1.0, 0.0);
    for (auto nb : {BondNeighbours::voronoi, BondNeighbours::cutoff}) {
        BondOrderParams p;
        p.neighbours = nb;
        p.r_cut = 1.2;
        const auto loc = local_bond_order(f, p);
        for (std::size_t i = 0; i < f.size(); ++i) {
            REQUIRE(loc.valid[i]);
            REQUIRE(loc.n_neighbours[i] == 6);
            REQUIRE_THAT(std::abs(loc.psi[i]), WithinAbs(1.0, 1e-12));
            REQUIRE_THAT(loc.psi[i].real(), WithinAbs(1.0, 1e-12));  // bonds along x: phase 0
        }
    }
    BondOrderAccumulatorParams ap;
    ap.r_max = 4, ap.bins = 40;
    BondOrderAccumulator acc(ap);
    acc.accumulate(f);
    const auto r = acc.result();
    REQUIRE_THAT(r.global[0], WithinAbs(1.0, 1e-12));
    REQUIRE_THAT(r.crystalline_fraction[0], WithinAbs(1.0, 1e-12));
    for (std::size_t k = 0; k < r.g6.size(); ++k)
        if (r.g6_pairs[k] > 0) REQUIRE_THAT(r.g6[k], WithinAbs(1.0, 1e-12));
    REQUIRE(r.hist.back() > 0);  // all mass in the last |psi6| bin
    REQUIRE_THAT(r.hist.back() / static_cast<double>(ap.hist_bins), WithinAbs(1.0, 1e-12));
}

TEST_CASE("psi6 in a window: rotation changes the phase by 6 alpha, not the modulus — edges excluded",
          "[unit]") {
    const auto g = Geometry::rect(0, 0, 20, 18);
    const double alpha = 0.3;
    const auto f = lattice(g, 30, 30, 1.0, alpha);
    BondOrderParams p;
    const auto loc = local_bond_order(f, p);
    std::size_t valid = 0;
    for (std::size_t i = 0; i < f.size(); ++i) {
        const double dedge = std::min({f.x[i], 20 - f.x[i], f.y[i], 18 - f.y[i]});
        if (dedge > 1.0) REQUIRE(loc.valid[i]);
        if (!loc.valid[i]) {
            REQUIRE(std::isnan(loc.psi[i].real()));
            continue;
        }
        ++valid;
        REQUIRE_THAT(std::abs(loc.psi[i]), WithinAbs(1.0, 1e-9));
        REQUIRE_THAT(std::arg(loc.psi[i]), WithinAbs(std::remainder(6 * alpha, 2 * M_PI), 1e-9));
    }
    REQUIRE(valid > 250);
    REQUIRE(valid < f.size());
}

TEST_CASE("psi6 of a square lattice with 4 neighbours is 0, psi4 is 1", "[unit]") {
    const auto g = Geometry::periodic(0, 0, 12, 12);
    const auto f = lattice(g, 12, 12, 1.0, 0.0, true);
    BondOrderParams p;
    p.neighbours = BondNeighbours::cutoff;
    p.r_cut = 1.1;
    const auto l6 = local_bond_order(f, p);
    p.order = 4;
    const auto l4 = local_bond_order(f, p);
    for (std::size_t i = 0; i < f.size(); ++i) {
        REQUIRE(l6.n_neighbours[i] == 4);
        REQUIRE_THAT(std::abs(l6.psi[i]), WithinAbs(0.0, 1e-12));
        REQUIRE_THAT(std::abs(l4.psi[i]), WithinAbs(1.0, 1e-12));
    }
}

TEST_CASE("global psi6 of Poisson points is small (N^-1/2)", "[unit]") {
    std::mt19937_64 rng(8);
    std::uniform_real_distribution<double> u(0, 40);
    StructureFrame f;
    f.window = Geometry::periodic(0, 0, 40, 40);
    for (int i = 0; i < 1600; ++i)
        f.x.push_back(u(rng)), f.y.push_back(u(rng)), f.species.push_back(0), f.radius.push_back(0.3);
    BondOrderAccumulatorParams ap;
    BondOrderAccumulator acc(ap);
    acc.accumulate(f);
    const auto r = acc.result();
    REQUIRE(r.global[0] < 5.0 / std::sqrt(1600.0) * std::sqrt(r.mean_abs2));
    REQUIRE(r.mean_abs > 0.2);  // local order of a random set is far from 0
    REQUIRE(r.mean_abs < 0.7);
    REQUIRE_THROWS_AS(bond_neighbours_from_string("delaunay"), ParameterError);
}

namespace {
/// T frames of n random bidisperse disks in a periodic box (positions independent per frame).
InMemorySource random_disks(const Geometry& g, std::int64_t n, std::int64_t T, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(0, 1);
    Trajectory t;
    t.meta.geometry = g;
    t.meta.species_diameters = {1.0, 1.4};
    for (std::int64_t f = 0; f < T; ++f)
        for (std::int64_t i = 0; i < n; ++i)
            t.rows.push(f, i, g.x0 + g.lx() * u(rng), g.y0 + g.ly() * u(rng),
                        static_cast<std::int8_t>(i % 2));
    t.index = build_frame_index(t.rows, 0, T);
    return InMemorySource(std::move(t));
}
/// Bit-identical (NaN entries included).
bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}
}  // namespace

TEST_CASE("psi6 over a source: identical for 1, 2 and 3 threads, g6 equals the all-pairs sum", "[unit]") {
    const auto g = Geometry::periodic(0, 0, 24, 20);
    const auto src = random_disks(g, 300, 23, 5);  // 23 frames: batches of 4, 8 and 12 end part-full
    Psi6Params q;
    q.acc.r_max = 9.5;
    q.acc.bins = 40;
    q.per_particle = true;
    std::vector<Psi6Result> runs;
    for (int threads : {1, 2, 3}) {
        q.threads = threads;
        runs.push_back(compute_psi6(src, q));
    }
    for (const auto& r : {runs[1], runs[2]}) {
        REQUIRE(same_bits(r.r.global, runs[0].r.global));
        REQUIRE(same_bits(r.r.crystalline_fraction, runs[0].r.crystalline_fraction));
        REQUIRE(same_bits(r.r.g6, runs[0].r.g6));
        REQUIRE(r.r.g6_pairs == runs[0].r.g6_pairs);
        REQUIRE(same_bits(r.r.hist, runs[0].r.hist));
        REQUIRE(r.r.mean_abs == runs[0].r.mean_abs);
        REQUIRE(same_bits(r.local_re, runs[0].local_re));
        REQUIRE(r.local_offsets == runs[0].local_offsets);
    }
    // g6 against a direct O(N²) sum over every pair of valid particles (minimum image)
    const auto nb = static_cast<std::size_t>(q.acc.bins);
    const double dr = q.acc.r_max / static_cast<double>(nb);
    std::vector<double> sum(nb, 0.0), cnt(nb, 0.0), scale(nb, 0.0);
    for (std::int64_t f = 0; f < src.n_frames(); ++f) {
        const auto fr = structure_frame(src.read_frames(f, 1), f);
        const auto loc = local_bond_order(fr, q.acc.bond);
        for (std::size_t i = 0; i < fr.size(); ++i)
            for (std::size_t j = i + 1; j < fr.size(); ++j) {
                if (!loc.valid[i] || !loc.valid[j]) continue;
                const double dx = minimum_image(fr.x[j] - fr.x[i], g.lx());
                const double dy = minimum_image(fr.y[j] - fr.y[i], g.ly());
                const auto bin = static_cast<std::size_t>(std::sqrt(dx * dx + dy * dy) / dr);
                if (bin >= nb) continue;
                const double term = std::real(loc.psi[i] * std::conj(loc.psi[j]));
                sum[bin] += term, cnt[bin] += 1, scale[bin] += std::abs(term);
            }
    }
    const auto& r = runs[0].r;
    std::size_t filled = 0;
    for (std::size_t k = 0; k < nb; ++k) {
        REQUIRE(r.g6_pairs[k] == cnt[k]);  // the same pairs in the same bins, exactly
        if (cnt[k] == 0) {
            REQUIRE(std::isnan(r.g6[k]));
            continue;
        }
        ++filled;
        // summed in another order: equal to rounding (1e-12 of the summands' scale)
        REQUIRE(std::abs(r.g6[k] - sum[k] / cnt[k]) <= 1e-12 * scale[k] / cnt[k]);
    }
    REQUIRE(filled >= nb - 2);
}
