// SPDX-License-Identifier: GPL-3.0-or-later
// The hand-checked discs of the real particletracker frames 0–8 (tests/tracking/data/
// particletracker_discs_truth.csv, README beside it: 72 discs with centres in the ROI x 142–1082,
// y 30–846 in every frame, 34 small + 38 large, centres good to 1–4 px), and the one-to-one
// matching of detections to them (closest pairs first, within `tol` px) that the detection and
// pipeline tests score with.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace vibra::test {

struct TruthDisc {
    double x, y;
    int cls;  ///< 0 small, 1 large
};

/// The discs inside the ROI, per frame (9 frames of 72); REQUIREs the file's shape.
inline std::vector<std::vector<TruthDisc>> discs_truth() {
    std::vector<std::vector<TruthDisc>> truth(9);
    std::ifstream in(std::filesystem::path(VIBRA_SOURCE_DIR) /
                     "tests/tracking/data/particletracker_discs_truth.csv");
    REQUIRE(in.good());
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {
        int f = 0, cls = 0, roi = 0;
        double x = 0, y = 0, r = 0;
        REQUIRE(std::sscanf(line.c_str(), "%d,%lf,%lf,%lf,%d,%d", &f, &x, &y, &r, &cls, &roi) == 6);
        REQUIRE((f >= 0 && f < 9));
        if (roi) truth[static_cast<std::size_t>(f)].push_back({x, y, cls});
    }
    for (const auto& t : truth) REQUIRE(t.size() == 72);
    return truth;
}

inline bool in_discs_roi(double x, double y) { return x >= 142 && x <= 1082 && y >= 30 && y <= 846; }

/// Truth discs matched one to one to `n` detections at xy(j) = {x, y}, closest pairs first,
/// within `tol` px: the accepted (truth row, detection) pairs in that order, and each
/// detection's truth row (−1: unmatched).
struct DiscMatching {
    std::vector<std::pair<std::size_t, std::size_t>> pairs;
    std::vector<int> truth_of_detection;
};

template <class XY>
DiscMatching match_discs_closest_first(const std::vector<TruthDisc>& truth, std::size_t n, XY xy,
                                       double tol) {
    struct Pair {
        double d;
        std::size_t i, j;
    };
    std::vector<Pair> cand;
    for (std::size_t i = 0; i < truth.size(); ++i)
        for (std::size_t j = 0; j < n; ++j) {
            const auto [x, y] = xy(j);
            const double d = std::hypot(truth[i].x - x, truth[i].y - y);
            if (d <= tol) cand.push_back({d, i, j});
        }
    std::sort(cand.begin(), cand.end(), [](const Pair& a, const Pair& b) { return a.d < b.d; });
    std::vector<char> truth_used(truth.size(), 0);
    DiscMatching m;
    m.truth_of_detection.assign(n, -1);
    for (const auto& c : cand)
        if (!truth_used[c.i] && m.truth_of_detection[c.j] < 0) {
            truth_used[c.i] = 1;
            m.truth_of_detection[c.j] = static_cast<int>(c.i);
            m.pairs.emplace_back(c.i, c.j);
        }
    return m;
}

}  // namespace vibra::test
