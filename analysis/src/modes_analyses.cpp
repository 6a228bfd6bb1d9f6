// SPDX-License-Identifier: GPL-3.0-or-later
// The modes analyses offered by `vibra analyze` (see registry.hpp). Filled in by the module
// that implements them.
#include "vibra/analysis/registry.hpp"

namespace vibra::analysis {

std::vector<AnalysisSpec> modes_analyses() { return {}; }

}  // namespace vibra::analysis
