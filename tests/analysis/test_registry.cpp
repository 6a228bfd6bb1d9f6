// SPDX-License-Identifier: GPL-3.0-or-later
// The analysis registry: one flag style, typed options whose defaults pass their own checks,
// messages naming the flag, legacy spellings, dependencies pulled into a selection.
#include <catch2/catch.hpp>

#include <algorithm>

#include "vibra/analysis/registry.hpp"
#include "vibra/core/error.hpp"

using namespace vibra;
using namespace vibra::analysis;

TEST_CASE("every analysis flag: one style, a type, a default that passes its own check", "[unit]") {
    std::size_t n = 0;
    for (const auto& s : all_analyses()) {
        for (const auto& o : s.options) {
            INFO(s.name << ": --" << o.flag << " = '" << o.default_value << "' (" << type_name(o.type)
                        << ")");
            CHECK(o.flag.rfind(flag_prefix(s.name) + "-", 0) == 0);
            CHECK(o.flag.find('_') == std::string::npos);  // words joined by '-' only
            CHECK(check_option_value(o, o.default_value).empty());
            if (o.type == OptionType::text && !o.choices.empty() && !o.default_value.empty())
                CHECK(std::count(o.choices.begin(), o.choices.end(), o.default_value) == 1);
            ++n;
        }
    }
    CHECK(n > 100);
}

TEST_CASE("option values are checked by type and range, naming the flag", "[unit]") {
    const AnalysisOption i{"kgap-bootstrap", "", "200", OptionType::integer, 10, kInf};
    CHECK(check_option_value(i, "200").empty());
    CHECK(check_option_value(i, "").empty());  // unset
    CHECK(check_option_value(i, "5") == "--kgap-bootstrap: 5 is below the minimum 10");
    CHECK(check_option_value(i, "2.5") == "--kgap-bootstrap: '2.5' is not an integer");
    const AnalysisOption f{"vdos-transfer-cutoff", "", "0.5", OptionType::number, 0, 1};
    CHECK(check_option_value(f, "1e-3").empty());
    CHECK(check_option_value(f, "1.5") == "--vdos-transfer-cutoff: 1.5 is above the maximum 1");
    CHECK(check_option_value(f, "nan") == "--vdos-transfer-cutoff: 'nan' is not a finite number");
    CHECK(check_option_value(f, "half") == "--vdos-transfer-cutoff: 'half' is not a number");
    const AnalysisOption l{"msd-vanhove-lags", "", "1,10", OptionType::list, 1, kInf, {"none"}};
    CHECK(check_option_value(l, "1,10,100").empty());
    CHECK(check_option_value(l, "none").empty());
    CHECK(check_option_value(l, "1,,2") ==
          "--msd-vanhove-lags: '1,,2' is not a comma-separated list of numbers");
    CHECK(check_option_value(l, "1,0") == "--msd-vanhove-lags: 0 is below the minimum 1");
    const AnalysisOption b{"psi6-weighted", "", "0", OptionType::boolean};
    CHECK(check_option_value(b, "on").empty());
    CHECK(check_option_value(b, "2") == "--psi6-weighted: '2' is not a boolean (0 or 1)");
    const AnalysisOption t{"vdos-window", "", "hann", OptionType::text, -kInf, kInf, {"hann", "none"}};
    CHECK(check_option_value(t, "hamming") == "--vdos-window: 'hamming' is not one of hann, none");
    CHECK(std::string(type_name(OptionType::list)) == "LIST");
}

TEST_CASE("old flag spellings map to the new ones", "[unit]") {
    CHECK(flag_prefix("velocity_distribution") == "velocity-distribution");
    CHECK(legacy_flag("velocity_distribution", "velocity-distribution-bins") == "velocity_distribution-bins");
    CHECK(legacy_flag("number_fluctuations", "number-fluctuations-n-sizes") == "number_fluctuations-n-sizes");
    CHECK(legacy_flag("gr", "gr-bins").empty());                             // unchanged spelling: no alias
    CHECK(legacy_flag("covariance_vdos", "covariance-vdos-force").empty());  // always spelled with dashes
}

TEST_CASE("a selection pulls in what its analyses need, in registry order", "[unit]") {
    const auto specs = all_analyses();
    auto names = [](const std::vector<const AnalysisSpec*>& v) {
        std::vector<std::string> out;
        for (const auto* s : v) out.push_back(s->name);
        return out;
    };
    CHECK(names(resolve_selection(specs, {"kgap"})) == std::vector<std::string>{"currents", "kgap"});
    CHECK(names(resolve_selection(specs, {"kgap", "field", "gr"})) ==
          std::vector<std::string>{"gr", "currents", "kgap", "field"});
    const auto dflt = names(resolve_selection(specs, {}));
    std::vector<std::string> expect;
    for (const auto& s : specs)
        if (s.default_on) expect.push_back(s.name);
    CHECK(dflt == expect);
    CHECK_THROWS_WITH(resolve_selection(specs, {"gr", "kgapp"}),
                      Catch::Contains("--only: unknown analysis 'kgapp'"));
    // every dependency precedes its dependant in the registry (the order analyses run in)
    for (std::size_t i = 0; i < specs.size(); ++i)
        for (const auto& d : specs[i].needs) {
            const auto it =
                std::find_if(specs.begin(), specs.end(), [&](const AnalysisSpec& s) { return s.name == d; });
            REQUIRE(it != specs.end());
            CHECK(it - specs.begin() < static_cast<std::ptrdiff_t>(i));
        }
}
