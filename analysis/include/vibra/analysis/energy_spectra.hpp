// SPDX-License-Identifier: GPL-3.0-or-later
// Energy spectra E(k), spectral energy transfer T(k) and flux Π(k) of a coarse-grained field
// (docs/collective-motion.md §4): windowed 2-D FFT (FFTW plans made once per grid and reused), shell sums,
// power-law fits in a k band below the coarse-graining cut-off, and the filter-space technique
// (FST) flux Π_ℓ for bounded windows. Sign convention: Π > 0 forward (to small scales),
// Π < 0 inverse (to large scales).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "vibra/analysis/displacement_field.hpp"

namespace vibra::analysis {

/// Taper applied before the FFT (a separable product of 1-D windows over the grid).
enum class Taper { none, hann, tukey };
Taper taper_from_string(const std::string& s);  ///< "none" | "hann" | "tukey"
/// Derivatives for the nonlinear term: spectral (exact on periodic band-limited fields) or
/// second-order central finite differences (one-sided at edges and next to masked nodes).
enum class Gradient { spectral, fd2 };
Gradient gradient_from_string(const std::string& s);  ///< "spectral" | "fd2"

struct SpectrumParams {
    Taper taper = Taper::hann;  ///< docs/collective-motion.md §4: no taper = edge leakage
    double tukey_alpha = 0.5;   ///< fraction of each side tapered by the Tukey window, (0, 1]
    bool subtract_mean = true;  ///< remove the mean over usable nodes before the FFT
    Gradient gradient = Gradient::fd2;
    void validate() const;
};

/// E(k) on shells k_n = n·Δk, n = 0 … n_max (Δk = 2π / max(Lx, Ly)), with normalised
/// coefficients û(k) = (1/M) Σ_R w(R)m(R)U(R) e^{−ik·R} (m = usable-node mask):
///   E(k_n) = ½ Σ_{k∈shell n} |û(k)|² / (Δk ⟨(w m)²⟩),
/// so Σ_n E(k_n) Δk = ½ ⟨|w m U|²⟩ / ⟨(w m)²⟩ exactly (`energy`, the estimator's Parseval identity).
struct Spectrum {
    double dk = 0;                    ///< shell width, rad/length
    std::vector<double> k;            ///< shell centres n·Δk
    std::vector<double> e;            ///< E(k), field unit² · length
    std::vector<double> e_long;       ///< longitudinal (compressive) part |k̂·û|²
    std::vector<double> e_trans;      ///< transverse (solenoidal) part
    std::vector<std::int64_t> modes;  ///< Fourier modes per shell
    /// E(k) compensated for the lattice's uneven mode count per shell: E(k_n)·m_n^iso/m_n with
    /// m_n^iso = 2π k_n Δk/(Δk_x Δk_y) the count of an isotropic continuum (NaN where m_n = 0,
    /// shell 0 left as is). Power-law fits use this; it does not satisfy Parseval exactly.
    std::vector<double> e_iso;
    double energy = 0;            ///< ½⟨|w m U|²⟩/⟨(w m)²⟩ (the Parseval right-hand side)
    double mean_flow_energy = 0;  ///< ½|⟨U⟩|² of the subtracted mean
};

/// T(k_n) = Σ_{k∈shell n} Re[û*(k)·F̂(k)] / (Δk ⟨(w m)²⟩) with F = −(U·∇)U (both windowed alike),
/// Π(k_n) = Σ_{n' ≥ n} T(k_n') Δk.
struct Transfer {
    double dk = 0;
    std::vector<double> k, t, flux;
};

/// Reusable estimator for one grid size: the FFTW plans and buffers are made once.
class SpectrumEstimator {
public:
    SpectrumEstimator(const Grid& grid, const SpectrumParams& p);
    ~SpectrumEstimator();
    SpectrumEstimator(const SpectrumEstimator&) = delete;
    SpectrumEstimator& operator=(const SpectrumEstimator&) = delete;

    /// The field's grid must have the estimator's nx, ny, hx, hy.
    Spectrum spectrum(const GridField& f);
    Transfer transfer(const GridField& f);
    const std::vector<double>& taper() const { return taper_; }
    std::size_t n_shells() const { return n_shells_; }
    double dk() const { return dk_; }

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
    Grid grid_;
    SpectrumParams p_;
    std::vector<double> taper_;  // [j·nx + i]
    double dk_ = 0;
    std::size_t n_shells_ = 0;
};

/// Least-squares fit log E = log A + s·log k over the shells with k_min ≤ k ≤ k_max and E > 0.
struct PowerLawFit {
    double exponent = 0;  ///< s (E ∝ k^s; an inverse-cascade-like spectrum has s < 0)
    double prefactor = 0;
    double exponent_error = 0;  ///< standard error of s
    std::size_t n_points = 0;   ///< < 2: no fit (exponent NaN)
};
PowerLawFit fit_power_law(std::span<const double> k, std::span<const double> e, double k_min, double k_max);

/// Filter-space technique (Rivera et al. PRL 2003; Chen et al. PRL 2006): for each scale ℓ,
/// Gaussian-filter U (mask-aware: (G*(mU))/(G*m)), τ_ij = (U_iU_j)_ℓ − U_{i,ℓ}U_{j,ℓ} and
/// Π_ℓ = −⟨τ_ij ∂_j U_{i,ℓ}⟩ over usable nodes at least 2ℓ from the grid edge (or anywhere on a
/// periodic grid). Gaussian G of standard deviation ℓ (length unit), cut at 3ℓ; fd2 gradients.
/// Returns NaN for a scale with no interior node.
std::vector<double> fst_flux(const GridField& f, std::span<const double> scales);

/// The spectra analysis (/analysis/spectra): E(k), T(k), Π(k) and the filter-space flux of every
/// start frame and lag, their time means and power-law fits.
struct SpectraParams {
    FieldSettings field;
    SpectrumParams spectrum;
    std::string taper_name = "hann", gradient_name = "fd2";  ///< as recorded
    bool deconvolve = false;  ///< fits: E_iso × exp(k²σ²) (undo the Gaussian kernel)
    double k_min = std::numeric_limits<double>::quiet_NaN();  ///< fit band; NaN: 4 Δk
    double k_max = std::numeric_limits<double>::quiet_NaN();  ///< NaN: min(1/σ, π/(2h))
    std::vector<double> fst_scales;  ///< filter-space flux scales; empty: σ·{1,2,4,8} below a quarter side
    int threads = 1;  ///< (lag, start) fields in parallel, sums in order (identical for any count)
};
/// Arrays [lag][start][shell] (e, flux, de_dt), [lag][start][scale] (fst_flux), [lag][start]
/// (energy, mean_flow_energy, slope), [lag][shell] (time means), [lag] (fits of the mean).
struct SpectraResult {
    double dk = 0, k_min = 0, k_max = 0;
    std::int64_t fit_band_shells = 0;
    std::size_t n_shells = 0;
    std::vector<double> k, fst_scales;
    std::vector<double> e, flux, fst_flux, de_dt;
    std::vector<double> energy, mean_flow_energy, slope;
    std::vector<double> e_mean, e_iso_mean, e_long_mean, e_trans_mean, transfer_mean, flux_mean,
        fst_flux_mean;
    std::vector<double> slope_mean, slope_mean_error, prefactor_mean;
};
/// Throws ParameterError when a given fit band is not 0 < k_min < k_max.
SpectraResult compute_spectra(const TrajectorySource& src, const SpectraParams& p);
ResultGroup to_group(const SpectraResult& r, const SpectraParams& p, const TrajectorySource& src);

}  // namespace vibra::analysis
