// SPDX-License-Identifier: GPL-3.0-or-later
#include "dataset.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "vibra/core/error.hpp"

namespace vibra::app::batch {

namespace fs = std::filesystem;

const std::vector<std::pair<std::string, std::string>>& setting_keys() {
    static const std::vector<std::pair<std::string, std::string>> keys = {
        {"fps", "--fps"},
        {"px_per_mm", "--px-per-mm"},
        {"radius", "--radius"},
        {"radius_small", "--radius-small"},
        {"radius_large", "--radius-large"},
        {"radii", "--radii"},
        {"roi", "--roi"},
        {"roi_circle", "--roi-circle"},
        {"invert", "--invert"},
        {"channel", "--channel"},
        {"frames", "--frames"},
    };
    return keys;
}

void set_flag(std::vector<Flag>& flags, const Flag& f) {
    static const std::set<std::string> radius_flags = {"--radius", "--radius-small", "--radius-large",
                                                       "--radii"};
    const bool radius = radius_flags.count(f.name) > 0;
    const bool pair = f.name == "--radius-small" || f.name == "--radius-large";
    const auto region = [](const std::string& n) { return n == "--roi" || n == "--roi-circle"; };
    std::erase_if(flags, [&](const Flag& g) {
        if (g.name == f.name) return true;
        if (region(f.name) && region(g.name)) return true;  // one region: --roi (or full) or --roi-circle
        if (!radius || !radius_flags.count(g.name)) return false;
        // --radius-small and --radius-large go together; every other radius flag replaces the rest
        const bool g_pair = g.name == "--radius-small" || g.name == "--radius-large";
        return !(pair && g_pair);
    });
    flags.push_back(f);
}

std::vector<VideoEntry> shard(const std::vector<VideoEntry>& videos, int index, int count) {
    std::vector<VideoEntry> out;
    for (std::size_t i = 0; i < videos.size(); ++i)
        if (static_cast<int>(i % static_cast<std::size_t>(count)) == index) out.push_back(videos[i]);
    return out;
}

namespace {

const std::set<std::string> kVideoExtensions = {".avi", ".mp4",  ".mov",  ".mkv", ".m4v",
                                                ".wmv", ".cine", ".mraw", ".cih", ".cihx"};
const std::set<std::string> kImageExtensions = {".png", ".tif", ".tiff", ".bmp", ".jpg", ".jpeg", ".pgm"};

std::string lower_ext(const fs::path& p) {
    std::string e = p.extension().string();
    std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return e;
}

bool holds_images(const fs::path& dir) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.is_regular_file() && kImageExtensions.count(lower_ext(e.path()))) return true;
    return false;
}

/// A setting or control `key = value` of one video, from either manifest format.
void apply_key(VideoEntry& v, std::vector<std::pair<std::string, std::string>>& controls,
               const std::string& key, const std::string& value, bool is_bool_true,
               const std::string& where) {
    if (key == "path" || key == "name") return;  // handled by the caller
    if (key.rfind("track.", 0) == 0 || key.rfind("analyze.", 0) == 0) {
        const bool track = key[0] == 't';
        std::string flag = "--" + key.substr(track ? 6 : 8);
        std::replace(flag.begin(), flag.end(), '_', '-');
        if (flag == "--") throw ParameterError(where + ": empty flag name in '" + key + "'");
        set_flag(track ? v.track : v.analyze, {flag, is_bool_true ? "" : value});
        return;
    }
    for (const auto& setting : setting_keys()) {
        const std::string& k = setting.first;
        const std::string& flag =
            setting.second;  // a reference, not a structured binding: clang 14 cannot capture those
        if (k != key) continue;
        if (k == "invert") {
            if (value == "true" || value == "1" || value == "yes")
                set_flag(v.track, {flag, ""});
            else if (value == "false" || value == "0" || value == "no" || value.empty())
                std::erase_if(v.track, [&](const Flag& f) { return f.name == flag; });
            else
                throw ParameterError(where + ": invert must be true or false, got '" + value + "'");
            return;
        }
        if (value.empty()) return;  // an empty CSV cell: the default applies
        set_flag(v.track, {flag, value});
        return;
    }
    for (auto& [k, val] : controls)
        if (k == key) {
            val = value;
            return;
        }
    controls.emplace_back(key, value);
}

std::string unique_name(std::string name, std::set<std::string>& used, const std::string& ext) {
    if (name.empty()) name = "video";
    for (char& c : name)
        if (c == '/' || c == '\\' || c == ' ') c = '_';
    if (used.insert(name).second) return name;
    std::string alt = name + "_" + ext.substr(ext.empty() ? 0 : 1);
    for (int i = 2; !used.insert(alt).second; ++i) alt = name + "_" + std::to_string(i);
    return alt;
}

Dataset scan_folder(const std::string& dir, const DatasetDefaults& d) {
    std::vector<fs::path> items;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        const auto fname = e.path().filename().string();
        if (fname.empty() || fname[0] == '.') continue;
        if (e.is_directory()) {
            if (holds_images(e.path())) items.push_back(e.path());
        } else if (e.is_regular_file() && kVideoExtensions.count(lower_ext(e.path()))) {
            const auto ext = lower_ext(e.path());
            if (ext == ".cih" ||
                ext == ".cihx") {  // the header of an .mraw beside it, not a video of its own
                auto mraw = e.path();
                if (fs::exists(mraw.replace_extension(".mraw"))) continue;
            }
            items.push_back(e.path());
        }
    }
    if (ec) throw IoError(dir + ": cannot list the folder: " + ec.message());
    std::sort(items.begin(), items.end());
    Dataset ds;
    ds.source = dir;
    std::set<std::string> used;
    for (const auto& p : items) {
        VideoEntry v;
        v.input = fs::absolute(p).lexically_normal().string();
        v.name =
            unique_name(fs::is_directory(p) ? p.filename().string() : p.stem().string(), used, lower_ext(p));
        v.track = d.track;
        v.analyze = d.analyze;
        ds.videos.push_back(std::move(v));
    }
    if (ds.videos.empty())
        throw IoError(
            dir + ": no videos found (looked for " +
            std::string(".avi .mp4 .mov .mkv .cine .mraw .cih(x) files and sub-folders of images)"));
    return ds;
}

// ---- CSV manifest ----------------------------------------------------------------------------
std::vector<std::string> split_csv_line(const std::string& line, const std::string& where) {
    std::vector<std::string> out;
    std::string cur;
    bool quoted = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (quoted) {
            if (c == '"' && i + 1 < line.size() && line[i + 1] == '"')
                cur += '"', ++i;
            else if (c == '"')
                quoted = false;
            else
                cur += c;
        } else if (c == '"') {
            quoted = true;
        } else if (c == ',') {
            out.push_back(cur), cur.clear();
        } else if (c != '\r') {
            cur += c;
        }
    }
    if (quoted) throw FormatError(where + ": unterminated quote");
    out.push_back(cur);
    for (auto& s : out) {
        const auto b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
        s = b == std::string::npos ? "" : s.substr(b, e - b + 1);
    }
    return out;
}

// ---- TOML manifest (the subset a manifest needs) ---------------------------------------------
// [defaults] and [[video]] tables of `key = value` lines; values are "strings", 'strings',
// numbers, true/false; # comments. Anything else is an error naming the line.
std::string toml_value(const std::string& raw, const std::string& where, bool& is_true) {
    is_true = false;
    std::string s = raw;
    if (s.empty()) throw FormatError(where + ": missing value");
    if (s[0] == '"' || s[0] == '\'') {
        const char q = s[0];
        std::string out;
        std::size_t i = 1;
        for (; i < s.size() && s[i] != q; ++i) {
            if (q == '"' && s[i] == '\\' && i + 1 < s.size()) {
                const char e = s[++i];
                out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
            } else {
                out += s[i];
            }
        }
        if (i >= s.size()) throw FormatError(where + ": unterminated string");
        const auto rest = s.substr(i + 1);
        if (rest.find_first_not_of(" \t") != std::string::npos && rest[rest.find_first_not_of(" \t")] != '#')
            throw FormatError(where + ": unexpected text after the string: '" + rest + "'");
        return out;
    }
    const auto hash = s.find('#');
    if (hash != std::string::npos) s = s.substr(0, hash);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.pop_back();
    if (s == "true") return is_true = true, "true";
    if (s == "false") return "false";
    std::size_t pos = 0;
    try {
        (void)std::stod(s, &pos);
    } catch (const std::exception&) {
        pos = 0;
    }
    if (pos != s.size() || s.empty())
        throw FormatError(where + ": value '" + s + "' is not a number, true/false or a quoted string");
    return s;
}

struct RawVideo {
    std::vector<std::tuple<std::string, std::string, bool, std::string>> keys;  // key, value, is_true, where
};

}  // namespace

namespace {

Dataset build(const std::string& manifest, const std::vector<RawVideo>& raws, const RawVideo& defaults,
              const DatasetDefaults& d) {
    Dataset ds;
    ds.source = manifest;
    const fs::path base = fs::path(manifest).parent_path();
    std::set<std::string> used;
    std::vector<std::string> names_given;
    for (const auto& raw : raws) {
        VideoEntry v;
        v.track = d.track;
        v.analyze = d.analyze;
        std::vector<std::pair<std::string, std::string>> controls;
        std::string path, name, path_where;
        for (const auto* src : {&defaults, &raw})
            for (const auto& [k, val, t, where] : src->keys) {
                if (k == "path")
                    path = val, path_where = where;
                else if (k == "name")
                    name = val;
                else
                    apply_key(v, controls, k, val, t, where);
            }
        if (path.empty()) throw FormatError(manifest + ": a video without a path (every entry needs `path`)");
        const fs::path p = fs::path(path).is_absolute() ? fs::path(path) : base / path;
        v.input = fs::absolute(p).lexically_normal().string();
        if (!name.empty() && used.count(name))
            throw FormatError(path_where + ": name '" + name + "' is used twice");
        v.name =
            unique_name(name.empty() ? (p.has_extension() ? p.stem().string() : p.filename().string()) : name,
                        used, lower_ext(p));
        v.controls = std::move(controls);
        for (const auto& [k, val] : v.controls)
            if (std::find(ds.controls.begin(), ds.controls.end(), k) == ds.controls.end())
                ds.controls.push_back(k);
        ds.videos.push_back(std::move(v));
    }
    if (ds.videos.empty()) throw FormatError(manifest + ": the manifest lists no videos");
    std::sort(ds.videos.begin(), ds.videos.end(),
              [](const auto& a, const auto& b) { return a.name < b.name; });
    return ds;
}

Dataset read_csv_manifest(const std::string& path, const DatasetDefaults& d) {
    std::ifstream in(path);
    if (!in) throw IoError(path + ": cannot open the manifest");
    std::string line;
    std::vector<std::string> header;
    std::vector<RawVideo> raws;
    for (int lineno = 1; std::getline(in, line); ++lineno) {
        const std::string where = path + ":" + std::to_string(lineno);
        if (line.find_first_not_of(" \t\r") == std::string::npos ||
            line[line.find_first_not_of(" \t")] == '#')
            continue;
        auto cells = split_csv_line(line, where);
        if (header.empty()) {
            header = cells;
            if (std::find(header.begin(), header.end(), "path") == header.end())
                throw FormatError(where + ": the header has no 'path' column");
            continue;
        }
        if (cells.size() != header.size())
            throw FormatError(where + ": " + std::to_string(cells.size()) + " fields, the header has " +
                              std::to_string(header.size()));
        RawVideo r;
        for (std::size_t j = 0; j < header.size(); ++j) {
            if (header[j] != "path" && header[j] != "name" && cells[j].empty()) continue;
            const bool t = cells[j] == "true" || cells[j] == "1" || cells[j] == "yes";
            r.keys.emplace_back(header[j], cells[j], t, where + " column '" + header[j] + "'");
        }
        raws.push_back(std::move(r));
    }
    return build(path, raws, RawVideo{}, d);
}

Dataset read_toml_manifest(const std::string& path, const DatasetDefaults& d) {
    std::ifstream in(path);
    if (!in) throw IoError(path + ": cannot open the manifest");
    std::string line;
    RawVideo defaults;
    std::vector<RawVideo> raws;
    RawVideo* cur = nullptr;
    for (int lineno = 1; std::getline(in, line); ++lineno) {
        const std::string where = path + ":" + std::to_string(lineno);
        const auto b = line.find_first_not_of(" \t\r");
        if (b == std::string::npos || line[b] == '#') continue;
        std::string s = line.substr(b);
        while (!s.empty() && (s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
        if (s == "[[video]]" || s == "[[videos]]") {
            raws.emplace_back();
            cur = &raws.back();
            continue;
        }
        if (s == "[defaults]") {
            cur = &defaults;
            continue;
        }
        if (s[0] == '[')
            throw FormatError(where + ": unknown table " + s +
                              " (a manifest has [defaults] and [[video]] tables)");
        const auto eq = s.find('=');
        if (eq == std::string::npos) throw FormatError(where + ": expected `key = value`, got '" + s + "'");
        std::string key = s.substr(0, eq);
        while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
        if (key.size() > 1 && key.front() == '"' && key.back() == '"') key = key.substr(1, key.size() - 2);
        std::string raw = s.substr(eq + 1);
        raw.erase(0, raw.find_first_not_of(" \t"));
        if (!cur) throw FormatError(where + ": '" + key + "' before any [defaults] or [[video]] table");
        bool t = false;
        const auto value = toml_value(raw, where, t);
        if (cur == &defaults && (key == "path" || key == "name"))
            throw FormatError(where + ": '" + key + "' belongs in a [[video]] table, not in [defaults]");
        cur->keys.emplace_back(key, value, t, where + " key '" + key + "'");
    }
    return build(path, raws, defaults, d);
}

}  // namespace

Dataset load_dataset(const std::string& path, const DatasetDefaults& defaults) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) return scan_folder(path, defaults);
    if (!fs::exists(path, ec)) throw IoError(path + ": no such folder or manifest");
    const auto ext = lower_ext(path);
    if (ext == ".toml") return read_toml_manifest(path, defaults);
    if (ext == ".csv") return read_csv_manifest(path, defaults);
    throw ParameterError(path + ": DATASET must be a folder of videos or a manifest ending in .toml or .csv");
}

}  // namespace vibra::app::batch
