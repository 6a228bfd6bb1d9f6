// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: the bytes of a .avi → vibra's own AVI reader (tracking/src/io/raw_avi.cpp: RIFF
// and OpenDML AVIX lists, hdrl/avih/strl/strh/strf, BITMAPINFOHEADER and grey palette, idx1 index
// or movi scan), then every frame through FrameSource::next (chunk headers checked against the
// index, Y800 and padded bottom-up BI_RGB rows, palette mapping). Files it declines (nullptr)
// go to OpenCV in vibra, which is not fuzzed here. Every frame handed out must have the size
// the header announced.
#include <cstdint>

#include "detail/readers.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace vibra;
    const std::string dir = fuzz::scratch();
    const std::string in = dir + "/in.avi";
    fuzz::write_file(in, data, size);
    fuzz::accepts([&] {
        tracking::ReaderParams p;
        auto src = tracking::detail::open_raw_avi(in, p);
        if (!src) return;
        const auto& info = src->info();
        fuzz::require(info.width > 0 && info.height > 0 && info.n_frames > 0,
                      "accepted a video without frames or size");
        tracking::Frame f;
        for (int k = 0; k < 256; ++k) {
            const auto st = src->next(f);
            if (st == tracking::ReadStatus::end || st == tracking::ReadStatus::truncated) break;
            if (st != tracking::ReadStatus::ok) continue;
            fuzz::require(
                f.image.cols == info.width && f.image.rows == info.height && f.image.type() == CV_8UC1,
                "a frame differs from the announced size or type");
        }
    });
    return 0;
}
