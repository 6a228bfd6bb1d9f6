// SPDX-License-Identifier: GPL-3.0-or-later
// Steps of the joint template fit on their own (detail::joint::JointFitter, the class behind
// joint_fit()): the model render of one disk against the analytic integral of its template, and
// Jacobi sweeps moving two touching disks from a start off by ~0.6 px to the renderer's exact
// centres while the residual falls.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "../../tracking/src/detail/joint_fitter.hpp"  // internal: the fit's steps
#include "vibra/tracking/joint_fit.hpp"
#include "vibra/tracking/synth.hpp"

using namespace vibra;
using namespace vibra::tracking;
using detail::joint::DiskState;
using detail::joint::JointFitter;

namespace {

// Σ over the image of (I − b − M)² (the residual of the model with background b).
double residual_sum(const cv::Mat& image, const cv::Mat& model, double b) {
    double sum = 0;
    for (int y = 0; y < image.rows; ++y)
        for (int x = 0; x < image.cols; ++x) {
            const double r = image.at<std::uint8_t>(y, x) - b - model.at<float>(y, x);
            sum += r * r;
        }
    return sum;
}

}  // namespace

TEST_CASE("joint fit render: one disk's model integrates to a × its template's integral", "[joint_fit]") {
    // Template S(ρ) = exp(−ρ²/2σ²), σ = 2 px, radius 6 px (support ρ ≤ 8.5 px): the model
    // a·S(|p − c|²) summed over the pixels equals a·2πσ²(1 − exp(−ρ_max²/2σ²)) (the lattice
    // sum of a Gaussian this wide equals its integral to ~1e-30); the tabulation (0.1 px in ρ,
    // then in ρ²) costs < 1e-3.
    const cv::Mat image(64, 64, CV_8U, cv::Scalar(20));
    std::vector<Particle> parts(1);
    parts[0].x = 31.3, parts[0].y = 30.6, parts[0].species = 0;
    const std::vector<double> radii{6.0};
    const JointFitParams p;
    JointFitter fit(image, parts, radii, p, nullptr, nullptr);
    const double sigma = 2.0, bin = p.template_bin;
    std::vector<float> prof(fit.templ(0).prof.size());
    for (std::size_t k = 0; k < prof.size(); ++k) {
        const double r = static_cast<double>(k) * bin;
        prof[k] = static_cast<float>(std::exp(-r * r / (2 * sigma * sigma)));
    }
    fit.use_template(0, prof);
    const double a = 1.7;
    fit.disks()[0].a = a;
    fit.render_model();
    const double sum = cv::sum(fit.model())[0];
    // the support ends where the profile's last node is set to 0 (Template::finish)
    const double r_max = bin * static_cast<double>(prof.size() - 1);
    const double expected =
        a * 2 * M_PI * sigma * sigma * (1 - std::exp(-r_max * r_max / (2 * sigma * sigma)));
    CHECK(sum == Approx(expected).epsilon(2e-3));
    // the pixel nearest the centre holds a·S at its distance; far pixels nothing
    const double d2 = 0.3 * 0.3 + 0.4 * 0.4;
    CHECK(fit.model().at<float>(31, 31) == Approx(a * std::exp(-d2 / (2 * sigma * sigma))).epsilon(2e-3));
    CHECK(fit.model().at<float>(5, 5) == 0.0f);
    // a second disk's light adds (the model is a sum), and splat(−1) takes it out again
    const DiskState copy = fit.disks()[0];
    fit.splat(copy, 1.0f);
    CHECK(cv::sum(fit.model())[0] == Approx(2 * sum).epsilon(1e-6));
    fit.splat(copy, -1.0f);
    CHECK(cv::sum(fit.model())[0] == Approx(sum).epsilon(1e-6));
}

TEST_CASE("joint fit sweeps: two touching disks converge to the exact centres, the residual falls",
          "[joint_fit]") {
    // A small and a large plain disk 0.2 px apart (surfaces), rendered exactly (blur 0.7 px, no
    // noise). The templates are measured about the exact centres (one fitter), then a second
    // fitter starts from them ~0.6 px off each centre, as a warm start does, and sweeps.
    RenderParams rp;
    rp.width = 64, rp.height = 48;
    rp.threads = 1;
    std::vector<Disk> disks(2);
    disks[0].x = 24.37, disks[0].y = 23.81, disks[0].radius = 6, disks[0].species = 0;
    disks[1].x = 24.37 + 14.2 * std::cos(0.3), disks[1].y = 23.81 + 14.2 * std::sin(0.3), disks[1].radius = 8,
    disks[1].species = 1;
    const cv::Mat image = render_frame(disks, rp);
    const std::vector<double> radii{6.0, 8.0};
    const JointFitParams p;
    std::vector<Particle> exact(2);
    for (std::size_t i = 0; i < 2; ++i)
        exact[i].x = disks[i].x, exact[i].y = disks[i].y, exact[i].species = disks[i].species;
    JointFitter measured(image, exact, radii, p, nullptr, nullptr);
    measured.measure_first_templates();
    REQUIRE(measured.templates_ok());

    std::vector<Particle> parts(2);
    parts[0].x = disks[0].x + 0.5, parts[0].y = disks[0].y - 0.35, parts[0].species = 0;
    parts[1].x = disks[1].x - 0.45, parts[1].y = disks[1].y + 0.4, parts[1].species = 1;
    JointFitter fit(image, parts, radii, p, nullptr, nullptr);
    for (int s = 0; s < 2; ++s) fit.use_template(s, measured.templ(s).prof);
    REQUIRE(fit.templates_ok());
    for (std::size_t i = 0; i < 2; ++i) fit.disks()[i].b = measured.disks()[i].b;
    auto error = [&](std::size_t i) {
        return std::hypot(fit.disks()[i].x - disks[i].x, fit.disks()[i].y - disks[i].y);
    };
    const double e0 = std::max(error(0), error(1));
    REQUIRE(e0 > 0.55);
    fit.render_model();
    const double res0 = residual_sum(image, fit.model(), fit.disks()[0].b);
    std::vector<double> errors{e0};
    for (int sweep = 0; sweep < 5; ++sweep) {
        fit.render_model();
        fit.jacobi_sweep(1, false, false);
        errors.push_back(std::max(error(0), error(1)));
    }
    fit.render_model();
    const double res1 = residual_sum(image, fit.model(), fit.disks()[0].b);
    INFO("residual " << res0 << " -> " << res1 << "; largest error by sweep " << errors[0] << " " << errors[1]
                     << " " << errors[2] << " " << errors[3] << " " << errors[4] << " " << errors[5]);
    CHECK(res1 < 0.05 * res0);
    CHECK(error(0) < 0.02);
    CHECK(error(1) < 0.02);
    CHECK(errors[2] < errors[0]);
    CHECK(fit.disks()[0].s == 0);
    CHECK(fit.disks()[1].s == 1);
}
