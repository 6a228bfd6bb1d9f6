// SPDX-License-Identifier: GPL-3.0-or-later
#include "vibra/tracking/species.hpp"

#include <cmath>
#include <string>

#include "vibra/core/error.hpp"

namespace vibra::tracking {

SpeciesCall classify_radius(double radius, std::span<const double> radii, double radius_sigma) {
    if (radii.empty() || radii.size() > 2) throw ParameterError("species: need 1 or 2 radii, got " + std::to_string(radii.size()));
    if (radii.size() == 1 || radii[0] == radii[1]) return {kSpeciesSmall, 1.0f};
    if (!std::isfinite(radius)) return {kSpeciesUnknown, 0.0f};
    const double mid = 0.5 * (radii[0] + radii[1]);
    const double z = std::abs(radius - mid) / std::max(radius_sigma, 1e-6);
    const auto conf = static_cast<float>(0.5 * std::erfc(-z / std::sqrt(2.0)));
    return {radius < mid ? kSpeciesSmall : kSpeciesLarge, conf};
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

void vote_species(std::span<const std::int64_t> particle, std::span<std::int8_t> species, std::span<float> confidence) {
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
