// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/analysis/fit.hpp"

#include <Eigen/Dense>
#include <cmath>
#include <limits>
#include <string>

#include "vibra/core/error.hpp"

namespace vibra::analysis {

void LmParams::validate() const {
    if (max_iterations < 1)
        throw ParameterError("LmParams.max_iterations must be >= 1, got " + std::to_string(max_iterations));
    if (!(tolerance > 0))
        throw ParameterError("LmParams.tolerance must be > 0, got " + std::to_string(tolerance));
    if (!(initial_lambda > 0))
        throw ParameterError("LmParams.initial_lambda must be > 0, got " + std::to_string(initial_lambda));
    if (!(jacobian_step > 0))
        throw ParameterError("LmParams.jacobian_step must be > 0, got " + std::to_string(jacobian_step));
}

namespace {
double sumsq(const Eigen::VectorXd& r) {
    return r.allFinite() ? r.squaredNorm() : std::numeric_limits<double>::infinity();
}
}  // namespace

LmResult levenberg_marquardt(const ResidualFn& f, std::vector<double> p0, std::size_t n_res,
                             const LmParams& params) {
    params.validate();
    const auto np = static_cast<Eigen::Index>(p0.size());
    const auto nr = static_cast<Eigen::Index>(n_res);
    Eigen::VectorXd p = Eigen::Map<Eigen::VectorXd>(p0.data(), np);
    Eigen::VectorXd r(nr), rp(nr), rm(nr);
    auto eval = [&](const Eigen::VectorXd& q, Eigen::VectorXd& out) {
        f(std::span<const double>(q.data(), static_cast<std::size_t>(np)),
          std::span<double>(out.data(), n_res));
    };
    eval(p, r);
    double chi2 = sumsq(r);
    Eigen::MatrixXd J(nr, np);
    auto jacobian = [&]() {
        for (Eigen::Index j = 0; j < np; ++j) {
            const double h = params.jacobian_step * std::max(1.0, std::abs(p[j]));
            Eigen::VectorXd q = p;
            q[j] = p[j] + h;
            eval(q, rp);
            q[j] = p[j] - h;
            eval(q, rm);
            J.col(j) = (rp - rm) / (2 * h);
        }
    };
    LmResult res;
    double lambda = params.initial_lambda;
    int it = 0;
    for (; it < params.max_iterations; ++it) {
        jacobian();
        const Eigen::MatrixXd A = J.transpose() * J;
        const Eigen::VectorXd g = J.transpose() * r;
        bool improved = false;
        for (int tries = 0; tries < 30; ++tries) {
            Eigen::MatrixXd M = A;
            for (Eigen::Index j = 0; j < np; ++j) M(j, j) += lambda * std::max(A(j, j), 1e-300);
            const Eigen::VectorXd step = M.ldlt().solve(-g);
            Eigen::VectorXd q = p + step;
            Eigen::VectorXd rq(nr);
            eval(q, rq);
            const double c2 = sumsq(rq);
            if (c2 < chi2) {
                const double rel = (chi2 - c2) / std::max(chi2, 1e-300);
                p = q;
                r = rq;
                chi2 = c2;
                lambda = std::max(lambda / 10, 1e-15);
                improved = true;
                if (rel < params.tolerance) res.converged = true;
                break;
            }
            lambda *= 10;
        }
        if (!improved) {
            res.converged = true;  // no downhill step: at a minimum to working precision
            break;
        }
        if (res.converged) break;
    }
    jacobian();
    const Eigen::MatrixXd A = J.transpose() * J;
    const double dof = std::max<double>(1.0, static_cast<double>(nr - np));
    Eigen::MatrixXd C = A.completeOrthogonalDecomposition().pseudoInverse() * (chi2 / dof);
    res.p.assign(p.data(), p.data() + np);
    res.cov.resize(static_cast<std::size_t>(np * np));
    for (Eigen::Index i = 0; i < np; ++i)
        for (Eigen::Index j = 0; j < np; ++j) res.cov[static_cast<std::size_t>(i * np + j)] = C(i, j);
    res.chi2 = chi2;
    res.iterations = it;
    return res;
}

LineFit weighted_line_fit(std::span<const double> x, std::span<const double> y,
                          std::span<const double> sigma) {
    if (x.size() != y.size() || (!sigma.empty() && sigma.size() != x.size()))
        throw ParameterError("weighted_line_fit: x, y, sigma sizes differ");
    double S = 0, Sx = 0, Sy = 0, Sxx = 0, Sxy = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double w = sigma.empty() ? 1.0 : 1.0 / (sigma[i] * sigma[i]);
        if (!std::isfinite(w) || !std::isfinite(x[i]) || !std::isfinite(y[i])) continue;
        S += w;
        Sx += w * x[i];
        Sy += w * y[i];
        Sxx += w * x[i] * x[i];
        Sxy += w * x[i] * y[i];
    }
    const double D = S * Sxx - Sx * Sx;
    LineFit fit;
    if (!(D > 0)) {
        fit.a = fit.b = std::numeric_limits<double>::quiet_NaN();
        return fit;
    }
    fit.a = (S * Sxy - Sx * Sy) / D;
    fit.b = (Sxx * Sy - Sx * Sxy) / D;
    fit.var_a = S / D;
    fit.var_b = Sxx / D;
    fit.cov_ab = -Sx / D;
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double w = sigma.empty() ? 1.0 : 1.0 / (sigma[i] * sigma[i]);
        if (!std::isfinite(w) || !std::isfinite(x[i]) || !std::isfinite(y[i])) continue;
        const double d = y[i] - fit.a * x[i] - fit.b;
        fit.chi2 += w * d * d;
    }
    return fit;
}

}  // namespace vibra::analysis
