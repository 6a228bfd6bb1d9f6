// SPDX-License-Identifier: GPL-3.0-or-later
// The campaign table: one row per video of a dataset — status, error, input checksum, frames,
// particles, per-stage wall/CPU time and memory, the control parameters, and the key
// observables with their uncertainties, read from each video's trajectories.h5 / results.h5 /
// batch_state.txt. Written as OUTDIR/campaign.h5 (group /campaign) and OUTDIR/campaign.csv;
// columns documented in docs/hdf5-layout.md ("Campaign table").
#pragma once

#include <string>
#include <vector>

#include "dataset.hpp"
#include "vibra/store/table_file.hpp"

namespace vibra::app::batch {

inline constexpr const char* kCampaignSchema = "vibra-campaign";

/// Builds the table for every video of `ds` from what is under `outdir` (videos not processed
/// yet are rows with status "pending"). Never throws for one video's unreadable files: that row
/// gets status "failed" and the reason.
store::Table collect_campaign(const Dataset& ds, const std::string& outdir);

/// Standard error of the mean of a per-frame series from the scatter of 10 block means (frames
/// next to each other are correlated; blocks much longer than the correlation time are not);
/// NaN values are left out, NaN with fewer than 10 values.
double block_standard_error(const std::vector<double>& series);

/// Writes campaign.h5 and campaign.csv into `outdir` (each atomic).
void write_campaign(const store::Table& t, const std::string& outdir);

/// Videos slower than 2× the median tracking time per frame, each with the likely reason
/// (more particles, larger frames, a video codec, waiting for the CPU or disk). One line each.
std::vector<std::string> straggler_report(const store::Table& t);

}  // namespace vibra::app::batch
