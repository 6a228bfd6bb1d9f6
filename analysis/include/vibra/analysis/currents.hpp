// SPDX-License-Identifier: GPL-3.0-or-later
// Longitudinal and transverse current correlations of a 2-D particle system (docs/collective-modes.md §1):
//   j(k,t) = Σ_i w_i v_i(t) e^{ik·r_i(t)},  j_L = k̂·j,  j_T = ê_⊥·j  (ê_⊥ = (−k̂_y, k̂_x)),
//   C_{L,T}(k,t) = Re⟨j(t₀+t) j*(t₀)⟩_{t₀} / ⟨Σ_i w_i²⟩   (2-D normalisation: C(k,0) = ⟨v_x²⟩
//   for uncorrelated velocities), C(k,ω) = ∫ C(k,t) e^{iωt} dt (Welch: Hann segments, 50 % overlap),
// averaged over the k-vectors of |k| shells. k-vectors lie on the grid (2πn/Lx, 2πm/Ly): the
// reciprocal lattice of a periodic box, or the grid commensurate with a window (whose particles
// then carry a Tukey taper w_i). Frames are streamed block by block. compute_currents keeps the
// series j(k,t) of every k-vector in memory when they fit CurrentsParams::memory_bytes (n_k × T ×
// 16 bytes per series) and correlates them by full-length FFTs; beyond, it makes one pass in chunks
// of frames (≤ half the budget, at least 2·max(lag, segment) frames) holding per k-vector only the
// chunk and the end of the previous one: direct lag sums for C(k,t), the Welch segments ending in the
// chunk for C(k,ω) — equal to the in-memory path up to rounding, memory bounded whatever the run's
// length, no temporary file. compute_current_series (for callers that need the series themselves)
// writes them beyond the budget in chunks of frames to a temporary file (k-major, unlinked when
// opened), read back one k-vector at a time, bit-identical to the in-memory series.
#pragma once

#include <complex>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vibra/analysis/velocities.hpp"
#include "vibra/core/result.hpp"
#include "vibra/core/trajectory.hpp"
#include "vibra/core/trajectory_source.hpp"

namespace vibra::analysis {

/// How the Fourier sums j(k) = Σ_i a_i e^{ik·r_i} over the k grid are formed: `matrix`, a complex
/// matrix product (exact to rounding, cost ∝ N·n_k); `nufft`, a non-uniform FFT by Gaussian
/// gridding (within ≈ 1e-15 of Σ|a_i|, cost ∝ N + grid·log grid); `automatic`, the cheaper for
/// the grid (nufft from ≈ 2000 grid modes on; docs/collective-modes.md).
enum class FourierSums { automatic, matrix, nufft };

/// Parameters of compute_currents(). Zero means "pick and record".
struct CurrentsParams {
    double k_max = 0;           ///< largest |k|, rad/<L>; 0 = 2-D Debye wavenumber sqrt(4πρ)
    double k_min = 0;           ///< smallest |k|, rad/<L> (k = 0 is always excluded)
    double dk = 0;              ///< shell width, rad/<L>; 0 = max(2π/Lx, 2π/Ly)
    std::int64_t segment = 0;   ///< frames per Welch segment (even); 0 = min(T, 256) rounded down to even
    std::int64_t max_lag = 0;   ///< lags of C(k,t), frames; 0 = segment/2
    double omega_max = 0;       ///< largest ω kept in C(k,ω), rad/<T>; 0 = Nyquist π/Δt
    std::int64_t blocks = 10;   ///< time blocks of the per-block C(k,t) (bootstrap input of kgap); 0 = none
    double taper = 0.2;         ///< Tukey fraction of the spatial taper for windows (0 = hard window)
    bool subtract_mean = true;  ///< subtract the instantaneous (weighted) mean velocity per frame
    bool mass_weighted = true;  ///< also compute the momentum currents (masses ∝ d², needs species_diameters)
    int threads = 1;            ///< worker threads (std::thread)
    FourierSums fourier = FourierSums::automatic;  ///< method of the Fourier sums over k
    std::int64_t memory_bytes = std::int64_t{2}
                                << 30;  ///< series kept in memory up to this size, else a temporary file
    std::string temp_dir;               ///< folder of that file; "" = $TMPDIR (or /tmp)
    std::int64_t block_rows = 1 << 20;  ///< rows per frame block read from the source
    /// Velocities: automatic (columns when present, else central), given (columns required),
    /// central ((r(t+1) − r(t−1))/2Δt, one-sided at track ends), forward ((r(t+1) − r(t))/Δt).
    VelocityScheme velocity = VelocityScheme::automatic;
    void validate() const;  ///< throws ParameterError naming the field and value
};

/// The k-vectors used: grid indices (n, m) in the half plane n > 0 or (n = 0, m > 0).
struct KVectorSet {
    double x0 = 0, y0 = 0, lx = 1, ly = 1;  ///< origin and periods of the grid (length unit)
    int n_max = 0, m_max = 0;               ///< grid extents: n ∈ [0, n_max], m ∈ [−m_max, m_max]
    std::vector<int> n, m;                  ///< per k-vector
    std::vector<double> kx, ky, kabs;       ///< rad/<L>
    std::vector<int> shell;                 ///< shell index of each k-vector (into shell_k)
    std::vector<double> shell_k;            ///< mean |k| of each shell, rad/<L>
    std::vector<std::int64_t> shell_count;  ///< k-vectors per shell
    double dk = 0;                          ///< shell width, rad/<L>
    std::size_t size() const { return n.size(); }
};

/// Region over which currents are formed, with its spatial taper.
struct CurrentRegion {
    Geometry geometry;  ///< as in the metadata (unbounded → bounding box of the first frames)
    double x0 = 0, y0 = 0, lx = 1, ly = 1;  ///< rectangle of the k grid
    double taper = 0;                       ///< Tukey fraction (0 for periodic boxes)
    double area = 0;                        ///< area used for the density
    /// Weight w(x, y) of a particle: 1 in periodic boxes; Tukey taper in windows; 0 outside.
    double weight(double x, double y) const;
};

/// Region of a source (reads the first block for unbounded geometries).
CurrentRegion current_region(const TrajectorySource& src, double taper);

/// The k set for a region, a number density ρ (1/<L>², for the default k_max) and parameters.
KVectorSet current_kvectors(const CurrentRegion& region, double density, const CurrentsParams& p);

/// Per-particle mass factors from the species diameters: m = (d_s/d_0)², 1 for unknown species.
/// Empty when the metadata has no diameters.
std::vector<double> species_masses(const Metadata& meta);

/// Currents of every k-vector and frame (j[k·T + t]); the streamed raw material.
struct CurrentSeries {
    KVectorSet ks;
    CurrentRegion region;
    std::int64_t n_frames = 0;
    double dt = 1;                   ///< frame interval, <T>
    double mean_n = 0;               ///< mean number of particles with a velocity per frame
    double density = 0;              ///< mean_n / area, 1/<L>²
    double norm = 0, norm_mass = 0;  ///< ⟨Σ w²⟩ and ⟨Σ m w²⟩ per frame
    bool has_mass = false;
    std::string velocity_source;               ///< "columns" or "central differences"
    std::vector<std::complex<double>> jl, jt;  ///< [k·T + t] (empty when in the file)
    std::vector<std::complex<double>> jl_mass, jt_mass;
    struct File;                       ///< the series in a temporary file (currents.cpp)
    std::shared_ptr<const File> file;  ///< null when in memory
    enum Kind { L = 0, T_ = 1, L_mass = 2, T_mass = 3 };
    /// The whole series of k-vector q: a pointer into jl/jt/… or, when in the file, into `buf`.
    const std::complex<double>* series(Kind which, std::size_t q,
                                       std::vector<std::complex<double>>& buf) const;
    /// Frames [t0, t0+n) of every k-vector into buf[q·n + t − t0] (for frame-by-frame consumers).
    void frames(Kind which, std::size_t t0, std::size_t n, std::vector<std::complex<double>>& buf) const;
};

/// Streams the source once and forms j_L, j_T for every k-vector and frame.
CurrentSeries compute_current_series(const TrajectorySource& src, const CurrentsParams& p);

/// Shell-averaged correlations and spectra.
struct CurrentsResult {
    CurrentsParams params;                ///< with the picked values filled in
    std::vector<double> k;                ///< shell |k|, rad/<L>
    std::vector<std::int64_t> n_vectors;  ///< k-vectors per shell
    std::vector<double> t;                ///< lags, <T>
    std::vector<double> omega;            ///< rad/<T>, 0 … omega_max
    std::vector<double> c_t_kt, c_l_kt;   ///< [shell][lag], <L>²/<T>²
    std::vector<double> c_t_kw, c_l_kw;   ///< [shell][ω], <L>²/<T>  (two-sided density, even in ω)
    std::vector<double> omega_t_peak,
        omega_l_peak;  ///< ω of the spectral maximum per shell (parabolic refinement)
    std::vector<double> c_t_kt_blocks, c_l_kt_blocks;  ///< [block][shell][lag], per time block
    std::int64_t n_blocks = 0;
    bool has_mass = false;
    std::vector<double> c_t_kt_mass, c_l_kt_mass, c_t_kw_mass, c_l_kw_mass, omega_t_peak_mass,
        omega_l_peak_mass;
    double dt = 1, density = 0, mean_n = 0, k_debye = 0, dk = 0;  ///< <T>, 1/<L>², -, rad/<L>, rad/<L>
    std::int64_t n_frames = 0;
    std::string velocity_source, geometry;
};

/// Full currents analysis (streams the source once; bounded memory beyond memory_bytes, see above).
CurrentsResult compute_currents(const TrajectorySource& src, CurrentsParams p);
/// Same from an already formed series.
CurrentsResult currents_from_series(const CurrentSeries& s, const CurrentsParams& p);

/// /analysis/currents group (units from the metadata).
ResultGroup to_group(const CurrentsResult& r, const Metadata& meta);

/// ω of the maximum of y over a uniform grid ω_j = j·dω (parabolic refinement around the
/// largest sample; 0 when the maximum is at ω = 0).
double spectral_peak(const double* y, std::size_t n, double domega);

}  // namespace vibra::analysis
