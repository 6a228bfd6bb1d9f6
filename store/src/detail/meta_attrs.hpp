// SPDX-License-Identifier: GPL-3.0-or-later
// Metadata ↔ HDF5 attributes of /meta (names in docs/hdf5-layout.md).
#pragma once

#include <hdf5.h>

#include <string>

#include "vibra/core/trajectory.hpp"

namespace vibra::store::detail {
void write_meta(hid_t file_id, const Metadata& m, const std::string& file);
Metadata read_meta(hid_t file_id, const std::string& file);
/// Unit string of a velocity: "<length>/<time>".
inline std::string velocity_units(const Metadata& m) { return m.length_unit + "/" + m.time_unit; }
}  // namespace vibra::store::detail
