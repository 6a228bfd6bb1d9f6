// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/analysis/covariance_vdos.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <map>

#include "detail/parallel.hpp"
#include "vibra/analysis/currents.hpp"
#include "vibra/core/error.hpp"
#include "vibra/core/periodic.hpp"

namespace vibra::analysis {

void CovarianceVdosParams::validate() const {
    if (!(temperature >= 0))
        throw ParameterError("CovarianceVdosParams.temperature must be >= 0, got " +
                             std::to_string(temperature));
    if (bins < 1) throw ParameterError("CovarianceVdosParams.bins must be >= 1, got " + std::to_string(bins));
}

namespace {

using Eigen::Index;

/// Pass 1: the ids of the particles present (finite position) in every frame, ascending; their
/// slots (row 2s, 2s + 1 of the covariance matrix) in slot.
std::vector<std::int64_t> present_in_every_frame(const TrajectorySource& src, std::int64_t fpb,
                                                 std::map<std::int64_t, std::size_t>& slot) {
    const std::int64_t T = src.n_frames();
    std::map<std::int64_t, std::int64_t> count;
    for (std::int64_t b = 0; b < T; b += fpb) {
        const Trajectory t = src.read_frames(b, std::min(fpb, T - b));
        for (std::size_t i = 0; i < t.rows.size(); ++i)
            if (t.rows.particle[i] >= 0 && std::isfinite(t.rows.x[i]) && std::isfinite(t.rows.y[i]))
                ++count[t.rows.particle[i]];
    }
    std::vector<std::int64_t> ids;
    for (const auto& [id, c] : count)
        if (c == T) {
            slot[id] = ids.size();
            ids.push_back(id);
        }
    return ids;
}

/// Pass 2: displacements (minimum image relative to the first frame) → Σd, Σddᵀ in batches of
/// frames, and the kinetic energy of the frames with velocities; then the mass-weighted
/// covariance M^{1/2} (⟨ddᵀ⟩ − ⟨d⟩⟨d⟩ᵀ) M^{1/2}.
class DisplacementCovariance {
public:
    DisplacementCovariance(const TrajectorySource& src, const CovarianceVdosParams& p,
                           const std::map<std::int64_t, std::size_t>& slot)
        : p_(p),
          slot_(slot),
          N_(slot.size()),
          n2_(static_cast<Index>(2 * N_)),
          masses_(species_masses(src.meta())),
          m_(N_, 1.0),
          periodic_(src.meta().geometry.periodic()),
          Lx_(src.meta().geometry.lx()),
          Ly_(src.meta().geometry.ly()),
          C_(Eigen::MatrixXd::Zero(n2_, n2_)),
          S_(Eigen::VectorXd::Zero(n2_)),
          ref_(2 * N_, NAN) {}

    /// Frames are read in blocks of `fpb` and summed in batches of kBatch frames whatever the block
    /// size (the sums, and so the result, do not depend on the memory budget that sets `fpb`).
    void accumulate(const TrajectorySource& src, std::int64_t fpb) {
        const std::int64_t T = src.n_frames();
        Eigen::MatrixXd D(n2_, std::min<std::int64_t>(kBatch, std::max<std::int64_t>(T, 1)));
        Index filled = 0;
        auto flush = [&] {
            if (filled == 0) return;
            S_ += D.leftCols(filled).rowwise().sum();
            rank_update(D.leftCols(filled));
            done_ += filled;
            filled = 0;
        };
        for (std::int64_t b = 0; b < T; b += fpb) {
            const std::int64_t cnt = std::min(fpb, T - b);
            const Trajectory t = src.read_frames(b, cnt);
            for (std::int64_t f = b; f < b + cnt; ++f) {
                D.col(filled++) = frame(t, f);
                if (filled == D.cols()) flush();
            }
        }
        flush();
    }

    /// C's lower triangle += D Dᵀ, by column panels of kPanel (fixed, whatever the thread count):
    /// panel j gets rows j0… of D times the panel's rows of D, as one product computed by one
    /// thread, so the sums are identical for any count. (The strict upper part of a panel's
    /// diagonal block is written too; covariance() overwrites it from the lower triangle.)
    template <class Block>
    void rank_update(const Block& D) {
        const Index panels = (n2_ + kPanel - 1) / kPanel;
        detail::parallel_for_each(static_cast<std::size_t>(panels), p_.threads, [&](std::size_t j, int) {
            const Index j0 = static_cast<Index>(j) * kPanel, w = std::min(kPanel, n2_ - j0);
            C_.block(j0, j0, n2_ - j0, w).noalias() +=
                D.middleRows(j0, n2_ - j0) * D.middleRows(j0, w).transpose();
        });
    }

    Eigen::MatrixXd covariance() {
        C_.triangularView<Eigen::StrictlyUpper>() = C_.transpose();
        const double Td = static_cast<double>(done_);
        C_ = C_ / Td - (S_ / Td) * (S_ / Td).transpose();
        Eigen::VectorXd sq(n2_);
        for (std::size_t s = 0; s < N_; ++s)
            sq[static_cast<Index>(2 * s)] = sq[static_cast<Index>(2 * s + 1)] = std::sqrt(m_[s]);
        C_ = sq.asDiagonal() * C_ * sq.asDiagonal();
        return C_;
    }

    double kinetic() const { return kin_; }
    std::int64_t kinetic_frames() const { return kin_frames_; }

private:
    /// The displacement vector d of frame f (and its kinetic energy when it has velocities).
    Eigen::VectorXd frame(const Trajectory& t, std::int64_t f) {
        Eigen::VectorXd d(n2_);
        Eigen::VectorXd v = Eigen::VectorXd::Zero(n2_);
        const bool vel = t.rows.has_velocity();
        for (std::int64_t i = t.index.begin(f); i < t.index.end(f); ++i) {
            const auto it = slot_.find(t.rows.particle[static_cast<std::size_t>(i)]);
            if (it == slot_.end()) continue;
            const std::size_t s = it->second;
            const double x = t.rows.x[static_cast<std::size_t>(i)], y = t.rows.y[static_cast<std::size_t>(i)];
            if (std::isnan(ref_[2 * s])) {
                ref_[2 * s] = x;
                ref_[2 * s + 1] = y;
                const int sp = t.rows.species[static_cast<std::size_t>(i)];
                if (p_.mass_weighted && sp >= 0 && static_cast<std::size_t>(sp) < masses_.size())
                    m_[s] = masses_[static_cast<std::size_t>(sp)];
            }
            double dx = x - ref_[2 * s], dy = y - ref_[2 * s + 1];
            if (periodic_) {
                dx = minimum_image(dx, Lx_);
                dy = minimum_image(dy, Ly_);
            }
            d[static_cast<Index>(2 * s)] = dx;
            d[static_cast<Index>(2 * s + 1)] = dy;
            if (vel) {
                v[static_cast<Index>(2 * s)] = t.rows.vx[static_cast<std::size_t>(i)];
                v[static_cast<Index>(2 * s + 1)] = t.rows.vy[static_cast<std::size_t>(i)];
            }
        }
        if (p_.subtract_com) subtract_com(d, v);
        if (vel) {
            double e = 0;
            for (std::size_t s = 0; s < N_; ++s)
                e += m_[s] * (v[static_cast<Index>(2 * s)] * v[static_cast<Index>(2 * s)] +
                              v[static_cast<Index>(2 * s + 1)] * v[static_cast<Index>(2 * s + 1)]);
            kin_ += e;
            ++kin_frames_;
        }
        return d;
    }

    /// Subtracts the mass-weighted mean displacement and velocity.
    void subtract_com(Eigen::VectorXd& d, Eigen::VectorXd& v) const {
        double mx = 0, my = 0, vx = 0, vy = 0, ms = 0;
        for (std::size_t s = 0; s < N_; ++s) {
            mx += m_[s] * d[static_cast<Index>(2 * s)];
            my += m_[s] * d[static_cast<Index>(2 * s + 1)];
            vx += m_[s] * v[static_cast<Index>(2 * s)];
            vy += m_[s] * v[static_cast<Index>(2 * s + 1)];
            ms += m_[s];
        }
        for (std::size_t s = 0; s < N_; ++s) {
            d[static_cast<Index>(2 * s)] -= mx / ms;
            d[static_cast<Index>(2 * s + 1)] -= my / ms;
            v[static_cast<Index>(2 * s)] -= vx / ms;
            v[static_cast<Index>(2 * s + 1)] -= vy / ms;
        }
    }

    const CovarianceVdosParams& p_;
    const std::map<std::int64_t, std::size_t>& slot_;
    const std::size_t N_;
    const Index n2_;
    const std::vector<double> masses_;
    std::vector<double> m_;  ///< per slot: the mass (species of the first frame seen; 1 unweighted)
    const bool periodic_;
    const double Lx_, Ly_;
    static constexpr std::int64_t kBatch = 256;
    static constexpr Index kPanel = 64;  ///< columns of C per task of rank_update
    Eigen::MatrixXd C_;
    Eigen::VectorXd S_;
    std::vector<double> ref_;  ///< per slot: the first position
    double kin_ = 0;
    std::int64_t kin_frames_ = 0, done_ = 0;
};

/// The temperature of ω² = T/λ: the parameter, else equipartition of the velocities, else 1.
void set_temperature(CovarianceVdosResult& r, const CovarianceVdosParams& p, std::size_t N, double kin,
                     std::int64_t kin_frames) {
    const double dof = static_cast<double>(2 * N) - (p.subtract_com ? 2.0 : 0.0);
    if (p.temperature > 0) {
        r.temperature = p.temperature;
        r.temperature_source = "parameter";
    } else if (kin_frames > 0) {
        r.temperature = kin / (static_cast<double>(kin_frames) * dof);
        r.temperature_source = "velocities (equipartition over 2N" +
                               std::string(p.subtract_com ? " - 2" : "") + " degrees of freedom)";
    } else {
        r.temperature = 1;
        r.temperature_source = "unit (no velocities): omega in units of sqrt(k_B T / m0)";
    }
}

/// Eigenmodes of C: ω = sqrt(T/λ) ascending, their participation ratios; the (near) zero modes skipped.
void modes(CovarianceVdosResult& r, const Eigen::MatrixXd& C, std::size_t N) {
    const Index n2 = C.rows();
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(C);
    const Eigen::VectorXd lam = es.eigenvalues();
    const double lmax = lam.maxCoeff();
    // descending λ = ascending ω; skip the (near) zero modes
    for (Index j = n2 - 1; j >= 0; --j) {
        if (!(lam[j] > 1e-10 * lmax)) continue;
        r.eigenvalues.push_back(lam[j]);
        r.omega.push_back(std::sqrt(r.temperature / lam[j]));
        const Eigen::VectorXd e = es.eigenvectors().col(j);
        double s2 = 0, s4 = 0;
        for (std::size_t s = 0; s < N; ++s) {
            const double a = e[static_cast<Index>(2 * s)] * e[static_cast<Index>(2 * s)] +
                             e[static_cast<Index>(2 * s + 1)] * e[static_cast<Index>(2 * s + 1)];
            s2 += a;
            s4 += a * a;
        }
        r.participation.push_back(s2 * s2 / (static_cast<double>(N) * s4));
    }
}

/// The normalised histogram of ω in `bins` bins up to the largest ω.
void histogram(CovarianceVdosResult& r, std::int64_t bins) {
    const double wmax = r.omega.empty() ? 1.0 : r.omega.back() * (1 + 1e-9);
    const auto nb = static_cast<std::size_t>(bins);
    const double bw = wmax / static_cast<double>(nb);
    r.vdos.assign(nb, 0.0);
    for (std::size_t b = 0; b < nb; ++b) r.omega_bins.push_back((static_cast<double>(b) + 0.5) * bw);
    for (double w : r.omega)
        r.vdos[std::min(nb - 1, static_cast<std::size_t>(w / bw))] +=
            1.0 / (static_cast<double>(r.omega.size()) * bw);
}

}  // namespace

// Steps: particles present throughout → displacement covariance → temperature → modes → histogram.
CovarianceVdosResult compute_covariance_vdos(const TrajectorySource& src, const CovarianceVdosParams& p) {
    p.validate();
    const std::int64_t T = src.n_frames();
    CovarianceVdosResult r;
    r.params = p;
    r.n_frames = T;
    const std::int64_t fpb = std::max<std::int64_t>(1, frames_per_block(src, 1 << 20));
    std::map<std::int64_t, std::size_t> slot;
    r.particle_ids = present_in_every_frame(src, fpb, slot);
    const std::size_t N = r.particle_ids.size();
    r.n_particles = static_cast<std::int64_t>(N);
    if (N < 2)
        throw Error("covariance_vdos: fewer than 2 particles are present in every frame (" +
                    std::to_string(N) + ")");
    const std::int64_t need = 10 * 2 * static_cast<std::int64_t>(N);
    if (T < need && !p.force)
        throw Error("covariance_vdos: " + std::to_string(N) +
                    " particles present in every frame need >= 10 x 2N = " + std::to_string(need) +
                    " frames, the trajectory has " + std::to_string(T) +
                    " (with fewer, sampling noise dominates the spectrum); pass --covariance-vdos-force to "
                    "compute anyway");
    DisplacementCovariance dc(src, p, slot);
    dc.accumulate(src, fpb);
    const Eigen::MatrixXd C = dc.covariance();
    set_temperature(r, p, N, dc.kinetic(), dc.kinetic_frames());
    modes(r, C, N);
    histogram(r, p.bins);
    return r;
}

ResultGroup to_group(const CovarianceVdosResult& r, const Metadata& meta) {
    const std::string L = meta.length_unit, T = meta.time_unit;
    ResultGroup g;
    g.name = "covariance_vdos";
    g.add("omega", r.omega, "rad/" + T);
    g.add("eigenvalues", r.eigenvalues, L + "^2");
    g.add("participation", r.participation, "1");
    g.add("omega_bins", r.omega_bins, "rad/" + T);
    g.add("vdos", r.vdos, T + "/rad");
    g.add_int("particle_ids", r.particle_ids, "1");
    g.attrs["n_particles"] = r.n_particles;
    g.attrs["n_frames"] = r.n_frames;
    g.attrs["temperature"] = r.temperature;
    g.attrs["temperature_source"] = r.temperature_source;
    g.attrs["forced"] = std::int64_t{r.params.force};
    g.attrs["subtract_com"] = std::int64_t{r.params.subtract_com};
    g.attrs["mass_weighted"] = std::int64_t{r.params.mass_weighted};
    g.attrs["bins"] = r.params.bins;
    g.attrs["model"] = std::string(
        "harmonic shadow system: M^1/2 C M^1/2 = k_B T K^-1, omega = sqrt(k_B T / lambda); masses in "
        "species-0 units, eigenvalues in m0*L^2");
    g.attrs["units"] = std::string("L=") + L + ", T=" + T;
    return g;
}

}  // namespace vibra::analysis
