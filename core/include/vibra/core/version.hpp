// SPDX-License-Identifier: GPL-3.0-or-later
// vibra's version string, written into every file vibra creates.
#pragma once

namespace vibra {
const char* version();
}
