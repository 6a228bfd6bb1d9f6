// SPDX-License-Identifier: GPL-3.0-or-later
// Uncompressed 8-bit grey AVI (what high-speed cameras export, and `vibra synth --format avi`
// writes), read without a codec library: the RIFF headers give the frame size, the index gives
// each frame's chunk, and each frame is read with one pread straight into a pooled buffer. Through
// OpenCV/FFmpeg the same frame is read into a packet buffer and copied once more (≈ 1 ms of the
// reader thread per megapixel frame on the machines measured, docs/performance.md).
//
// Accepted: one RIFF 'AVI ' (+ OpenDML 'AVIX' extensions), a video stream whose BITMAPINFOHEADER
// is 8 bits per pixel with compression 'Y800' / 'GREY' / 'Y8  ' (rows top down, unpadded) or
// BI_RGB with a grey palette (rows padded to 4 bytes, bottom up when the height is positive).
// Anything else (compressed, colour, several video streams) is left to the OpenCV reader.
// Frames come from the 'idx1' index when there is one (a frame whose chunk header disagrees
// with it is reported corrupt, and the frames after it are still read), otherwise from a scan
// of the 'movi' lists; a chunk that runs past the end of the file ends the video as truncated.
#include <opencv2/core.hpp>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "detail/camera_reader.hpp"
#include "detail/frame_pool.hpp"
#include "detail/readers.hpp"

namespace vibra::tracking::detail {

namespace {

using FourCC = std::array<char, 4>;

FourCC fourcc_at(const std::uint8_t* p) { return {char(p[0]), char(p[1]), char(p[2]), char(p[3])}; }
bool is(const FourCC& f, const char* s) { return std::memcmp(f.data(), s, 4) == 0; }
std::uint32_t u32(const std::uint8_t* p) {
    return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 |
           std::uint32_t(p[3]) << 24;
}
std::int32_t i32(const std::uint8_t* p) { return static_cast<std::int32_t>(u32(p)); }
std::uint16_t u16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] | p[1] << 8); }

// A frame's chunk: offset of its data and its size (bytes), as the index says.
struct ChunkRef {
    std::uint64_t data;
    std::uint32_t size;
};

// A video chunk id: '##db' or '##dc' of the video stream (00 for the first stream).
bool is_video_chunk(const FourCC& id, const FourCC& want_db, const FourCC& want_dc) {
    return id == want_db || id == want_dc;
}

class RawAviSource final : public CameraSource {
public:
    RawAviSource(const std::string& path, const ReaderParams& p, bool& accepted) : CameraSource(path) {
        accepted = parse();
        if (!accepted) return;
        info_.path = path;
        info_.format = "avi";
        info_.bit_depth = 8;
        info_.extra["decode"] = "raw 8-bit (vibra's AVI reader)";
        if (frames_.empty()) throw FormatError(path + ": the video has 0 frames");
        info_.n_frames = promised_ > 0
                             ? std::max<std::int64_t>(promised_, static_cast<std::int64_t>(frames_.size()))
                             : static_cast<std::int64_t>(frames_.size());
        if (p.first >= info_.n_frames)
            throw FormatError(path + ": frame range starts at " + std::to_string(p.first) +
                              " but the video has " + std::to_string(info_.n_frames) + " frames");
        set_range(p, info_.n_frames);
    }

protected:
    ReadStatus decode(std::int64_t i, Frame& frame) override {
        if (i >= static_cast<std::int64_t>(frames_.size()))
            return fail(ReadStatus::truncated, path_ + ": the file ends at frame " +
                                                   std::to_string(frames_.size()) + " of " +
                                                   std::to_string(info_.n_frames) + " (truncated)");
        const ChunkRef c = frames_[static_cast<std::size_t>(i)];
        const std::string where = path_ + ", frame " + std::to_string(i);
        if (!fits(c.data, c.size, file_.size()))
            return fail(ReadStatus::truncated, where + ": the file ends inside the frame (truncated)");
        // The chunk header must agree with the index (a damaged header means a damaged frame).
        std::uint8_t hdr[8];
        if (c.data < 8 || !file_.read_at(c.data - 8, hdr, 8))
            return fail(ReadStatus::corrupt, where + ": cannot read the chunk header");
        if (!is_video_chunk(fourcc_at(hdr), db_, dc_) || u32(hdr + 4) != c.size || c.size != frame_bytes_)
            return fail(ReadStatus::corrupt, where + ": chunk of " + std::to_string(u32(hdr + 4)) +
                                                 " bytes, a frame has " + std::to_string(frame_bytes_));
        cv::Mat img = pool_.take(h_, w_, CV_8UC1);
        if (stride_ == w_ && !bottom_up_) {
            if (!file_.read_at(c.data, img.data, frame_bytes_))
                return fail(ReadStatus::truncated, where + ": read failed (truncated?)");
        } else {
            scratch_.resize(frame_bytes_);
            if (!file_.read_at(c.data, scratch_.data(), frame_bytes_))
                return fail(ReadStatus::truncated, where + ": read failed (truncated?)");
            for (int y = 0; y < h_; ++y) {
                const int src_row = bottom_up_ ? h_ - 1 - y : y;
                const std::uint8_t* s =
                    scratch_.data() + static_cast<std::size_t>(src_row) * static_cast<std::size_t>(stride_);
                std::uint8_t* d = img.ptr<std::uint8_t>(y);
                if (palette_identity_)
                    std::memcpy(d, s, static_cast<std::size_t>(w_));
                else
                    for (int x = 0; x < w_; ++x) d[x] = palette_[s[x]];
            }
        }
        frame.image = img;
        frame.time_s = -1;
        return ReadStatus::ok;
    }

private:
    // Reads the headers and the frame list; false when the file is not an AVI this reader takes.
    bool parse() {
        const std::uint64_t size = file_.size();
        std::uint8_t h12[12];
        if (size < 12 || !file_.read_at(0, h12, 12) || !is(fourcc_at(h12), "RIFF") ||
            !is(fourcc_at(h12 + 8), "AVI "))
            return false;
        std::vector<std::pair<std::uint64_t, std::uint64_t>>
            movis;                // [begin, end) of each 'movi' list's chunks
        std::uint64_t movi0 = 0;  // offset of the first 'movi' fourcc (idx1 base)
        std::vector<std::uint8_t> idx1;
        bool have_header = false;
        // Top level: RIFF 'AVI ' then optional RIFF 'AVIX' (OpenDML).
        for (std::uint64_t pos = 0; pos + 12 <= size;) {
            std::uint8_t rh[12];
            if (!file_.read_at(pos, rh, 12) || !is(fourcc_at(rh), "RIFF")) break;
            const std::uint64_t riff_end = std::min<std::uint64_t>(size, pos + 8 + u32(rh + 4));
            const bool first = pos == 0;
            if (!first && !is(fourcc_at(rh + 8), "AVIX")) break;
            for (std::uint64_t q = pos + 12; q + 8 <= riff_end;) {
                std::uint8_t ch[12];
                const std::uint64_t n = std::min<std::uint64_t>(12, riff_end - q);
                if (!file_.read_at(q, ch, n)) break;
                const FourCC id = fourcc_at(ch);
                const std::uint64_t csize = u32(ch + 4), next = q + 8 + csize + (csize & 1);
                if (is(id, "LIST") && n == 12) {
                    const FourCC type = fourcc_at(ch + 8);
                    if (first && is(type, "hdrl")) {
                        if (csize < 4 || !fits(q + 12, csize - 4, size)) return false;
                        if (!parse_hdrl(file_.read_vec(q + 12, csize - 4))) return false;
                        have_header = true;
                    } else if (is(type, "movi")) {
                        if (movis.empty()) movi0 = q + 8;
                        movis.emplace_back(q + 12, std::min<std::uint64_t>(next, riff_end));
                    }
                } else if (first && is(id, "idx1") && fits(q + 8, csize, size)) {
                    idx1 = file_.read_vec(q + 8, csize);
                }
                if (next <= q) break;
                q = next;
            }
            if (riff_end <= pos + 12) break;
            pos = riff_end + (riff_end & 1);
        }
        if (!have_header) return false;
        if (!idx1.empty() && movis.size() == 1) frames_from_idx1(idx1, movi0);
        if (frames_.empty())
            for (const auto& [b, e] : movis) scan_movi(b, e);
        return true;
    }

    bool parse_hdrl(const std::vector<std::uint8_t>& b) {
        bool video = false;
        int video_streams = 0, stream = 0;
        for (std::size_t q = 0; q + 8 <= b.size();) {
            const FourCC id = fourcc_at(&b[q]);
            const std::size_t csize = u32(&b[q + 4]), data = q + 8, next = data + csize + (csize & 1);
            if (data + csize > b.size()) break;
            if (is(id, "avih") && csize >= 40) {
                if (u32(&b[data]) > 0) fps_from_avih_ = 1e6 / u32(&b[data]);
                promised_ = u32(&b[data + 16]);
            } else if (is(id, "LIST") && csize >= 4 && is(fourcc_at(&b[data]), "strl")) {
                // strh, strf of this stream
                bool vids = false;
                for (std::size_t s = data + 4; s + 8 <= data + csize;) {
                    const FourCC sid = fourcc_at(&b[s]);
                    const std::size_t ssize = u32(&b[s + 4]), sdata = s + 8;
                    if (sdata + ssize > data + csize) break;
                    if (is(sid, "strh") && ssize >= 36) {
                        vids = is(fourcc_at(&b[sdata]), "vids");
                        if (vids) {
                            const std::uint32_t scale = u32(&b[sdata + 20]), rate = u32(&b[sdata + 24]);
                            if (scale > 0 && rate > 0) fps_ = double(rate) / double(scale);
                            promised_ = std::max<std::int64_t>(promised_, u32(&b[sdata + 32]));
                        }
                    } else if (is(sid, "strf") && vids && ssize >= 40) {
                        ++video_streams;
                        if (video_streams == 1) {
                            const char d0 = char('0' + stream / 10), d1 = char('0' + stream % 10);
                            db_ = {d0, d1, 'd', 'b'}, dc_ = {d0, d1, 'd', 'c'};
                            video = parse_bitmapinfo(&b[sdata], ssize);
                        }
                    }  // 'indx' (OpenDML super index: the movi scan finds the same frames), 'strn', 'strd': not needed
                    s = sdata + ssize + (ssize & 1);
                }
                ++stream;
            } else if (is(id, "LIST") && csize >= 4 && is(fourcc_at(&b[data]), "odml")) {
                for (std::size_t s = data + 4; s + 12 <= data + csize;) {
                    const std::size_t ssize = u32(&b[s + 4]);
                    if (is(fourcc_at(&b[s]), "dmlh") && ssize >= 4)
                        promised_ = std::max<std::int64_t>(promised_, u32(&b[s + 8]));
                    s += 8 + ssize + (ssize & 1);
                }
            }
            if (next <= q) break;
            q = next;
        }
        if (fps_ <= 0) fps_ = fps_from_avih_;
        info_.fps = fps_;
        return video && video_streams == 1;
    }

    bool parse_bitmapinfo(const std::uint8_t* p, std::size_t n) {
        const std::int32_t w = i32(p + 4), h = i32(p + 8);
        const std::uint16_t bits = u16(p + 14);
        const FourCC comp = fourcc_at(p + 16);
        if (bits != 8 || w <= 0 || h == 0 || w > (1 << 16) || std::abs(h) > (1 << 16)) return false;
        w_ = w, h_ = std::abs(h);
        if (is(comp, "Y800") || is(comp, "GREY") || is(comp, "Y8  ")) {
            stride_ = w_, bottom_up_ = false;
            info_.extra["fourcc"] = std::string(comp.data(), 4);
        } else if (u32(p + 16) == 0) {  // BI_RGB, 8 bit: palette indices, rows padded to 4 bytes
            const std::uint32_t biSize = u32(p), used = u32(p + 32);
            const std::size_t n_pal = used ? used : 256;
            if (biSize < 40 || biSize + 4 * n_pal > n || n_pal > 256) return false;
            for (std::size_t k = 0; k < 256; ++k) palette_[k] = 0;
            palette_identity_ = n_pal == 256;
            for (std::size_t k = 0; k < n_pal; ++k) {
                const std::uint8_t* e = p + biSize + 4 * k;      // B, G, R, reserved
                if (e[0] != e[1] || e[1] != e[2]) return false;  // a colour palette: not grey
                palette_[k] = e[0];
                palette_identity_ = palette_identity_ && e[0] == k;
            }
            stride_ = (w_ + 3) / 4 * 4, bottom_up_ = h > 0;
            info_.extra["fourcc"] = "BI_RGB 8-bit grey palette";
        } else {
            return false;
        }
        const std::uint64_t bytes = static_cast<std::uint64_t>(stride_) * static_cast<std::uint64_t>(h_);
        if (bytes > (std::uint64_t{1} << 30))
            return false;  // a frame over 1 GiB: not a camera frame; OpenCV decides
        frame_bytes_ = static_cast<std::uint32_t>(bytes);
        info_.width = w_, info_.height = h_;
        return true;
    }

    // idx1: 16 bytes per entry (id, flags, offset, size); offsets from the 'movi' fourcc (or,
    // in some files, from the start of the file).
    void frames_from_idx1(const std::vector<std::uint8_t>& b, std::uint64_t movi0) {
        std::vector<std::pair<std::uint32_t, std::uint32_t>> e;
        for (std::size_t q = 0; q + 16 <= b.size(); q += 16)
            if (is_video_chunk(fourcc_at(&b[q]), db_, dc_)) e.emplace_back(u32(&b[q + 8]), u32(&b[q + 12]));
        if (e.empty()) return;
        // Relative when the first entry, taken relative to 'movi', lands on a chunk header.
        std::uint64_t base = movi0;
        std::uint8_t h[4];
        if (!(file_.read_at(movi0 + e[0].first, h, 4) && is_video_chunk(fourcc_at(h), db_, dc_))) base = 0;
        for (const auto& [off, sz] : e) frames_.push_back({base + off + 8, sz});
    }

    // Chunks of a 'movi' list in order (LIST 'rec ' entered, index and padding chunks skipped).
    void scan_movi(std::uint64_t b, std::uint64_t e) {
        for (std::uint64_t q = b; q + 8 <= e;) {
            std::uint8_t ch[12];
            if (!file_.read_at(q, ch, 8)) break;
            const FourCC id = fourcc_at(ch);
            const std::uint64_t csize = u32(ch + 4);
            if (is(id, "LIST")) {
                q += 12;  // into 'rec ' lists
                continue;
            }
            if (is_video_chunk(id, db_, dc_)) frames_.push_back({q + 8, static_cast<std::uint32_t>(csize)});
            q += 8 + csize + (csize & 1);
        }
    }

    int w_ = 0, h_ = 0, stride_ = 0;
    bool bottom_up_ = false, palette_identity_ = true;
    std::uint8_t palette_[256] = {};
    std::uint32_t frame_bytes_ = 0;
    double fps_ = 0, fps_from_avih_ = 0;
    std::int64_t promised_ = 0;
    FourCC db_{'0', '0', 'd', 'b'}, dc_{'0', '0', 'd', 'c'};
    std::vector<ChunkRef> frames_;
    std::vector<std::uint8_t> scratch_;
    FramePool pool_;
};

}  // namespace

std::unique_ptr<FrameSource> open_raw_avi(const std::string& input, const ReaderParams& p) {
    validate_reader_params(p);
    bool accepted = false;
    auto src = std::make_unique<RawAviSource>(input, p, accepted);
    if (!accepted) return nullptr;
    return src;
}

}  // namespace vibra::tracking::detail
