// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/core/soft_disk.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "vibra/core/error.hpp"

namespace vibra {

void SoftDiskParams::validate() const {
    auto bad = [](const std::string& f, double v, const char* rule) {
        throw ParameterError("soft-disk simulator: " + f + " must be " + rule + ", got " + std::to_string(v));
    };
    if (n_small < 0) bad("n_small", double(n_small), ">= 0");
    if (n_large < 0) bad("n_large", double(n_large), ">= 0");
    if (n_small + n_large == 0) bad("n_small + n_large", 0, "> 0");
    if (!(diameter_small > 0)) bad("diameter_small", diameter_small, "> 0");
    if (!(diameter_large > 0)) bad("diameter_large", diameter_large, "> 0");
    if (box_width == 0 && !(packing_fraction > 0 && packing_fraction < 0.9))
        bad("packing_fraction", packing_fraction, "in (0, 0.9)");
    if (box_width < 0 || box_height < 0) bad("box_width/box_height", std::min(box_width, box_height), ">= 0");
    if (!(dt > 0)) bad("dt", dt, "> 0");
    if (steps_per_frame < 1) bad("steps_per_frame", double(steps_per_frame), ">= 1");
    if (!(stiffness > 0)) bad("stiffness", stiffness, "> 0");
    if (restitution_damping < 0) bad("restitution_damping", restitution_damping, ">= 0");
    if (friction < 0) bad("friction", friction, ">= 0");
    if (temperature < 0) bad("temperature", temperature, ">= 0");
    if (rotational_diffusion < 0) bad("rotational_diffusion", rotational_diffusion, ">= 0");
}

SoftDiskSimulator::SoftDiskSimulator(const SoftDiskParams& p) : p_(p), rng_(p.seed) {
    p_.validate();
    const auto n = static_cast<std::size_t>(p_.n_small + p_.n_large);
    const double area = static_cast<double>(p_.n_small) * M_PI * p_.diameter_small * p_.diameter_small / 4 +
                        static_cast<double>(p_.n_large) * M_PI * p_.diameter_large * p_.diameter_large / 4;
    double w = p_.box_width, h = p_.box_height;
    if (w == 0 || h == 0) w = h = std::sqrt(area / p_.packing_fraction);
    geom_ = p_.periodic ? Geometry::periodic(0, 0, w, h) : Geometry::rect(0, 0, w, h);

    // Species in random order; mass ∝ d² (disks cut from one sheet), small disk mass = 1.
    s_.assign(n, kSpeciesSmall);
    std::fill(s_.begin() + p_.n_small, s_.end(), kSpeciesLarge);
    std::shuffle(s_.begin(), s_.end(), rng_);
    d_.resize(n);
    m_.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
        d_[i] = s_[i] == kSpeciesLarge ? p_.diameter_large : p_.diameter_small;
        m_[i] = (d_[i] / p_.diameter_small) * (d_[i] / p_.diameter_small);
    }
    // Lattice start: a square grid fine enough for n sites; overlaps at high density are removed
    // by the soft repulsion during equilibration (caller's equilibrate_frames).
    const auto nx = static_cast<std::size_t>(std::ceil(std::sqrt(double(n) * w / h)));
    const auto ny = (n + nx - 1) / nx;
    const double ax = w / double(nx), ay = h / double(ny);
    std::uniform_real_distribution<double> jit(-0.05, 0.05);
    std::normal_distribution<double> g(0.0, 1.0);
    std::uniform_real_distribution<double> ang(0.0, 2 * M_PI);
    x_.resize(n), y_.resize(n), vx_.resize(n), vy_.resize(n), theta_.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
        x_[i] = (double(i % nx) + 0.5 + jit(rng_)) * ax;
        y_[i] = (double(i / nx) + 0.5 + jit(rng_)) * ay;
        const double sd = std::sqrt(p_.temperature / m_[i]);
        vx_[i] = sd * g(rng_);
        vy_[i] = sd * g(rng_);
        theta_[i] = ang(rng_);
    }
    fx_.assign(n, 0.0);
    fy_.assign(n, 0.0);
    forces();
}

void SoftDiskSimulator::forces() {
    std::fill(fx_.begin(), fx_.end(), 0.0);
    std::fill(fy_.begin(), fy_.end(), 0.0);
    const double dmax = std::max(p_.diameter_small, p_.diameter_large);
    CellList cl(x_, y_, dmax, geom_);
    cl.for_each_pair([&](std::size_t i, std::size_t j, double dx, double dy, double r2) {
        const double sigma = 0.5 * (d_[i] + d_[j]);
        if (r2 >= sigma * sigma || r2 == 0) return;
        const double r = std::sqrt(r2);
        const double nx = dx / r, ny = dy / r;  // unit vector i → j
        const double overlap = sigma - r;
        const double vn = (vx_[j] - vx_[i]) * nx + (vy_[j] - vy_[i]) * ny;  // > 0 separating
        // Spring pushes apart; dashpot on the normal relative velocity makes contacts inelastic.
        const double fn = p_.stiffness * overlap - p_.restitution_damping * vn;
        fx_[i] -= fn * nx, fy_[i] -= fn * ny;
        fx_[j] += fn * nx, fy_[j] += fn * ny;
    });
    if (!p_.periodic) {  // walls with the same spring
        for (std::size_t i = 0; i < x_.size(); ++i) {
            const double r = 0.5 * d_[i];
            if (x_[i] - r < geom_.x0) fx_[i] += p_.stiffness * (geom_.x0 - (x_[i] - r));
            if (x_[i] + r > geom_.x1) fx_[i] -= p_.stiffness * (x_[i] + r - geom_.x1);
            if (y_[i] - r < geom_.y0) fy_[i] += p_.stiffness * (geom_.y0 - (y_[i] - r));
            if (y_[i] + r > geom_.y1) fy_[i] -= p_.stiffness * (y_[i] + r - geom_.y1);
        }
    }
}

void SoftDiskSimulator::step(std::int64_t nsteps) {
    std::normal_distribution<double> g(0.0, 1.0);
    const double dt = p_.dt;
    for (std::int64_t s = 0; s < nsteps; ++s) {
        // Velocity Verlet for the conservative + dashpot part, Euler–Maruyama for friction,
        // noise and propulsion (first order in dt, which is all a driven granular model needs).
        for (std::size_t i = 0; i < x_.size(); ++i) {
            const double kick = std::sqrt(2.0 * p_.friction * p_.temperature * dt / m_[i]);
            const double ax = fx_[i] / m_[i] - p_.friction * vx_[i];
            const double ay = fy_[i] / m_[i] - p_.friction * vy_[i];
            vx_[i] += ax * dt + kick * g(rng_);
            vy_[i] += ay * dt + kick * g(rng_);
            if (p_.active_speed > 0) {
                vx_[i] += p_.friction * p_.active_speed * std::cos(theta_[i]) * dt;
                vy_[i] += p_.friction * p_.active_speed * std::sin(theta_[i]) * dt;
                theta_[i] += std::sqrt(2.0 * p_.rotational_diffusion * dt) * g(rng_);
            }
            x_[i] += vx_[i] * dt;
            y_[i] += vy_[i] * dt;
        }
        forces();
        time_ += dt;
    }
}

void SoftDiskSimulator::advance_frames(std::int64_t n) { step(n * p_.steps_per_frame); }

void SoftDiskSimulator::record(TrajectoryTable& out, std::int64_t frame) const {
    const bool first = out.empty();
    for (std::size_t i = 0; i < x_.size(); ++i) {
        out.push(frame, static_cast<std::int64_t>(i), x_[i], y_[i], s_[i]);
        if (first || out.has_velocity()) {
            out.vx.push_back(vx_[i]);
            out.vy.push_back(vy_[i]);
        }
    }
}

Metadata SoftDiskSimulator::metadata() const {
    Metadata m;
    m.length_unit = "sigma";
    m.time_unit = "tau";
    m.frame_interval = p_.dt * static_cast<double>(p_.steps_per_frame);
    m.coordinate_convention = "simulation";
    m.geometry = geom_;
    m.species_diameters = {p_.diameter_small, p_.diameter_large};
    m.source.parameters = "soft-disk simulator seed=" + std::to_string(p_.seed);
    return m;
}

Trajectory SoftDiskSimulator::run(std::int64_t n_frames, std::int64_t equilibrate_frames) {
    advance_frames(equilibrate_frames);
    Trajectory t;
    t.meta = metadata();
    t.rows.reserve(static_cast<std::size_t>(n_frames) * x_.size());
    for (std::int64_t f = 0; f < n_frames; ++f) {
        if (f > 0) advance_frames(1);
        record(t.rows, f);
    }
    t.index = build_frame_index(t.rows, 0, n_frames);
    return t;
}

double SoftDiskSimulator::max_overlap() const {
    double worst = 0;
    const double dmax = std::max(p_.diameter_small, p_.diameter_large);
    CellList cl(x_, y_, dmax, geom_);
    cl.for_each_pair([&](std::size_t i, std::size_t j, double, double, double r2) {
        worst = std::max(worst, 0.5 * (d_[i] + d_[j]) - std::sqrt(r2));
    });
    return worst;
}

}  // namespace vibra
