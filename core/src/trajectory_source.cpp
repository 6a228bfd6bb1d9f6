// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/core/trajectory_source.hpp"

#include <algorithm>

#include "vibra/core/error.hpp"

namespace vibra {

InMemorySource::InMemorySource(Trajectory t) : t_(std::move(t)) {
    if (t_.index.first_frame != 0 || t_.index.offsets.back() != static_cast<std::int64_t>(t_.rows.size()))
        throw ParameterError("InMemorySource: the index must cover all rows from frame 0");
}

Trajectory InMemorySource::read_frames(std::int64_t first, std::int64_t count) const {
    first = std::clamp<std::int64_t>(first, 0, n_frames());
    count = std::clamp<std::int64_t>(count, 0, n_frames() - first);
    Trajectory out;
    out.meta = t_.meta;
    const auto r0 = static_cast<std::size_t>(t_.index.offsets[static_cast<std::size_t>(first)]);
    const auto r1 = static_cast<std::size_t>(t_.index.offsets[static_cast<std::size_t>(first + count)]);
    out.rows = t_.rows.slice(r0, r1);
    out.index = build_frame_index(out.rows, first, count);
    auto slice = [&](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        if (v.empty()) return V{};
        return V(v.begin() + first, v.begin() + first + count);
    };
    out.frames.time_s = slice(t_.frames.time_s);
    out.frames.timestep = slice(t_.frames.timestep);
    out.frames.image_number = slice(t_.frames.image_number);
    return out;
}

std::int64_t InMemorySource::rows_in(std::int64_t first, std::int64_t count) const {
    first = std::clamp<std::int64_t>(first, 0, n_frames());
    count = std::clamp<std::int64_t>(count, 0, n_frames() - first);
    return t_.index.offsets[static_cast<std::size_t>(first + count)] -
           t_.index.offsets[static_cast<std::size_t>(first)];
}

std::int64_t frames_per_block(const TrajectorySource& s, std::int64_t target_rows) {
    const auto T = s.n_frames();
    if (T == 0) return 1;
    const double per_frame = std::max(1.0, static_cast<double>(s.n_rows()) / static_cast<double>(T));
    target_rows = std::min(target_rows, s.max_block_rows());
    return std::clamp<std::int64_t>(static_cast<std::int64_t>(static_cast<double>(target_rows) / per_frame),
                                    1, T);
}

}  // namespace vibra
