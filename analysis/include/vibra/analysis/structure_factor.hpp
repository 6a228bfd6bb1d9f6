// SPDX-License-Identifier: GPL-3.0-or-later
// Partial static structure factors S_ab(k) (Ashcroft–Langreth normalisation) from the Fourier
// components ρ_a(k) = Σ_{i∈a} w_i e^{−ik·r_i}. Periodic boxes: the reciprocal lattice
// k = 2π(n/Lx, m/Ly), w = 1. Windows: the same lattice of the (rectangular) region with a Hann
// taper w = sin²(πx/Lx) sin²(πy/Ly), whose transform vanishes at every k of the set with
// max(|n|,|m|) ≥ 2, so a uniform density leaks nothing into S(k) (circular windows use their
// inscribed square). Vectors are binned into |k| shells (docs/analysis-structure.md).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "vibra/analysis/pair_correlation.hpp"

namespace vibra::analysis {

struct StructureFactorParams {
    double k_max = 10;                       ///< largest |k| (rad / length unit)
    std::int64_t bins = 60;                  ///< |k| shells over (0, k_max]
    std::int64_t max_vectors_per_bin = 100;  ///< k-vectors kept per shell (evenly over angle); 0 = all
    int threads = 1;                         ///< k-vectors split over threads; results identical for any
    void validate() const;                   ///< throws ParameterError naming the field
};

struct StructureFactorResult {
    std::vector<double> k;        ///< mean |k| of the vectors in each shell (rad/length); NaN if empty
    std::vector<double> k_edges;  ///< bins+1 shell edges
    std::vector<double> sk;       ///< total S(k) = ⟨|ρ(k)|²⟩ / ⟨Σ w²⟩
    std::vector<double> sk_ss, sk_sl, sk_ll;  ///< ⟨Re ρ_a ρ_b*⟩ / sqrt(⟨Σ_a w²⟩⟨Σ_b w²⟩)
    std::vector<std::int64_t> n_vectors;      ///< k-vectors per shell (per frame)
    std::string k_set;                        ///< "reciprocal_lattice" or "hann_window_lattice"
    std::int64_t frames = 0;
    std::int64_t n_small = 0, n_large = 0;
};

/// Position and height of the largest S(k) over shells with k > k_min (NaN when none).
std::pair<double, double> sk_first_peak(const StructureFactorResult& r, const std::vector<double>& s,
                                        double k_min);

class StructureFactor {
public:
    explicit StructureFactor(const StructureFactorParams& p);
    void accumulate(const StructureFrame& frame);
    StructureFactorResult result() const;

private:
    struct KVec {
        int n, m;
        std::size_t bin;
    };
    void build_vectors(const Geometry& region);
    StructureFactorParams p_;
    Geometry region_;
    bool have_region_ = false;
    std::vector<KVec> kv_;
    std::vector<double> num_[4], cnt_, ksum_;  // ss, sl, ll, total
    std::vector<std::int64_t> nvec_;
    double w_[3] = {0, 0, 0};  // Σ w² small, large, total
    std::int64_t frames_ = 0, ns_ = 0, nl_ = 0;
    std::string kset_;
};

/// S(k) over a whole source (/analysis/sk).
struct SkParams {
    StructureFactorParams sk;  ///< sk.k_max ≤ 0: 3 × 2π / mean spacing of the data
    std::int64_t stride = 0;   ///< every n-th frame; 0 = at most 200 frames
    bool progress = false;
};
struct SkResult {
    StructureFactorResult s;
    StructureFactorParams sk;  ///< as used (k_max resolved)
    std::int64_t stride = 1;
    StructureDefaults defaults;  ///< window and mean spacing (peak search from half 2π/spacing)
};
SkResult compute_sk(const TrajectorySource& src, const SkParams& p);
/// Group `sk` {k, k_edges, sk, n_vectors, sk_small_small, …} with the first peak as attributes.
ResultGroup to_group(const SkResult& r, const Metadata& meta);

}  // namespace vibra::analysis
