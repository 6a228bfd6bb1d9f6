// SPDX-License-Identifier: GPL-3.0-or-later
// Phantom .cine and Photron .mraw/.cih/.cihx readers: real camera files checked against an
// independent numpy decode (tests/tracking/camera_reference.py), files written here for every
// variant decoded back exactly, `vibra convert` round trips, and bad input that must give a
// FormatError naming the file and frame — never a crash or a huge allocation.
#include <catch2/catch.hpp>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "vibra/core/error.hpp"
#include "../../tracking/src/detail/camera_formats.hpp"  // the internal header parsers
#include "vibra/tracking/camera_formats.hpp"
#include "vibra/tracking/video.hpp"

namespace fs = std::filesystem;
using namespace vibra;
using namespace vibra::tracking;
using namespace vibra::tracking::detail;

namespace {

// ------------------------------------------------------------------------------------------------
// Minimal writers (test support): our own encoders of each layout, written from the format notes.
// ------------------------------------------------------------------------------------------------

using Bytes = std::vector<std::uint8_t>;

void put(Bytes& b, std::size_t off, std::uint64_t v, int n) {
    if (b.size() < off + n) b.resize(off + n, 0);
    for (int k = 0; k < n; ++k) b[off + k] = std::uint8_t(v >> (8 * k));
}

/// Packs samples MSB-first into a bit stream of `bits` bits per sample.
Bytes pack_msb(const std::vector<std::uint16_t>& s, int bits) {
    Bytes out((s.size() * bits + 7) / 8, 0);
    std::uint64_t bit = 0;
    for (auto v : s)
        for (int k = bits - 1; k >= 0; --k, ++bit)
            if ((v >> k) & 1) out[bit / 8] |= std::uint8_t(0x80 >> (bit % 8));
    return out;
}

/// Phantom "12L": pixel 0 = byte0 + low nibble of byte1 << 8; pixel 1 = high nibble of byte1 + byte2 << 4.
Bytes pack_12l(const std::vector<std::uint16_t>& s) {
    Bytes out((s.size() * 12 + 7) / 8, 0);
    for (std::size_t i = 0; i < s.size(); ++i) {
        const std::size_t b = (i / 2) * 3;
        if (i % 2 == 0) {
            out[b] = std::uint8_t(s[i] & 0xFF);
            out[b + 1] |= std::uint8_t((s[i] >> 8) & 0x0F);
        } else {
            out[b + 1] |= std::uint8_t((s[i] & 0x0F) << 4);
            out[b + 2] = std::uint8_t(s[i] >> 4);
        }
    }
    return out;
}

struct CineSpec {
    int width = 7, height = 5;
    int bit_count = 16;  // 8, 16, 24, 48 (uncompressed) — ignored for packed
    std::uint32_t bi_compression = 0;
    bool bottom_up = true;
    int n_images = 3;
    std::int32_t first_image_no = -5417;
    std::uint32_t frame_rate = 1000, real_bpp = 12;
    double stamp_dt = 1e-3;         // s between time stamps (0 = no time block)
    std::uint32_t annotation = 16;  // annotation block size incl. its size and image-size words
    int channels() const { return bit_count == 24 || bit_count == 48 ? 3 : 1; }
};

/// Logical image k (top row first), samples per pixel = channels, values < 2^bits.
std::vector<std::uint16_t> test_image(const CineSpec& s, int k, int bits) {
    std::vector<std::uint16_t> v(std::size_t(s.width) * s.height * s.channels());
    std::mt19937 rng(1234 + k);
    for (auto& x : v) x = std::uint16_t(rng() % (1u << bits));
    return v;
}

Bytes encode_cine_pixels(const CineSpec& s, const std::vector<std::uint16_t>& img) {
    // Physical row order.
    const std::size_t row = std::size_t(s.width) * s.channels();
    std::vector<std::uint16_t> phys(img.size());
    for (int r = 0; r < s.height; ++r) {
        const int src = s.bottom_up && s.bi_compression == 0 ? s.height - 1 - r : r;
        std::copy_n(img.begin() + std::ptrdiff_t(src * row), row, phys.begin() + std::ptrdiff_t(r * row));
    }
    if (s.bi_compression == 256) return pack_msb(phys, 10);
    if (s.bi_compression == 1024) return pack_12l(phys);
    Bytes out;
    const int bytes = s.bit_count == 8 || s.bit_count == 24 ? 1 : 2;
    out.resize(phys.size() * bytes);
    for (std::size_t i = 0; i < phys.size(); ++i) put(out, i * bytes, phys[i], bytes);
    return out;
}

Bytes write_cine(const CineSpec& s, std::vector<std::vector<std::uint16_t>>& images, int bits) {
    Bytes b;
    const std::uint32_t off_bi = 44, off_setup = 84, setup_len = 5740;
    std::uint32_t p = off_setup + setup_len;
    // tagged blocks
    const std::uint32_t time_block = s.stamp_dt > 0 ? 8 + 8 * s.n_images : 0;
    const std::uint32_t exp_block = 8 + 4 * s.n_images;
    const std::uint32_t off_offsets = p + time_block + exp_block;
    b.assign(off_offsets + 8 * s.n_images, 0);
    b[0] = 'C';
    b[1] = 'I';
    put(b, 2, 44, 2);
    put(b, 4, 0, 2);
    put(b, 6, 1, 2);
    put(b, 8, std::uint32_t(s.first_image_no - 10), 4);
    put(b, 12, s.n_images + 10, 4);
    put(b, 16, std::uint32_t(s.first_image_no), 4);
    put(b, 20, s.n_images, 4);
    put(b, 24, off_bi, 4);
    put(b, 28, off_setup, 4);
    put(b, 32, off_offsets, 4);
    const std::uint64_t trigger = (std::uint64_t(1550000000) << 32) | 0x80000000u;
    put(b, 36, trigger, 8);
    put(b, off_bi + 0, 40, 4);
    put(b, off_bi + 4, std::uint32_t(s.width), 4);
    put(b, off_bi + 8, std::uint32_t(s.bottom_up ? s.height : -s.height), 4);
    put(b, off_bi + 12, 1, 2);
    put(b, off_bi + 14, s.bi_compression ? 16 : s.bit_count, 2);
    put(b, off_bi + 16, s.bi_compression, 4);
    b[off_setup + 140] = 'S';
    b[off_setup + 141] = 'T';
    put(b, off_setup + 142, setup_len, 2);
    put(b, off_setup + 768, s.frame_rate, 4);
    put(b, off_setup + 896, s.real_bpp, 4);
    put(b, off_setup + 1568, 20000, 4);  // shutter 20 µs
    if (time_block) {
        put(b, p, time_block, 4);
        put(b, p + 4, 1002, 2);
        for (int i = 0; i < s.n_images; ++i) {
            const double t = i * s.stamp_dt;
            const std::uint64_t sec = 1550000000 + std::uint64_t(t);
            const std::uint64_t frac = std::uint64_t((t - std::floor(t)) * 4294967296.0);
            put(b, p + 8 + 8 * i, (sec << 32) | frac, 8);
        }
        p += time_block;
    }
    put(b, p, exp_block, 4);
    put(b, p + 4, 1003, 2);
    for (int i = 0; i < s.n_images; ++i) put(b, p + 8 + 4 * i, 85899, 4);  // ≈ 20 µs in 2^-32 s
    images.clear();
    for (int i = 0; i < s.n_images; ++i) {
        images.push_back(test_image(s, i, bits));
        const Bytes px = encode_cine_pixels(s, images.back());
        const std::uint64_t off = b.size();
        put(b, off_offsets + 8 * i, off, 8);
        put(b, off, s.annotation, 4);
        put(b, off + s.annotation - 4, px.size(), 4);
        b.insert(b.end(), px.begin(), px.end());
    }
    put(b, off_bi + 20, images.empty() ? 0 : encode_cine_pixels(s, images[0]).size(), 4);
    return b;
}

void write_file(const std::string& path, const Bytes& b) {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
    REQUIRE(f.good());
}

Bytes read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return Bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

std::vector<std::uint16_t> mat_values(const cv::Mat& m) {
    std::vector<std::uint16_t> v;
    for (int r = 0; r < m.rows; ++r)
        for (int c = 0; c < m.cols; ++c)
            v.push_back(m.depth() == CV_8U ? m.at<std::uint8_t>(r, c) : m.at<std::uint16_t>(r, c));
    return v;
}

std::string cihx_text(int w, int h, int n, int bit, int eff, double rate) {
    std::ostringstream x;
    x << std::string(40, '\0') << "CIHX binary preamble" << std::string(20, '\x01')
      << "<?xml version=\"1.0\" encoding=\"utf-8\"?>\r\n<cih>\r\n  <!-- written by the vibra test -->\r\n"
      << "  <imageDataInfo>\r\n    <resolution><width>" << w << "</width><height>" << h
      << "</height></resolution>\r\n"
      << "    <colorInfo><type>Mono</type><bit>" << bit << "</bit></colorInfo>\r\n"
      << "    <effectiveBit><depth>" << eff
      << "</depth><side>Lower</side></effectiveBit>\r\n  </imageDataInfo>\r\n"
      << "  <frameInfo><totalFrame>" << n
      << "</totalFrame><startFrame>-20</startFrame><skipFrame>1</skipFrame></frameInfo>\r\n"
      << "  <recordInfo attr=\"a&gt;b\"><recordRate>" << rate
      << "</recordRate><shutterSpeedNsec>5000</shutterSpeedNsec></recordInfo>\r\n"
      << "  <empty/>\r\n</cih>\r\n"
      << std::string(3, '\0');
    return x.str();
}

std::string cih_text(int w, int h, int n, int bit, int eff, double rate) {
    std::ostringstream x;
    x << "#Camera Information Header\r\nDate : 2016/4/21\r\nTime : 00:11\r\nRecord Rate(fps) : " << rate
      << "\r\nShutter Speed(s) : 1/800000\r\nTotal Frame : " << n
      << "\r\nStart Frame : 100\r\nImage Width : " << w << "\r\nImage Height : " << h
      << "\r\nColor Type : Mono\r\nColor Bit : " << bit << "\r\nEffectiveBit Depth : " << eff
      << "\r\nEffectiveBit Side : Lower\r\n";
    return x.str();
}

Bytes encode_mraw(const std::vector<std::uint16_t>& s, int bit) {
    if (bit == 12) return pack_msb(s, 12);
    Bytes out;
    const int bytes = bit == 8 ? 1 : 2;
    out.resize(s.size() * bytes);
    for (std::size_t i = 0; i < s.size(); ++i) put(out, i * bytes, s[i], bytes);
    return out;
}

std::string extra(const FrameSource& s, const std::string& k) {
    auto it = s.info().extra.find(k);
    return it == s.info().extra.end() ? std::string() : it->second;
}

/// Reads every frame; returns images; REQUIREs ok status throughout.
std::vector<Frame> read_all(FrameSource& src) {
    std::vector<Frame> out;
    Frame f;
    for (;;) {
        const auto st = src.next(f);
        if (st == ReadStatus::end) break;
        INFO(extra(src, "last_error"));
        REQUIRE(st == ReadStatus::ok);
        out.push_back(f);
    }
    return out;
}

// ------------------------------------------------------------------------------------------------
// Real files vs the numpy reference
// ------------------------------------------------------------------------------------------------

struct RefLine {
    std::string kind;
    std::map<std::string, std::string> kv;
};

std::vector<RefLine> run_reference(const fs::path& data, const std::string& outdir) {
    const auto r = test::run("/usr/bin/python3 '" + std::string(VIBRA_SOURCE_DIR) +
                             "/tests/tracking/camera_reference.py' '" + data.string() + "' '" + outdir + "'");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    std::vector<RefLine> lines;
    std::istringstream is(r.output);
    std::string line;
    while (std::getline(is, line)) {
        std::istringstream ls(line);
        RefLine l;
        ls >> l.kind;
        std::string tok;
        while (ls >> tok) {
            const auto eq = tok.find('=');
            if (eq != std::string::npos) l.kv[tok.substr(0, eq)] = tok.substr(eq + 1);
        }
        if (l.kind == "file" || l.kind == "frame") lines.push_back(l);
    }
    return lines;
}

std::vector<std::uint16_t> read_u16(const std::string& path) {
    const Bytes b = read_file(path);
    std::vector<std::uint16_t> v(b.size() / 2);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::uint16_t(b[2 * i] | (b[2 * i + 1] << 8));
    return v;
}

}  // namespace

TEST_CASE("real camera files match an independent numpy decode", "[unit][camera]") {
    const auto shared = test::shared_dir();
    if (shared.empty()) {
        WARN("../shared is absent: real camera files not checked");
        return;
    }
    const fs::path data = shared / "data/real/highspeed_camera_formats";
    test::TempDir tmp("camera_real");
    const auto ref = run_reference(data, tmp.path().string());
    REQUIRE(ref.size() == 4 + 3 * 3);

    std::map<std::string, std::unique_ptr<FrameSource>> sources;
    std::string current;
    int n_frames_checked = 0;
    for (const auto& l : ref) {
        const std::string file = l.kv.at("file");
        if (l.kind == "file") {
            current = file;
            INFO(file);
            if (file == "sample_60k_16bit.cih") {  // header only: no .mraw exists
                const Bytes b = read_file((data / file).string());
                const auto h =
                    parse_cih_text(std::string_view(reinterpret_cast<const char*>(b.data()), b.size()), file);
                CHECK(h.width == std::stoll(l.kv.at("width")));
                CHECK(h.height == std::stoll(l.kv.at("height")));
                CHECK(h.n_frames == std::stoll(l.kv.at("n_frames")));
                CHECK(h.color_bit == std::stoi(l.kv.at("color_bit")));
                CHECK(h.effective_bit_depth == std::stoi(l.kv.at("bit_depth")));
                CHECK(h.record_rate == std::stod(l.kv.at("fps")));
                CHECK(h.start_frame == std::stoll(l.kv.at("first_image")));
                CHECK_THROWS_AS(open_video((data / file).string()), IoError);  // its .mraw is missing
                continue;
            }
            auto src = open_video((data / file).string());
            const auto& in = src->info();
            CHECK(in.width == std::stoll(l.kv.at("width")));
            CHECK(in.height == std::stoll(l.kv.at("height")));
            CHECK(in.n_frames == std::stoll(l.kv.at("n_frames")));
            CHECK(in.bit_depth == std::stoi(l.kv.at("bit_depth")));
            CHECK_THAT(in.fps, Catch::Matchers::WithinRel(std::stod(l.kv.at("fps")), 1e-6));
            CHECK(extra(*src, "first_image_number") == l.kv.at("first_image"));
            if (l.kv.count("fps_setup")) {
                CHECK(in.format == "cine");
                CHECK(extra(*src, "frame_rate_setup") == l.kv.at("fps_setup") + " frames/s");
                CHECK(extra(*src, "warning").find("disagrees") != std::string::npos);  // 9 003 vs 90 000
            }
            // Frames are named after the .mraw in the reference; key the source by the data file.
            const std::string key =
                fs::path(file).extension() == ".cine" ? file : fs::path(file).stem().string() + ".mraw";
            sources[key] = std::move(src);
            continue;
        }
        // A frame line: read that frame through a fresh source opened at that index.
        INFO(file << " frame " << l.kv.at("index"));
        const std::int64_t k = std::stoll(l.kv.at("index"));
        ReaderParams p;
        p.first = k;
        p.last = k + 1;
        const std::string open_path =
            fs::path(file).extension() == ".mraw" ? (data / file).string() : (data / file).string();
        auto src = open_video(open_path, p);
        Frame f;
        REQUIRE(src->next(f) == ReadStatus::ok);
        CHECK(f.index == k);
        const auto v = mat_values(f.image);
        const auto want = read_u16(l.kv.at("raw"));
        REQUIRE(v.size() == want.size());
        CHECK(v == want);
        std::uint64_t sum = 0;
        std::uint16_t mn = 65535, mx = 0;
        for (auto x : v) {
            sum += x;
            mn = std::min(mn, x);
            mx = std::max(mx, x);
        }
        CHECK(sum == std::stoull(l.kv.at("sum")));
        CHECK(mn == std::stoi(l.kv.at("min")));
        CHECK(mx == std::stoi(l.kv.at("max")));
        CHECK(src->next(f) == ReadStatus::end);
        if (fs::path(file).extension() == ".cine") {
            CHECK(f.image_number == -5417 + k);
            CHECK(f.time_s >= 0);
        }
        ++n_frames_checked;

        // vibra convert of this frame reproduces the pixels exactly (16-bit PNG read back).
        const std::string out = tmp.file(file + "_png_" + std::to_string(k));
        const auto r = test::run_vibra("convert '" + open_path + "' -o '" + out + "' --frames " +
                                       std::to_string(k) + ":" + std::to_string(k + 1));
        INFO(r.output);
        REQUIRE(r.exit_code == 0);
        char name[32];
        std::snprintf(name, sizeof name, "frame_%06lld.png", static_cast<long long>(k));
        const cv::Mat png = cv::imread(out + "/" + name, cv::IMREAD_UNCHANGED);
        REQUIRE(!png.empty());
        CHECK(png.depth() == CV_16U);
        CHECK(mat_values(png) == want);
    }
    CHECK(n_frames_checked == 9);

    // Time stamps of the .cine: 15 frames at ~111 µs, image numbers -5417 … -5403.
    auto cine = open_video((data / "cine_781.cine").string());
    const auto frames = read_all(*cine);
    REQUIRE(frames.size() == 15);
    CHECK(frames.front().image_number == -5417);
    CHECK(frames.back().image_number == -5403);
    CHECK(frames.front().time_s == 0.0);
    CHECK_THAT(frames.back().time_s, Catch::Matchers::WithinRel(14.0 / std::stod(ref[0].kv.at("fps")), 1e-9));
}

TEST_CASE("vibra convert writes the whole real .mraw as TIFF and frames.csv", "[unit][camera]") {
    const auto shared = test::shared_dir();
    if (shared.empty()) {
        WARN("../shared is absent: real camera files not checked");
        return;
    }
    const auto path = (shared / "data/real/highspeed_camera_formats/beam.mraw").string();
    test::TempDir tmp("camera_convert");
    const auto r = test::run_vibra("convert '" + path + "' -o '" + tmp.file("out") + "' --format tiff");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    auto src = open_video(path);
    const auto frames = read_all(*src);
    REQUIRE(frames.size() == 4);
    for (const auto& f : frames) {
        char name[32];
        std::snprintf(name, sizeof name, "frame_%06lld.tif", static_cast<long long>(f.index));
        const cv::Mat t = cv::imread(tmp.file("out") + "/" + name, cv::IMREAD_UNCHANGED);
        REQUIRE(!t.empty());
        CHECK(mat_values(t) == mat_values(f.image));
    }
    const std::string csv = test::read_text(tmp.file("out") + "/frames.csv");
    CHECK(csv.find("3,3,,frame_000003.tif") != std::string::npos);
    const auto info = test::run_vibra("info '" + path + "'");
    CHECK(info.exit_code == 0);
    CHECK(info.output.find("1024 x 80") != std::string::npos);
}

// ------------------------------------------------------------------------------------------------
// Written files: every variant decodes back exactly
// ------------------------------------------------------------------------------------------------

TEST_CASE("written .cine files of every variant decode back exactly", "[unit][camera]") {
    struct Case {
        const char* name;
        int bit_count;
        std::uint32_t comp;
        bool bottom_up;
        int bits;
        int w, h;
    };
    const Case cases[] = {
        {"8-bit bottom-up odd size", 8, 0, true, 8, 7, 5},
        {"8-bit top-down", 8, 0, false, 8, 6, 4},
        {"16-bit bottom-up", 16, 0, true, 12, 9, 3},
        {"16-bit full range top-down", 16, 0, false, 16, 5, 5},
        {"packed 10-bit odd size", 16, 256, true, 10, 7, 5},
        {"packed 12-bit (12L) odd size", 16, 1024, true, 12, 7, 5},
        {"colour 24-bit", 24, 0, true, 8, 5, 3},
        {"colour 48-bit", 48, 0, true, 12, 4, 3},
    };
    test::TempDir tmp("camera_cine_variants");
    for (const auto& c : cases) {
        SECTION(c.name) {
            CineSpec s;
            s.bit_count = c.bit_count;
            s.bi_compression = c.comp;
            s.bottom_up = c.bottom_up;
            s.width = c.w;
            s.height = c.h;
            s.real_bpp = c.comp == 256 ? 10 : std::uint32_t(c.bits);
            std::vector<std::vector<std::uint16_t>> imgs;
            const Bytes b = write_cine(s, imgs, c.bits);
            const std::string path = tmp.file("v.cine");
            write_file(path, b);
            ReaderParams p;
            for (int channel : {-1, 1}) {
                p.channel = channel;
                auto src = open_video(path, p);
                CHECK(src->info().format == "cine");
                CHECK(src->info().width == c.w);
                CHECK(src->info().height == c.h);
                CHECK(src->info().n_frames == s.n_images);
                CHECK(src->info().bit_depth == (c.comp == 256 ? 12 : c.bits));
                CHECK_THAT(src->info().fps, Catch::Matchers::WithinRel(1000.0, 1e-6));
                const auto frames = read_all(*src);
                REQUIRE(frames.size() == std::size_t(s.n_images));
                for (int k = 0; k < s.n_images; ++k) {
                    const auto got = mat_values(frames[k].image);
                    std::vector<std::uint16_t> want;
                    const auto& img = imgs[k];
                    if (s.channels() == 3) {
                        for (std::size_t i = 0; i < img.size(); i += 3) {  // stored B, G, R
                            const double B = img[i], G = img[i + 1], R = img[i + 2];
                            want.push_back(channel == 1 ? std::uint16_t(G)
                                                        : std::uint16_t(std::nearbyint(0.299 * R + 0.587 * G +
                                                                                       0.114 * B)));
                        }
                    } else {
                        for (auto v : img) want.push_back(c.comp == 256 ? cine_lin_lut(v) : v);
                    }
                    CHECK(got == want);
                    CHECK(frames[k].image.depth() ==
                          (c.bit_count == 8 || c.bit_count == 24 ? CV_8U : CV_16U));
                    CHECK(frames[k].image_number == s.first_image_no + k);
                    CHECK_THAT(frames[k].time_s, Catch::Matchers::WithinAbs(k * 1e-3, 1e-9));
                }
            }
        }
    }
}

TEST_CASE("10-bit LinLUT spot values and packing primitives", "[unit][camera]") {
    // Published table: first entries 2, 5, 6; entry 64 = 64; the top entries saturate at 4095.
    CHECK(cine_lin_lut(0) == 2);
    CHECK(cine_lin_lut(1) == 5);
    CHECK(cine_lin_lut(64) == 64);
    CHECK(cine_lin_lut(1014) == 4064);
    CHECK(cine_lin_lut(1015) == 4095);
    CHECK(cine_lin_lut(1023) == 4095);
    for (int i = 1; i < 1024; ++i)
        REQUIRE(cine_lin_lut(std::uint16_t(i)) >= cine_lin_lut(std::uint16_t(i - 1)));
    // Hand-packed bytes: 12-bit MSB-first 0xABC, 0x123 → AB C1 23; 12L: BC 3A 12.
    std::uint16_t out[2];
    const std::uint8_t msb[3] = {0xAB, 0xC1, 0x23}, lsb[3] = {0xBC, 0x3A, 0x12};
    unpack_samples(ByteSpan(msb, 3), PixelPacking::packed12_msb, 2, out);
    CHECK(out[0] == 0xABC);
    CHECK(out[1] == 0x123);
    unpack_samples(ByteSpan(lsb, 3), PixelPacking::packed12_lsb, 2, out);
    CHECK(out[0] == 0xABC);
    CHECK(out[1] == 0x123);
    // 10-bit MSB-first: 0x3FF, 0x000, 0x2AA, 0x155 → 11111111 11000000 00001010 10101001 01010101
    const std::uint8_t ten[5] = {0xFF, 0xC0, 0x0A, 0xA9, 0x55};
    std::uint16_t o4[4];
    unpack_samples(ByteSpan(ten, 5), PixelPacking::packed10_msb, 4, o4);
    CHECK(o4[0] == 0x3FF);
    CHECK(o4[1] == 0x000);
    CHECK(o4[2] == 0x2AA);
    CHECK(o4[3] == 0x155);
    CHECK_THROWS_AS(unpack_samples(ByteSpan(ten, 4), PixelPacking::packed10_msb, 4, o4),
                    std::invalid_argument);
}

TEST_CASE("written .mraw files (8, 12-packed, 16 bit — .cih and .cihx) decode back exactly",
          "[unit][camera]") {
    test::TempDir tmp("camera_mraw_variants");
    for (int bit : {8, 12, 16}) {
        for (bool xml : {true, false}) {
            for (auto [w, h] : {std::pair{6, 4}, std::pair{7, 5}}) {
                if (bit == 12 && (w * h) % 2) continue;  // Photron packs whole pixel pairs
                INFO("bit " << bit << " xml " << xml << " size " << w << "x" << h);
                const int n = 3, eff = bit == 16 ? 12 : bit;
                const std::string stem =
                    tmp.file("rec" + std::to_string(bit) + (xml ? "x" : "t") + std::to_string(w));
                write_file(stem + (xml ? ".cihx" : ".cih"), [&] {
                    const std::string t =
                        xml ? cihx_text(w, h, n, bit, eff, 12500) : cih_text(w, h, n, bit, eff, 12500);
                    return Bytes(t.begin(), t.end());
                }());
                std::vector<std::vector<std::uint16_t>> imgs;
                Bytes data;
                std::mt19937 rng(bit + w);
                for (int k = 0; k < n; ++k) {
                    std::vector<std::uint16_t> v(std::size_t(w) * h);
                    for (auto& x : v) x = std::uint16_t(rng() % (1u << (bit == 16 ? 16 : bit)));
                    const Bytes e = encode_mraw(v, bit);
                    data.insert(data.end(), e.begin(), e.end());
                    imgs.push_back(v);
                }
                write_file(stem + ".mraw", data);
                for (const std::string& open_as : {stem + ".mraw", stem + (xml ? ".cihx" : ".cih")}) {
                    ReaderParams p;
                    p.first = 1;
                    auto src = open_video(open_as, p);
                    CHECK(src->info().format == "mraw");
                    CHECK(src->info().n_frames == n);
                    CHECK(src->info().fps == 12500.0);
                    CHECK(src->info().bit_depth == eff);
                    const auto frames = read_all(*src);
                    REQUIRE(frames.size() == std::size_t(n - 1));
                    for (std::size_t j = 0; j < frames.size(); ++j) {
                        CHECK(frames[j].index == std::int64_t(j + 1));
                        CHECK(frames[j].image_number == (xml ? -20 : 100) + std::int64_t(j + 1));
                        CHECK(mat_values(frames[j].image) == imgs[j + 1]);
                        CHECK(frames[j].image.depth() == (bit == 8 ? CV_8U : CV_16U));
                    }
                }
            }
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Bad input
// ------------------------------------------------------------------------------------------------

namespace {
std::string open_error(const std::string& path) {
    try {
        auto s = open_video(path);
    } catch (const FormatError& e) {
        return e.what();
    }
    return "(no FormatError)";
}
}  // namespace

TEST_CASE("bad .cine input gives errors naming the file and frame", "[unit][camera]") {
    test::TempDir tmp("camera_bad_cine");
    CineSpec s;
    std::vector<std::vector<std::uint16_t>> imgs;
    const Bytes good = write_cine(s, imgs, 12);
    const std::string path = tmp.file("bad.cine");
    const long rss0 = test::peak_rss_kb();
    const std::uint32_t off_offsets =
        std::uint32_t(good[32] | (good[33] << 8) | (good[34] << 16) | (good[35] << 24));

    SECTION("truncated inside the last image: earlier frames read, then truncated naming the frame") {
        write_file(path, Bytes(good.begin(), good.end() - 7));
        auto src = open_video(path);
        Frame f;
        CHECK(src->next(f) == ReadStatus::ok);
        CHECK(src->next(f) == ReadStatus::ok);
        CHECK(src->next(f) == ReadStatus::truncated);
        CHECK(f.index == 2);
        const std::string msg = extra(*src, "last_error");
        CHECK(msg.find(path) != std::string::npos);
        CHECK(msg.find("frame 2") != std::string::npos);
        CHECK(src->next(f) == ReadStatus::end);
        const auto r = test::run_vibra("convert '" + path + "' -o '" + tmp.file("out") + "'");
        CHECK(r.exit_code == 1);
        CHECK(r.output.find("frame 2") != std::string::npos);
    }
    SECTION("truncated inside the header") {
        write_file(path, Bytes(good.begin(), good.begin() + 30));
        CHECK(open_error(path).find(path) != std::string::npos);
        write_file(path, Bytes(good.begin(), good.begin() + off_offsets + 4));
        const std::string e = open_error(path);
        CHECK(e.find(path) != std::string::npos);
        CHECK(e.find("OffImageOffsets") != std::string::npos);
    }
    SECTION("offset table pointing past the end") {
        Bytes b = good;
        put(b, 32, 0xFFFFFF00u, 4);
        CHECK_THROWS_AS(open_video(path + "x"), IoError);  // a missing file is an IoError
        write_file(path, b);
        CHECK(open_error(path).find("OffImageOffsets") != std::string::npos);
        // One entry of the table points past the end: that frame fails, naming it.
        b = good;
        put(b, off_offsets + 8 * 1, 1ull << 40, 8);
        write_file(path, b);
        auto src = open_video(path);
        CHECK(extra(*src, "truncated").find("1 image offsets") != std::string::npos);
        Frame f;
        CHECK(src->next(f) == ReadStatus::ok);
        CHECK(src->next(f) == ReadStatus::truncated);
        CHECK(extra(*src, "last_error").find("frame 1") != std::string::npos);
        CHECK(extra(*src, "last_error").find("past the end") != std::string::npos);
    }
    SECTION("absurd sizes are rejected before any allocation") {
        Bytes b = good;
        put(b, 44 + 4, 0x7FFFFFFFu, 4);  // biWidth 2^31 - 1
        put(b, 44 + 8, 0x7FFFFFFFu, 4);  // biHeight 2^31 - 1
        write_file(path, b);
        CHECK(open_error(path).find("biWidth") != std::string::npos);
        put(b, 44 + 4, 60000, 4);
        put(b, 44 + 8, 60000, 4);
        write_file(path, b);
        CHECK(open_error(path).find("larger than the whole file") != std::string::npos);
        put(b, 20, 0xFFFFFFFFu, 4);  // image count 2^32 - 1 → table of 32 GiB
        write_file(path, b);
        CHECK(open_error(path).find("OffImageOffsets") != std::string::npos);
        CHECK(test::peak_rss_kb() - rss0 < 100 * 1024);
    }
    SECTION("a header that lies about the bit depth") {
        Bytes b = good;
        put(b, 44 + 14, 8, 2);  // biBitCount 8 while the images hold 16-bit samples
        put(b, 84 + 896, 8, 4);
        write_file(path, b);
        auto src = open_video(path);
        Frame f;
        CHECK(src->next(f) == ReadStatus::corrupt);
        CHECK(f.index == 0);
        const std::string msg = extra(*src, "last_error");
        CHECK(msg.find(path) != std::string::npos);
        CHECK(msg.find("frame 0") != std::string::npos);
        CHECK(msg.find("lies about") != std::string::npos);
        CHECK(src->next(f) == ReadStatus::corrupt);  // the next frame is tried too
        b = good;
        put(b, 84 + 896, 14, 4);  // RealBPP 14 in an 8-bit container
        put(b, 44 + 14, 8, 2);
        write_file(path, b);
        CHECK(open_error(path).find("RealBPP") != std::string::npos);
    }
    SECTION("not a .cine at all") {
        write_file(path, Bytes(200, 'x'));
        CHECK(open_error(path).find("not a Phantom .cine") != std::string::npos);
    }
}

TEST_CASE("bad .mraw/.cih/.cihx input gives errors naming the file", "[unit][camera]") {
    test::TempDir tmp("camera_bad_mraw");
    const std::string stem = tmp.file("r");
    auto write_pair = [&](const std::string& header, std::size_t mraw_bytes) {
        write_file(stem + ".cihx", Bytes(header.begin(), header.end()));
        write_file(stem + ".mraw", Bytes(mraw_bytes, 7));
    };
    const long rss0 = test::peak_rss_kb();
    SECTION("absurd sizes") {
        write_pair(cihx_text(2147483647, 2147483647, 3, 16, 12, 1000), 100);
        CHECK(open_error(stem + ".mraw").find("width") != std::string::npos);
        write_pair(cihx_text(60000, 60000, 1000000, 16, 12, 1000), 100);
        const std::string e = open_error(stem + ".mraw");
        CHECK(e.find(stem + ".cihx") != std::string::npos);
        CHECK(e.find("larger than the whole .mraw") != std::string::npos);
        CHECK(test::peak_rss_kb() - rss0 < 100 * 1024);
    }
    SECTION("a header that lies about the bit depth (8 declared, 16 stored)") {
        write_pair(cihx_text(4, 4, 3, 8, 8, 1000), 4 * 4 * 3 * 2);
        CHECK(open_error(stem + ".mraw").find("lies about") != std::string::npos);
        write_pair(cihx_text(4, 4, 3, 10, 10, 1000), 4 * 4 * 3 * 2);
        CHECK(open_error(stem + ".mraw").find("Color Bit") != std::string::npos);
    }
    SECTION("truncated .mraw: complete frames read, then truncated naming the frame") {
        write_pair(cihx_text(4, 4, 3, 16, 12, 1000), 4 * 4 * 2 * 2 + 5);
        auto src = open_video(stem + ".mraw");
        Frame f;
        CHECK(src->next(f) == ReadStatus::ok);
        CHECK(src->next(f) == ReadStatus::ok);
        CHECK(src->next(f) == ReadStatus::truncated);
        CHECK(extra(*src, "last_error").find("frame 2") != std::string::npos);
        CHECK(extra(*src, "last_error").find(stem + ".mraw") != std::string::npos);
    }
    SECTION("broken XML and text headers") {
        write_pair("<?xml version=\"1.0\"?><cih><frameInfo><totalFrame>3</totalFrame></cih>", 10);
        CHECK(open_error(stem + ".mraw").find("does not match") != std::string::npos);
        write_pair("<?xml version=\"1.0\"?><cih><frameInfo><totalFrame>3</totalFrame></frameInfo></cih>", 10);
        CHECK(open_error(stem + ".mraw").find("field 'cih/imageDataInfo/resolution/width'") !=
              std::string::npos);
        write_pair(cihx_text(4, 4, 3, 16, 12, 1000).substr(0, 200), 10);
        CHECK(open_error(stem + ".mraw").find(stem + ".cihx") != std::string::npos);
        const std::string t = cih_text(4, 4, 3, 16, 12, 1000);
        std::string bad = t;
        bad.replace(bad.find("Image Width : 4"), 15, "Image Width : four");
        CHECK_THROWS_WITH(parse_cih_text(bad, "x.cih"),
                          Catch::Contains("x.cih") && Catch::Contains("Image Width"));
        CHECK_THROWS_AS(parse_cih_text("no header here", "x.cih"), FormatError);
    }
    SECTION("missing partner files") {
        write_file(tmp.file("lonely.mraw"), Bytes(10, 0));
        CHECK_THROWS_AS(open_video(tmp.file("lonely.mraw")), IoError);
    }
}

TEST_CASE("mutated headers never crash the parsers (fixed-seed mini fuzz)", "[unit][camera]") {
    CineSpec s;
    s.n_images = 2;
    std::vector<std::vector<std::uint16_t>> imgs;
    const Bytes cine = write_cine(s, imgs, 12);
    const std::string x = cihx_text(6, 4, 3, 12, 12, 1000), t = cih_text(6, 4, 3, 12, 12, 1000);
    std::mt19937 rng(7);
    int accepted = 0, rejected = 0;
    for (int it = 0; it < 3000; ++it) {
        const int which = it % 3;
        Bytes b = which == 0 ? cine : which == 1 ? Bytes(x.begin(), x.end()) : Bytes(t.begin(), t.end());
        const int n_mut = 1 + int(rng() % 8);
        for (int m = 0; m < n_mut; ++m) {
            const std::size_t pos =
                which == 0 ? rng() % std::min<std::size_t>(b.size(), 6200) : rng() % b.size();
            b[pos] = std::uint8_t(rng());
        }
        if (rng() % 4 == 0) b.resize(rng() % b.size());
        try {
            if (which == 0) {
                const auto h = parse_cine_header(b, b.size(), "fuzz.cine");
                for (std::size_t i = 0; i < h.image_offsets.size(); ++i) {
                    try {
                        (void)cine_image_extent(h, i, 16, std::uint32_t(h.image_bytes), b.size(),
                                                "fuzz.cine");
                    } catch (const FormatError&) {}
                }
            } else if (which == 1) {
                (void)mraw_layout(parse_cihx_xml(b, "fuzz.cihx"), 1000, "fuzz.cihx");
            } else {
                (void)mraw_layout(
                    parse_cih_text(std::string_view(reinterpret_cast<const char*>(b.data()), b.size()),
                                   "fuzz.cih"),
                    1000, "fuzz.cih");
            }
            ++accepted;
        } catch (const FormatError& e) {
            REQUIRE(std::string(e.what()).find("fuzz.") != std::string::npos);
            ++rejected;
        }
    }
    CHECK(accepted + rejected == 3000);
    CHECK(rejected > 0);
    CHECK(accepted > 0);
}

TEST_CASE("readers stream: the last frame of an 8 GiB (sparse) .mraw is read without reading the file",
          "[unit][camera]") {
    test::TempDir tmp("camera_sparse");
    const std::string stem = tmp.file("big");
    const int w = 1024, h = 1024, n = 4096;  // 2 MiB per frame, 8 GiB in all
    const std::string hdr = cih_text(w, h, n, 16, 12, 100000);
    write_file(stem + ".cih", Bytes(hdr.begin(), hdr.end()));
    {
        std::ofstream f(stem + ".mraw", std::ios::binary);
        REQUIRE(f.good());
    }
    std::error_code ec;
    fs::resize_file(stem + ".mraw", std::uintmax_t(w) * h * 2 * n, ec);  // sparse: no data blocks written
    if (ec) {
        WARN("cannot create a sparse 8 GiB file here (" << ec.message() << "): streaming test skipped");
        return;
    }
    // A marker in the last frame, so the test sees that frame and not a zero-filled buffer.
    {
        std::fstream f(stem + ".mraw", std::ios::binary | std::ios::in | std::ios::out);
        f.seekp(std::streamoff(std::uint64_t(w) * h * 2 * (n - 1) + 2 * (1024 * 5 + 7)));
        const char v[2] = {0x34, 0x12};
        f.write(v, 2);
        REQUIRE(f.good());
    }
    const long rss0 = test::peak_rss_kb();
    ReaderParams p;
    p.first = n - 1;
    auto src = open_video(stem + ".mraw", p);
    CHECK(src->info().n_frames == n);
    Frame f;
    REQUIRE(src->next(f) == ReadStatus::ok);
    CHECK(f.index == n - 1);
    CHECK(f.image.at<std::uint16_t>(5, 7) == 0x1234);
    CHECK(f.image.at<std::uint16_t>(5, 8) == 0);
    CHECK(src->next(f) == ReadStatus::end);
    CHECK(test::peak_rss_kb() - rss0 < 32 * 1024);  // one 2 MiB frame (+ its buffer), not 8 GiB
    CHECK(open_camera_file(tmp.file("movie.avi"), ReaderParams{}) == nullptr);
}
