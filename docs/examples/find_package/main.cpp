// Reads a vibra trajectory file and prints its mean square displacement at lags 0 … 4 frames.
#include <cstdio>
#include <exception>

#include "vibra/analysis/msd.hpp"
#include "vibra/store/trajectory_file.hpp"

int main(int argc, char** argv) try {
    if (argc != 2) return std::fprintf(stderr, "usage: %s TRAJECTORIES.h5\n", argv[0]), 2;
    const vibra::store::TrajectoryReader file(argv[1]);  // validates; reads frame blocks on demand
    vibra::analysis::MsdParams p;
    p.max_lag = 4;                                                                   // frames
    p.vanhove_lags = {};                                                             // MSD only
    const auto g = to_group(vibra::analysis::compute_msd(file, p), p, file.meta());  // /analysis/msd
    const auto& lag = std::get<std::vector<double>>(g.find("lag")->data);
    const auto& msd = std::get<std::vector<double>>(g.find("msd")->data);
    std::printf("lag [%s], msd [%s^2]\n", file.meta().time_unit.c_str(), file.meta().length_unit.c_str());
    for (std::size_t i = 0; i < lag.size(); ++i) std::printf("%g %.6g\n", lag[i], msd[i]);
} catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
}
