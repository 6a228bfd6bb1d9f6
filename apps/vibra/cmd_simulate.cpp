// SPDX-License-Identifier: GPL-3.0-or-later
// `vibra simulate -o OUT.h5` — a bi-disperse soft-disk "Brownian vibrator" trajectory from the
// core simulator (periodic box, velocities included), for trying the analyses without a video.
#include <iostream>

#include "commands.hpp"
#include "vibra/core/error.hpp"
#include "vibra/core/progress.hpp"
#include "vibra/core/soft_disk.hpp"
#include "vibra/core/version.hpp"
#include "vibra/store/trajectory_file.hpp"

namespace vibra::app {

void register_simulate(CLI::App& app, GlobalOptions& g) {
    struct Opts {
        std::string output;
        SoftDiskParams p;
        std::int64_t frames = 500, equilibrate = 200;
        bool walls = false;
    };
    auto o = std::make_shared<Opts>();
    auto* cmd = app.add_subcommand(
        "simulate", "Simulate a bi-disperse soft-disk monolayer (units sigma, tau) into a trajectory file");
    cmd->add_option("-o,--output", o->output, "Output HDF5 trajectory file")->required();
    cmd->add_option("--n-small", o->p.n_small, "Number of small disks")->capture_default_str();
    cmd->add_option("--n-large", o->p.n_large, "Number of large disks")->capture_default_str();
    cmd->add_option("--diameter-large", o->p.diameter_large, "Large diameter (small = 1 sigma)")
        ->capture_default_str();
    cmd->add_option("--packing-fraction", o->p.packing_fraction, "Area fraction")->capture_default_str();
    cmd->add_option("--temperature", o->p.temperature, "Noise temperature (small-disk mass = 1)")
        ->capture_default_str();
    cmd->add_option("--friction", o->p.friction, "Damping rate, 1/tau")->capture_default_str();
    cmd->add_option("--active-speed", o->p.active_speed, "Self-propulsion speed v0, sigma/tau")
        ->capture_default_str();
    cmd->add_option("--dt", o->p.dt, "Integration step, tau")->capture_default_str();
    cmd->add_option("--steps-per-frame", o->p.steps_per_frame, "Integration steps per recorded frame")
        ->capture_default_str();
    cmd->add_option("--frames", o->frames, "Recorded frames")->capture_default_str();
    cmd->add_option("--equilibrate", o->equilibrate, "Unrecorded frames first")->capture_default_str();
    cmd->add_option("--seed", o->p.seed, "Random seed")->capture_default_str();
    cmd->add_flag("--walls", o->walls, "Walled box (non-periodic window) instead of a periodic box");
    cmd->callback([o, &g] {
        if (o->frames < 1) throw ParameterError("--frames must be >= 1");
        auto done = std::make_shared<std::int64_t>(0);
        on_interrupt(g, [o, done] {
            return "after " + std::to_string(*done) + " of " + std::to_string(o->frames) +
                   " frames; kept: nothing (" + o->output + " not written)";
        });
        o->p.periodic = !o->walls;
        SoftDiskSimulator sim(o->p);
        sim.advance_frames(o->equilibrate);
        Metadata meta = sim.metadata();
        meta.source.vibra_version = vibra::version();
        meta.source.parameters = g.command_line;
        store::ColumnSet cs;
        cs.velocity = true;
        store::TrajectoryWriter w(o->output, meta, cs);
        Progress progress("simulate", o->frames, g.progress());
        for (std::int64_t f = 0; f < o->frames; ++f) {
            if (f > 0) sim.advance_frames(1);
            TrajectoryTable rows;
            sim.record(rows, f);
            w.append(rows, 1);
            *done = f + 1;
            progress.update(f + 1);
        }
        progress.finish();
        w.commit();
        if (!g.quiet)
            std::cout << "simulated " << o->frames << " frames of " << sim.x().size() << " disks → "
                      << o->output << "\n";
    });
}

}  // namespace vibra::app
