// SPDX-License-Identifier: GPL-3.0-or-later
// Synthetic video: exact-area disk rendering, image formation (illumination, PSF, noise,
// defects, quantisation) and the soft-disk driven generator. See synth.hpp for the model.
#include "vibra/tracking/synth.hpp"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <string>

#include "vibra/core/error.hpp"
#include "vibra/core/soft_disk.hpp"

namespace vibra::tracking {

namespace {

[[noreturn]] void bad(const std::string& where, const std::string& field, double v, const std::string& rule) {
    throw ParameterError(where + ": " + field + " must be " + rule + ", got " + std::to_string(v));
}

constexpr double kPi = 3.14159265358979323846;

// ---- exact area of a circle (centre 0, radius r) inside axis-aligned regions -------------

// ∫ sqrt(r² − X²) dX antiderivative.
inline double chord_primitive(double X, double r) {
    const double s = std::clamp(X / r, -1.0, 1.0);
    return 0.5 * (X * r * std::sqrt(std::max(0.0, 1.0 - s * s)) + r * r * std::asin(s));
}

// Area of the circle ∩ {X > x, Y > y} for x, y ≥ 0.
inline double corner_area_pos(double x, double y, double r) {
    if (x >= r || y >= r || x * x + y * y >= r * r) return 0.0;
    const double xm = std::sqrt(r * r - y * y);
    return chord_primitive(xm, r) - chord_primitive(x, r) - y * (xm - x);
}

// Area of the circle ∩ {X > x}.
inline double half_plane_area(double x, double r) {
    if (x >= r) return 0.0;
    if (x <= -r) return kPi * r * r;
    if (x >= 0) return 2.0 * corner_area_pos(x, 0.0, r);
    return kPi * r * r - 2.0 * corner_area_pos(-x, 0.0, r);
}

// Area of the circle ∩ {X > x, Y > y}, any signs (reflection symmetry).
double corner_area(double x, double y, double r) {
    if (x < 0) return half_plane_area(y, r) - corner_area(-x, y, r);
    if (y < 0) return half_plane_area(x, r) - corner_area(x, -y, r);
    return corner_area_pos(x, y, r);
}

// Exact coverage of the pixel square [x0,x0+1]×[y0,y0+1] (relative to the centre) by the disk.
inline double pixel_coverage(double x0, double y0, double r) {
    const double x1 = x0 + 1, y1 = y0 + 1;
    // Quick classification by nearest / farthest point of the square.
    const double nx = x0 > 0 ? x0 : (x1 < 0 ? x1 : 0.0);
    const double ny = y0 > 0 ? y0 : (y1 < 0 ? y1 : 0.0);
    if (nx * nx + ny * ny >= r * r) return 0.0;
    const double fx = std::max(std::abs(x0), std::abs(x1)), fy = std::max(std::abs(y0), std::abs(y1));
    if (fx * fx + fy * fy <= r * r) return 1.0;
    const double a = corner_area(x0, y0, r) - corner_area(x1, y0, r) - corner_area(x0, y1, r) + corner_area(x1, y1, r);
    return std::clamp(a, 0.0, 1.0);
}

struct Layer {
    double radius_factor;
    double weight;
    bool textured;
};

std::vector<Layer> layers_of(const RenderParams& p) {
    switch (p.look) {
        case DiskLook::plain: return {{1.0, 1.0, false}};
        case DiskLook::dark_ring:
            return {{1.0, 1.0, false}, {p.ring_outer, -p.ring_depth, false}, {p.ring_inner, p.ring_depth, false}};
        case DiskLook::marker_dot: return {{1.0, 1.0, false}, {p.dot_fraction, -p.dot_depth, false}};
        case DiskLook::bright_rim:
            return {{1.0, 1.0, false}, {p.rim_inner, p.interior_level - 1.0, false}, {p.rim_inner, 1.0, true}};
    }
    return {{1.0, 1.0, false}};
}

// Smooth random texture in [−1, 1] fixed to the disk (position relative to the centre, in units
// of r, rotated by the disk's angle): a sum of 4 plane waves with random directions and phases.
struct Texture {
    std::array<double, 4> kx{}, ky{}, ph{};
    Texture(std::uint32_t seed, double angle) {
        std::mt19937 g(seed * 2654435761u + 12345u);
        std::uniform_real_distribution<double> u(0.0, 2 * kPi);
        for (int k = 0; k < 4; ++k) {
            const double a = u(g) + angle, kk = 6.0 + 4.0 * double(k);  // wavelengths ≈ r/1 … r/3
            kx[static_cast<std::size_t>(k)] = kk * std::cos(a);
            ky[static_cast<std::size_t>(k)] = kk * std::sin(a);
            ph[static_cast<std::size_t>(k)] = u(g);
        }
    }
    double operator()(double u, double v) const {
        double s = 0;
        for (std::size_t k = 0; k < 4; ++k) s += std::cos(kx[k] * u + ky[k] * v + ph[k]);
        return 0.5 * s / 2.0;  // RMS 0.5·sqrt(2)/2·... ≈ 0.35, |s| ≤ 1
    }
};

void add_disk(cv::Mat& acc, const Disk& d, const std::vector<Layer>& layers, const RenderParams& p, double w) {
    const double R = d.radius;
    const int i0 = std::max(0, int(std::floor(d.x - R - 0.5)));
    const int i1 = std::min(acc.cols - 1, int(std::ceil(d.x + R + 0.5)));
    const int j0 = std::max(0, int(std::floor(d.y - R - 0.5)));
    const int j1 = std::min(acc.rows - 1, int(std::ceil(d.y + R + 0.5)));
    if (i0 > i1 || j0 > j1) return;
    const bool any_texture = std::any_of(layers.begin(), layers.end(), [](const Layer& l) { return l.textured; });
    Texture tex(d.texture_seed, d.angle);
    const int n = p.supersample;
    for (int j = j0; j <= j1; ++j) {
        auto* row = acc.ptr<double>(j);
        for (int i = i0; i <= i1; ++i) {
            const double x0 = double(i) - 0.5 - d.x, y0 = double(j) - 0.5 - d.y;
            double v = 0;
            if (n <= 0) {
                double tval = 0;
                if (any_texture) tval = p.texture_amplitude * tex((x0 + 0.5) / R, (y0 + 0.5) / R);
                for (const auto& l : layers) {
                    const double c = pixel_coverage(x0, y0, l.radius_factor * R);
                    v += (l.textured ? tval : l.weight) * c;
                }
            } else {
                const double step = 1.0 / n;
                for (int b = 0; b < n; ++b) {
                    const double yy = y0 + (b + 0.5) * step;
                    for (int a = 0; a < n; ++a) {
                        const double xx = x0 + (a + 0.5) * step;
                        const double rho2 = xx * xx + yy * yy;
                        for (const auto& l : layers) {
                            const double rl = l.radius_factor * R;
                            if (rho2 < rl * rl)
                                v += l.textured ? p.texture_amplitude * tex(xx / R, yy / R) : l.weight;
                        }
                    }
                }
                v /= double(n) * double(n);
            }
            row[i] += w * v;
        }
    }
}

std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
    std::uint64_t z = a * 0x9E3779B97F4A7C15ull + b + 0x632BE59BD9B4E019ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

}  // namespace

const char* to_string(DiskLook look) {
    switch (look) {
        case DiskLook::plain: return "plain";
        case DiskLook::dark_ring: return "dark-ring";
        case DiskLook::marker_dot: return "marker-dot";
        case DiskLook::bright_rim: return "bright-rim";
    }
    return "plain";
}

DiskLook disk_look_from_string(const std::string& s) {
    if (s == "plain") return DiskLook::plain;
    if (s == "dark-ring" || s == "ring" || s == "dark_ring") return DiskLook::dark_ring;
    if (s == "marker-dot" || s == "dot" || s == "marker_dot") return DiskLook::marker_dot;
    if (s == "bright-rim" || s == "rim" || s == "bright_rim") return DiskLook::bright_rim;
    throw ParameterError("disk look must be plain, dark-ring, marker-dot or bright-rim, got '" + s + "'");
}

void RenderParams::validate() const {
    const std::string w = "render parameters";
    if (width < 1 || width > 65536) bad(w, "width", width, "in [1, 65536]");
    if (height < 1 || height > 65536) bad(w, "height", height, "in [1, 65536]");
    if (bit_depth != 8 && bit_depth != 16) bad(w, "bit_depth", bit_depth, "8 or 16");
    if (!(background >= 0 && background <= 1)) bad(w, "background", background, "in [0, 1]");
    if (!(foreground >= 0 && foreground <= 1)) bad(w, "foreground", foreground, "in [0, 1]");
    if (!(ring_inner > 0 && ring_inner < ring_outer && ring_outer <= 1))
        bad(w, "ring_inner/ring_outer", ring_inner, "0 < ring_inner < ring_outer <= 1");
    if (!(dot_fraction > 0 && dot_fraction < 1)) bad(w, "dot_fraction", dot_fraction, "in (0, 1)");
    if (!(rim_inner > 0 && rim_inner < 1)) bad(w, "rim_inner", rim_inner, "in (0, 1)");
    if (supersample < 0 || supersample > 64) bad(w, "supersample", supersample, "in [0, 64]");
    if (!(blur_sigma >= 0 && blur_sigma <= 50)) bad(w, "blur_sigma", blur_sigma, "in [0, 50] px");
    if (!(noise_sigma >= 0)) bad(w, "noise_sigma", noise_sigma, ">= 0");
    if (!(photons_full_scale >= 0)) bad(w, "photons_full_scale", photons_full_scale, ">= 0");
    if (!(gradient >= 0 && gradient < 2)) bad(w, "gradient", gradient, "in [0, 2)");
    if (!(flicker >= 0 && flicker < 0.5)) bad(w, "flicker", flicker, "in [0, 0.5)");
    if (!(hot_pixel_fraction >= 0 && hot_pixel_fraction <= 0.1))
        bad(w, "hot_pixel_fraction", hot_pixel_fraction, "in [0, 0.1]");
    if (!(dead_pixel_fraction >= 0 && dead_pixel_fraction <= 0.1))
        bad(w, "dead_pixel_fraction", dead_pixel_fraction, "in [0, 0.1]");
}

double circle_rect_area(double cx, double cy, double r, double x0, double y0, double x1, double y1) {
    if (!(r > 0) || x1 <= x0 || y1 <= y0) return 0.0;
    x0 -= cx, x1 -= cx, y0 -= cy, y1 -= cy;
    return corner_area(x0, y0, r) - corner_area(x1, y0, r) - corner_area(x0, y1, r) + corner_area(x1, y1, r);
}

cv::Mat render_coverage(std::span<const std::vector<Disk>> subframes, const RenderParams& p) {
    p.validate();
    cv::Mat acc(p.height, p.width, CV_64FC1, cv::Scalar(0.0));
    if (subframes.empty()) return acc;
    const auto layers = layers_of(p);
    const double w = 1.0 / double(subframes.size());
    for (const auto& disks : subframes)
        for (const auto& d : disks) add_disk(acc, d, layers, p, w);
    return acc;
}

cv::Mat render_coverage(std::span<const Disk> disks, const RenderParams& p) {
    std::vector<std::vector<Disk>> one{std::vector<Disk>(disks.begin(), disks.end())};
    return render_coverage(std::span<const std::vector<Disk>>(one), p);
}

cv::Mat render_frame(std::span<const std::vector<Disk>> subframes, const RenderParams& p, std::int64_t frame) {
    cv::Mat img = render_coverage(subframes, p);
    double bg = p.background, fg = p.foreground;
    if (p.dark_on_bright) std::swap(bg, fg);
    std::mt19937_64 rng(mix(p.seed, static_cast<std::uint64_t>(frame) + 1));
    std::normal_distribution<double> gauss(0.0, 1.0);
    const double flick = p.flicker > 0 ? std::max(0.0, 1.0 + p.flicker * gauss(rng)) : 1.0;
    const double c = std::cos(p.gradient_angle), s = std::sin(p.gradient_angle);
    const double xc = 0.5 * (p.width - 1), yc = 0.5 * (p.height - 1);
    const double extent = std::max(1e-12, std::abs(c) * (p.width - 1) + std::abs(s) * (p.height - 1));
    for (int j = 0; j < img.rows; ++j) {
        auto* row = img.ptr<double>(j);
        for (int i = 0; i < img.cols; ++i) {
            const double u = ((i - xc) * c + (j - yc) * s) / extent;  // in [−½, ½]
            const double gain = 1.0 + p.gradient * u;
            row[i] = flick * gain * (bg + (fg - bg) * row[i]);
        }
    }
    if (p.blur_sigma > 0) cv::GaussianBlur(img, img, cv::Size(0, 0), p.blur_sigma, p.blur_sigma, cv::BORDER_REPLICATE);
    const double contrast = std::abs(fg - bg);
    if (p.photons_full_scale > 0 || p.noise_sigma > 0) {
        for (int j = 0; j < img.rows; ++j) {
            auto* row = img.ptr<double>(j);
            for (int i = 0; i < img.cols; ++i) {
                double v = row[i];
                if (p.photons_full_scale > 0) {
                    const double lambda = std::max(0.0, v) * p.photons_full_scale;
                    std::poisson_distribution<long long> pois(lambda > 0 ? lambda : 1e-300);
                    v = lambda > 0 ? double(pois(rng)) / p.photons_full_scale : 0.0;
                }
                if (p.noise_sigma > 0) v += p.noise_sigma * contrast * gauss(rng);
                row[i] = v;
            }
        }
    }
    if (p.hot_pixel_fraction > 0 || p.dead_pixel_fraction > 0) {
        // Fixed pattern: depends on the seed only, the same in every frame (like a real sensor).
        std::mt19937_64 prng(mix(p.seed, 0xDEADu));
        std::uniform_int_distribution<int> ui(0, p.width - 1), uj(0, p.height - 1);
        const auto npx = double(p.width) * double(p.height);
        const auto n_hot = static_cast<std::int64_t>(std::llround(p.hot_pixel_fraction * npx));
        const auto n_dead = static_cast<std::int64_t>(std::llround(p.dead_pixel_fraction * npx));
        for (std::int64_t k = 0; k < n_hot; ++k) img.at<double>(uj(prng), ui(prng)) = 1.0;
        for (std::int64_t k = 0; k < n_dead; ++k) img.at<double>(uj(prng), ui(prng)) = 0.0;
    }
    const double maxv = p.bit_depth == 16 ? 65535.0 : 255.0;
    cv::Mat out(p.height, p.width, p.bit_depth == 16 ? CV_16UC1 : CV_8UC1);
    for (int j = 0; j < img.rows; ++j) {
        const auto* src = img.ptr<double>(j);
        if (p.bit_depth == 16) {
            auto* dst = out.ptr<std::uint16_t>(j);
            for (int i = 0; i < img.cols; ++i)
                dst[i] = static_cast<std::uint16_t>(std::clamp(std::nearbyint(src[i] * maxv), 0.0, maxv));
        } else {
            auto* dst = out.ptr<std::uint8_t>(j);
            for (int i = 0; i < img.cols; ++i)
                dst[i] = static_cast<std::uint8_t>(std::clamp(std::nearbyint(src[i] * maxv), 0.0, maxv));
        }
    }
    return out;
}

cv::Mat render_frame(std::span<const Disk> disks, const RenderParams& p, std::int64_t frame) {
    std::vector<std::vector<Disk>> one{std::vector<Disk>(disks.begin(), disks.end())};
    return render_frame(std::span<const std::vector<Disk>>(one), p, frame);
}

}  // namespace vibra::tracking
