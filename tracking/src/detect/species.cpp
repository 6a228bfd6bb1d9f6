// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/tracking/species.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "vibra/core/error.hpp"

namespace vibra::tracking {

SpeciesCall classify_radius(double radius, std::span<const double> radii, double radius_sigma) {
    if (radii.empty() || radii.size() > 2)
        throw ParameterError("species: need 1 or 2 radii, got " + std::to_string(radii.size()));
    if (radii.size() == 1 || radii[0] == radii[1]) return {kSpeciesSmall, 1.0f};
    if (!std::isfinite(radius)) return {kSpeciesUnknown, 0.0f};
    const double mid = 0.5 * (radii[0] + radii[1]);
    const double z = std::abs(radius - mid) / std::max(radius_sigma, 1e-6);
    // beyond z = 5.5 the confidence 1 − ½ erfc(z/√2) rounds to 1 in single precision (the
    // deficit is below 2⁻²⁵): no erfc for the clear calls (every disk, every frame)
    const auto conf = z > 5.5 ? 1.0f : static_cast<float>(0.5 * std::erfc(-z / std::sqrt(2.0)));
    return {radius < mid ? kSpeciesSmall : kSpeciesLarge, conf};
}

double classify_radii_split(std::span<const float> radius, std::span<const double> radii, double radius_sigma,
                            std::span<std::int8_t> species, std::span<float> confidence) {
    if (radii.empty() || radii.size() > 2)
        throw ParameterError("species: need 1 or 2 radii, got " + std::to_string(radii.size()));
    if (species.size() != radius.size() || confidence.size() != radius.size())
        throw ParameterError("classify_radii_split: radius, species and confidence differ in length");
    double threshold = 0.5 * (radii.front() + radii.back());
    if (radii.size() == 2 && radii[1] > radii[0]) {
        std::vector<double> r;
        for (float v : radius)
            if (std::isfinite(v)) r.push_back(v);
        std::sort(r.begin(), r.end());
        const std::size_t n = r.size();
        if (n >= 10) {
            std::vector<double> cs(n + 1, 0), cs2(n + 1, 0);
            for (std::size_t i = 0; i < n; ++i) cs[i + 1] = cs[i] + r[i], cs2[i + 1] = cs2[i] + r[i] * r[i];
            double best = HUGE_VAL;
            std::size_t kb = 0;
            for (std::size_t k = std::max<std::size_t>(1, n / 10); k + std::max<std::size_t>(1, n / 10) <= n;
                 ++k) {
                const double m1 = cs[k] / double(k), m2 = (cs[n] - cs[k]) / double(n - k);
                const double v = (cs2[k] - double(k) * m1 * m1) + (cs2[n] - cs2[k] - double(n - k) * m2 * m2);
                if (v < best) best = v, kb = k;
            }
            if (kb > 0) {
                const double med1 = r[kb / 2], med2 = r[kb + (n - kb) / 2];
                const double ratio = med2 / med1, nominal = radii[1] / radii[0];
                if (std::abs(ratio / nominal - 1) <= 0.15) threshold = 0.5 * (r[kb - 1] + r[kb]);
            }
        }
    }
    for (std::size_t i = 0; i < radius.size(); ++i) {
        if (radii.size() == 1 || radii[0] == radii[1]) {
            species[i] = kSpeciesSmall, confidence[i] = 1.0f;
            continue;
        }
        if (!std::isfinite(radius[i])) {
            species[i] = kSpeciesUnknown, confidence[i] = 0.0f;
            continue;
        }
        const double z = std::abs(radius[i] - threshold) / std::max(radius_sigma, 1e-6);
        species[i] = radius[i] < threshold ? kSpeciesSmall : kSpeciesLarge;
        confidence[i] = static_cast<float>(0.5 * std::erfc(-z / std::sqrt(2.0)));
    }
    return threshold;
}

void SpeciesVote::add(std::int64_t particle, std::int8_t species, float confidence) {
    if (particle < 0 || species < 0) return;
    const auto i = static_cast<std::size_t>(particle);
    if (i >= w0_.size()) {
        w0_.resize(i + 1, 0.0);
        w1_.resize(i + 1, 0.0);
    }
    (species == kSpeciesSmall ? w0_ : w1_)[i] += confidence;
}

SpeciesCall SpeciesVote::result(std::int64_t particle) const {
    if (particle < 0 || static_cast<std::size_t>(particle) >= w0_.size()) return {};
    const auto i = static_cast<std::size_t>(particle);
    const double a = w0_[i], b = w1_[i];
    if (a + b <= 0) return {};
    return a >= b ? SpeciesCall{kSpeciesSmall, static_cast<float>(a / (a + b))}
                  : SpeciesCall{kSpeciesLarge, static_cast<float>(b / (a + b))};
}

void vote_species(std::span<const std::int64_t> particle, std::span<std::int8_t> species,
                  std::span<float> confidence) {
    if (particle.size() != species.size() || confidence.size() != species.size())
        throw ParameterError("vote_species: particle, species and confidence differ in length");
    SpeciesVote v;
    for (std::size_t i = 0; i < particle.size(); ++i) v.add(particle[i], species[i], confidence[i]);
    for (std::size_t i = 0; i < particle.size(); ++i) {
        if (particle[i] < 0) continue;
        const auto r = v.result(particle[i]);
        if (r.species < 0) continue;
        species[i] = r.species;
        confidence[i] = r.confidence;
    }
}

}  // namespace vibra::tracking
