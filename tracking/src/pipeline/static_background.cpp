// SPDX-License-Identifier: GPL-3.0-or-later
// The static background of a video (plate texture, illumination) and its stuck pixels: measured
// from a fixed set of frames, taken out of every frame. See detail/static_background.hpp.
#include "detail/static_background.hpp"

#include "detail/detect_util.hpp"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <numeric>

namespace vibra::tracking::detail {

namespace {

float sample(const cv::Mat& m, int j, int i) {
    return m.depth() == CV_16U ? float(m.ptr<std::uint16_t>(j)[i]) : float(m.ptr<std::uint8_t>(j)[i]);
}

// Per L×L block the q-quantile of `u` (CV_32F) over the pixels where `valid` (CV_8U, or
// everything when empty), interpolated bilinearly between the block centres to every pixel.
// Blocks without a valid pixel take the median of the others.
cv::Mat block_quantile_map(const cv::Mat& u, const cv::Mat& valid, int L, double q) {
    const int H = u.rows, W = u.cols;
    const int nbx = std::max(1, (W + L - 1) / L), nby = std::max(1, (H + L - 1) / L);
    cv::Mat grid(nby, nbx, CV_32F);
    std::vector<float> vals, found;
    for (int by = 0; by < nby; ++by)
        for (int bx = 0; bx < nbx; ++bx) {
            vals.clear();
            for (int j = by * L; j < std::min(H, (by + 1) * L); ++j) {
                const float* r = u.ptr<float>(j);
                const std::uint8_t* m = valid.empty() ? nullptr : valid.ptr<std::uint8_t>(j);
                for (int i = bx * L; i < std::min(W, (bx + 1) * L); ++i)
                    if (!m || m[i]) vals.push_back(r[i]);
            }
            float v = std::numeric_limits<float>::quiet_NaN();
            if (!vals.empty()) {
                const auto k = static_cast<std::ptrdiff_t>(q * double(vals.size() - 1));
                std::nth_element(vals.begin(), vals.begin() + k, vals.end());
                v = vals[static_cast<std::size_t>(k)];
                found.push_back(v);
            }
            grid.at<float>(by, bx) = v;
        }
    const float fill = found.empty() ? 0.f : float(median_of(found));
    for (int by = 0; by < nby; ++by)
        for (int bx = 0; bx < nbx; ++bx)
            if (std::isnan(grid.at<float>(by, bx))) grid.at<float>(by, bx) = fill;
    cv::Mat big;  // block centres at (b + ½)·L − ½ px: resize to nb·L (centre-aligned), then crop
    cv::resize(grid, big, cv::Size(nbx * L, nby * L), 0, 0, cv::INTER_LINEAR);
    return big(cv::Rect(0, 0, W, H)).clone();
}

// The measurement on one region of the frames. Signed values u = ±v (+ for bright disks), so
// that the disks are always brighter than the background.
struct Estimate {
    cv::Mat level, texture;  // G and T (v-space, CV_32F)
    double noise = 0, kappa_abs = 0, correlation = 0, texture_var = 0;
};

Estimate estimate(std::span<const cv::Mat> frames, const cv::Rect& roi, const StaticBackgroundParams& p,
                  const cv::Mat& stuck) {
    Estimate e;
    const float s = p.invert ? -1.f : 1.f;
    const int L = std::max(16, static_cast<int>(std::lround(4 * p.r_large)));
    // u = ±v of frame k in the region: sampled in place (passes 1 and κ), or converted into one
    // reused buffer (pass 2), not one float copy per frame (48 frames of 4 MB each, every page
    // of them a fresh page fault).
    // Row j of the region of frame k, every other pixel from column i0 to i1, each sample ±v as a
    // float shown to `take` (typed row pointers: this runs over every sample of the quick look).
    const auto each_other = [&](std::size_t k, int j, int i0, int i1, auto&& take) {
        const auto row = [&](const auto* r) {
            for (int i = i0; i < i1; i += 2) take(i, s * float(r[roi.x + i]));
        };
        if (frames[k].depth() == CV_16U)
            row(frames[k].ptr<std::uint16_t>(roi.y + j));
        else
            row(frames[k].ptr<std::uint8_t>(roi.y + j));
    };
    cv::Mat uk;
    const auto u = [&](std::size_t k) -> const cv::Mat& {
        frames[k](roi).convertTo(uk, CV_32F, s);
        return uk;
    };
    const cv::Mat good = stuck.empty() ? cv::Mat() : (stuck(roi) == 0);
    // Pass 1: per block the background's quartiles of all samples: level and noise.
    const int H = roi.height, W = roi.width;
    cv::Mat q1;
    {
        // quantiles 0.125 and 0.25 of every block over every frame
        const int nbx = std::max(1, (W + L - 1) / L), nby = std::max(1, (H + L - 1) / L);
        cv::Mat g25(nby, nbx, CV_32F);
        std::vector<float> vals, noises;
        OrderStatistics8 hist(s);
        const bool bytes = frames.front().depth() == CV_8U;  // one type (the callers check)
        for (int by = 0; by < nby; ++by)
            for (int bx = 0; bx < nbx; ++bx) {
                vals.clear(), hist.clear();
                for (std::size_t k = 0; k < frames.size();
                     ++k)  // every other row and column: plenty of samples
                    for (int j = by * L; j < std::min(H, (by + 1) * L); j += 2) {
                        const int i0 = bx * L, i1 = std::min(W, (bx + 1) * L);
                        if (bytes)
                            hist.add_every_other(frames[k].ptr<std::uint8_t>(roi.y + j) + roi.x, i0, i1);
                        else
                            each_other(k, j, i0, i1, [&](int, float u) { vals.push_back(u); });
                    }
                const std::size_t n_samples = bytes ? hist.size() : vals.size();
                const auto ka = static_cast<std::ptrdiff_t>(n_samples / 8),
                           kb = static_cast<std::ptrdiff_t>(n_samples / 4);
                float a, b;
                if (bytes) {
                    b = hist.kth(static_cast<std::size_t>(kb)), a = hist.kth(static_cast<std::size_t>(ka));
                } else {
                    std::nth_element(vals.begin(), vals.begin() + kb, vals.end());
                    b = vals[static_cast<std::size_t>(kb)];
                    std::nth_element(vals.begin(), vals.begin() + ka, vals.begin() + kb);
                    a = vals[static_cast<std::size_t>(ka)];
                }
                const float sd = (b - a) / 0.4758f;
                g25.at<float>(by, bx) = b + 0.6745f * sd;  // the background's median
                noises.push_back(sd);
            }
        e.noise = median_of(noises);
        cv::resize(g25, q1, cv::Size(nbx * L, nby * L), 0, 0, cv::INTER_LINEAR);
        q1 = q1(cv::Rect(0, 0, W, H));  // a view: no fresh buffer
    }
    const cv::Mat& level1 = q1;  // u-space background level
    // κ: disk samples (far above the noise) relative to the level.
    std::vector<float> ratio;
    for (std::size_t k = 0; k < frames.size(); ++k)
        for (int j = 0; j < H; j += 2) {
            const float* g = level1.ptr<float>(j);
            each_other(k, j, 0, W, [&](int i, float r) {
                if (r - g[i] > 8 * e.noise + 2 && std::abs(g[i]) > 0)
                    ratio.push_back((r - g[i]) / std::abs(g[i]));
            });
        }
    if (ratio.size() < 100) return e;
    e.kappa_abs = median_of(ratio);
    // Pass 2: every frame's samples away from the disks (the light above the level, smoothed,
    // below a fifth of the contrast, 3 px beyond), summed per half of the frames.
    cv::Mat sum[2], cnt[2];
    for (int h = 0; h < 2; ++h) sum[h] = cv::Mat::zeros(H, W, CV_32F), cnt[h] = cv::Mat::zeros(H, W, CV_32F);
    const cv::Mat thr = 0.2 * e.kappa_abs * cv::abs(level1);
    const cv::Mat disk_r = cv::getStructuringElement(cv::MORPH_ELLIPSE, cv::Size(7, 7));
    cv::Mat d, near, free_px;
    cv::Mat diff;
    for (std::size_t k = 0; k < frames.size(); ++k) {
        const cv::Mat& f = u(k);
        cv::subtract(f, level1, diff);
        cv::GaussianBlur(diff, d, cv::Size(0, 0), 1.0);
        cv::compare(d, thr, near, cv::CMP_GT);
        cv::dilate(near, near, disk_r);
        cv::bitwise_not(near, free_px);
        cv::add(sum[k % 2], f, sum[k % 2], free_px);
        cv::add(cnt[k % 2], cv::Scalar(1), cnt[k % 2], free_px);
    }
    cv::Mat ba = sum[0] / cv::max(cnt[0], 1), bb = sum[1] / cv::max(cnt[1], 1);
    cv::Mat both = (sum[0] + sum[1]) / cv::max(cnt[0] + cnt[1], 1);
    cv::Mat valid = (cnt[0] >= 2) & (cnt[1] >= 2);
    if (!good.empty()) valid &= good;
    const cv::Mat level2 = block_quantile_map(both, valid, L, 0.5);
    double sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0, n = 0;
    for (int j = 0; j < H; ++j) {
        const float *a = ba.ptr<float>(j), *b = bb.ptr<float>(j), *g = level2.ptr<float>(j);
        const std::uint8_t* m = valid.ptr<std::uint8_t>(j);
        for (int i = 0; i < W; ++i) {
            if (!m[i]) continue;
            const double ha = a[i] - g[i], hb = b[i] - g[i];
            sa += ha, sb += hb, saa += ha * ha, sbb += hb * hb, sab += ha * hb, n += 1;
        }
    }
    if (n < 100) return e;
    const double va = saa / n - (sa / n) * (sa / n), vb = sbb / n - (sb / n) * (sb / n);
    const double cab = sab / n - (sa / n) * (sb / n);
    e.correlation = va > 0 && vb > 0 ? cab / std::sqrt(va * vb) : 0;
    e.texture_var = std::max(0.0, cab);
    const double v_avg = 0.25 * (va + vb) + 0.5 * cab;  // of the mean of the halves
    const double shrink = v_avg > 0 ? std::clamp(e.texture_var / v_avg, 0.0, 1.0) : 0;
    e.texture = cv::Mat::zeros(H, W, CV_32F);
    for (int j = 0; j < H; ++j) {
        const float *b = both.ptr<float>(j), *g = level2.ptr<float>(j);
        const std::uint8_t* m = valid.ptr<std::uint8_t>(j);
        float* t = e.texture.ptr<float>(j);
        for (int i = 0; i < W; ++i)
            if (m[i]) t[i] = s * float(shrink) * (b[i] - g[i]);
    }
    e.level = s * level2;  // v-space
    return e;
}

// Pixels constant over the `n` frames `visit` shows (`mn` / `mx`: their per-pixel minimum and
// maximum) while the video's noise is ≥ 2 grey levels, and far from their neighbours' median in at
// least half of the frames (a disk passing over a hot pixel may hide it). The frames are shown a
// second time only when some pixel is constant.
std::vector<std::int64_t> find_stuck(const FrameVisitor& visit, std::size_t n, const cv::Mat& mn,
                                     const cv::Mat& mx, double noise, double stuck_sigma) {
    std::vector<std::int64_t> out;
    // A constant pixel means nothing in a noise-free video (or one whose noise is below a grey level).
    if (!(noise >= 2) || n < 8) return out;
    const int H = mn.rows, W = mn.cols;
    const float still = std::max(1.0f, float(0.1 * noise));
    // max − min ≤ still for integer grey values: ≤ ⌊still⌋, row by row on the typed images (no
    // range image: a fresh frame-sized buffer costs page faults).
    const int limit = static_cast<int>(std::floor(still));
    std::vector<std::int64_t> constant;
    for (int j = 0; j < H; ++j) {
        const auto scan = [&](const auto* lo, const auto* hi) {
            for (int i = 0; i < W; ++i)
                if (static_cast<int>(hi[i]) - static_cast<int>(lo[i]) <= limit)
                    constant.push_back(std::int64_t(j) * W + i);
        };
        if (mn.depth() == CV_16U)
            scan(mn.ptr<std::uint16_t>(j), mx.ptr<std::uint16_t>(j));
        else
            scan(mn.ptr<std::uint8_t>(j), mx.ptr<std::uint8_t>(j));
    }
    if (constant.empty()) return out;
    std::vector<int> far(constant.size(), 0);
    visit([&](const cv::Mat& f) {
        for (std::size_t c = 0; c < constant.size(); ++c) {
            const int j = static_cast<int>(constant[c] / W), i = static_cast<int>(constant[c] % W);
            float nb[8];
            int m = 0;
            for (int dj = -1; dj <= 1; ++dj)
                for (int di = -1; di <= 1; ++di) {
                    const int jj = j + dj, ii = i + di;
                    if ((dj || di) && jj >= 0 && jj < H && ii >= 0 && ii < W) nb[m++] = sample(f, jj, ii);
                }
            std::nth_element(nb, nb + m / 2, nb + m);
            if (std::abs(sample(f, j, i) - nb[m / 2]) > stuck_sigma * noise) ++far[c];
        }
    });
    for (std::size_t c = 0; c < constant.size(); ++c)
        if (far[c] * 2 >= static_cast<int>(n)) out.push_back(constant[c]);
    return out;
}

}  // namespace

std::vector<std::int64_t> static_background_frames(std::int64_t first, std::int64_t last, int max_frames) {
    std::vector<std::int64_t> out;
    const std::int64_t n = last - first;
    if (n <= 0 || max_frames <= 0) return out;
    if (n <= max_frames) {
        for (std::int64_t k = 0; k < n; ++k) out.push_back(first + k);
        return out;
    }
    for (int k = 0; k < max_frames; ++k)
        out.push_back(first + (std::int64_t(k) * (n - 1)) / (max_frames - 1));
    return out;
}

StaticBackground measure_static_background(std::span<const cv::Mat> frames, const StaticBackgroundParams& p) {
    std::vector<cv::Mat> few;
    const std::size_t stride = std::max<std::size_t>(1, (frames.size() + 15) / 16);
    for (std::size_t k = 0; k < frames.size(); k += stride) few.push_back(frames[k]);
    return measure_static_background(
        [&](const std::function<void(const cv::Mat&)>& see) {
            for (const auto& f : few) see(f);
        },
        [&] { return std::vector<cv::Mat>(frames.begin(), frames.end()); }, p);
}

namespace {
bool usable(std::span<const cv::Mat> frames) {
    if (frames.size() < 8) return false;
    for (const auto& f : frames)
        if (f.size() != frames[0].size() || f.type() != frames[0].type() ||
            (f.type() != CV_8UC1 && f.type() != CV_16UC1))
            return false;
    return true;
}
}  // namespace

namespace {

// The quick look's inputs, gathered in one pass over the few frames without keeping them: their
// per-pixel minimum and maximum (the stuck pixels) and their central 256 × 256 px.
struct QuickLook {
    std::size_t n = 0;
    bool usable = true;  // CV_8UC1 or CV_16UC1, one size and type, at least 8 frames
    cv::Mat mn, mx;
    cv::Rect centre;
    std::vector<cv::Mat> crops;
};

QuickLook gather_quick_look(const FrameVisitor& few) {
    QuickLook q;
    few([&](const cv::Mat& f) {
        if (!q.usable) return;
        if (q.n == 0) {
            if (f.type() != CV_8UC1 && f.type() != CV_16UC1) {
                q.usable = false;
                return;
            }
            const int cw = std::min(f.cols, 256), ch = std::min(f.rows, 256);
            q.centre = cv::Rect((f.cols - cw) / 2, (f.rows - ch) / 2, cw, ch);
            // From the large-buffer cache: the frame-sized buffers it hands back later (frames,
            // gradients) re-use these pages instead of faulting in fresh ones.
            q.mn = large_mat(f.rows, f.cols, f.type()), q.mx = large_mat(f.rows, f.cols, f.type());
            f.copyTo(q.mn), f.copyTo(q.mx);
        } else if (f.size() != q.mn.size() || f.type() != q.mn.type()) {
            q.usable = false;
            return;
        } else {
            cv::min(q.mn, f, q.mn);
            cv::max(q.mx, f, q.mx);
        }
        q.crops.push_back(f(q.centre).clone());
        ++q.n;
    });
    q.usable = q.usable && q.n >= 8;
    return q;
}

}  // namespace

StaticBackground measure_static_background(const FrameVisitor& few,
                                           const std::function<std::vector<cv::Mat>()>& load_all,
                                           const StaticBackgroundParams& p) {
    StaticBackground bg;
    const QuickLook look = gather_quick_look(few);
    if (!look.usable) return bg;
    const int H = look.mn.rows, W = look.mn.cols;
    bg.frames_used = static_cast<int>(look.n);
    // The quick look: the central 256 × 256 px of the few frames (most videos stop here).
    const Estimate quick =
        estimate(look.crops, cv::Rect(0, 0, look.centre.width, look.centre.height), p, cv::Mat());
    bg.noise = quick.noise;
    bg.correlation = quick.correlation;
    bg.texture_rms = std::sqrt(quick.texture_var);
    bg.stuck = find_stuck(few, look.n, look.mn, look.mx, quick.noise, p.stuck_sigma);
    // The masks only when needed: a fresh frame-sized buffer costs page faults (clean footage has none).
    cv::Mat stuck_img;
    if (!bg.stuck.empty()) {
        bg.stuck_mask.assign(static_cast<std::size_t>(W) * static_cast<std::size_t>(H), 0);
        stuck_img = cv::Mat::zeros(H, W, CV_8U);
    }
    for (auto k : bg.stuck) {
        bg.stuck_mask[static_cast<std::size_t>(k)] = 1;
        stuck_img.at<std::uint8_t>(static_cast<int>(k / W), static_cast<int>(k % W)) = 1;
    }
    if (quick.level.empty()) return bg;
    bg.contrast =
        quick.kappa_abs *
        std::abs(median_of(std::vector<float>(quick.level.begin<float>(), quick.level.end<float>())));
    // Half the frames of the quick look are too few to see a faint texture through the noise:
    // the full measurement runs when the quick one shows some agreement.
    if (!(quick.correlation >= 0.5 * p.min_correlation &&
          bg.texture_rms >= 0.5 * p.min_texture * bg.contrast))
        return bg;
    const std::vector<cv::Mat> frames = load_all();
    if (!usable(frames) || frames[0].size() != look.mn.size() || frames[0].type() != look.mn.type())
        return bg;
    bg.frames_used = static_cast<int>(frames.size());
    const Estimate full = estimate(frames, cv::Rect(0, 0, W, H), p, stuck_img);
    if (full.level.empty()) return bg;
    bg.level = full.level;
    bg.texture = full.texture;
    bg.noise = full.noise;
    bg.level0 = float(median_of(std::vector<float>(bg.level.begin<float>(), bg.level.end<float>())));
    bg.kappa = float((p.invert ? -1 : 1) * full.kappa_abs);
    bg.contrast = full.kappa_abs * std::abs(bg.level0);
    bg.correlation = full.correlation;
    bg.texture_rms = std::sqrt(full.texture_var);
    if (!(full.correlation >= p.min_correlation && bg.texture_rms >= p.min_texture * bg.contrast &&
          bg.level0 > 0))
        return bg;
    bg.correct_background = true;
    return bg;
}

namespace {

// Each stuck pixel ← the mean of its good 8-neighbours (read from `f`, written to `f`: stuck
// pixels are never read).
template <class T>
void fill_stuck(cv::Mat& f, const std::vector<std::int64_t>& stuck, const std::vector<std::uint8_t>& mask,
                bool round) {
    const int H = f.rows, W = f.cols;
    for (auto k : stuck) {
        const int j = static_cast<int>(k / W), i = static_cast<int>(k % W);
        double s = 0;
        int m = 0;
        for (int dj = -1; dj <= 1; ++dj)
            for (int di = -1; di <= 1; ++di) {
                const int jj = j + dj, ii = i + di;
                if ((dj || di) && jj >= 0 && jj < H && ii >= 0 && ii < W &&
                    !mask[std::size_t(jj) * std::size_t(W) + std::size_t(ii)]) {
                    s += double(f.at<T>(jj, ii));
                    ++m;
                }
            }
        if (m > 0) f.at<T>(j, i) = static_cast<T>(round ? std::nearbyint(s / m) : s / m);
    }
}

}  // namespace

void StaticBackground::apply(cv::Mat& image) const {
    if (!active()) return;
    const int H = image.rows, W = image.cols;
    const bool u16 = image.depth() == CV_16U;
    if (!correct_background || level.rows != H || level.cols != W) {
        if (u16)
            fill_stuck<std::uint16_t>(image, stuck, stuck_mask, true);
        else
            fill_stuck<std::uint8_t>(image, stuck, stuck_mask, true);
        return;
    }
    const float maxv = u16 ? 65535.f : 255.f;
    cv::Mat f;
    image.convertTo(f, CV_32F);
    for (int j = 0; j < H; ++j) {
        float* v = f.ptr<float>(j);
        const float* g = level.ptr<float>(j);
        const float* t = texture.ptr<float>(j);
        for (int i = 0; i < W; ++i) {
            const float gi = std::max(g[i], 1e-3f);
            const float c = std::clamp((v[i] - gi - t[i]) / (kappa * gi), 0.f, 1.f);
            v[i] = (v[i] - t[i] * (1.f - c)) * (level0 / gi);
        }
    }
    fill_stuck<float>(f, stuck, stuck_mask, false);
    for (int j = 0; j < H; ++j) {
        const float* v = f.ptr<float>(j);
        if (u16) {
            auto* d = image.ptr<std::uint16_t>(j);
            for (int i = 0; i < W; ++i)
                d[i] = static_cast<std::uint16_t>(std::clamp(std::nearbyint(v[i]), 0.f, maxv));
        } else {
            auto* d = image.ptr<std::uint8_t>(j);
            for (int i = 0; i < W; ++i)
                d[i] = static_cast<std::uint8_t>(std::clamp(std::nearbyint(v[i]), 0.f, maxv));
        }
    }
}

std::string StaticBackground::describe() const {
    char buf[256];
    std::snprintf(
        buf, sizeof buf,
        "static background from %d frames: %s (texture %.2f grey levels RMS, split-half correlation "
        "%.2f, contrast %.1f, noise %.2f); %zu stuck pixels masked",
        frames_used, correct_background ? "subtracted, flat field" : "not corrected", texture_rms,
        correlation, contrast, noise, stuck.size());
    return buf;
}

}  // namespace vibra::tracking::detail
