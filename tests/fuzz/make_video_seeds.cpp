// SPDX-License-Identifier: GPL-3.0-or-later
// make_video_seeds OUTDIR: writes the seed corpora of the video-reader fuzz targets,
//   OUTDIR/fuzz_raw_avi/*.avi: hand-made uncompressed 8-bit AVIs (the layouts of
//     tests/tracking/test_video.cpp: 'Y800' top down, BI_RGB grey palette bottom up with padded
//     rows, with and without idx1, OpenDML 'AVIX' continuation), a truncated one and one whose
//     header promises more frames than it holds;
//   OUTDIR/fuzz_image_sequence/*: records [kind][len lo][len hi][bytes] of tiny images encoded by
//     OpenCV (png 8/16-bit, tif, bmp, pgm, ppm colour, jpg), one record per file, and sequences
//     whose frame size or depth changes, or that hold undecodable files.
// Deterministic.
#include <opencv2/imgcodecs.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

struct AviLayout {
    bool bi_rgb = false, idx1 = true, avix = false;
    std::uint32_t promised = 0;  // frames announced in the headers (0: the frames written)
};

std::string avi(int w, int h, int n, const AviLayout& L) {
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
    const std::uint32_t promised = L.promised ? L.promised : static_cast<std::uint32_t>(n);
    std::string avih;
    for (std::uint32_t v :
         {20000u, 0u, 0u, 0x10u, promised, 0u, 1u, 0u, std::uint32_t(w), std::uint32_t(h), 0u, 0u, 0u, 0u})
        u32(avih, v);
    std::string strh = "vids";
    strh += L.bi_rgb ? std::string(4, '\0') : std::string("Y800");
    for (std::uint32_t v : {0u, 0u, 0u, 1u, 50u, 0u, promised, 0u, 0u, 0u}) u32(strh, v);
    for (int k = 0; k < 4; ++k) u16(strh, 0);
    std::string strf;
    u32(strf, 40), u32(strf, std::uint32_t(w)), u32(strf, static_cast<std::uint32_t>(L.bi_rgb ? h : -h));
    u16(strf, 1), u16(strf, 8);
    strf += L.bi_rgb ? std::string(4, '\0') : std::string("Y800");
    u32(strf, std::uint32_t(stride * h)), u32(strf, 0), u32(strf, 0), u32(strf, L.bi_rgb ? 256 : 0),
        u32(strf, 0);
    if (L.bi_rgb)
        for (int k = 0; k < 256; ++k) {
            const char g = static_cast<char>(255 - k);  // an inverted grey palette
            strf += std::string{g, g, g, '\0'};
        }
    std::string strl, hdrl;
    chunk(strl, "strh", strh);
    chunk(strl, "strf", strf);
    chunk(hdrl, "avih", avih);
    chunk(hdrl, "LIST", "strl" + strl);
    auto frame = [&](int k) {
        std::string b(static_cast<std::size_t>(stride * h), '\0');
        for (std::size_t i = 0; i < b.size(); ++i)
            b[i] = static_cast<char>(i * 7 + static_cast<std::size_t>(k) * 13);
        return b;
    };
    const int n1 = L.avix ? n / 2 : n;
    std::string movi, idx;
    for (int k = 0; k < n1; ++k) {
        idx += "00db";
        u32(idx, 0x10), u32(idx, static_cast<std::uint32_t>(4 + movi.size())),
            u32(idx, std::uint32_t(stride * h));
        chunk(movi, "00db", frame(k));
    }
    std::string riff = "AVI ";
    chunk(riff, "LIST", "hdrl" + hdrl);
    chunk(riff, "LIST", "movi" + movi);
    if (L.idx1) chunk(riff, "idx1", idx);
    chunk(out, "RIFF", riff);
    if (L.avix) {
        std::string movi2;
        for (int k = n1; k < n; ++k) chunk(movi2, "00db", frame(k));
        std::string body2 = "AVIX";
        chunk(body2, "LIST", "movi" + movi2);
        chunk(out, "RIFF", body2);
    }
    return out;
}

void put(const std::string& path, const std::string& b) {
    std::ofstream os(path, std::ios::binary | std::ios::trunc);
    os.write(b.data(), static_cast<std::streamsize>(b.size()));
}

// One record of the image-sequence input: kind (extension: png tif jpg bmp pgm ppm), length, bytes.
std::string record(int kind, const std::vector<std::uint8_t>& bytes) {
    std::string r;
    r.push_back(static_cast<char>(kind));
    r.push_back(static_cast<char>(bytes.size() & 0xff));
    r.push_back(static_cast<char>((bytes.size() >> 8) & 0xff));
    r.append(bytes.begin(), bytes.end());
    return r;
}
std::vector<std::uint8_t> encode(const char* ext, const cv::Mat& m) {
    std::vector<std::uint8_t> b;
    cv::imencode(ext, m, b);
    return b;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: make_video_seeds OUTDIR\n");
        return 2;
    }
    namespace fs = std::filesystem;
    const std::string a = std::string(argv[1]) + "/fuzz_raw_avi",
                      s = std::string(argv[1]) + "/fuzz_image_sequence";
    fs::create_directories(a);
    fs::create_directories(s);
    put(a + "/y800_idx1.avi", avi(5, 3, 3, {}));
    put(a + "/y800_scan.avi", avi(4, 2, 2, {false, false, false, 0}));
    put(a + "/bi_rgb_pal.avi", avi(3, 3, 2, {true, true, false, 0}));
    put(a + "/avix.avi", avi(4, 2, 4, {false, false, true, 0}));
    put(a + "/promises_more.avi", avi(4, 2, 2, {false, true, false, 9}));
    const std::string full = avi(6, 4, 3, {});
    put(a + "/truncated.avi", full.substr(0, full.size() - 10));

    cv::Mat g8(3, 4, CV_8UC1), g16(3, 4, CV_16UC1), c8(3, 4, CV_8UC3), big(5, 4, CV_8UC1);
    for (int y = 0; y < 3; ++y)
        for (int x = 0; x < 4; ++x) {
            g8.at<std::uint8_t>(y, x) = static_cast<std::uint8_t>(20 * x + 50 * y);
            g16.at<std::uint16_t>(y, x) = static_cast<std::uint16_t>(4000 * x + 300 * y);
            c8.at<cv::Vec3b>(y, x) =
                cv::Vec3b(static_cast<std::uint8_t>(10 * x), static_cast<std::uint8_t>(60 * y), 200);
        }
    big.setTo(7);
    put(s + "/png_pair", record(0, encode(".png", g8)) + record(0, encode(".png", g8)));
    put(s + "/png16", record(0, encode(".png", g16)) + record(1, encode(".tif", g16)));
    put(s + "/tif_bmp_pgm",
        record(1, encode(".tif", g8)) + record(3, encode(".bmp", g8)) + record(4, encode(".pgm", g8)));
    put(s + "/colour",
        std::string(1, '\x83') + record(5, encode(".ppm", c8)).substr(1) + record(0, encode(".png", c8)));
    put(s + "/jpg", record(2, encode(".jpg", g8)));
    put(s + "/size_change", record(0, encode(".png", g8)) + record(0, encode(".png", big)));
    put(s + "/depth_change", record(0, encode(".png", g8)) + record(0, encode(".png", g16)));
    put(s + "/undecodable", record(0, {'n', 'o', 't', ' ', 'p', 'n', 'g'}) + record(4, encode(".pgm", g8)) +
                                record(3, {'B', 'M', 0, 0}));
    return 0;
}
