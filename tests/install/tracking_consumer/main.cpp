// Links every exported vibra target from an installed package: renders three disks
// (vibra::tracking), locates them (OpenCV imgproc, a link-only dependency of the static
// library), and prints how many were found and the largest position error in px.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "vibra/core/version.hpp"
#include "vibra/tracking/detect.hpp"
#include "vibra/tracking/synth.hpp"

int main() {
    const std::vector<vibra::tracking::Disk> disks{{30.25, 40.5, 8}, {80.0, 90.75, 8}, {95.5, 30.0, 8}};
    vibra::tracking::RenderParams rp;
    rp.width = rp.height = 128;
    vibra::tracking::DetectParams dp;
    dp.radii = {8};
    const auto found = vibra::tracking::locate(vibra::tracking::render_frame(disks, rp), dp);
    double worst = 0;
    for (const auto& d : disks) {
        double best = 1e9;
        for (const auto& f : found) best = std::min(best, std::hypot(f.x - d.x, f.y - d.y));
        worst = std::max(worst, best);
    }
    std::printf("vibra %s: %zu disks found, worst error %s 0.05 px\n", vibra::version(), found.size(),
                worst < 0.05 ? "below" : "above");
    return found.size() == disks.size() && worst < 0.05 ? 0 : 1;
}
