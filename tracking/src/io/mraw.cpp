// SPDX-License-Identifier: GPL-3.0-or-later
// Photron .mraw with its .cih (text) or .cihx (XML) header: header parsing (pure, fuzzed) and the
// streaming FrameSource. The .mraw itself has no header: frames follow each other, each
// width × height samples, top row first, stored as 8-bit, 16-bit little-endian or 12-bit packed
// (two samples in three bytes, most significant bits first). docs/formats.md has the details.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "detail/camera_io.hpp"
#include "vibra/core/error.hpp"
#include "detail/camera_formats.hpp"
#include "vibra/tracking/camera_formats.hpp"

#ifndef VIBRA_CAMERA_PARSERS_ONLY
#include "vibra/tracking/video.hpp"
#endif

namespace vibra::tracking::detail {

namespace {

constexpr std::int64_t kMaxMrawSide = 1 << 20;  // px
constexpr std::int64_t kMaxFrames = std::int64_t(1) << 40;
constexpr std::size_t kMaxXmlDepth = 64;

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' || s.front() == '\n'))
        s.remove_prefix(1);
    while (!s.empty() &&
           (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n' || s.back() == '\0'))
        s.remove_suffix(1);
    return s;
}

bool to_int(std::string_view s, std::int64_t& out) {
    s = trim(s);
    if (!s.empty() && s.front() == '+') s.remove_prefix(1);
    if (s.empty()) return false;
    auto r = std::from_chars(s.data(), s.data() + s.size(), out);
    return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool to_double(std::string_view s, double& out) {
    s = trim(s);
    if (s.empty()) return false;
    auto r = std::from_chars(s.data(), s.data() + s.size(), out);
    return r.ec == std::errc() && r.ptr == s.data() + s.size() && std::isfinite(out);
}

/// Looks up the first of `keys` present in `f`.
const std::string* find_any(const std::map<std::string, std::string>& f,
                            std::initializer_list<const char*> keys) {
    for (const char* k : keys) {
        auto it = f.find(k);
        if (it != f.end()) return &it->second;
    }
    return nullptr;
}

std::int64_t int_field(const std::map<std::string, std::string>& f, std::initializer_list<const char*> keys,
                       const std::string& name, bool required, std::int64_t dflt, std::int64_t lo,
                       std::int64_t hi) {
    const std::string* v = find_any(f, keys);
    const std::string key = *keys.begin();
    if (!v) {
        if (required) throw FormatError(at_field(name, key, "missing"));
        return dflt;
    }
    std::int64_t out = 0;
    if (!to_int(*v, out))
        throw FormatError(
            at_field(name, key, "'" + std::string(trim(*v)).substr(0, 40) + "' is not an integer"));
    if (out < lo || out > hi)
        throw FormatError(at_field(
            name, key,
            std::to_string(out) + " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]"));
    return out;
}

/// Shutter "1/800000" (s), a plain number of seconds, or (cihx) a 1/x integer.
double parse_shutter(std::string_view s, bool reciprocal_integer) {
    s = trim(s);
    const auto slash = s.find('/');
    double a = 0, b = 0;
    if (slash != std::string_view::npos) {
        if (to_double(s.substr(0, slash), a) && to_double(s.substr(slash + 1), b) && b > 0) return a / b;
        return 0;
    }
    if (to_double(s, a) && a > 0) return reciprocal_integer ? 1.0 / a : a;
    return 0;
}

/// Fills the typed fields of `h` from `h.fields` using the given key spellings.
struct KeySet {
    std::initializer_list<const char*> width, height, frames, color_bit, eff_depth, eff_side, color_type,
        rate, start, skip, trigger, format;
};

void fill(PhotronHeader& h, const KeySet& k, const std::string& name) {
    const auto& f = h.fields;
    h.width = int_field(f, k.width, name, true, 0, 1, kMaxMrawSide);
    h.height = int_field(f, k.height, name, true, 0, 1, kMaxMrawSide);
    h.n_frames = int_field(f, k.frames, name, true, 0, 0, kMaxFrames);
    h.color_bit = static_cast<int>(int_field(f, k.color_bit, name, true, 0, 1, 64));
    h.effective_bit_depth = static_cast<int>(int_field(f, k.eff_depth, name, false, 0, 0, 64));
    h.start_frame = int_field(f, k.start, name, false, 0, -kMaxFrames, kMaxFrames);
    h.skip_frame = int_field(f, k.skip, name, false, 1, 0, kMaxFrames);
    if (const auto* v = find_any(f, k.eff_side)) h.effective_side = std::string(trim(*v));
    if (const auto* v = find_any(f, k.color_type)) h.color_type = std::string(trim(*v));
    if (const auto* v = find_any(f, k.trigger)) h.trigger_time = std::string(trim(*v));
    if (const auto* v = find_any(f, k.format)) h.file_format = std::string(trim(*v));
    if (const auto* v = find_any(f, k.rate)) {
        if (!to_double(*v, h.record_rate) || h.record_rate < 0)
            throw FormatError(at_field(name, *k.rate.begin(),
                                       "'" + std::string(trim(*v)).substr(0, 40) + "' is not a frame rate"));
    }
}

std::string decode_entities(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '&') {
            static const std::pair<const char*, char> ents[] = {
                {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
            bool done = false;
            for (auto [e, c] : ents) {
                if (s.substr(i, std::strlen(e)) == e) {
                    out += c;
                    i += std::strlen(e) - 1;
                    done = true;
                    break;
                }
            }
            if (done) continue;
        }
        out += s[i];
    }
    return out;
}

}  // namespace

PhotronHeader parse_cih_text(std::string_view text, const std::string& name) {
    PhotronHeader h;
    std::size_t pos = 0;
    std::int64_t line_no = 0;
    bool any = false;
    while (pos < text.size()) {
        const std::size_t nl = text.find('\n', pos);
        const std::string_view line =
            text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
        pos = nl == std::string_view::npos ? text.size() : nl + 1;
        ++line_no;
        const std::string_view t = trim(line);
        if (t.empty() || t.front() == '#') continue;
        const std::size_t colon = t.find(':');
        if (colon == std::string_view::npos) continue;  // free text (e.g. continued comments)
        const std::string key(trim(t.substr(0, colon)));
        if (key.empty()) continue;
        h.fields.emplace(key, std::string(trim(t.substr(colon + 1))));
        any = true;
    }
    if (!any) throw FormatError(name + ": not a Photron .cih header (no 'Key : Value' lines)");
    fill(h,
         KeySet{{"Image Width"},
                {"Image Height"},
                {"Total Frame"},
                {"Color Bit"},
                {"EffectiveBit Depth"},
                {"EffectiveBit Side"},
                {"Color Type"},
                {"Record Rate(fps)", "Record Rate"},
                {"Start Frame"},
                {"Save Step", "Skip Frame"},
                {"Trigger Time"},
                {"File Format"}},
         name);
    if (const auto* v = find_any(h.fields, {"Shutter Speed(s)", "Shutter Speed"})) {
        h.shutter = *v;
        h.shutter_s = parse_shutter(*v, false);
    }
    return h;
}

PhotronHeader parse_cihx_xml(ByteSpan data, const std::string& name) {
    const std::string_view all(reinterpret_cast<const char*>(data.data()), data.size());
    std::size_t start = all.find("<?xml");
    if (start == std::string_view::npos) start = all.find("<cih");
    if (start == std::string_view::npos)
        throw FormatError(name + ": not a Photron .cihx header (no XML '<cih>' element)");
    const std::string_view x = all.substr(start);

    PhotronHeader h;
    std::vector<std::string> stack;
    std::string path, text;
    bool leaf = false;
    std::size_t i = 0;
    auto fail = [&](const std::string& what) {
        throw FormatError(name + ": XML byte " + std::to_string(start + i) + ": " + what);
    };
    while (i < x.size()) {
        if (x[i] != '<') {
            const std::size_t lt = x.find('<', i);
            const std::size_t end = lt == std::string_view::npos ? x.size() : lt;
            if (!stack.empty() && text.size() < 65536)
                text.append(x.substr(i, std::min<std::size_t>(end - i, 65536)));
            i = end;
            continue;
        }
        if (x.substr(i, 4) == "<!--") {
            const std::size_t e = x.find("-->", i + 4);
            if (e == std::string_view::npos) fail("unterminated comment");
            i = e + 3;
            continue;
        }
        if (x.substr(i, 9) == "<![CDATA[") {
            const std::size_t e = x.find("]]>", i + 9);
            if (e == std::string_view::npos) fail("unterminated CDATA");
            if (text.size() < 65536) text.append(x.substr(i + 9, std::min<std::size_t>(e - i - 9, 65536)));
            i = e + 3;
            continue;
        }
        if (x.substr(i, 2) == "<?" || x.substr(i, 2) == "<!") {
            const std::size_t e = x.find('>', i + 2);
            if (e == std::string_view::npos) fail("unterminated declaration");
            i = e + 1;
            continue;
        }
        // A tag: find its end, honouring quoted attribute values.
        std::size_t e = i + 1;
        char quote = 0;
        while (e < x.size() && (quote || x[e] != '>')) {
            if (quote) {
                if (x[e] == quote) quote = 0;
            } else if (x[e] == '"' || x[e] == '\'') {
                quote = x[e];
            }
            ++e;
        }
        if (e >= x.size()) fail("unterminated tag");
        std::string_view tag = x.substr(i + 1, e - i - 1);
        i = e + 1;
        if (!tag.empty() && tag.front() == '/') {
            const std::string_view nm = trim(tag.substr(1));
            if (stack.empty() || stack.back() != nm)
                fail("closing tag </" + std::string(nm.substr(0, 40)) + "> does not match");
            if (leaf) h.fields.emplace(path, decode_entities(trim(text)));
            stack.pop_back();
            path = path.substr(0, path.size() - std::min(path.size(), nm.size() + (stack.empty() ? 0 : 1)));
            leaf = false;
            text.clear();
            if (stack.empty()) break;  // the root closed: ignore anything after it
            continue;
        }
        const bool self_closing = !tag.empty() && tag.back() == '/';
        if (self_closing) tag.remove_suffix(1);
        std::size_t ne = 0;
        while (ne < tag.size() && tag[ne] != ' ' && tag[ne] != '\t' && tag[ne] != '\r' && tag[ne] != '\n')
            ++ne;
        const std::string nm(tag.substr(0, ne));
        if (nm.empty()) fail("empty tag name");
        if (self_closing) {
            h.fields.emplace(path.empty() ? nm : path + "/" + nm, "");
            leaf = false;
            continue;
        }
        if (stack.size() >= kMaxXmlDepth) fail("elements nested deeper than " + std::to_string(kMaxXmlDepth));
        path = path.empty() ? nm : path + "/" + nm;
        stack.push_back(nm);
        leaf = true;
        text.clear();
    }
    if (!stack.empty()) throw FormatError(name + ": XML ends inside <" + stack.back() + ">");
    if (h.fields.empty()) throw FormatError(name + ": .cihx XML holds no fields");
    fill(h,
         KeySet{{"cih/imageDataInfo/resolution/width", "cih/imageFileInfo/resolution/width"},
                {"cih/imageDataInfo/resolution/height", "cih/imageFileInfo/resolution/height"},
                {"cih/frameInfo/totalFrame"},
                {"cih/imageDataInfo/colorInfo/bit"},
                {"cih/imageDataInfo/effectiveBit/depth"},
                {"cih/imageDataInfo/effectiveBit/side"},
                {"cih/imageDataInfo/colorInfo/type"},
                {"cih/recordInfo/recordRate"},
                {"cih/frameInfo/startFrame"},
                {"cih/frameInfo/skipFrame"},
                {"cih/recordInfo/triggerTime"},
                {"cih/imageFileInfo/fileFormat"}},
         name);
    if (const auto* v = find_any(h.fields, {"cih/recordInfo/shutterSpeedNsec"})) {
        h.shutter = *v + " ns";
        double ns = 0;
        if (to_double(*v, ns) && ns > 0) h.shutter_s = ns * 1e-9;
    } else if (const auto* s = find_any(h.fields, {"cih/recordInfo/shutterSpeed"})) {
        h.shutter = "1/" + *s + " s";
        h.shutter_s = parse_shutter(*s, true);
    }
    return h;
}

MrawLayout mraw_layout(const PhotronHeader& h, std::uint64_t mraw_size, const std::string& name) {
    if (h.width <= 0 || h.width > kMaxMrawSide)
        throw FormatError(at_field(name, "width", std::to_string(h.width) + " px is not a valid width"));
    if (h.height <= 0 || h.height > kMaxMrawSide)
        throw FormatError(at_field(name, "height", std::to_string(h.height) + " px is not a valid height"));
    if (h.n_frames < 0 || h.n_frames > kMaxFrames)
        throw FormatError(at_field(name, "frames", std::to_string(h.n_frames) + " is not a frame count"));
    MrawLayout L;
    switch (h.color_bit) {
        case 8:
            L.packing = PixelPacking::u8;
            break;
        case 12:
            L.packing = PixelPacking::packed12_msb;
            break;
        case 16:
            L.packing = PixelPacking::u16le;
            break;
        default:
            throw FormatError(at_field(
                name, "Color Bit",
                std::to_string(h.color_bit) +
                    " bits per pixel is not supported (8, 12 packed, 16; colour .mraw is not supported)"));
    }
    if (h.effective_bit_depth > (h.color_bit == 12 ? 12 : h.color_bit))
        throw FormatError(at_field(name, "EffectiveBit Depth",
                                   std::to_string(h.effective_bit_depth) + " bits do not fit the " +
                                       std::to_string(h.color_bit) + "-bit samples"));
    const std::uint64_t n = std::uint64_t(h.width) * std::uint64_t(h.height);
    L.frame_bytes = packed_bytes(L.packing, n);
    if (L.frame_bytes > mraw_size)
        throw FormatError(name + ": one frame of " + std::to_string(h.width) + " x " +
                          std::to_string(h.height) + " px at " + std::to_string(h.color_bit) + " bits (" +
                          std::to_string(L.frame_bytes) + " bytes) is larger than the whole .mraw (" +
                          std::to_string(mraw_size) + " bytes): the header lies about the size or bit depth");
    L.n_frames = h.n_frames;
    L.n_complete = static_cast<std::int64_t>(
        std::min<std::uint64_t>(mraw_size / L.frame_bytes, std::uint64_t(h.n_frames)));
    if (mraw_size > std::uint64_t(h.n_frames) * L.frame_bytes)
        throw FormatError(
            name + ": the .mraw holds " + std::to_string(mraw_size) + " bytes, more than the " +
            std::to_string(h.n_frames) + " frames x " + std::to_string(L.frame_bytes) +
            " bytes the header promises: the header lies about the size, bit depth or frame count");
    return L;
}

}  // namespace vibra::tracking::detail

// ------------------------------------------------------------------------------------------------
// Streaming reader
// ------------------------------------------------------------------------------------------------
#ifndef VIBRA_CAMERA_PARSERS_ONLY
#include <opencv2/core.hpp>

#include "detail/camera_reader.hpp"

namespace vibra::tracking {

namespace {

using namespace detail;  // the header parsers above

namespace fs = std::filesystem;

std::string lower_ext(const std::string& path) {
    std::string e = fs::path(path).extension().string();
    for (auto& c : e) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return e;
}

/// The partner of `p` with extension `ext` (tries lower and upper case).
std::string partner(const std::string& p, const std::string& ext) {
    for (const std::string& e : {ext, [&] {
                                     std::string u = ext;
                                     for (auto& c : u) c = char(std::toupper((unsigned char)c));
                                     return u;
                                 }()}) {
        fs::path q(p);
        q.replace_extension(e);
        std::error_code ec;
        if (fs::is_regular_file(q, ec)) return q.string();
    }
    return {};
}

std::vector<std::uint8_t> read_small_file(const std::string& path) {
    detail::InputFile f(path);
    if (f.size() > (std::uint64_t(16) << 20))
        throw FormatError(path + ": " + std::to_string(f.size()) + " bytes is too large for a camera header");
    return f.read_vec(0, f.size());
}

struct Pair {
    std::string header, mraw;
};

Pair find_pair(const std::string& path) {
    const std::string e = lower_ext(path);
    Pair p;
    if (e == ".mraw") {
        p.mraw = path;
        p.header = partner(path, ".cihx");
        if (p.header.empty()) p.header = partner(path, ".cih");
        if (p.header.empty())
            throw IoError(path + ": no .cihx or .cih header beside it (same name, other extension)");
    } else {
        p.header = path;
        p.mraw = partner(path, ".mraw");
        if (p.mraw.empty()) throw IoError(path + ": no .mraw beside it (same name, extension .mraw)");
    }
    return p;
}

class MrawSource final : public detail::CameraSource {
public:
    MrawSource(const Pair& pr, const ReaderParams& params) : CameraSource(pr.mraw) {
        const auto bytes = read_small_file(pr.header);
        const bool xml = lower_ext(pr.header) == ".cihx";
        h_ = xml ? parse_cihx_xml(bytes, pr.header)
                 : parse_cih_text(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                                  pr.header);
        L_ = mraw_layout(h_, file_.size(), pr.header);
        info_.path = pr.mraw;
        info_.format = "mraw";
        info_.width = h_.width;
        info_.height = h_.height;
        info_.n_frames = h_.n_frames;
        info_.fps = h_.record_rate;
        info_.bit_depth = h_.effective_bit_depth > 0 ? h_.effective_bit_depth : h_.color_bit;
        auto& x = info_.extra;
        x["header"] = pr.header;
        x["bit_depth_container"] =
            std::to_string(h_.color_bit) + (h_.color_bit == 12 ? " (packed, 2 pixels in 3 bytes)" : "");
        if (!h_.effective_side.empty())
            x["effective_bit_side"] =
                h_.effective_side +
                (h_.effective_side == "Higher" ? " (stored counts returned unshifted)" : "");
        if (!h_.color_type.empty()) x["color_type"] = h_.color_type;
        if (h_.shutter_s > 0) x["exposure_s"] = header_number(h_.shutter_s);
        if (!h_.shutter.empty()) x["shutter"] = h_.shutter;
        if (!h_.trigger_time.empty()) x["trigger_time"] = h_.trigger_time;
        x["first_image_number"] = std::to_string(h_.start_frame);
        x["fps_source"] = "header record rate";
        if (h_.skip_frame > 1)
            x["warning"] = "header says every " + std::to_string(h_.skip_frame) +
                           "-th recorded frame was saved (skip/save step); "
                           "fps is the record rate, the interval between stored frames may be " +
                           std::to_string(h_.skip_frame) + " / fps";
        if (L_.n_complete < L_.n_frames)
            x["truncated"] = "the .mraw holds " + std::to_string(L_.n_complete) + " of the " +
                             std::to_string(L_.n_frames) + " frames the header promises";
        set_range(params, h_.n_frames);
    }

protected:
    ReadStatus decode(std::int64_t i, Frame& frame) override {
        const std::uint64_t off = std::uint64_t(i) * L_.frame_bytes;
        if (i >= L_.n_complete)
            return fail(ReadStatus::truncated,
                        at_frame(path_, i,
                                 "frame data (" + std::to_string(L_.frame_bytes) + " bytes at byte " +
                                     std::to_string(off) + ") extend past the end of the file (" +
                                     std::to_string(file_.size()) + " bytes): truncated"));
        buf_.resize(L_.frame_bytes);
        if (!file_.read_at(off, buf_.data(), L_.frame_bytes))
            return fail(ReadStatus::truncated, at_frame(path_, i, "file ends inside the frame data"));
        const int w = static_cast<int>(h_.width), hh = static_cast<int>(h_.height);
        const std::size_t n = std::size_t(w) * std::size_t(hh);
        if (L_.packing == PixelPacking::u8) {
            cv::Mat img(hh, w, CV_8UC1);
            std::memcpy(img.data, buf_.data(), n);
            frame.image = img;
        } else {
            cv::Mat img(hh, w, CV_16UC1);
            unpack_samples(buf_, L_.packing, n, reinterpret_cast<std::uint16_t*>(img.data));
            frame.image = img;
        }
        frame.image_number = h_.start_frame + i;
        frame.time_s = -1;
        return ReadStatus::ok;
    }

private:
    PhotronHeader h_;
    MrawLayout L_;
    std::vector<std::uint8_t> buf_;
};

}  // namespace

std::unique_ptr<FrameSource> open_mraw(const std::string& path, const ReaderParams& params) {
    return std::make_unique<MrawSource>(find_pair(path), params);
}

std::unique_ptr<FrameSource> open_camera_file(const std::string& path, const ReaderParams& params) {
    const std::string e = lower_ext(path);
    if (e == ".cine") return open_cine(path, params);
    if (e == ".mraw" || e == ".cih" || e == ".cihx") return open_mraw(path, params);
    return nullptr;
}

}  // namespace vibra::tracking
#endif
