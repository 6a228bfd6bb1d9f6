// SPDX-License-Identifier: GPL-3.0-or-later
// Synthetic renderer and generator: exact sub-pixel rendering, supersampling convergence,
// motion blur truth, looks, image formation, overlaps of the dynamics.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>

#include <opencv2/imgproc.hpp>

#include <filesystem>

#include "test_support.hpp"
#include "vibra/store/trajectory_file.hpp"
#include "vibra/tracking/synth.hpp"
#include "vibra/tracking/video.hpp"

using namespace vibra;
using namespace vibra::tracking;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;
namespace fs = std::filesystem;

namespace {

struct Moments {
    double m0 = 0, mx = 0, my = 0;
};
Moments moments(const cv::Mat& img) {
    Moments m;
    for (int j = 0; j < img.rows; ++j)
        for (int i = 0; i < img.cols; ++i) {
            const double v = img.at<double>(j, i);
            m.m0 += v, m.mx += v * i, m.my += v * j;
        }
    m.mx /= m.m0, m.my /= m.m0;
    return m;
}

}  // namespace

TEST_CASE("circle_rect_area is exact for simple cases", "[unit]") {
    const double r = 3.0;
    // Whole disk inside.
    REQUIRE_THAT(circle_rect_area(0, 0, r, -5, -5, 5, 5), WithinAbs(M_PI * 9, 1e-12));
    // Half disk, quarter disk.
    REQUIRE_THAT(circle_rect_area(0, 0, r, 0, -5, 5, 5), WithinAbs(M_PI * 9 / 2, 1e-12));
    REQUIRE_THAT(circle_rect_area(0, 0, r, 0, 0, 5, 5), WithinAbs(M_PI * 9 / 4, 1e-12));
    REQUIRE_THAT(circle_rect_area(0, 0, r, -5, 0, 0, 5), WithinAbs(M_PI * 9 / 4, 1e-12));
    // Circular segment beyond x = a: r² acos(a/r) − a sqrt(r² − a²).
    const double a = 1.3;
    REQUIRE_THAT(circle_rect_area(0, 0, r, a, -5, 5, 5),
                 WithinAbs(r * r * std::acos(a / r) - a * std::sqrt(r * r - a * a), 1e-12));
    // Square inside the disk, disjoint square.
    REQUIRE_THAT(circle_rect_area(10, 20, r, 9, 19, 11, 21), WithinAbs(4.0, 1e-12));
    REQUIRE_THAT(circle_rect_area(0, 0, r, 3, 3, 4, 4), WithinAbs(0.0, 1e-15));
}

// Independent reference for one pixel: ∫ over x of the covered part of [y0, y1] on the chord,
// by composite Gauss–Legendre (the integrand is smooth between its kinks; 4000 panels).
double pixel_area_quadrature(double cx, double cy, double r, double x0, double y0) {
    const int panels = 4000;
    const double g = 0.5 / std::sqrt(3.0), h = 1.0 / panels;
    double a = 0;
    for (int k = 0; k < panels; ++k) {
        for (double t : {-g, g}) {
            const double x = x0 + (k + 0.5 + t) * h - cx;
            const double s2 = r * r - x * x;
            if (s2 <= 0) continue;
            const double s = std::sqrt(s2);
            a += 0.5 * h * std::max(0.0, std::min(y0 + 1 - cy, s) - std::max(y0 - cy, -s));
        }
    }
    return a;
}

TEST_CASE("rendered disk: every pixel's coverage equals an independent quadrature", "[unit]") {
    RenderParams p;
    p.blur_sigma = 0;  // sharp disk, box-integrated
    p.width = 24;
    p.height = 24;
    Disk d{11.23, 12.58, 5.7};
    const cv::Mat c = render_coverage(std::span<const Disk>(&d, 1), p);
    double worst = 0;
    for (int j = 0; j < 24; ++j)
        for (int i = 0; i < 24; ++i)
            worst = std::max(worst, std::abs(c.at<double>(j, i) -
                                             pixel_area_quadrature(d.x, d.y, d.radius, i - 0.5, j - 0.5)));
    INFO("worst pixel difference " << worst);
    REQUIRE(worst < 1e-5);
}

TEST_CASE("rendered disk: integrated area = pi r^2 and centroid = exact centre at many sub-pixel positions",
          "[unit]") {
    RenderParams p;
    p.width = 40;
    p.height = 40;
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    double worst_c = 0, worst_a = 0, worst_psf_c = 0, worst_psf_a = 0;
    for (int k = 0; k < 200; ++k) {
        Disk d;
        d.x = 19 + u(rng);
        d.y = 18 + u(rng);
        d.radius = 2.0 + 8.0 * u(rng);
        p.blur_sigma = 0;
        const cv::Mat c = render_coverage(std::span<const Disk>(&d, 1), p);
        const auto m = moments(c);
        worst_a = std::max(worst_a, std::abs(m.m0 - M_PI * d.radius * d.radius));
        worst_c = std::max({worst_c, std::abs(m.mx - d.x), std::abs(m.my - d.y)});
        double cmin, cmax;
        cv::minMaxLoc(c, &cmin, &cmax);
        REQUIRE(cmin >= 0.0);
        REQUIRE(cmax <= 1.0 + 1e-12);
        // With the default camera PSF (σ = 0.7 px, applied before pixel integration) the
        // pixel-sampled centroid is the exact centre (the image is band-limited).
        p.blur_sigma = 0.7;
        const auto mp = moments(render_coverage(std::span<const Disk>(&d, 1), p));
        worst_psf_a = std::max(worst_psf_a, std::abs(mp.m0 - M_PI * d.radius * d.radius));
        worst_psf_c = std::max({worst_psf_c, std::abs(mp.mx - d.x), std::abs(mp.my - d.y)});
    }
    INFO("sharp: worst area error " << worst_a << " px^2, worst centroid error " << worst_c
                                    << " px; PSF: area " << worst_psf_a << ", centroid " << worst_psf_c);
    REQUIRE(worst_a < 1e-9);
    // Sharp disk: the pixel centroid of an exactly box-integrated edge carries the known sampling
    // bias (aliasing of the edge), bounded by ~0.01 px; it is not zero.
    REQUIRE(worst_c < 0.012);
    REQUIRE(worst_c > 1e-4);
    REQUIRE(worst_psf_a < 1e-6);
    REQUIRE(worst_psf_c < 1e-5);
}

TEST_CASE("PSF rendering: tends to the sharp rendering as sigma -> 0 and matches a fine-grid reference",
          "[unit]") {
    RenderParams p;
    p.width = 32;
    p.height = 32;
    Disk d{15.29, 16.71, 6.3};
    p.blur_sigma = 0;
    const cv::Mat sharp = render_coverage(std::span<const Disk>(&d, 1), p);
    p.blur_sigma = 0.02;
    const cv::Mat tiny = render_coverage(std::span<const Disk>(&d, 1), p);
    REQUIRE(cv::norm(tiny, sharp, cv::NORM_INF) < 0.02);
    // Reference for σ = 0.7: sharp disk on a 12× finer grid, discrete Gaussian blur there, binned.
    const int m = 12;
    RenderParams f = p;
    f.blur_sigma = 0;
    f.width = 32 * m;
    f.height = 32 * m;
    Disk df{(d.x + 0.5) * m - 0.5, (d.y + 0.5) * m - 0.5, d.radius * m};
    cv::Mat fine = render_coverage(std::span<const Disk>(&df, 1), f);
    cv::GaussianBlur(fine, fine, cv::Size(0, 0), 0.7 * m, 0.7 * m, cv::BORDER_CONSTANT);
    cv::Mat ref;
    cv::resize(fine, ref, cv::Size(32, 32), 0, 0, cv::INTER_AREA);
    p.blur_sigma = 0.7;
    const cv::Mat psf = render_coverage(std::span<const Disk>(&d, 1), p);
    INFO("max difference to the fine-grid reference " << cv::norm(psf, ref, cv::NORM_INF));
    REQUIRE(cv::norm(psf, ref, cv::NORM_INF) < 2e-3);
    REQUIRE(cv::norm(psf, sharp, cv::NORM_INF) > 0.1);  // the PSF does something
}

TEST_CASE("rendered looks keep the exact centre (concentric layers), bright rim too up to texture",
          "[unit]") {
    RenderParams p;
    p.width = 48;
    p.height = 48;
    Disk d{23.37, 24.81, 9.0};
    for (auto look : {DiskLook::dark_ring, DiskLook::marker_dot}) {
        p.look = look;
        const cv::Mat c = render_coverage(std::span<const Disk>(&d, 1), p);  // default PSF 0.7 px
        const auto m = moments(c);
        double expect = M_PI * 81;
        if (look == DiskLook::dark_ring)
            expect -= p.ring_depth * M_PI * 81 * (p.ring_outer * p.ring_outer - p.ring_inner * p.ring_inner);
        else
            expect -= p.dot_depth * M_PI * 81 * p.dot_fraction * p.dot_fraction;
        REQUIRE_THAT(m.m0, WithinAbs(expect, 1e-6));
        REQUIRE_THAT(m.mx, WithinAbs(d.x, 1e-5));
        REQUIRE_THAT(m.my, WithinAbs(d.y, 1e-5));
    }
    p.look = DiskLook::bright_rim;
    p.blur_sigma = 0;
    p.texture_amplitude = 0;
    const cv::Mat c = render_coverage(std::span<const Disk>(&d, 1), p);
    const auto m = moments(c);
    REQUIRE_THAT(m.m0, WithinAbs(M_PI * 81 * (1 - (1 - p.interior_level) * p.rim_inner * p.rim_inner), 1e-9));
    REQUIRE_THAT(m.mx, WithinAbs(d.x, 0.012));
    // The rim is brighter than the interior (pixel on the rim vs the centre pixel).
    REQUIRE(c.at<double>(25, 23 + 8) > c.at<double>(25, 23) + 0.3);
    // With texture the interior varies from pixel to pixel.
    p.texture_amplitude = 0.2;
    d.texture_seed = 7;
    const cv::Mat ct = render_coverage(std::span<const Disk>(&d, 1), p);
    cv::Mat diff = ct - c;
    double dmin, dmax;
    cv::minMaxLoc(diff, &dmin, &dmax);
    REQUIRE(dmax - dmin > 0.1);
}

TEST_CASE("supersampling converges to the exact-area rendering", "[unit]") {
    RenderParams p;
    p.blur_sigma = 0;
    p.width = 32;
    p.height = 32;
    Disk d{15.29, 16.71, 6.3};
    const cv::Mat exact = render_coverage(std::span<const Disk>(&d, 1), p);
    double prev = 1e9;
    for (int n : {2, 4, 8, 16, 32}) {
        p.supersample = n;
        const cv::Mat s = render_coverage(std::span<const Disk>(&d, 1), p);
        const double err = cv::norm(s, exact, cv::NORM_INF);
        INFO("n = " << n << " max pixel error " << err);
        REQUIRE(err < 2.0 / n);  // edge pixel error ≲ 1/n (fraction of one sample row)
        REQUIRE(err <= prev + 1e-12);
        prev = err;
        // Integrated area converges to pi r^2 (error ≲ perimeter / n² on average).
        REQUIRE_THAT(cv::sum(s)[0], WithinAbs(M_PI * d.radius * d.radius, 2 * M_PI * d.radius / n));
    }
}

TEST_CASE("motion blur: the rendered centroid is the exposure-averaged centre", "[unit]") {
    RenderParams p;
    p.width = 48;
    p.height = 48;
    std::vector<std::vector<Disk>> subs;
    double sx = 0, sy = 0;
    for (int s = 0; s < 9; ++s) {
        const double t = s / 8.0;
        Disk d{20.1 + 3.3 * t, 22.6 + 1.7 * t * t, 5.0};
        subs.push_back({d});
        sx += d.x, sy += d.y;
    }
    const cv::Mat c = render_coverage(std::span<const std::vector<Disk>>(subs), p);
    const auto m = moments(c);
    REQUIRE_THAT(m.m0, WithinAbs(M_PI * 25, 1e-6));
    REQUIRE_THAT(m.mx, WithinAbs(sx / 9, 1e-5));
    REQUIRE_THAT(m.my, WithinAbs(sy / 9, 1e-5));
    // … and it is not the position at mid-exposure (the motion is accelerated in y).
    REQUIRE(std::abs(m.my - subs[4][0].y) > 0.1);
}

TEST_CASE("image formation: levels, inversion, 16 bits, gradient, noise, hot/dead pixels", "[unit]") {
    RenderParams p;
    p.blur_sigma = 0;
    p.width = 64;
    p.height = 64;
    Disk d{31.5, 31.5, 10.0};
    SECTION("levels and quantisation, 8 and 16 bits, both polarities") {
        for (int bits : {8, 16}) {
            p.bit_depth = bits;
            const double maxv = bits == 16 ? 65535 : 255;
            for (bool inv : {false, true}) {
                p.dark_on_bright = inv;
                const cv::Mat img = render_frame(std::span<const Disk>(&d, 1), p);
                REQUIRE(img.type() == (bits == 16 ? CV_16UC1 : CV_8UC1));
                const double inside =
                    bits == 16 ? img.at<std::uint16_t>(31, 31) : img.at<std::uint8_t>(31, 31);
                const double outside = bits == 16 ? img.at<std::uint16_t>(2, 2) : img.at<std::uint8_t>(2, 2);
                REQUIRE(inside == std::nearbyint((inv ? p.background : p.foreground) * maxv));
                REQUIRE(outside == std::nearbyint((inv ? p.foreground : p.background) * maxv));
            }
        }
    }
    SECTION("illumination gradient: gain goes 1 - g/2 .. 1 + g/2 across the frame along x") {
        p.bit_depth = 16;
        p.gradient = 0.5;
        p.gradient_angle = 0;
        const cv::Mat img = render_frame(std::span<const Disk>(), p);
        REQUIRE_THAT(img.at<std::uint16_t>(10, 0) / 65535.0, WithinAbs(p.background * 0.75, 2e-5));
        REQUIRE_THAT(img.at<std::uint16_t>(10, 63) / 65535.0, WithinAbs(p.background * 1.25, 2e-5));
    }
    SECTION("Gaussian noise has the requested sigma (in contrast units) and is reproducible") {
        p.bit_depth = 16;
        p.noise_sigma = 0.05;
        p.width = p.height = 128;
        const cv::Mat a = render_frame(std::span<const Disk>(), p, 3);
        const cv::Mat b = render_frame(std::span<const Disk>(), p, 3);
        const cv::Mat c = render_frame(std::span<const Disk>(), p, 4);
        REQUIRE(cv::norm(a, b, cv::NORM_INF) == 0);
        REQUIRE(cv::norm(a, c, cv::NORM_INF) > 0);
        cv::Scalar mean, sd;
        cv::meanStdDev(a, mean, sd);
        REQUIRE_THAT(sd[0] / 65535.0, WithinRel(0.05 * (p.foreground - p.background), 0.05));
        REQUIRE_THAT(mean[0] / 65535.0, WithinAbs(p.background, 0.001));
    }
    SECTION("Poisson noise: variance = mean / photons") {
        p.bit_depth = 16;
        p.photons_full_scale = 2000;
        p.width = p.height = 128;
        const cv::Mat a = render_frame(std::span<const Disk>(), p, 1);
        cv::Scalar mean, sd;
        cv::meanStdDev(a, mean, sd);
        const double m = mean[0] / 65535.0, v = (sd[0] / 65535.0) * (sd[0] / 65535.0);
        REQUIRE_THAT(m, WithinAbs(p.background, 0.002));
        REQUIRE_THAT(v, WithinRel(p.background / 2000, 0.06));
    }
    SECTION("flicker: the per-frame gain has the requested relative RMS; none without flicker") {
        p.bit_depth = 16;
        p.width = p.height = 16;
        std::vector<double> means;
        for (int f = 0; f < 400; ++f)
            means.push_back(cv::mean(render_frame(std::span<const Disk>(), p, f))[0]);
        REQUIRE(*std::max_element(means.begin(), means.end()) ==
                *std::min_element(means.begin(), means.end()));
        p.flicker = 0.05;
        double s1 = 0, s2 = 0;
        for (int f = 0; f < 400; ++f) {
            const double g = cv::mean(render_frame(std::span<const Disk>(), p, f))[0] / means[0];
            s1 += g, s2 += g * g;
        }
        const double mean = s1 / 400, rms = std::sqrt(s2 / 400 - mean * mean);
        REQUIRE_THAT(mean, WithinAbs(1.0, 0.01));
        REQUIRE_THAT(rms, WithinRel(0.05, 0.15));
    }
    SECTION("hot and dead pixels: fixed pattern with the requested fraction") {
        p.hot_pixel_fraction = 0.01;
        p.dead_pixel_fraction = 0.01;
        p.width = p.height = 128;
        const cv::Mat a = render_frame(std::span<const Disk>(), p, 1);
        const cv::Mat b = render_frame(std::span<const Disk>(), p, 2);
        REQUIRE(cv::norm(a, b, cv::NORM_INF) == 0);
        const int hot = cv::countNonZero(a == 255), dead = cv::countNonZero(a == 0);
        REQUIRE(hot > 140);  // 164 drawn, a few collide
        REQUIRE(hot <= 164);
        REQUIRE(dead > 140);
        REQUIRE(dead <= 164);
    }
}

TEST_CASE("generator: requested counts, truth in the box, overlaps < 0.2 px, frames match truth", "[unit]") {
    SynthParams sp;
    sp.render.width = 160;
    sp.render.height = 128;
    sp.radius_small = 5;
    sp.radius_large = 7;
    sp.n_small = 40;
    sp.n_large = 30;
    sp.frames = 6;
    sp.step_rms = 0.4;
    sp.active_speed = 0.2;
    sp.seed = 3;
    SynthGenerator gen(sp);
    REQUIRE(gen.n_disks() == 70);
    TrajectoryTable truth;
    cv::Mat img;
    int frames = 0;
    while (gen.next(img, truth)) {
        ++frames;
        REQUIRE(img.rows == 128);
        REQUIRE(img.cols == 160);
    }
    REQUIRE(frames == 6);
    REQUIRE(truth.size() == 6 * 70);
    REQUIRE(gen.max_overlap() < 0.2);
    const auto md = gen.metadata();
    int n_small = 0;
    for (std::size_t r = 0; r < truth.size(); ++r) {
        REQUIRE(md.geometry.contains(truth.x[r], truth.y[r]));
        REQUIRE(truth.radius[r] == (truth.species[r] == kSpeciesSmall ? 5.0f : 7.0f));
        if (truth.frame[r] == 0 && truth.species[r] == kSpeciesSmall) ++n_small;
    }
    REQUIRE(n_small == 40);
    // Disks move (per-axis RMS step of order step_rms).
    double msd = 0;
    for (std::size_t i = 0; i < 70; ++i) msd += std::pow(truth.x[70 + i] - truth.x[i], 2);
    REQUIRE(std::sqrt(msd / 70) > 0.05);
    REQUIRE(std::sqrt(msd / 70) < 2.0);
}

TEST_CASE("generator with motion blur: the image centroid of a moving disk is the truth (exposure average)",
          "[unit]") {
    SynthParams sp;
    sp.render.width = 160;
    sp.render.height = 160;
    sp.render.bit_depth = 16;
    sp.render.background = 0;
    sp.render.foreground = 0.9;
    sp.n_small = 1;
    sp.n_large = 0;
    sp.radius_small = 6;
    sp.active_speed = 6;  // px/frame terminal; ≈ 3 px/frame after 3 frames: px of motion blur
    sp.equilibrate = 3;   // the single disk starts at the box centre, far from the walls
    sp.exposure_subframes = 16;
    sp.exposure = 0.8;
    sp.seed = 4;
    SynthGenerator gen(sp);
    cv::Mat img;
    TrajectoryTable truth;
    double moved = 0;
    for (int f = 0; f < 4; ++f) {
        REQUIRE(gen.next(img, truth));
        cv::Mat d;
        img.convertTo(d, CV_64F);
        const auto m = moments(d);
        const std::size_t r = truth.size() - 1;
        REQUIRE_THAT(m.mx, WithinAbs(truth.x[r], 2e-3));
        REQUIRE_THAT(m.my, WithinAbs(truth.y[r], 2e-3));
        if (f > 0) moved += std::hypot(truth.x[r] - truth.x[r - 1], truth.y[r] - truth.y[r - 1]);
        // The motion-blurred disk is smeared: a wider edge (more pixels between 5% and 85% of
        // the level) than the same disk rendered still at the truth position.
        const Disk still{truth.x[r], truth.y[r], 6.0};
        const cv::Mat ref = render_frame(std::span<const Disk>(&still, 1), sp.render, f);
        auto edge = [](const cv::Mat& m) {
            return cv::countNonZero((m > 0.05 * 58982) & (m < 0.85 * 58982));
        };
        INFO("frame " << f << " v = (" << truth.vx[r] << ", " << truth.vy[r] << ") px/frame, edge pixels "
                      << edge(img) << " blurred vs " << edge(ref) << " still");
        if (f > 0) REQUIRE(edge(img) > edge(ref) + 5);  // ≈ +10 at 2 px of blur; ±2 without
    }
    REQUIRE(moved > 1.0);
}

TEST_CASE("generator at packing fraction 0.8 keeps overlaps below 0.2 px", "[unit]") {
    SynthParams sp;
    sp.render.width = 200;
    sp.render.height = 200;
    sp.radius_small = 6;
    sp.radius_large = 8;
    sp.packing_fraction = 0.8;
    sp.frames = 3;
    sp.active_speed = 0.3;
    SynthGenerator gen(sp);
    TrajectoryTable truth;
    cv::Mat img;
    while (gen.next(img, truth)) {}
    // Independent check on the truth itself.
    double worst = 0;
    for (std::size_t a = 0; a < truth.size(); ++a)
        for (std::size_t b = a + 1; b < truth.size() && truth.frame[b] == truth.frame[a]; ++b) {
            const double d = std::hypot(truth.x[a] - truth.x[b], truth.y[a] - truth.y[b]);
            worst = std::max(worst, double(truth.radius[a] + truth.radius[b]) - d);
        }
    const double phi = [&] {
        double area = 0;
        for (std::size_t r = 0; r < truth.size(); ++r)
            if (truth.frame[r] == 0) area += M_PI * truth.radius[r] * truth.radius[r];
        return area / gen.metadata().geometry.area();
    }();
    INFO("packing fraction " << phi << ", worst overlap " << worst << " px");
    REQUIRE_THAT(phi, WithinAbs(0.8, 0.02));
    REQUIRE(worst < 0.2);
    REQUIRE(gen.max_overlap() < 0.2);
}

TEST_CASE(
    "vibra synth: video + truth with the requested counts and overlaps < 0.2 px — errors leave no output",
    "[unit]") {
    test::TempDir tmp("synth_cli");
    const std::string video = tmp.file("s.avi");
    auto r = test::run_vibra(
        "-q synth -o '" + video +
        "' --width 200 --height 160 --n-small 30 --n-large 20 --radius-small 5 --radius-large 7 "
        "--frames 5 --look marker-dot --noise 0.05 --gradient 0.1 --motion-blur 3 --seed 9");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    store::TrajectoryReader tr(tmp.file("s.truth.h5"));
    REQUIRE(tr.n_frames() == 5);
    REQUIRE(tr.meta().length_unit == "px");
    REQUIRE(tr.meta().time_unit == "frame");
    REQUIRE(tr.meta().image_width == 200);
    REQUIRE(tr.meta().species_diameters == std::vector<double>{10.0, 14.0});
    const auto t = tr.read_all();
    REQUIRE(t.rows.size() == 5 * 50);
    int small = 0, large = 0;
    double worst = 0;
    for (std::size_t a = 0; a < t.rows.size(); ++a) {
        if (t.rows.frame[a] == 0) (t.rows.species[a] == kSpeciesSmall ? small : large)++;
        REQUIRE(t.rows.radius[a] == (t.rows.species[a] == kSpeciesSmall ? 5.0f : 7.0f));
        for (std::size_t b = a + 1; b < t.rows.size() && t.rows.frame[b] == t.rows.frame[a]; ++b)
            worst = std::max(worst, double(t.rows.radius[a] + t.rows.radius[b]) -
                                        std::hypot(t.rows.x[a] - t.rows.x[b], t.rows.y[a] - t.rows.y[b]));
    }
    REQUIRE(small == 30);
    REQUIRE(large == 20);
    REQUIRE(worst < 0.2);
    // The video has the frames, at the image size.
    auto src = open_video(video);
    REQUIRE(src->info().n_frames == 5);
    REQUIRE(src->info().width == 200);
    REQUIRE(src->info().height == 160);

    // 16-bit TIFF sequence.
    r = test::run_vibra("-q synth -o '" + tmp.file("seq16") +
                        "/' --format tiff --bit-depth 16 --width 64 --height 64 "
                        "--n-small 3 --n-large 2 --frames 2");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    auto s16 = open_video(tmp.file("seq16"));
    REQUIRE(s16->info().bit_depth == 16);
    REQUIRE(s16->info().n_frames == 2);
    REQUIRE(fs::exists(tmp.file("seq16.truth.h5")));

    // 16 bits into an AVI: usage error, nothing written.
    r = test::run_vibra("-q synth -o '" + tmp.file("bad.avi") + "' --bit-depth 16 --frames 2");
    REQUIRE(r.exit_code == 2);
    REQUIRE_FALSE(fs::exists(tmp.file("bad.avi")));
    REQUIRE_FALSE(fs::exists(tmp.file("bad.truth.h5")));
    // Impossible packing: usage error naming the field.
    r = test::run_vibra("-q synth -o '" + tmp.file("dense.avi") + "' --packing-fraction 0.95");
    REQUIRE(r.exit_code == 2);
    REQUIRE(r.output.find("packing_fraction") != std::string::npos);
}

TEST_CASE("reference cases carry the documented settings", "[unit]") {
    using vibra::tracking::DiskLook;
    using vibra::tracking::ReferenceCase;
    const auto m = vibra::tracking::reference_case(ReferenceCase::moderate, 256, 3, 7);
    REQUIRE(m.render.width == 256);
    REQUIRE(m.render.height == 256);
    REQUIRE(m.frames == 3);
    REQUIRE(m.seed == 7);
    REQUIRE(m.render.look == DiskLook::dark_ring);
    REQUIRE(m.render.noise_sigma == 0.05);
    REQUIRE(m.render.gradient == 0.1);
    REQUIRE(m.packing_fraction == 0.6);
    REQUIRE(m.radius_small == 6);
    REQUIRE(m.radius_large == 8);
    const auto d = vibra::tracking::reference_case(ReferenceCase::dense, 128, 1, 1);
    REQUIRE(d.render.look == DiskLook::marker_dot);
    REQUIRE(d.packing_fraction == 0.8);
    REQUIRE(d.render.gradient == 0.0);
    const auto n = vibra::tracking::reference_case(ReferenceCase::noisy, 128, 1, 1);
    REQUIRE(n.render.look == DiskLook::plain);
    REQUIRE(n.render.noise_sigma == 0.07);
    REQUIRE(n.render.gradient == 0.857);
    REQUIRE(n.render.flicker == 0.03);
    REQUIRE(n.render.hot_pixel_fraction == 0.00025);
    REQUIRE(n.render.dead_pixel_fraction == 0.00025);
    REQUIRE(n.packing_fraction == 0.3);
    REQUIRE(n.active_speed == 2.0);
    REQUIRE(n.exposure_subframes == 5);
    REQUIRE_NOTHROW(m.validate());
    REQUIRE_NOTHROW(d.validate());
    REQUIRE_NOTHROW(n.validate());
}
