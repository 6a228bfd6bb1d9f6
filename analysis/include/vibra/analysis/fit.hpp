// SPDX-License-Identifier: GPL-3.0-or-later
// Small least-squares tools used by the mode analyses: a Levenberg–Marquardt minimiser for a
// handful of parameters (damped-oscillator fits of C_T(k,t)) and a weighted straight-line fit
// (the k-gap fit is linear in (k², ω²)). Generic, dense, double precision; no global state.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

namespace vibra::analysis {

/// Levenberg–Marquardt settings.
struct LmParams {
    int max_iterations = 200;      ///< outer iterations
    double tolerance = 1e-12;      ///< stop when the relative change of χ² is below this
    double initial_lambda = 1e-3;  ///< damping of the first step (Marquardt scaling by diag JᵀJ)
    double jacobian_step = 1e-6;   ///< relative step of the central-difference Jacobian
    void validate() const;         ///< throws ParameterError naming the field
};

/// Result of levenberg_marquardt().
struct LmResult {
    std::vector<double> p;    ///< best parameters
    std::vector<double> cov;  ///< covariance estimate (JᵀJ)⁻¹·χ²/(n−p), row-major p×p
    double chi2 = 0;          ///< Σ r² at p
    int iterations = 0;
    bool converged = false;
};

/// Residual function: fills r (size n_residuals) for parameters p.
using ResidualFn = std::function<void(std::span<const double> p, std::span<double> r)>;

/// Minimises Σ r(p)² from p0 with a numerical (central-difference) Jacobian.
LmResult levenberg_marquardt(const ResidualFn& f, std::vector<double> p0, std::size_t n_residuals,
                             const LmParams& params = {});

/// Weighted straight line y = a·x + b.
struct LineFit {
    double a = 0, b = 0;                      ///< slope, intercept
    double var_a = 0, var_b = 0, cov_ab = 0;  ///< from the weights (1/σ²), not rescaled
    double chi2 = 0;                          ///< Σ ((y − a x − b)/σ)²
};

/// Weighted least squares with weights 1/σ² (σ empty = unit weights). Needs ≥ 2 distinct x.
LineFit weighted_line_fit(std::span<const double> x, std::span<const double> y,
                          std::span<const double> sigma);

}  // namespace vibra::analysis
