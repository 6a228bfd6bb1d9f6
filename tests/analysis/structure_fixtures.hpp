// SPDX-License-Identifier: GPL-3.0-or-later
// Fixture of the structure analyses' thread tests: frames of uniformly random disks.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <utility>
#include <vector>

#include "vibra/core/trajectory_source.hpp"

namespace vibra::test {

/// T frames of uniformly random points in g's bounding box, count(f) in frame f (ids 0…, species
/// alternating small/large), with the species diameters given: a different count in every frame
/// makes the frame batches of a threaded analysis end part-full.
inline InMemorySource random_frames(const Geometry& g, std::int64_t T,
                                    const std::function<std::int64_t(std::int64_t)>& count,
                                    std::uint64_t seed, std::vector<double> diameters = {1.0, 1.4}) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(0, 1);
    Trajectory t;
    t.meta.geometry = g;
    t.meta.species_diameters = std::move(diameters);
    for (std::int64_t f = 0; f < T; ++f)
        for (std::int64_t i = 0; i < count(f); ++i)
            t.rows.push(f, i, g.x0 + g.lx() * u(rng), g.y0 + g.ly() * u(rng),
                        static_cast<std::int8_t>(i % 2));
    t.index = build_frame_index(t.rows, 0, T);
    return InMemorySource(std::move(t));
}

}  // namespace vibra::test
