// SPDX-License-Identifier: GPL-3.0-or-later
// Dense view of a trajectory block: positions[t][i] for fixed particle slots, NaN where the
// particle is absent. Built on demand, block by block, for analyses that need fixed N
// (H5MD's `position/value[T][N][2]` shape).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "vibra/core/trajectory.hpp"

namespace vibra {

struct DenseBlock {
    std::int64_t first_frame = 0;
    std::int64_t n_frames = 0;
    std::vector<std::int64_t> ids;     ///< particle id of each slot (N = ids.size())
    std::vector<double> x, y;          ///< [t * N + i], NaN where absent
    std::vector<double> vx, vy;        ///< same shape, only when the table has velocities
    std::vector<std::int8_t> species;  ///< per slot: the slot's most frequent species

    std::size_t n_particles() const { return ids.size(); }
    std::size_t at(std::int64_t t, std::size_t i) const {
        return static_cast<std::size_t>(t) * ids.size() + i;
    }
};

/// Dense block of frames [first, first+n) for the given particle ids (sorted ascending), taken
/// from a sorted table and its index. Frames outside the index are left NaN.
DenseBlock dense_block(const TrajectoryTable& t, const FrameIndex& idx, std::span<const std::int64_t> ids,
                       std::int64_t first, std::int64_t n);

}  // namespace vibra
