// SPDX-License-Identifier: GPL-3.0-or-later
// The trajectory chunks' zlib streams encoded plane by plane (store/src/detail/plane_deflate.hpp):
// every stream inflates (libdeflate's strict decoder here; zlib through HDF5 in
// test_trajectory_file) to the exact bytes, leading noise planes are stored, compressible ones
// are not, and the size stays within 2% of deflating the chunk whole.
#include <catch2/catch.hpp>

#include <libdeflate.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "../../store/src/detail/packed_columns.hpp"  // shuffle_bytes
#include "../../store/src/detail/plane_deflate.hpp"

using namespace vibra::store::detail;

namespace {

struct Deflater {
    libdeflate_compressor* z = libdeflate_alloc_compressor(1);
    libdeflate_decompressor* d = libdeflate_alloc_decompressor();
    ~Deflater() {
        libdeflate_free_compressor(z);
        libdeflate_free_decompressor(d);
    }
    // (plane-wise size, whole size); requires the plane-wise stream to inflate to `raw`
    std::pair<std::size_t, std::size_t> sizes(const std::vector<std::uint8_t>& raw, std::size_t planes) {
        std::vector<std::uint8_t> out(zlib_planes_bound(z, raw.size())), back(raw.size() + 1);
        const std::size_t n = zlib_compress_planes(z, raw.data(), raw.size(), planes, out.data(), out.size());
        REQUIRE(n > 0);
        std::size_t got = 0;
        REQUIRE(libdeflate_zlib_decompress(d, out.data(), n, back.data(), back.size(), &got) ==
                LIBDEFLATE_SUCCESS);
        REQUIRE(got == raw.size());
        REQUIRE(std::memcmp(back.data(), raw.data(), raw.size()) == 0);
        std::vector<std::uint8_t> whole(libdeflate_zlib_compress_bound(z, raw.size()));
        return {n, libdeflate_zlib_compress(z, raw.data(), raw.size(), whole.data(), whole.size())};
    }
};

template <class T>
std::vector<std::uint8_t> shuffled(const std::vector<T>& v) {
    std::vector<std::uint8_t> out(v.size() * sizeof(T));
    shuffle_bytes(reinterpret_cast<const std::uint8_t*>(v.data()), out.data(), v.size(), sizeof(T));
    return out;
}

}  // namespace

TEST_CASE("coordinates: noise planes stored, the exponent planes deflated", "[store][deflate]") {
    Deflater D;
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<double> pos(0, 1024);
    std::vector<double> x(32768);
    for (auto& v : x) v = pos(rng);
    const auto raw = shuffled(x);
    const auto [n, whole] = D.sizes(raw, 8);
    // six planes of mantissa noise (6 × 32768 bytes) stored, with a block header per 65,535 bytes
    CHECK(n >= 6 * 32768);
    CHECK(n <= whole * 102 / 100);
    std::vector<std::uint8_t> out(zlib_planes_bound(D.z, raw.size()));
    REQUIRE(zlib_compress_planes(D.z, raw.data(), raw.size(), 8, out.data(), out.size()) == n);
    CHECK(out[2] == 0);  // the first block is a stored one (BFINAL 0, BTYPE 00) …
    CHECK(std::memcmp(out.data() + 7, raw.data(), 65535) ==
          0);  // … holding the first plane's bytes as they are
}

TEST_CASE("runs: a frame column and a constant confidence are deflated whole", "[store][deflate]") {
    Deflater D;
    std::vector<std::int64_t> frame(32768);
    for (std::size_t i = 0; i < frame.size(); ++i) frame[i] = 1000 + static_cast<std::int64_t>(i / 3943);
    const auto [n, whole] = D.sizes(shuffled(frame), 8);
    CHECK(n == whole);
    CHECK(n < 1000);  // 262,144 bytes
    std::vector<float> conf(65536, 1.0f);
    conf[100] = 0.75f, conf[40000] = 0.5f;
    const auto [nc, wc] = D.sizes(shuffled(conf), 4);
    CHECK(nc == wc);
    CHECK(nc < 1000);
}

TEST_CASE("particle ids: a low byte that repeats frame after frame is deflated, not stored",
          "[store][deflate]") {
    Deflater D;
    std::mt19937_64 rng(5);
    std::vector<std::int64_t> ids;
    while (ids.size() < 32768)
        for (std::int64_t id = 0; id < 3943 && ids.size() < 32768; ++id)
            if (rng() % 100 != 0) ids.push_back(id);  // 1% missing per frame
    const auto [n, whole] = D.sizes(shuffled(ids), 8);
    CHECK(n <= whole * 102 / 100 + 64);
    CHECK(n < 32768);  // far below one stored plane
}

TEST_CASE("mixed and edge inputs inflate to the same bytes", "[store][deflate]") {
    Deflater D;
    std::mt19937_64 rng(11);
    // noise, then runs, then noise again, then an ordinary plane: every kind of boundary
    std::vector<std::uint8_t> raw(4 * 70000);
    for (std::size_t i = 0; i < 70000; ++i) {
        raw[i] = static_cast<std::uint8_t>(rng());
        raw[70000 + i] = static_cast<std::uint8_t>(i / 5000);
        raw[140000 + i] = static_cast<std::uint8_t>(rng());
        raw[210000 + i] = static_cast<std::uint8_t>((i % 7) * (rng() % 3));
    }
    const auto [n, whole] = D.sizes(raw, 4);
    CHECK(n <= whole * 102 / 100 + 64);
    // a stored stretch longer than one block (65,535 bytes), then runs to the end
    std::vector<std::uint8_t> r2(2 * 100000, 7);
    for (std::size_t i = 0; i < 100000; ++i) r2[i] = static_cast<std::uint8_t>(rng());
    const auto [n2, w2] = D.sizes(r2, 2);
    CHECK(n2 >= 100000);
    CHECK(n2 <= w2 * 102 / 100 + 64);
    // every plane noise: stored throughout, the last block final
    std::vector<std::uint8_t> r3(4 * 20000);
    for (auto& b : r3) b = static_cast<std::uint8_t>(rng());
    const auto [n3, w3] = D.sizes(r3, 4);
    CHECK(n3 == 2 + r3.size() + 5 * 2 + 4);  // header, 2 stored blocks (65,535 + 14,465 bytes), Adler-32
    CHECK(n3 <= w3 * 102 / 100 + 64);
    // too small to sort out, and one plane: deflated whole (the same stream as libdeflate's)
    std::vector<std::uint8_t> small(8 * 10, 1);
    CHECK(D.sizes(small, 8).first == D.sizes(small, 8).second);
    CHECK(D.sizes(raw, 1).first == D.sizes(raw, 1).second);
}

TEST_CASE("too small an output buffer gives 0, not an overrun", "[store][deflate]") {
    Deflater D;
    std::mt19937_64 rng(13);
    std::vector<std::uint8_t> raw(8 * 4096);
    for (auto& b : raw) b = static_cast<std::uint8_t>(rng());
    std::vector<std::uint8_t> out(raw.size() / 2 + 16, 0xAB);
    CHECK(zlib_compress_planes(D.z, raw.data(), raw.size(), 8, out.data(), raw.size() / 2) == 0);
    for (std::size_t i = raw.size() / 2; i < out.size(); ++i) CHECK(out[i] == 0xAB);
}
