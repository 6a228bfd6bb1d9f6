// SPDX-License-Identifier: GPL-3.0-or-later
// Synthetic video: exact-area disk rendering, image formation (illumination, PSF, noise,
// defects, quantisation) and the soft-disk driven generator. See synth.hpp for the model.
#include "vibra/tracking/synth.hpp"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <memory>
#include <string>
#include <thread>

#include "vibra/core/error.hpp"
#include "vibra/core/soft_disk.hpp"
#include "vibra/core/workers.hpp"

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
    const double a =
        corner_area(x0, y0, r) - corner_area(x1, y0, r) - corner_area(x0, y1, r) + corner_area(x1, y1, r);
    return std::clamp(a, 0.0, 1.0);
}

struct Layer {
    double radius_factor;
    double weight;
    bool textured;
};

std::vector<Layer> layers_of(const RenderParams& p) {
    switch (p.look) {
        case DiskLook::plain:
            return {{1.0, 1.0, false}};
        case DiskLook::dark_ring:
            return {
                {1.0, 1.0, false}, {p.ring_outer, -p.ring_depth, false}, {p.ring_inner, p.ring_depth, false}};
        case DiskLook::marker_dot:
            return {{1.0, 1.0, false}, {p.dot_fraction, -p.dot_depth, false}};
        case DiskLook::bright_rim:
            return {
                {1.0, 1.0, false}, {p.rim_inner, p.interior_level - 1.0, false}, {p.rim_inner, 1.0, true}};
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
        return 0.25 * s;  // |value| ≤ 1, RMS ≈ 0.35
    }
};

// ---- Gaussian PSF ⊗ disk, integrated over pixels (semi-analytic) ----------------------------
//
// pixel(i,j) = ∫∫_disk B(i − x) B(j − y) dx dy with B = box ⊗ Gaussian(σ) per axis
//            = ∫_{−π/2}^{π/2} R cosθ · B(i − cx − R sinθ) · [∫_{−s}^{s} B(j − cy − t) dt] dθ,  s = R cosθ,
// the θ integral by Gauss–Legendre (smooth integrand), the t integral in closed form via the
// antiderivative of erf. Separable: per node one row of B values and one column of chord
// integrals, then an outer product.

struct GaussLegendre {
    std::vector<double> x, w;
};

const GaussLegendre& gauss_legendre(int n) {
    thread_local std::vector<std::pair<int, GaussLegendre>> cache;
    for (const auto& [k, g] : cache)
        if (k == n) return g;
    GaussLegendre g;
    g.x.resize(static_cast<std::size_t>(n));
    g.w.resize(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        double z = std::cos(kPi * (i + 0.75) / (n + 0.5)), dp = 1;
        for (int it = 0; it < 100; ++it) {
            double p1 = 1, p2 = 0;
            for (int k = 1; k <= n; ++k) {
                const double p3 = p2;
                p2 = p1;
                p1 = ((2.0 * k - 1) * z * p2 - (k - 1.0) * p3) / k;
            }
            dp = n * (z * p1 - p2) / (z * z - 1);
            const double dz = p1 / dp;
            z -= dz;
            if (std::abs(dz) < 1e-15) break;
        }
        g.x[static_cast<std::size_t>(i)] = z;
        g.w[static_cast<std::size_t>(i)] = 2 / ((1 - z * z) * dp * dp);
    }
    cache.emplace_back(n, std::move(g));
    return cache.back().second;
}

// ∫_0^u erf(a / (√2 σ)) da.
inline double erf_primitive(double u, double sigma) {
    const double k = std::sqrt(2.0) * sigma, z = u / k;
    return k * (z * std::erf(z) + (std::exp(-z * z) - 1.0) / std::sqrt(kPi));
}

// Adds weight × (PSF ⊗ disk of radius R at (cx, cy)) integrated over pixels.
void add_disk_psf(cv::Mat& acc, double cx, double cy, double R, double sigma, double weight) {
    const double reach = R + 0.5 + 6.0 * sigma;
    const int i0 = std::max(0, int(std::floor(cx - reach))),
              i1 = std::min(acc.cols - 1, int(std::ceil(cx + reach)));
    const int j0 = std::max(0, int(std::floor(cy - reach))),
              j1 = std::min(acc.rows - 1, int(std::ceil(cy + reach)));
    if (i0 > i1 || j0 > j1) return;
    const int n = std::clamp(int(std::ceil(3.0 * R / sigma)) + 10, 12, 400);
    const auto& gl = gauss_legendre(n);
    const int nc = i1 - i0 + 1, nr = j1 - j0 + 1;
    const double k = 1.0 / (std::sqrt(2.0) * sigma);
    std::vector<double> bx(static_cast<std::size_t>(nc)), cyv(static_cast<std::size_t>(nr));
    std::vector<double> eb(static_cast<std::size_t>(nc + 1)), ep(static_cast<std::size_t>(nr + 1)),
        em(static_cast<std::size_t>(nr + 1));
    thread_local std::vector<double> patch;
    patch.assign(static_cast<std::size_t>(nc) * static_cast<std::size_t>(nr), 0.0);
    for (int q = 0; q < n; ++q) {
        const double th = 0.5 * kPi * gl.x[static_cast<std::size_t>(q)];
        const double wq = 0.5 * kPi * gl.w[static_cast<std::size_t>(q)] * R * std::cos(th);
        const double xn = cx + R * std::sin(th), s = R * std::cos(th);
        // B(i − xn) = ½ [erf((i − xn + ½) k) − erf((i − xn − ½) k)]: boundaries i − ½.
        for (int c = 0; c <= nc; ++c) eb[static_cast<std::size_t>(c)] = std::erf((i0 + c - 0.5 - xn) * k);
        for (int c = 0; c < nc; ++c)
            bx[static_cast<std::size_t>(c)] =
                0.5 * (eb[static_cast<std::size_t>(c + 1)] - eb[static_cast<std::size_t>(c)]);
        // ∫_{−s}^{s} B(j − cy − t) dt = ½ [E(v+½) − E(v−½)]_{v = j−cy−s}^{j−cy+s}, E = erf_primitive.
        for (int r = 0; r <= nr; ++r) {
            const double b = j0 + r - 0.5 - cy;  // boundary j − ½ relative to cy
            ep[static_cast<std::size_t>(r)] = erf_primitive(b + s, sigma);
            em[static_cast<std::size_t>(r)] = erf_primitive(b - s, sigma);
        }
        for (int r = 0; r < nr; ++r) {
            const auto a = static_cast<std::size_t>(r), b = a + 1;
            // E(j−cy+s+½) − E(j−cy−s+½) − E(j−cy+s−½) + E(j−cy−s−½)
            cyv[a] = 0.5 * ((ep[b] - em[b]) - (ep[a] - em[a]));
        }
        for (int r = 0; r < nr; ++r) {
            const double f = wq * cyv[static_cast<std::size_t>(r)];
            if (f == 0) continue;
            double* row = patch.data() + static_cast<std::size_t>(r) * static_cast<std::size_t>(nc);
            for (int c = 0; c < nc; ++c) row[c] += f * bx[static_cast<std::size_t>(c)];
        }
    }
    for (int r = 0; r < nr; ++r) {
        double* dst = acc.ptr<double>(j0 + r) + i0;
        const double* src = patch.data() + static_cast<std::size_t>(r) * static_cast<std::size_t>(nc);
        for (int c = 0; c < nc; ++c) dst[c] += weight * src[c];
    }
}

void add_disk(cv::Mat& acc, const Disk& d, const std::vector<Layer>& layers, const RenderParams& p,
              double w) {
    const double R = d.radius;
    const int i0 = std::max(0, int(std::floor(d.x - R - 0.5)));
    const int i1 = std::min(acc.cols - 1, int(std::ceil(d.x + R + 0.5)));
    const int j0 = std::max(0, int(std::floor(d.y - R - 0.5)));
    const int j1 = std::min(acc.rows - 1, int(std::ceil(d.y + R + 0.5)));
    if (i0 > i1 || j0 > j1) return;
    const bool any_texture =
        std::any_of(layers.begin(), layers.end(), [](const Layer& l) { return l.textured; });
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

// Static plate texture, unit RMS: white noise blurred at σ = scale and at 4·scale (two
// octaves, equal weight), fixed by the seed. Cached per thread (the same field every frame).
const cv::Mat& plate_texture_field(std::uint64_t seed, int w, int h, double scale) {
    struct Cached {
        std::uint64_t seed;
        int w, h;
        double scale;
        cv::Mat field;
    };
    thread_local std::vector<Cached> cache;
    for (const auto& e : cache)
        if (e.seed == seed && e.w == w && e.h == h && e.scale == scale) return e.field;
    std::mt19937_64 rng(mix(seed, 0x7E87u));
    std::normal_distribution<double> gauss(0.0, 1.0);
    cv::Mat white(h, w, CV_64FC1);
    for (int j = 0; j < h; ++j) {
        auto* row = white.ptr<double>(j);
        for (int i = 0; i < w; ++i) row[i] = gauss(rng);
    }
    auto octave = [&](double s) {
        cv::Mat o;
        cv::GaussianBlur(white, o, cv::Size(0, 0), s, s, cv::BORDER_REFLECT);
        cv::Scalar mean, sd;
        cv::meanStdDev(o, mean, sd);
        o = (o - mean[0]) / std::max(1e-300, sd[0]);
        return o;
    };
    cv::Mat f = octave(scale) + octave(4 * scale);
    cv::Scalar mean, sd;
    cv::meanStdDev(f, mean, sd);
    f = (f - mean[0]) / std::max(1e-300, sd[0]);
    if (cache.size() > 4) cache.clear();
    cache.push_back({seed, w, h, scale, f});
    return cache.back().field;
}

// Illumination gain at every pixel (without the per-frame flicker): linear gradient ×
// vignetting × light blobs.
cv::Mat illumination_gain(const RenderParams& p) {
    const double c = std::cos(p.gradient_angle), s = std::sin(p.gradient_angle);
    const double xc = 0.5 * (p.width - 1), yc = 0.5 * (p.height - 1);
    const double extent = std::max(1e-12, std::abs(c) * (p.width - 1) + std::abs(s) * (p.height - 1));
    const double corner2 = std::max(1e-12, xc * xc + yc * yc);
    struct Blob {
        double x, y;
    };
    std::vector<Blob> blobs;
    std::mt19937_64 brng(mix(p.seed, 0xB10Bu));
    std::uniform_real_distribution<double> ux(0.0, p.width - 1.0), uy(0.0, p.height - 1.0);
    for (int k = 0; k < p.light_blobs; ++k) {
        const double x = ux(brng), y = uy(brng);
        blobs.push_back({x, y});
    }
    const double inv2s2 = 1.0 / (2.0 * p.light_blob_radius * p.light_blob_radius);
    cv::Mat gain(p.height, p.width, CV_64FC1);
    for (int j = 0; j < p.height; ++j) {
        auto* row = gain.ptr<double>(j);
        for (int i = 0; i < p.width; ++i) {
            const double u = ((i - xc) * c + (j - yc) * s) / extent;  // in [−½, ½]
            double g = 1.0 + p.gradient * u;
            if (p.vignetting > 0)
                g *= 1.0 - p.vignetting * ((i - xc) * (i - xc) + (j - yc) * (j - yc)) / corner2;
            if (!blobs.empty()) {
                double b = 0;
                for (const auto& bl : blobs)
                    b += std::exp(-((i - bl.x) * (i - bl.x) + (j - bl.y) * (j - bl.y)) * inv2s2);
                g *= 1.0 + p.light_blob_amplitude * b;
            }
            row[i] = std::max(0.0, g);
        }
    }
    return gain;
}

}  // namespace

const char* to_string(DiskLook look) {
    switch (look) {
        case DiskLook::plain:
            return "plain";
        case DiskLook::dark_ring:
            return "dark-ring";
        case DiskLook::marker_dot:
            return "marker-dot";
        case DiskLook::bright_rim:
            return "bright-rim";
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
    if (!(vignetting >= 0 && vignetting < 1)) bad(w, "vignetting", vignetting, "in [0, 1)");
    if (light_blobs < 0 || light_blobs > 1000) bad(w, "light_blobs", light_blobs, "in [0, 1000]");
    if (!(light_blob_amplitude >= 0 && light_blob_amplitude <= 10))
        bad(w, "light_blob_amplitude", light_blob_amplitude, "in [0, 10]");
    if (!(light_blob_radius > 0 && light_blob_radius <= 1e5))
        bad(w, "light_blob_radius", light_blob_radius, "in (0, 1e5] px");
    if (!(plate_texture >= 0 && plate_texture <= 1)) bad(w, "plate_texture", plate_texture, "in [0, 1]");
    if (!(plate_texture_scale >= 0.3 && plate_texture_scale <= 1000))
        bad(w, "plate_texture_scale", plate_texture_scale, "in [0.3, 1000] px");
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
    std::vector<const Disk*> all;
    for (const auto& disks : subframes)
        for (const auto& d : disks) all.push_back(&d);
    std::vector<Layer> plain_layers, textured_layers;
    for (const auto& l : layers) (l.textured ? textured_layers : plain_layers).push_back(l);
    // Disks split over threads, each with its own accumulator (sums are order-independent up
    // to rounding).
    auto work = [&](cv::Mat& out, std::size_t begin, std::size_t end) {
        for (std::size_t k = begin; k < end; ++k) {
            const Disk& d = *all[k];
            if (p.blur_sigma <= 0) {
                add_disk(out, d, layers, p, w);
            } else {
                // Continuous PSF before pixel integration: disk layers semi-analytically.
                for (const auto& l : plain_layers)
                    add_disk_psf(out, d.x, d.y, l.radius_factor * d.radius, p.blur_sigma, w * l.weight);
            }
        }
    };
    int nt = p.threads > 0
                 ? p.threads
                 : static_cast<int>(std::max(1u, std::min(8u, std::thread::hardware_concurrency())));
    if (all.size() < 128) nt = 1;
    if (nt == 1) {
        work(acc, 0, all.size());
    } else {
        std::vector<cv::Mat> parts(static_cast<std::size_t>(nt - 1));
        const std::size_t chunk =
            (all.size() + static_cast<std::size_t>(nt) - 1) / static_cast<std::size_t>(nt);
        run_workers(nt, [&](int t) {  // worker t > 0 on its own image, added in order below
            const std::size_t b = std::min(all.size(), chunk * static_cast<std::size_t>(t));
            const std::size_t e = std::min(all.size(), chunk * static_cast<std::size_t>(t + 1));
            if (t == 0) return work(acc, b, e);
            auto& m = parts[static_cast<std::size_t>(t - 1)];
            m = cv::Mat(p.height, p.width, CV_64FC1, cv::Scalar(0.0));
            work(m, b, e);
        });
        for (auto& m : parts) acc += m;
    }
    if (p.blur_sigma <= 0) return acc;
    // The texture of the bright-rim look (not a disk layer) is box-integrated, then blurred
    // discretely.
    if (!textured_layers.empty() && p.texture_amplitude != 0) {
        cv::Mat tex(p.height, p.width, CV_64FC1, cv::Scalar(0.0));
        for (const auto& disks : subframes)
            for (const auto& d : disks) add_disk(tex, d, textured_layers, p, w);
        cv::GaussianBlur(tex, tex, cv::Size(0, 0), p.blur_sigma, p.blur_sigma, cv::BORDER_CONSTANT);
        acc += tex;
    }
    return acc;
}

cv::Mat render_coverage(std::span<const Disk> disks, const RenderParams& p) {
    std::vector<std::vector<Disk>> one{std::vector<Disk>(disks.begin(), disks.end())};
    return render_coverage(std::span<const std::vector<Disk>>(one), p);
}

cv::Mat render_frame(std::span<const std::vector<Disk>> subframes, const RenderParams& p,
                     std::int64_t frame) {
    cv::Mat img = render_coverage(subframes, p);
    double bg = p.background, fg = p.foreground;
    if (p.dark_on_bright) std::swap(bg, fg);
    std::mt19937_64 rng(mix(p.seed, static_cast<std::uint64_t>(frame) + 1));
    std::normal_distribution<double> gauss(0.0, 1.0);
    const double flick = p.flicker > 0 ? std::max(0.0, 1.0 + p.flicker * gauss(rng)) : 1.0;
    const double contrast = std::abs(fg - bg);
    const bool plain_gain = p.vignetting <= 0 && p.light_blobs <= 0;
    const cv::Mat gain_map = plain_gain ? cv::Mat() : illumination_gain(p);
    const double c = std::cos(p.gradient_angle), s = std::sin(p.gradient_angle);
    const double xc = 0.5 * (p.width - 1), yc = 0.5 * (p.height - 1);
    const double extent = std::max(1e-12, std::abs(c) * (p.width - 1) + std::abs(s) * (p.height - 1));
    // The plate texture shows where the disks do not cover the plate (their outlines' coverage).
    cv::Mat texture, occlusion;
    if (p.plate_texture > 0) {
        texture = plate_texture_field(p.seed, p.width, p.height, p.plate_texture_scale);
        if (p.look == DiskLook::plain) {
            occlusion = img;
        } else {
            RenderParams outline = p;
            outline.look = DiskLook::plain;
            occlusion = render_coverage(subframes, outline);
        }
    }
    for (int j = 0; j < img.rows; ++j) {
        auto* row = img.ptr<double>(j);
        const double* grow = plain_gain ? nullptr : gain_map.ptr<double>(j);
        const double* trow = texture.empty() ? nullptr : texture.ptr<double>(j);
        const double* orow = occlusion.empty() ? nullptr : occlusion.ptr<double>(j);
        for (int i = 0; i < img.cols; ++i) {
            const double u = ((i - xc) * c + (j - yc) * s) / extent;  // in [−½, ½]
            const double gain = plain_gain ? 1.0 + p.gradient * u : grow[i];
            double level = bg + (fg - bg) * row[i];
            if (trow) level += p.plate_texture * contrast * trow[i] * (1.0 - std::clamp(orow[i], 0.0, 1.0));
            row[i] = flick * gain * level;
        }
    }
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

// ---- generator ----------------------------------------------------------------------------

void SynthParams::validate() const {
    render.validate();
    const std::string w = "synth parameters";
    if (!(radius_small > 0.5)) bad(w, "radius_small", radius_small, "> 0.5 px");
    if (!(radius_large > 0.5)) bad(w, "radius_large", radius_large, "> 0.5 px");
    if (n_small < -1) bad(w, "n_small", double(n_small), ">= 0 (or -1 = from packing fraction)");
    if (n_large < -1) bad(w, "n_large", double(n_large), ">= 0 (or -1 = from packing fraction)");
    if (n_small < 0 && n_large < 0 && !(packing_fraction > 0 && packing_fraction <= 0.85))
        bad(w, "packing_fraction", packing_fraction, "in (0, 0.85]");
    if (!(margin >= 0) ||
        2 * margin + 4 * std::max(radius_small, radius_large) > std::min(render.width, render.height))
        bad(w, "margin", margin, ">= 0 and leave room for disks inside the image");
    if (frames < 1) bad(w, "frames", double(frames), ">= 1");
    if (!(step_rms >= 0)) bad(w, "step_rms", step_rms, ">= 0 px");
    if (!(active_speed >= 0)) bad(w, "active_speed", active_speed, ">= 0 px/frame");
    if (!(rotational_diffusion >= 0)) bad(w, "rotational_diffusion", rotational_diffusion, ">= 0");
    if (!(damping > 0)) bad(w, "damping", damping, "> 0 1/frame");
    if (!(stiffness >= 0)) bad(w, "stiffness", stiffness, ">= 0 (0 = automatic)");
    if (substeps < 0) bad(w, "substeps", double(substeps), ">= 0 (0 = automatic)");
    if (equilibrate < 0) bad(w, "equilibrate", double(equilibrate), ">= 0");
    if (exposure_subframes < 1 || exposure_subframes > 256)
        bad(w, "exposure_subframes", exposure_subframes, "in [1, 256]");
    if (!(exposure > 0 && exposure <= 1)) bad(w, "exposure", exposure, "in (0, 1]");
}

struct SynthGenerator::Impl {
    SynthParams p;
    SoftDiskParams sp;
    std::unique_ptr<SoftDiskSimulator> sim;
    double offset_x = 0, offset_y = 0;  // image = simulation + offset
    std::int64_t done = 0;
    double worst_overlap = 0;
    std::vector<std::int64_t> sub_steps;  // step offsets of the exposure sub-frames in a frame

    double overlap_now() const { return sim->max_overlap(); }
};

SynthGenerator::SynthGenerator(const SynthParams& params) : impl_(std::make_unique<Impl>()) {
    auto& m = *impl_;
    m.p = params;
    m.p.validate();
    const auto& p = m.p;
    const double bw = p.render.width - 2 * p.margin, bh = p.render.height - 2 * p.margin;
    std::int64_t ns = p.n_small, nl = p.n_large;
    const bool one_size = p.radius_large == p.radius_small;
    if (ns < 0 && nl < 0) {
        const double mean_area =
            one_size ? kPi * p.radius_small * p.radius_small
                     : 0.5 * kPi * (p.radius_small * p.radius_small + p.radius_large * p.radius_large);
        const auto n = static_cast<std::int64_t>(std::llround(p.packing_fraction * bw * bh / mean_area));
        ns = one_size ? n : n - n / 2;
        nl = one_size ? 0 : n / 2;
    } else {
        ns = std::max<std::int64_t>(ns, 0);
        nl = std::max<std::int64_t>(nl, 0);
    }
    if (ns + nl < 1) bad("synth parameters", "n_small + n_large", 0, ">= 1");
    const double phi =
        kPi * (double(ns) * p.radius_small * p.radius_small + double(nl) * p.radius_large * p.radius_large) /
        (bw * bh);
    if (phi > 0.86) bad("synth parameters", "packing fraction of the requested counts", phi, "<= 0.86");

    // Dynamics in px and frames. Temperature so that a free small disk moves step_rms per axis
    // per frame: MSD(1) = 2 (T/γ) (1 − (1 − e^{−γ})/γ).
    const double g = p.damping;
    const double T = p.step_rms * p.step_rms * g / (2.0 * (1.0 - (1.0 - std::exp(-g)) / g));
    const double m_large = (p.radius_large / p.radius_small) * (p.radius_large / p.radius_small);
    const double m_max = std::max(1.0, m_large);
    double k = p.stiffness;
    if (k <= 0) {
        // Contacts: a collision with relative kinetic energy E compresses by sqrt(2E/k); allow for
        // rare energetic collisions (E ≈ 15 T) and active pushing (a column of L/d disks each
        // pushing with γ m v0) at a target overlap of 0.05 px.
        const double delta = 0.08;
        const double e_coll = 15.0 * T + 2.0 * m_max * p.active_speed * p.active_speed;
        const double column = std::max(bw, bh) / (2 * std::min(p.radius_small, p.radius_large));
        const double f_active = g * m_max * p.active_speed * column;
        k = std::max({2.0 * e_coll / (delta * delta), f_active / delta, 50.0});
    }
    std::int64_t S = p.substeps;
    if (S <= 0) {
        const double omega = std::sqrt(k / 0.5);  // smallest reduced mass (two small disks)
        S = std::max<std::int64_t>(10, static_cast<std::int64_t>(std::ceil(omega / 0.3)));
    }
    m.sp.n_small = ns;
    m.sp.n_large = nl;
    m.sp.diameter_small = 2 * p.radius_small;
    m.sp.diameter_large = 2 * (nl > 0 ? p.radius_large : p.radius_small);
    m.sp.box_width = bw;
    m.sp.box_height = bh;
    m.sp.periodic = false;
    m.sp.dt = 1.0 / double(S);
    m.sp.steps_per_frame = S;
    m.sp.stiffness = k;
    m.sp.restitution_damping = 0.6 * std::sqrt(k * 0.5);  // ≈ 0.3 of critical for two small disks
    m.sp.friction = g;
    m.sp.temperature = T;
    m.sp.active_speed = p.active_speed;
    m.sp.rotational_diffusion = p.rotational_diffusion;
    m.sp.seed = p.seed;
    m.sim = std::make_unique<SoftDiskSimulator>(m.sp);
    m.offset_x = p.margin - 0.5;
    m.offset_y = p.margin - 0.5;
    // Equilibrate: the lattice start may overlap at high density; run until the overlaps have
    // relaxed (at most 20× the requested equilibration).
    m.sim->advance_frames(p.equilibrate);
    for (std::int64_t extra = 0;
         extra < std::max<std::int64_t>(200, 20 * p.equilibrate) && m.overlap_now() > 0.1; ++extra)
        m.sim->advance_frames(1);
    // Exposure sub-frames: centred in [0, exposure) of each frame interval.
    const auto E = std::max<std::int64_t>(1, std::llround(p.exposure * double(S)));
    for (int s = 0; s < p.exposure_subframes; ++s)
        m.sub_steps.push_back(std::min<std::int64_t>(
            S - 1, static_cast<std::int64_t>(std::floor((s + 0.5) * double(E) / p.exposure_subframes))));
}

SynthGenerator::~SynthGenerator() = default;

bool SynthGenerator::next(cv::Mat& image, TrajectoryTable& truth) {
    auto& m = *impl_;
    if (m.done >= m.p.frames) return false;
    auto& sim = *m.sim;
    const std::size_t n = sim.x().size();
    const auto nsub = m.sub_steps.size();
    std::vector<std::vector<Disk>> subs(nsub);
    std::vector<double> sx(n, 0.0), sy(n, 0.0), svx(n, 0.0), svy(n, 0.0);
    std::int64_t cur = 0;
    for (std::size_t s = 0; s < nsub; ++s) {
        if (m.sub_steps[s] > cur) sim.step(m.sub_steps[s] - cur);
        cur = std::max(cur, m.sub_steps[s]);
        m.worst_overlap = std::max(m.worst_overlap, sim.max_overlap());
        auto& disks = subs[s];
        disks.resize(n);
        for (std::size_t i = 0; i < n; ++i) {
            disks[i].x = sim.x()[i] + m.offset_x;
            disks[i].y = sim.y()[i] + m.offset_y;
            disks[i].radius = 0.5 * sim.diameter()[i];
            disks[i].species = sim.species()[i];
            disks[i].texture_seed = static_cast<std::uint32_t>(i + 1);
            sx[i] += disks[i].x;
            sy[i] += disks[i].y;
            svx[i] += sim.vx()[i];
            svy[i] += sim.vy()[i];
        }
    }
    sim.step(m.sp.steps_per_frame - cur);
    image = render_frame(std::span<const std::vector<Disk>>(subs), m.p.render, m.done);
    const double w = 1.0 / double(nsub);
    for (std::size_t i = 0; i < n; ++i) {
        truth.push(m.done, static_cast<std::int64_t>(i), sx[i] * w, sy[i] * w, sim.species()[i]);
        truth.vx.push_back(svx[i] * w);
        truth.vy.push_back(svy[i] * w);
        truth.radius.push_back(static_cast<float>(0.5 * sim.diameter()[i]));
    }
    ++m.done;
    return true;
}

std::int64_t SynthGenerator::frames_done() const { return impl_->done; }
double SynthGenerator::max_overlap() const { return impl_->worst_overlap; }
const SynthParams& SynthGenerator::params() const { return impl_->p; }
std::int64_t SynthGenerator::n_disks() const { return static_cast<std::int64_t>(impl_->sim->x().size()); }

Metadata SynthGenerator::metadata() const {
    const auto& m = *impl_;
    Metadata md;
    md.length_unit = "px";
    md.time_unit = "frame";
    md.frame_interval = 1.0;
    md.image_width = m.p.render.width;
    md.image_height = m.p.render.height;
    md.coordinate_convention = "image";
    const auto& g = m.sim->geometry();
    md.geometry = Geometry::rect(g.x0 + m.offset_x, g.y0 + m.offset_y, g.x1 + m.offset_x, g.y1 + m.offset_y);
    md.species_diameters = {m.sp.diameter_small, m.sp.diameter_large};
    auto& u = md.user;
    u["synth_seed"] = std::to_string(m.p.seed);
    u["synth_render_seed"] = std::to_string(m.p.render.seed);
    u["synth_look"] = to_string(m.p.render.look);
    u["synth_n_small"] = std::to_string(m.sp.n_small);
    u["synth_n_large"] = std::to_string(m.sp.n_large);
    u["synth_radius_small_px"] = std::to_string(0.5 * m.sp.diameter_small);
    u["synth_radius_large_px"] = std::to_string(0.5 * m.sp.diameter_large);
    u["synth_stiffness"] = std::to_string(m.sp.stiffness);
    u["synth_substeps"] = std::to_string(m.sp.steps_per_frame);
    u["synth_temperature"] = std::to_string(m.sp.temperature);
    u["synth_exposure"] = std::to_string(m.p.exposure);
    u["synth_exposure_subframes"] = std::to_string(m.p.exposure_subframes);
    u["synth_noise_sigma"] = std::to_string(m.p.render.noise_sigma);
    u["synth_blur_sigma_px"] = std::to_string(m.p.render.blur_sigma);
    if (m.p.render.plate_texture > 0) u["synth_plate_texture"] = std::to_string(m.p.render.plate_texture);
    if (m.p.render.vignetting > 0) u["synth_vignetting"] = std::to_string(m.p.render.vignetting);
    if (m.p.render.light_blobs > 0) u["synth_light_blobs"] = std::to_string(m.p.render.light_blobs);
    u["synth_max_overlap_px"] = std::to_string(m.worst_overlap);
    u["truth"] = "centre averaged over the exposure; radius = true radius";
    return md;
}

SynthParams reference_case(ReferenceCase c, int size, std::int64_t frames, std::uint64_t seed) {
    SynthParams sp;
    sp.render.width = sp.render.height = size;
    sp.frames = frames;
    sp.seed = seed;
    switch (c) {
        case ReferenceCase::moderate:
            sp.render.look = DiskLook::dark_ring;
            sp.render.noise_sigma = 0.05;
            sp.render.gradient = 0.1;
            sp.packing_fraction = 0.6;
            break;
        case ReferenceCase::dense:
            sp.render.look = DiskLook::marker_dot;
            sp.render.noise_sigma = 0.05;
            sp.packing_fraction = 0.8;
            break;
        case ReferenceCase::noisy:
            sp.render.look = DiskLook::plain;
            sp.render.noise_sigma = 0.07;
            sp.render.gradient = 0.857;  // gain 0.57 … 1.43: 2.5× across the frame
            sp.render.flicker = 0.03;
            sp.render.hot_pixel_fraction = 0.00025;
            sp.render.dead_pixel_fraction = 0.00025;
            sp.packing_fraction = 0.3;
            sp.active_speed = 2.0;  // ≈ 2 px of motion blur over the exposure
            sp.exposure_subframes = 5;
            break;
        case ReferenceCase::hard:
            sp.radius_small = 6;
            sp.radius_large = 7.7;
            sp.render.look = DiskLook::plain;
            sp.render.blur_sigma = 1.1;  // defocus
            sp.render.background = 0.3;  // a dim contrast: 64 grey levels
            sp.render.foreground = 0.55;
            sp.render.plate_texture = 0.06;  // ≈ ±4 grey levels
            sp.render.gradient = 0.889;      // gain 0.56 … 1.44: 2.6× across the frame
            sp.render.vignetting = 0.3;
            sp.render.light_blobs = 4;
            sp.render.light_blob_amplitude = 0.3;
            sp.render.light_blob_radius = 0.08 * size;
            sp.render.noise_sigma = 0.08;
            sp.render.hot_pixel_fraction = 0.0003;  // ≈ 300 + 300 at 1024²
            sp.render.dead_pixel_fraction = 0.0003;
            sp.packing_fraction = 0.3;
            sp.active_speed = 1.5;  // 1-frame exposure: ≈ 1.5 px of motion blur
            sp.exposure_subframes = 4;
            break;
    }
    return sp;
}

}  // namespace vibra::tracking
