// SPDX-License-Identifier: GPL-3.0-or-later
// Registration of the subcommands added by later modules (tracking, analysis).
#include "commands.hpp"

namespace vibra::app {

#ifndef VIBRA_HAVE_TRACKING
bool print_video_info(const std::string&, std::ostream&) { return false; }
#endif

void register_extra_commands([[maybe_unused]] CLI::App& app, [[maybe_unused]] GlobalOptions& g) {
    register_report(app, g);
#ifdef VIBRA_HAVE_TRACKING
    register_convert(app, g);
    register_synth(app, g);
    register_render(app, g);
    register_track(app, g);  // vibra track
    register_batch(app, g);  // vibra batch (cmd_tracking_batch.cpp)
#endif
}

}  // namespace vibra::app
