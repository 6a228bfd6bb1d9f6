// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/core/dense.hpp"

#include <algorithm>
#include <limits>

namespace vibra {

DenseBlock dense_block(const TrajectoryTable& t, const FrameIndex& idx, std::span<const std::int64_t> ids,
                       std::int64_t first, std::int64_t n) {
    constexpr double nan = std::numeric_limits<double>::quiet_NaN();
    DenseBlock b;
    b.first_frame = first;
    b.n_frames = n;
    b.ids.assign(ids.begin(), ids.end());
    const std::size_t N = ids.size();
    const std::size_t cells = static_cast<std::size_t>(n) * N;
    b.x.assign(cells, nan);
    b.y.assign(cells, nan);
    const bool vel = t.has_velocity();
    if (vel) {
        b.vx.assign(cells, nan);
        b.vy.assign(cells, nan);
    }
    // species votes per slot: counts of small / large
    std::vector<std::int64_t> n_small(N, 0), n_large(N, 0);
    for (std::int64_t f = std::max(first, idx.first_frame);
         f < std::min(first + n, idx.first_frame + idx.n_frames()); ++f) {
        const auto tb = static_cast<std::size_t>(f - first);
        for (auto r = static_cast<std::size_t>(idx.begin(f)); r < static_cast<std::size_t>(idx.end(f)); ++r) {
            const auto it = std::lower_bound(ids.begin(), ids.end(), t.particle[r]);
            if (it == ids.end() || *it != t.particle[r]) continue;
            const auto i = static_cast<std::size_t>(it - ids.begin());
            const std::size_t c = tb * N + i;
            b.x[c] = t.x[r];
            b.y[c] = t.y[r];
            if (vel) {
                b.vx[c] = t.vx[r];
                b.vy[c] = t.vy[r];
            }
            if (t.species[r] == kSpeciesSmall) ++n_small[i];
            if (t.species[r] == kSpeciesLarge) ++n_large[i];
        }
    }
    b.species.resize(N);
    for (std::size_t i = 0; i < N; ++i)
        b.species[i] = n_small[i] == 0 && n_large[i] == 0 ? kSpeciesUnknown
                       : n_large[i] > n_small[i]          ? kSpeciesLarge
                                                          : kSpeciesSmall;
    return b;
}

}  // namespace vibra
