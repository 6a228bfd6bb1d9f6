// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: a folder of image files → vibra's image-sequence reader
// (tracking/src/io/image_sequence.cpp + video.cpp: listing, natural sort, the first decodable frame
// fixing size and depth, frame-size changes mid-sequence, colour → grey, undecodable files as
// corrupt frames). The images are decoded by OpenCV's codecs (system libraries, not instrumented):
// what is fuzzed is vibra's layer around them. Input: records [kind][len lo][len hi][bytes…],
// each one file named so that natural sort matters (img2 < img10 < img010), its extension chosen
// by `kind` (png tif jpg bmp pgm ppm).
#include <cstdint>
#include <string>

#include "detail/readers.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace vibra;
    static const char* const ext[] = {".png", ".tif", ".jpg", ".bmp", ".pgm", ".ppm"};
    static const char* const stem[] = {"img2", "img10", "img010", "img1", "IMG_0003", "img"};
    const std::string dir = fuzz::scratch();
    std::size_t pos = 0;
    int files = 0;
    while (pos + 3 <= size && files < 6) {
        const std::uint8_t kind = data[pos];
        const std::size_t len = std::min<std::size_t>(data[pos + 1] | data[pos + 2] << 8, size - pos - 3);
        fuzz::write_file(dir + "/" + stem[files] + ext[kind % 6], data + pos + 3, len);
        pos += 3 + len;
        ++files;
    }
    fuzz::accepts([&] {
        tracking::ReaderParams p;
        p.channel = size > 0 ? static_cast<int>(data[0] >> 6) - 1 : -1;  // -1 (luma), 0, 1, 2
        auto src = tracking::detail::open_image_sequence(dir, p);
        const auto& info = src->info();
        fuzz::require(info.width > 0 && info.height > 0, "accepted a sequence without a size");
        tracking::Frame f;
        for (int k = 0; k < 8; ++k) {
            const auto st = src->next(f);
            if (st == tracking::ReadStatus::end) break;
            if (st != tracking::ReadStatus::ok) continue;
            fuzz::require(
                f.image.cols == info.width && f.image.rows == info.height && f.image.channels() == 1,
                "a frame differs from the announced size or is not grey");
        }
    });
    return 0;
}
