// SPDX-License-Identifier: GPL-3.0-or-later
// A batch *dataset*: the videos of a campaign and, for each, the settings its tracking and
// analysis need and the experiment's control parameters (drive amplitude Γ, frequency, nominal
// packing fraction, free-form labels). Read from a folder of videos (image sequences as
// sub-folders) or from a manifest (TOML or CSV) — docs/batch.md has both formats.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace vibra::app::batch {

/// One setting as a command-line flag of `vibra track` or `vibra analyze` ("--fps", "2000");
/// a switch such as "--invert" has an empty value.
struct Flag {
    std::string name, value;
    bool operator==(const Flag&) const = default;
};

struct VideoEntry {
    std::string name;           ///< unique within the dataset: the folder OUTDIR/<name>/
    std::string input;          ///< the video, camera file or image-sequence folder, as an absolute path
    std::vector<Flag> track;    ///< settings for `vibra track` (radii, fps, px/mm, ROI, …)
    std::vector<Flag> analyze;  ///< settings for `vibra analyze` (analysis options)
    /// Control parameters in the manifest's order (name, value as written); numbers stay text here.
    std::vector<std::pair<std::string, std::string>> controls;
};

struct Dataset {
    std::string source;                 ///< the folder or manifest it was read from
    std::vector<VideoEntry> videos;     ///< in a fixed order: sorted by name
    std::vector<std::string> controls;  ///< every control parameter's name, in first-seen order
};

/// Settings that apply to every video unless the manifest says otherwise (from `vibra batch`'s
/// own flags).
struct DatasetDefaults {
    std::vector<Flag> track, analyze;
};

/// Reads a folder (every video file and every sub-folder of images; .cih/.cihx beside an .mraw of
/// the same name are its headers, not videos) or a manifest (*.toml, *.csv). Throws
/// ParameterError / FormatError naming the file, line and key.
Dataset load_dataset(const std::string& path, const DatasetDefaults& defaults = {});

/// The manifest keys that are settings and the flag each becomes (fps → --fps, …); any other
/// key is a control parameter, `track.KEY` / `analyze.KEY` pass any flag of those commands.
const std::vector<std::pair<std::string, std::string>>& setting_keys();

/// Adds or replaces `f` in `flags` (a later setting overrides an earlier one; --radius,
/// --radius-small/--radius-large and --radii exclude each other, so setting one drops the others).
void set_flag(std::vector<Flag>& flags, const Flag& f);

/// Deterministic share of a dataset for `--shard i/N`: the videos whose position in the sorted
/// list is ≡ i (mod N).
std::vector<VideoEntry> shard(const std::vector<VideoEntry>& videos, int index, int count);

}  // namespace vibra::app::batch
