// SPDX-License-Identifier: GPL-3.0-or-later
// Physical units at the source (core/units.hpp): one simulated trajectory analysed in pixels and
// frames, and again with a known image scale and frame rate (mm and s). Every analysis of the
// registry must give the same numbers scaled by exactly the powers of the scale and the rate its
// datasets' `units` attributes state — which checks the conversion and every units label at once.
#include <catch2/catch.hpp>

#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "vibra/analysis/registry.hpp"
#include "vibra/core/error.hpp"
#include "vibra/core/soft_disk.hpp"
#include "vibra/core/units.hpp"

using namespace vibra;
using namespace vibra::analysis;

namespace {

constexpr double kPxPerMm = 4;   // length × 1/4 (exact)
constexpr double kInterval = 3;  // s per frame: time × 3 (not a power of 2: L and T powers stay apart)

// Exponents of length and time in a unit string of the grammar of docs/hdf5-layout.md, for a file
// in mm and s ("px" and "frame" there are counts: lag_frames, image sizes).
struct Dim {
    int L = 0, T = 0;
};
class UnitParser {
public:
    explicit UnitParser(std::string s) : s_(std::move(s)) {}
    Dim parse() {
        const Dim d = expr();
        if (i_ != s_.size()) FAIL("units '" << s_ << "': unexpected '" << s_.substr(i_) << "'");
        return d;
    }

private:
    Dim expr() {
        Dim d = term();
        while (i_ < s_.size() && (s_[i_] == '*' || s_[i_] == '/')) {
            const char op = s_[i_++];
            const Dim e = term();
            d.L += op == '*' ? e.L : -e.L;
            d.T += op == '*' ? e.T : -e.T;
        }
        return d;
    }
    Dim term() {
        Dim d = factor();
        if (i_ < s_.size() && s_[i_] == '^') {
            ++i_;
            const std::size_t b = i_;
            if (i_ < s_.size() && s_[i_] == '-') ++i_;
            while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
            const int p = std::stoi(s_.substr(b, i_ - b));
            d.L *= p, d.T *= p;
        }
        return d;
    }
    Dim factor() {
        if (i_ < s_.size() && s_[i_] == '(') {
            ++i_;
            const Dim d = expr();
            REQUIRE(i_ < s_.size());
            REQUIRE(s_[i_] == ')');
            ++i_;
            return d;
        }
        const std::size_t b = i_;
        while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_')) ++i_;
        const std::string w = s_.substr(b, i_ - b);
        if (w.empty()) FAIL("units '" << s_ << "': empty factor at " << b);
        if (w == "mm") return {1, 0};
        if (w == "s") return {0, 1};
        return {};  // 1, rad, frame (a count), px (a count), counts, rows, …
    }
    std::string s_;
    std::size_t i_ = 0;
};

Dim dims(const std::string& units) { return UnitParser(units).parse(); }

// The same simulated liquid, its lengths called px (× 8 so that disks are pixel-sized).
Trajectory simulated() {
    SoftDiskParams sp;
    sp.n_small = sp.n_large = 60;
    sp.packing_fraction = 0.55;
    sp.seed = 20;
    sp.steps_per_frame = 20;
    Trajectory t = SoftDiskSimulator(sp).run(160, 20);
    const double s = 8;
    for (auto& x : t.rows.x) x *= s;
    for (auto& y : t.rows.y) y *= s;
    t.rows.vx.clear(), t.rows.vy.clear();  // a tracked file has no velocity column
    auto& g = t.meta.geometry;
    g.x0 *= s, g.x1 *= s, g.y0 *= s, g.y1 *= s;
    for (auto& d : t.meta.species_diameters) d *= s;
    t.meta.length_unit = "px";
    t.meta.time_unit = "frame";
    t.meta.frame_interval = 1;
    t.frames = {};
    return t;
}

// The same trajectory with its scale and rate recorded, as `vibra track --px-per-mm 4 --fps 1/3`
// writes it: positions still in px, times in s.
Trajectory calibrated(Trajectory t) {
    t.meta.px_per_mm = kPxPerMm;
    t.meta.time_unit = "s";
    t.meta.frame_interval = kInterval;
    t.frames.time_s.resize(static_cast<std::size_t>(t.index.n_frames()));
    for (std::size_t f = 0; f < t.frames.time_s.size(); ++f) t.frames.time_s[f] = kInterval * double(f);
    return t;
}

std::map<std::string, ResultGroup> run_all(const TrajectorySource& src) {
    const auto specs = all_analyses();
    std::map<std::string, ResultGroup> done;
    for (const auto& s : specs) {
        std::map<std::string, std::string> values;
        for (const auto& sp : specs)
            for (const auto& o : sp.options) values[o.flag] = o.default_value;
        AnalysisContext ctx{src, values, false, 1, &done, nullptr, std::int64_t{1} << 30};
        std::vector<ResultGroup> out;
        try {
            out = s.run(ctx);
        } catch (const vibra::Error&) {
            continue;  // the data cannot support it (both runs skip it: the group counts agree)
        }
        for (auto& g : out) done[g.name] = g;
    }
    return done;
}

double factor(const Dim& d) { return std::pow(1 / kPxPerMm, d.L) * std::pow(kInterval, d.T); }

// Compares one group of the px/frame run with the mm/s run: units labels, arrays scaled by their
// units' powers, sub-groups likewise.
void compare(const ResultGroup& px, const ResultGroup& mm, const std::string& path, int& n_scaled) {
    REQUIRE(px.arrays.size() == mm.arrays.size());
    for (std::size_t k = 0; k < px.arrays.size(); ++k) {
        const auto& a = px.arrays[k];
        const auto& b = mm.arrays[k];
        const std::string where = path + "/" + a.name + " [" + a.units + " | " + b.units + "]";
        INFO(where);
        REQUIRE(a.name == b.name);
        REQUIRE(a.shape == b.shape);
        // The label in mm and s says the same as the one in px and frames.
        const Dim d = dims(b.units);
        const Dim dpx = dims(a.units);
        CHECK(dpx.L == 0);  // "px" and "frame" parse as counts: no length or time in the px run
        if (a.data.index() != 0) {
            CHECK(a.data == b.data);  // integers: counts, lags in frames, species
            CHECK(d.L == 0);
            CHECK(d.T == 0);
            continue;
        }
        const auto& va = std::get<std::vector<double>>(a.data);
        const auto& vb = std::get<std::vector<double>>(b.data);
        REQUIRE(va.size() == vb.size());
        const double f = factor(d);
        // The velocity-tail scan fits P(c) of c = v / v_rms at each threshold: c differs by an ulp
        // between the two runs (v × 1/12), which may move a sample across a bin edge; the bootstrap
        // confidence limits at the highest thresholds (a few dozen tail samples) then move by up to
        // 20%, β by 1e-4. The main fit (attributes beta, c0, compared below) is not affected.
        const bool tail_scan = a.name.rfind("scan_beta", 0) == 0;
        if (tail_scan && a.name.find("_ci_") != std::string::npos) continue;
        const double tol = tail_scan ? 1e-3 : 1e-7;
        double scale = 0;
        for (double v : va)
            if (std::isfinite(v)) scale = std::max(scale, std::abs(v));
        std::size_t bad = 0, first_bad = 0;
        for (std::size_t i = 0; i < va.size(); ++i) {
            if (std::isnan(va[i]) || std::isnan(vb[i])) {
                bad += std::isnan(va[i]) != std::isnan(vb[i]);
                continue;
            }
            const double want = va[i] * f;
            if (!(std::abs(vb[i] - want) <= tol * scale * f + 1e-300)) {
                if (bad++ == 0) first_bad = i;
            }
        }
        if (bad)
            FAIL_CHECK(where << ": " << bad << " of " << va.size() << " values do not scale by " << f
                             << ", first at " << first_bad << ": " << va[first_bad] << " → "
                             << vb[first_bad]);
        if (d.L != 0 || d.T != 0) ++n_scaled;
    }
    REQUIRE(px.groups.size() == mm.groups.size());
    for (std::size_t k = 0; k < px.groups.size(); ++k)
        compare(px.groups[k], mm.groups[k], path + "/" + px.groups[k].name, n_scaled);
}

double attr(const ResultGroup& g, const std::string& name) {
    const auto it = g.attrs.find(name);
    REQUIRE(it != g.attrs.end());
    return std::get<double>(it->second);
}

}  // namespace

TEST_CASE("units: every analysis in mm and s = the px/frame result × scale^L × rate^T", "[unit]") {
    const Trajectory t = simulated();
    const InMemorySource px(t);
    const InMemorySource cal(calibrated(t));
    const UnitSource mm(cal, unit_conversion(cal.meta(), UnitSystem::automatic, "cal"));
    REQUIRE(mm.meta().length_unit == "mm");
    REQUIRE(mm.meta().time_unit == "s");

    const auto rpx = run_all(px);
    const auto rmm = run_all(mm);
    REQUIRE(rpx.size() == rmm.size());
    REQUIRE(rpx.size() >= 15);  // most analyses run on this trajectory
    int n_scaled = 0;
    for (const auto& [name, g] : rpx) {
        INFO("analysis " << name);
        REQUIRE(rmm.count(name));
        compare(g, rmm.at(name), name, n_scaled);
    }
    CHECK(n_scaled > 50);

    // The scalars the brief names, by their expected powers.
    const double a = 1 / kPxPerMm, b = kInterval;
    CHECK(attr(rmm.at("gr"), "r_peak") == Approx(attr(rpx.at("gr"), "r_peak") * a).epsilon(1e-12));
    CHECK(attr(rmm.at("gr"), "g_peak") == Approx(attr(rpx.at("gr"), "g_peak")).epsilon(1e-12));
    CHECK(attr(rmm.at("msd"), "diffusion_coefficient") ==
          Approx(attr(rpx.at("msd"), "diffusion_coefficient") * a * a / b).epsilon(1e-9));
    const auto& vpx = rpx.at("velocity_distribution");
    const auto& vmm = rmm.at("velocity_distribution");
    CHECK(attr(vmm, "beta") == Approx(attr(vpx, "beta")).epsilon(1e-6));
    CHECK(attr(vmm, "c0") == Approx(attr(vpx, "c0")).epsilon(1e-6));  // c = v / v_rms: dimensionless
    CHECK(attr(vmm, "rms_velocity") == Approx(attr(vpx, "rms_velocity") * a / b).epsilon(1e-9));
}

TEST_CASE("units: --units px on a calibrated file gives the px/frame results bit for bit", "[unit]") {
    const Trajectory t = simulated();
    const InMemorySource px(t);
    const InMemorySource cal(calibrated(t));
    const UnitSource back(cal, unit_conversion(cal.meta(), UnitSystem::image, "cal"));
    REQUIRE(back.meta().length_unit == "px");
    REQUIRE(back.meta().time_unit == "frame");
    REQUIRE(back.meta().frame_interval == 1);
    // A few analyses of each family (the full set is the test above).
    const auto specs = all_analyses();
    std::map<std::string, std::string> values;
    for (const auto& sp : specs)
        for (const auto& o : sp.options) values[o.flag] = o.default_value;
    for (const std::string name : {"gr", "msd", "vacf", "vdos"}) {
        INFO(name);
        const auto& s =
            *std::find_if(specs.begin(), specs.end(), [&](const auto& x) { return x.name == name; });
        AnalysisContext c1{px, values, false, 1, nullptr, nullptr, std::int64_t{1} << 30};
        AnalysisContext c2{back, values, false, 1, nullptr, nullptr, std::int64_t{1} << 30};
        const auto g1 = s.run(c1), g2 = s.run(c2);
        REQUIRE(g1.size() == g2.size());
        for (std::size_t k = 0; k < g1.front().arrays.size(); ++k) {
            INFO(g1.front().arrays[k].name);
            CHECK(g1.front().arrays[k].units == g2.front().arrays[k].units);
            if (g1.front().arrays[k].data != g2.front().arrays[k].data &&
                g1.front().arrays[k].data.index() == 0) {
                const auto& a = std::get<0>(g1.front().arrays[k].data);
                const auto& b = std::get<0>(g2.front().arrays[k].data);
                for (std::size_t i = 0; i < a.size(); ++i)
                    if (!(a[i] == b[i]) && !(std::isnan(a[i]) && std::isnan(b[i]))) {
                        FAIL_CHECK(i << ": " << a[i] << " vs " << b[i]);
                        break;
                    }
            }
        }
    }
}

TEST_CASE("units: what each --units value needs, errors naming the file", "[unit]") {
    Metadata m;  // px and frames, nothing known
    auto c = unit_conversion(m, UnitSystem::automatic, "f.h5");
    CHECK(c.identity());
    CHECK(c.length_unit == "px");
    CHECK_THROWS_WITH(unit_conversion(m, UnitSystem::physical, "f.h5"),
                      Catch::Contains("f.h5") && Catch::Contains("px_per_mm"));
    m.px_per_mm = 10;
    CHECK_THROWS_WITH(unit_conversion(m, UnitSystem::physical, "f.h5"),
                      Catch::Contains("f.h5") && Catch::Contains("frame rate"));
    m.time_unit = "s";
    m.frame_interval = 1e-3;
    c = unit_conversion(m, UnitSystem::physical, "f.h5");
    CHECK(c.length_unit == "mm");
    CHECK(c.length_factor == Approx(0.1));
    CHECK(c.time_factor == 1);
    c = unit_conversion(m, UnitSystem::image, "f.h5");
    CHECK(c.time_unit == "frame");
    CHECK(c.time_factor == Approx(1000));
    // velocities: px/s → mm/s; px/s → px/frame
    TrajectoryTable rows;
    rows.push(0, 0, 10, 20, 0);
    rows.vx = {100}, rows.vy = {-50}, rows.radius = {5};
    auto r1 = rows;
    convert_rows(r1, unit_conversion(m, UnitSystem::automatic, "f.h5"));
    CHECK(r1.x[0] == Approx(1));
    CHECK(r1.vx[0] == Approx(10));
    CHECK(r1.radius[0] == Approx(0.5));
    auto r2 = rows;
    convert_rows(r2, unit_conversion(m, UnitSystem::image, "f.h5"));
    CHECK(r2.x[0] == 10);
    CHECK(r2.vx[0] == Approx(0.1));  // 100 px/s × 1 ms/frame
    Metadata sim;
    sim.length_unit = "sigma";
    sim.time_unit = "tau";
    CHECK(unit_conversion(sim, UnitSystem::automatic, "sim.h5").identity());
    CHECK_THROWS_WITH(unit_conversion(sim, UnitSystem::image, "sim.h5"),
                      Catch::Contains("sim.h5") && Catch::Contains("sigma"));
    CHECK_THROWS_AS(unit_system_from_string("cm"), ParameterError);
}
