// SPDX-License-Identifier: GPL-3.0-or-later
// Frame readers: image sequences (folder, glob, natural order, 8/16 bit, PNG/TIFF), OpenCV
// containers (uncompressed AVI, FFV1), colour → grey rule, frame ranges, bad inputs, real data.
#include <catch2/catch.hpp>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/videoio.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "test_support.hpp"
#include "vibra/core/error.hpp"
#include "vibra/tracking/synth.hpp"
#include "vibra/tracking/video_writer.hpp"
#include "vibra/tracking/video.hpp"

using namespace vibra;
using namespace vibra::tracking;
namespace fs = std::filesystem;

namespace {

cv::Mat random_image(int w, int h, int type, std::uint64_t seed) {
    cv::Mat m(h, w, type);
    cv::RNG rng(seed);
    rng.fill(m, cv::RNG::UNIFORM, 0, CV_MAT_DEPTH(type) == CV_16U ? 65536 : 256);
    return m;
}

bool same(const cv::Mat& a, const cv::Mat& b) {
    return a.size() == b.size() && a.type() == b.type() && cv::norm(a, b, cv::NORM_INF) == 0;
}

struct ReadAll {
    std::vector<Frame> frames;
    int corrupt = 0;
    ReadStatus last = ReadStatus::ok;
};
ReadAll read_all(FrameSource& src) {
    ReadAll r;
    for (;;) {
        Frame f;
        const auto s = src.next(f);
        if (s == ReadStatus::ok)
            r.frames.push_back(f);
        else if (s == ReadStatus::corrupt)
            ++r.corrupt;
        else {
            r.last = s;
            break;
        }
    }
    return r;
}

std::vector<cv::Mat> write_sequence(const std::string& folder, VideoFormat fmt, int type, int n, int w = 37,
                                    int h = 23) {
    FrameSink sink(folder, fmt);
    std::vector<cv::Mat> imgs;
    for (int k = 0; k < n; ++k) {
        imgs.push_back(random_image(w, h, type, 100 + static_cast<std::uint64_t>(k)));
        sink.write(imgs.back());
    }
    sink.close();
    return imgs;
}

}  // namespace

TEST_CASE("8- and 16-bit PNG and TIFF sequences read back pixel-exact, in order", "[unit]") {
    test::TempDir tmp("video_seq");
    for (auto fmt : {VideoFormat::png, VideoFormat::tiff})
        for (int type : {CV_8UC1, CV_16UC1}) {
            const std::string folder = tmp.file(std::string(to_string(fmt)) + std::to_string(type));
            const auto imgs = write_sequence(folder, fmt, type, 5);
            auto src = open_video(folder);
            REQUIRE(src->info().format == "image-sequence");
            REQUIRE(src->info().n_frames == 5);
            REQUIRE(src->info().width == 37);
            REQUIRE(src->info().height == 23);
            REQUIRE(src->info().bit_depth == (type == CV_16UC1 ? 16 : 8));
            const auto r = read_all(*src);
            REQUIRE(r.last == ReadStatus::end);
            REQUIRE(r.frames.size() == 5);
            for (int k = 0; k < 5; ++k) {
                REQUIRE(r.frames[static_cast<std::size_t>(k)].index == k);
                REQUIRE(same(r.frames[static_cast<std::size_t>(k)].image, imgs[static_cast<std::size_t>(k)]));
            }
        }
}

TEST_CASE("image sequences: natural sort order, glob and folder inputs, frame ranges", "[unit]") {
    test::TempDir tmp("video_natural");
    const std::string dir = tmp.file("frames");
    fs::create_directories(dir);
    // Frames written out of order with names that sort wrongly as plain strings.
    const std::vector<std::string> names{"img10.png", "img2.png",   "img1.png",
                                         "img9.png",  "img100.png", "img011.png"};
    const std::vector<int> order_value{10, 2, 1, 9, 100, 11};
    for (std::size_t k = 0; k < names.size(); ++k)
        cv::imwrite(dir + "/" + names[k], cv::Mat(4, 6, CV_8UC1, cv::Scalar(order_value[k])));
    cv::imwrite(dir + "/other_5.png", cv::Mat(4, 6, CV_8UC1, cv::Scalar(200)));
    test::write_text(dir + "/notes.txt", "not an image");

    SECTION("folder: all images, natural order") {
        auto src = open_video(dir);
        const auto r = read_all(*src);
        REQUIRE(r.frames.size() == 7);
        const std::vector<int> expect{1,  2,   9,  10,
                                      11, 100, 200};  // img1 img2 img9 img10 img011 img100 other_5
        for (std::size_t k = 0; k < expect.size(); ++k)
            REQUIRE(r.frames[k].image.at<std::uint8_t>(0, 0) == expect[k]);
    }
    SECTION("glob: only matching files") {
        auto src = open_video(dir + "/img*.png");
        REQUIRE(src->info().n_frames == 6);
        const auto r = read_all(*src);
        const std::vector<int> expect{1, 2, 9, 10, 11, 100};
        REQUIRE(r.frames.size() == expect.size());
        for (std::size_t k = 0; k < expect.size(); ++k)
            REQUIRE(r.frames[k].image.at<std::uint8_t>(0, 0) == expect[k]);
    }
    SECTION("frame range [2, 5) of the glob") {
        ReaderParams p;
        p.first = 2;
        p.last = 5;
        auto src = open_video(dir + "/img*.png", p);
        const auto r = read_all(*src);
        REQUIRE(r.frames.size() == 3);
        REQUIRE(r.frames[0].index == 2);
        REQUIRE(r.frames[0].image.at<std::uint8_t>(0, 0) == 9);
        REQUIRE(r.frames[2].index == 4);
        REQUIRE(r.frames[2].image.at<std::uint8_t>(0, 0) == 11);
    }
    SECTION("frame range beyond the end, bad range, bad channel") {
        ReaderParams p;
        p.first = 50;
        REQUIRE_THROWS_AS(open_video(dir, p), FormatError);
        p.first = 3;
        p.last = 3;
        REQUIRE_THROWS_AS(open_video(dir, p), ParameterError);
        ReaderParams c;
        c.channel = 3;
        REQUIRE_THROWS_AS(open_video(dir, c), ParameterError);
    }
}

TEST_CASE("frames_in_range: what vibra track's progress counts to", "[unit]") {
    ReaderParams p;
    REQUIRE(frames_in_range(60, p) == 60);
    REQUIRE(frames_in_range(-1, p) == -1);  // unknown length, no end
    p.first = 10;
    REQUIRE(frames_in_range(60, p) == 50);
    p.last = 16;  // --frames 10:16: 6 frames, not 60
    REQUIRE(frames_in_range(60, p) == 6);
    REQUIRE(frames_in_range(-1, p) == 6);
    REQUIRE(frames_in_range(12, p) == 2);  // the input ends first
    REQUIRE(frames_in_range(5, p) == 0);   // the range lies beyond the end
}

TEST_CASE("colour to grey: luma round(0.299 R + 0.587 G + 0.114 B), or one channel", "[unit]") {
    test::TempDir tmp("video_colour");
    for (int depth : {CV_8U, CV_16U}) {
        const std::string dir = tmp.file("rgb" + std::to_string(depth));
        fs::create_directories(dir);
        const cv::Mat bgr = random_image(19, 11, CV_MAKETYPE(depth, 3), 7);  // OpenCV order B, G, R
        cv::Mat bgra;
        cv::Mat alpha(11, 19, CV_MAKETYPE(depth, 1), cv::Scalar(depth == CV_16U ? 65535 : 255));
        {
            std::vector<cv::Mat> ch;
            cv::split(bgr, ch);
            ch.push_back(alpha);
            cv::merge(ch, bgra);
        }
        cv::imwrite(dir + "/a_0.png", bgr);
        cv::imwrite(dir + "/a_1.png", bgra);  // RGBA file, like trackpy's bulk_water
        for (int channel : {-1, 0, 1, 2}) {
            ReaderParams p;
            p.channel = channel;
            auto src = open_video(dir, p);
            const auto r = read_all(*src);
            REQUIRE(r.frames.size() == 2);
            for (const auto& f : r.frames) {
                REQUIRE(f.image.type() == CV_MAKETYPE(depth, 1));
                for (int j = 0; j < 11; ++j)
                    for (int i = 0; i < 19; ++i) {
                        double b, g, rr, v;
                        if (depth == CV_8U) {
                            const auto px = bgr.at<cv::Vec3b>(j, i);
                            b = px[0], g = px[1], rr = px[2];
                            v = f.image.at<std::uint8_t>(j, i);
                        } else {
                            const auto px = bgr.at<cv::Vec3w>(j, i);
                            b = px[0], g = px[1], rr = px[2];
                            v = f.image.at<std::uint16_t>(j, i);
                        }
                        // round(0.299 R + 0.587 G + 0.114 B) with halves up, in exact integers.
                        const double expect = channel == -1
                                                  ? std::floor((299 * rr + 587 * g + 114 * b + 500) / 1000)
                                              : channel == 0 ? rr
                                              : channel == 1 ? g
                                                             : b;
                        REQUIRE(v == expect);
                    }
            }
        }
    }
}

TEST_CASE("uncompressed AVI round trip is pixel-exact (8-bit), with frame ranges", "[unit]") {
    test::TempDir tmp("video_avi");
    const std::string path = tmp.file("raw.avi");
    std::vector<cv::Mat> imgs;
    {
        FrameSink sink(path, VideoFormat::avi_raw, 50);
        for (int k = 0; k < 12; ++k) {
            imgs.push_back(random_image(64, 48, CV_8UC1, 40 + static_cast<std::uint64_t>(k)));
            sink.write(imgs.back());
        }
    }
    auto src = open_video(path);
    REQUIRE(src->info().format == "avi");  // vibra's own reader of uncompressed grey AVI
    REQUIRE(src->info().n_frames == 12);
    REQUIRE(src->info().width == 64);
    REQUIRE(src->info().height == 48);
    REQUIRE_THAT(src->info().fps, Catch::Matchers::WithinAbs(50, 1e-6));
    const auto r = read_all(*src);
    REQUIRE(r.last == ReadStatus::end);
    REQUIRE(r.corrupt == 0);
    REQUIRE(r.frames.size() == 12);
    for (std::size_t k = 0; k < 12; ++k) {
        REQUIRE(r.frames[k].index == static_cast<std::int64_t>(k));
        REQUIRE(same(r.frames[k].image, imgs[k]));
    }
    ReaderParams p;
    p.first = 4;
    p.last = 7;
    auto part = open_video(path, p);
    const auto rp = read_all(*part);
    REQUIRE(rp.frames.size() == 3);
    for (std::size_t k = 0; k < 3; ++k) {
        REQUIRE(rp.frames[k].index == static_cast<std::int64_t>(4 + k));
        REQUIRE(same(rp.frames[k].image, imgs[4 + k]));
    }
    // Non-multiple-of-4 width (no raw packet shortcut needed to be exact).
    const std::string odd = tmp.file("odd.avi");
    std::vector<cv::Mat> odd_imgs;
    {
        FrameSink sink(odd, VideoFormat::avi_raw);
        for (int k = 0; k < 3; ++k) {
            odd_imgs.push_back(random_image(61, 33, CV_8UC1, 90 + static_cast<std::uint64_t>(k)));
            sink.write(odd_imgs.back());
        }
    }
    auto so = open_video(odd);
    const auto ro = read_all(*so);
    REQUIRE(ro.frames.size() == 3);
    for (std::size_t k = 0; k < 3; ++k) REQUIRE(same(ro.frames[k].image, odd_imgs[k]));
}

TEST_CASE("seek: the next frame read is the one asked for, inside the range (OpenCV videos cannot seek)",
          "[unit]") {
    test::TempDir tmp("video_seek");
    const std::string avi = tmp.file("raw.avi"), seq = tmp.file("seq"), ffv1 = tmp.file("ffv1.avi");
    std::vector<cv::Mat> imgs;
    {
        FrameSink sink(avi, VideoFormat::avi_raw, 50);
        for (int k = 0; k < 10; ++k) {
            imgs.push_back(random_image(40, 30, CV_8UC1, 60 + static_cast<std::uint64_t>(k)));
            sink.write(imgs.back());
        }
    }
    {
        FrameSink sink(seq, VideoFormat::png);
        for (const auto& m : imgs) sink.write(m);
    }
    for (const std::string& in : {avi, seq}) {
        INFO(in);
        ReaderParams p;
        p.first = 2, p.last = 8;
        auto src = open_video(in, p);
        Frame f;
        // forwards, backwards, to the first and the last frame of the range, twice the same one
        for (std::int64_t k : {5, 3, 2, 7, 7, 4}) {
            REQUIRE(src->seek(k));
            REQUIRE(src->next(f) == ReadStatus::ok);
            CHECK(f.index == k);
            CHECK(same(f.image, imgs[static_cast<std::size_t>(k)]));
        }
        REQUIRE(src->next(f) == ReadStatus::ok);  // reading goes on after the frame sought
        CHECK(f.index == 5);
        CHECK_FALSE(src->seek(1));                // before the range
        CHECK_FALSE(src->seek(8));                // past it
        REQUIRE(src->next(f) == ReadStatus::ok);  // a refused seek moves nothing
        CHECK(f.index == 6);
    }
    try {
        FrameSink sink(ffv1, VideoFormat::avi_ffv1);
        for (int k = 0; k < 3; ++k) sink.write(imgs[static_cast<std::size_t>(k)]);
    } catch (const IoError& e) {
        WARN("FFV1 not available here, the OpenCV case skipped: " << e.what());
        return;
    }
    auto src = open_video(ffv1);
    REQUIRE(src->info().format != "avi");
    CHECK_FALSE(src->seek(1));
}

TEST_CASE("uncompressed AVI: frame buffers are re-used once released, never while held", "[unit]") {
    // The uncompressed-AVI reader keeps a pool of frame buffers (a fresh megabyte per frame costs
    // page faults): a buffer is filled again only when no frame made of it is held any more.
    test::TempDir tmp("video_avi_pool");
    const std::string path = tmp.file("raw.avi");
    std::vector<cv::Mat> imgs;
    {
        FrameSink sink(path, VideoFormat::avi_raw, 50);
        for (int k = 0; k < 40; ++k) {
            imgs.push_back(random_image(64, 48, CV_8UC1, 500 + static_cast<std::uint64_t>(k)));
            sink.write(imgs.back());
        }
    }
    {  // all 40 held at once (more than the pool holds): every one intact
        auto src = open_video(path);
        const auto r = read_all(*src);
        REQUIRE(r.frames.size() == 40);
        std::set<const uchar*> buffers;
        for (std::size_t k = 0; k < 40; ++k) {
            REQUIRE(same(r.frames[k].image, imgs[k]));
            buffers.insert(r.frames[k].image.data);
        }
        REQUIRE(buffers.size() == 40);
    }
    {  // streamed, each frame released before the next: the same buffer every time
        auto src = open_video(path);
        std::set<const uchar*> buffers;
        std::vector<cv::Mat> others;
        Frame f;
        int n = 0;
        while (src->next(f) == ReadStatus::ok) {
            REQUIRE(same(f.image, imgs[static_cast<std::size_t>(n)]));
            buffers.insert(f.image.data);
            f.image.release();
            // other allocations of a frame's size in between (a fresh buffer per frame would be
            // handed the memory just released, and the next frame a new address)
            others.emplace_back(48, 64, CV_8UC1);
            ++n;
        }
        REQUIRE(n == 40);
        REQUIRE(buffers.size() <= 2);  // the first frame is read at open, into its own buffer
    }
}

namespace {
// A hand-made AVI (the layouts camera software writes that vibra's writers do not): 8-bit
// frames either 'Y800' (top down, unpadded) or BI_RGB with a palette (rows padded to 4 bytes,
// bottom up); with or without an idx1 index; optionally the second half of the frames in an
// OpenDML 'AVIX' RIFF.
struct AviLayout {
    bool bi_rgb = false;
    bool idx1 = true;
    bool avix = false;
    std::vector<std::uint8_t> palette_grey;  // BI_RGB: the grey level of each palette entry (256)
};
void write_avi(const std::string& path, const std::vector<cv::Mat>& frames, const AviLayout& L) {
    const int w = frames[0].cols, h = frames[0].rows;
    const int stride = L.bi_rgb ? (w + 3) / 4 * 4 : w;
    std::string out;
    auto u32 = [](std::string& b, std::uint32_t v) {
        for (int k = 0; k < 4; ++k) b.push_back(static_cast<char>(v >> (8 * k)));
    };
    auto u16 = [](std::string& b, std::uint16_t v) {
        b.push_back(static_cast<char>(v)), b.push_back(static_cast<char>(v >> 8));
    };
    auto chunk = [&](std::string& b, const char* id, const std::string& data) {
        b += std::string(id, 4);
        u32(b, static_cast<std::uint32_t>(data.size()));
        b += data;
        if (data.size() % 2) b.push_back(0);
    };
    auto list = [&](const char* type, const std::string& body) { return std::string(type, 4) + body; };
    std::string avih;
    for (std::uint32_t v : {20000u, 0u, 0u, 0x10u, static_cast<std::uint32_t>(frames.size()), 0u, 1u, 0u,
                            static_cast<std::uint32_t>(w), static_cast<std::uint32_t>(h), 0u, 0u, 0u, 0u})
        u32(avih, v);
    std::string strh = "vids";
    strh += L.bi_rgb ? std::string(4, '\0') : std::string("Y800");
    for (std::uint32_t v : {0u, 0u, 0u, 1u, 50u, 0u, static_cast<std::uint32_t>(frames.size()), 0u, 0u, 0u})
        u32(strh, v);
    for (int k = 0; k < 4; ++k) u16(strh, 0);
    std::string strf;
    u32(strf, 40), u32(strf, static_cast<std::uint32_t>(w)),
        u32(strf, static_cast<std::uint32_t>(L.bi_rgb ? h : -h));
    u16(strf, 1), u16(strf, 8);
    strf += L.bi_rgb ? std::string(4, '\0') : std::string("Y800");
    u32(strf, static_cast<std::uint32_t>(stride * h)), u32(strf, 0), u32(strf, 0),
        u32(strf, L.bi_rgb ? 256 : 0), u32(strf, 0);
    if (L.bi_rgb)
        for (int k = 0; k < 256; ++k) {
            const char g = static_cast<char>(L.palette_grey[static_cast<std::size_t>(k)]);
            strf += std::string{g, g, g, '\0'};
        }
    std::string strl_body, hdrl_body;
    chunk(strl_body, "strh", strh);
    chunk(strl_body, "strf", strf);
    chunk(hdrl_body, "avih", avih);
    chunk(hdrl_body, "LIST", list("strl", strl_body));
    auto frame_bytes = [&](const cv::Mat& f) {
        std::string b(static_cast<std::size_t>(stride * h), '\0');
        for (int y = 0; y < h; ++y) {
            const int row = L.bi_rgb ? h - 1 - y : y;  // BI_RGB with a positive height: bottom up
            for (int x = 0; x < w; ++x) {
                // the palette index whose grey level is the pixel's
                const std::uint8_t v = f.at<std::uint8_t>(y, x);
                std::uint8_t idx = v;
                if (L.bi_rgb)
                    for (int k = 0; k < 256; ++k)
                        if (L.palette_grey[static_cast<std::size_t>(k)] == v)
                            idx = static_cast<std::uint8_t>(k);
                b[static_cast<std::size_t>(row * stride + x)] = static_cast<char>(idx);
            }
        }
        return b;
    };
    const std::size_t n1 = L.avix ? frames.size() / 2 : frames.size();
    std::string movi_body, idx;
    for (std::size_t k = 0; k < n1; ++k) {
        u32(idx, 0), idx.replace(idx.size() - 4, 4, "00db");
        u32(idx, 0x10), u32(idx, static_cast<std::uint32_t>(4 + movi_body.size())),
            u32(idx, static_cast<std::uint32_t>(stride * h));
        chunk(movi_body, "00db", frame_bytes(frames[k]));
    }
    std::string riff_body = "AVI ";
    chunk(riff_body, "LIST", list("hdrl", hdrl_body));
    chunk(riff_body, "LIST", list("movi", movi_body));
    if (L.idx1) chunk(riff_body, "idx1", idx);
    chunk(out, "RIFF", riff_body);
    if (L.avix) {
        std::string movi2;
        for (std::size_t k = n1; k < frames.size(); ++k) chunk(movi2, "00db", frame_bytes(frames[k]));
        std::string body2 = "AVIX";
        chunk(body2, "LIST", list("movi", movi2));
        chunk(out, "RIFF", body2);
    }
    test::write_text(path, out);
}
}  // namespace

TEST_CASE("uncompressed AVI read directly: Y800 and BI_RGB grey palettes, idx1 or a scan, OpenDML extensions",
          "[unit]") {
    test::TempDir tmp("video_raw_avi");
    std::vector<cv::Mat> imgs;
    for (int k = 0; k < 6; ++k)
        imgs.push_back(random_image(
            37, 21, CV_8UC1, 700 + static_cast<std::uint64_t>(k)));  // rows of 37: padded to 40 in BI_RGB
    std::vector<std::uint8_t> identity(256), reversed(256);
    for (int k = 0; k < 256; ++k)
        identity[static_cast<std::size_t>(k)] = static_cast<std::uint8_t>(k),
        reversed[static_cast<std::size_t>(k)] = static_cast<std::uint8_t>(255 - k);
    struct Case {
        const char* name;
        AviLayout layout;
    };
    const std::vector<Case> cases = {{"y800_idx1", {false, true, false, {}}},
                                     {"y800_scan", {false, false, false, {}}},
                                     {"y800_avix", {false, false, true, {}}},
                                     {"birgb_identity", {true, true, false, identity}},
                                     {"birgb_reversed_palette", {true, true, false, reversed}},
                                     {"birgb_avix", {true, true, true, identity}}};
    for (const auto& c : cases) {
        INFO(c.name);
        const std::string path = tmp.file(std::string(c.name) + ".avi");
        write_avi(path, imgs, c.layout);
        auto src = open_video(path);
        REQUIRE(src->info().format == "avi");
        REQUIRE(src->info().width == 37);
        REQUIRE(src->info().height == 21);
        REQUIRE(src->info().n_frames == 6);
        REQUIRE_THAT(src->info().fps, Catch::Matchers::WithinAbs(50, 1e-9));
        const auto r = read_all(*src);
        REQUIRE(r.last == ReadStatus::end);
        REQUIRE(r.frames.size() == 6);
        for (std::size_t k = 0; k < 6; ++k) REQUIRE(same(r.frames[k].image, imgs[k]));
        ReaderParams p;
        p.first = 2, p.last = 5;
        const auto rp = read_all(*open_video(path, p));
        REQUIRE(rp.frames.size() == 3);
        for (std::size_t k = 0; k < 3; ++k) REQUIRE(same(rp.frames[k].image, imgs[2 + k]));
    }
    // A colour palette or a compressed AVI is left to the OpenCV reader.
    const std::string pal = tmp.file("colour_palette.avi");
    {
        AviLayout L{true, true, false, identity};
        write_avi(pal, imgs, L);
        // make palette entry 7 coloured: B, G, R differ
        std::fstream f(pal, std::ios::in | std::ios::out | std::ios::binary);
        const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        const std::size_t strf = bytes.find("strf");
        REQUIRE(strf != std::string::npos);
        f.seekp(static_cast<std::streamoff>(strf + 8 + 40 + 4 * 7));
        const char bgr[3] = {1, 2, 3};
        f.write(bgr, 3);
    }
    bool opened_by_vibra = true;
    try {
        opened_by_vibra = open_video(pal)->info().format == "avi";
    } catch (const Error&) {
        opened_by_vibra = false;  // OpenCV may not read such a file at all: then it is not ours either
    }
    REQUIRE_FALSE(opened_by_vibra);
    // Broken headers: cut inside the header list, or a frame size no camera writes (over 1 GiB a
    // frame): not vibra's to read; whatever reads them fails with an error naming the file.
    const std::string cut = tmp.file("cut_header.avi");
    write_avi(cut, imgs, AviLayout{});
    fs::resize_file(cut, 40);
    REQUIRE_THROWS_WITH(open_video(cut), Catch::Contains("cut_header.avi"));
    const std::string huge = tmp.file("huge_frame.avi");
    write_avi(huge, imgs, AviLayout{});
    {
        std::fstream f(huge, std::ios::in | std::ios::out | std::ios::binary);
        const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        const std::size_t strf = bytes.find("strf");
        REQUIRE(strf != std::string::npos);
        f.seekp(static_cast<std::streamoff>(strf + 8 + 4));  // biWidth, biHeight
        const std::int32_t wh[2] = {60000, -60000};
        f.write(reinterpret_cast<const char*>(wh), sizeof wh);
    }
    bool huge_by_vibra = true;
    try {
        huge_by_vibra = open_video(huge)->info().format == "avi";
    } catch (const Error& e) {
        huge_by_vibra = false;
        REQUIRE_THAT(e.what(), Catch::Contains("huge_frame.avi"));
    }
    REQUIRE_FALSE(huge_by_vibra);
    const std::string mjpeg = tmp.file("mjpeg.avi");
    {
        FrameSink sink(mjpeg, VideoFormat::avi_mjpeg);
        for (const auto& m : imgs) sink.write(m);
    }
    REQUIRE(open_video(mjpeg)->info().format == "opencv");
}

TEST_CASE("FFV1 AVI round trip is lossless (when OpenCV/FFmpeg has FFV1)", "[unit]") {
    test::TempDir tmp("video_ffv1");
    const std::string path = tmp.file("ffv1.avi");
    std::vector<cv::Mat> imgs;
    try {
        FrameSink sink(path, VideoFormat::avi_ffv1);
        for (int k = 0; k < 4; ++k) {
            imgs.push_back(random_image(64, 40, CV_8UC1, 7 + static_cast<std::uint64_t>(k)));
            sink.write(imgs.back());
        }
    } catch (const IoError& e) {
        WARN("FFV1 not available here, skipped: " << e.what());
        return;
    }
    auto src = open_video(path);
    const auto r = read_all(*src);
    REQUIRE(r.frames.size() == 4);
    for (std::size_t k = 0; k < 4; ++k) REQUIRE(same(r.frames[k].image, imgs[k]));
}

TEST_CASE("bad inputs: clear errors naming the input", "[unit]") {
    test::TempDir tmp("video_bad");
    SECTION("missing file / empty folder / glob without matches") {
        REQUIRE_THROWS_AS(open_video(tmp.file("nope.avi")), IoError);
        fs::create_directories(tmp.file("empty"));
        REQUIRE_THROWS_WITH(open_video(tmp.file("empty")),
                            Catch::Contains("empty") && Catch::Contains("no image files"));
        REQUIRE_THROWS_AS(open_video(tmp.file("empty") + "/*.png"), IoError);
    }
    SECTION("unreadable video") {
        const std::string bad = tmp.file("garbage.avi");
        test::write_text(bad, std::string(5000, 'x'));
        REQUIRE_THROWS_AS(open_video(bad), FormatError);
        REQUIRE_THROWS_WITH(open_video(bad), Catch::Contains("garbage.avi"));
    }
    SECTION("0-frame video") {
        const std::string zero = tmp.file("zero.avi");
        {
            cv::VideoWriter w(zero, cv::CAP_FFMPEG, 0, 25, cv::Size(32, 32), false);
            REQUIRE(w.isOpened());
        }
        REQUIRE(fs::exists(zero));
        REQUIRE_THROWS_AS(open_video(zero), FormatError);
        REQUIRE_THROWS_WITH(open_video(zero), Catch::Contains("zero.avi"));
    }
    SECTION("frame size change mid-sequence") {
        const std::string dir = tmp.file("sizes");
        fs::create_directories(dir);
        cv::imwrite(dir + "/f_0.png", cv::Mat(10, 12, CV_8UC1, cv::Scalar(1)));
        cv::imwrite(dir + "/f_1.png", cv::Mat(10, 12, CV_8UC1, cv::Scalar(2)));
        cv::imwrite(dir + "/f_2.png", cv::Mat(11, 12, CV_8UC1, cv::Scalar(3)));
        auto src = open_video(dir);
        Frame f;
        REQUIRE(src->next(f) == ReadStatus::ok);
        REQUIRE(src->next(f) == ReadStatus::ok);
        REQUIRE_THROWS_AS(src->next(f), FormatError);
        auto src2 = open_video(dir);
        src2->next(f), src2->next(f);
        REQUIRE_THROWS_WITH(src2->next(f), Catch::Contains("f_2.png") && Catch::Contains("frame 2"));
    }
    SECTION("a corrupt image in a sequence is counted and skipped") {
        const std::string dir = tmp.file("corrupt");
        fs::create_directories(dir);
        cv::imwrite(dir + "/f_0.png", cv::Mat(10, 12, CV_8UC1, cv::Scalar(1)));
        test::write_text(dir + "/f_1.png", "this is not a png");
        cv::imwrite(dir + "/f_2.png", cv::Mat(10, 12, CV_8UC1, cv::Scalar(3)));
        auto src = open_video(dir);
        Frame f;
        REQUIRE(src->next(f) == ReadStatus::ok);
        REQUIRE(src->next(f) == ReadStatus::corrupt);
        REQUIRE(f.index == 1);
        REQUIRE(src->next(f) == ReadStatus::ok);
        REQUIRE(f.index == 2);
        REQUIRE(f.image.at<std::uint8_t>(0, 0) == 3);
        REQUIRE(src->next(f) == ReadStatus::end);
    }
    SECTION("a corrupt frame in an AVI is reported, skipped, and the frames after it are read") {
        for (int w : {64, 63}) {  // OpenCV's writer and vibra's own (odd width)
            const std::string path = tmp.file("corrupt" + std::to_string(w) + ".avi");
            {
                FrameSink sink(path, VideoFormat::avi_raw);
                for (int k = 0; k < 6; ++k) sink.write(cv::Mat(32, w, CV_8UC1, cv::Scalar(10 * k)));
            }
            // Break the size field of the third frame chunk.
            std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
            const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
            std::size_t pos = bytes.find("movi");
            REQUIRE(pos != std::string::npos);
            for (int c = 0; c < 3; ++c) pos = bytes.find("00dc", pos + 1);
            REQUIRE(pos != std::string::npos);
            f.seekp(static_cast<std::streamoff>(pos + 4));
            const char bad_size[4] = {100, 0, 0, 0};
            f.write(bad_size, 4);
            f.close();
            auto src = open_video(path);
            const auto r = read_all(*src);
            INFO("width " << w);
            REQUIRE(r.corrupt == 1);
            REQUIRE(r.frames.size() == 5);
            for (const auto& fr : r.frames) {
                REQUIRE(fr.index != 2);
                REQUIRE(fr.image.at<std::uint8_t>(0, 0) == 10 * fr.index);
            }
        }
    }
    SECTION("truncated uncompressed AVI: frames before the cut, then truncated") {
        const std::string path = tmp.file("cut.avi");
        std::vector<cv::Mat> imgs;
        {
            FrameSink sink(path, VideoFormat::avi_raw);
            for (int k = 0; k < 10; ++k) {
                imgs.push_back(random_image(64, 32, CV_8UC1, 300 + static_cast<std::uint64_t>(k)));
                sink.write(imgs.back());
            }
        }
        fs::resize_file(path, fs::file_size(path) / 2);
        std::unique_ptr<FrameSource> src;
        try {
            src = open_video(path);
        } catch (const Error& e) {
            FAIL("a truncated AVI should open: " << e.what());
        }
        const auto r = read_all(*src);
        REQUIRE(r.frames.size() >= 3);
        REQUIRE(r.frames.size() < 10);
        for (std::size_t k = 0; k < r.frames.size(); ++k)
            REQUIRE(same(r.frames[k].image, imgs[static_cast<std::size_t>(r.frames[k].index)]));
        REQUIRE(r.last == ReadStatus::truncated);
    }
}

TEST_CASE("bad inputs through the CLI: exit 1", "[unit]") {
    test::TempDir tmp("video_cli");
    fs::create_directories(tmp.file("empty"));
    auto r = test::run_vibra("info '" + tmp.file("empty") + "'");
    INFO(r.output);
    REQUIRE(r.exit_code == 1);
    REQUIRE(r.output.find("no image files") != std::string::npos);
    test::write_text(tmp.file("garbage.avi"), std::string(5000, 'x'));
    r = test::run_vibra("info '" + tmp.file("garbage.avi") + "'");
    REQUIRE(r.exit_code == 1);
    REQUIRE(r.output.find("garbage.avi") != std::string::npos);
}

TEST_CASE("real data: trackpy bulk_water RGBA PNGs and particletracker discs", "[unit]") {
    const auto shared = test::shared_dir();
    if (shared.empty()) {
        WARN("../shared not present: real-data reader test skipped");
        return;
    }
    const auto water = (shared / "data/real/trackpy_bulk_water").string();
    {
        ReaderParams p;
        p.channel = 1;  // green, as trackpy's walkthrough
        auto src = open_video(water, p);
        REQUIRE(src->info().width == 640);
        REQUIRE(src->info().height == 424);
        REQUIRE(src->info().n_frames == 30);
        REQUIRE(src->info().bit_depth == 8);
        const auto r = read_all(*src);
        REQUIRE(r.frames.size() == 30);
        REQUIRE(r.corrupt == 0);
        // Frame 7 is bulk_water_007.png, its green plane exactly.
        const cv::Mat rgba = cv::imread(water + "/bulk_water_007.png", cv::IMREAD_UNCHANGED);
        REQUIRE(rgba.channels() == 4);
        std::vector<cv::Mat> ch;
        cv::split(rgba, ch);
        REQUIRE(same(r.frames[7].image, ch[1]));
        double lo, hi;
        cv::minMaxLoc(r.frames[0].image, &lo, &hi);
        REQUIRE(lo == 94);  // README: green spans 94–142 in frame 0
        REQUIRE(hi == 142);
    }
    const auto discs = (shared / "data/real/particletracker_discs").string();
    {
        auto src = open_video(discs + "/discs_luma_*.png");
        REQUIRE(src->info().n_frames == 9);
        REQUIRE(src->info().width == 1280);
        REQUIRE(src->info().height == 960);
        const auto r = read_all(*src);
        REQUIRE(r.frames.size() == 9);
        REQUIRE(same(r.frames[8].image, cv::imread(discs + "/discs_luma_008.png", cv::IMREAD_UNCHANGED)));
    }
    {
        auto src = open_video(discs + "/discs.mp4");
        REQUIRE(src->info().width == 1280);
        REQUIRE(src->info().height == 960);
        REQUIRE(src->info().n_frames == 60);
        ReaderParams p;
        p.last = 3;
        auto part = open_video(discs + "/discs.mp4", p);
        const auto r = read_all(*part);
        REQUIRE(r.frames.size() == 3);
        // Decoded luma close to the reference PNG (decoders differ slightly; range expansion may apply).
        const cv::Mat ref = cv::imread(discs + "/discs_luma_000.png", cv::IMREAD_UNCHANGED);
        cv::Mat a, b;
        r.frames[0].image.convertTo(a, CV_64F);
        ref.convertTo(b, CV_64F);
        const double corr = [&] {
            cv::Scalar ma, sa, mb, sb;
            cv::meanStdDev(a, ma, sa);
            cv::meanStdDev(b, mb, sb);
            return cv::mean((a - ma[0]).mul(b - mb[0]))[0] / (sa[0] * sb[0]);
        }();
        REQUIRE(corr > 0.98);
    }
}
