// SPDX-License-Identifier: GPL-3.0-or-later
// Where the `vibra` Python package (python/vibra: figures, report) is, for the commands that run
// it (`vibra report`, `vibra batch`'s figures): $VIBRA_PYTHON_DIR when set, else
// <prefix>/share/vibra/python beside an installed vibra, else the source tree's python/ recorded at
// build time.
#pragma once

#include <string>

namespace vibra::app {

/// The directory that holds the package vibra/; throws vibra::Error naming where it looked.
std::string python_package_dir();

/// Puts python_package_dir() first on PYTHONPATH (and MPLBACKEND=Agg unless set) for this
/// process and the ones it starts; returns the directory.
std::string use_python_package();

}  // namespace vibra::app
