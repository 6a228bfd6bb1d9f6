// SPDX-License-Identifier: GPL-3.0-or-later
#include <catch2/catch.hpp>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "vibra/core/checksum.hpp"

TEST_CASE("SHA-256 matches the FIPS 180-4 test vectors", "[unit]") {
    REQUIRE(vibra::sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    REQUIRE(vibra::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    REQUIRE(vibra::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    REQUIRE(vibra::sha256_hex(std::string(1000000, 'a')) ==
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("file checksums: in the background equal to in the foreground, a stopped hash ends early",
          "[unit]") {
    namespace fs = std::filesystem;
    const auto path = fs::temp_directory_path() / ("vibra_test_checksum_" + std::to_string(::getpid()));
    {
        std::ofstream out(path, std::ios::binary);
        std::string block(1 << 20, '\0');
        for (std::size_t i = 0; i < block.size(); ++i) block[i] = static_cast<char>(i * 7 + i / 251);
        for (int k = 0; k < 8; ++k) out << block;  // 8 MiB: 128 reads of 64 KiB
    }
    std::ifstream in(path, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string expected = "sha256:" + vibra::sha256_hex(bytes);
    REQUIRE(vibra::file_checksum(path.string()) == expected);
    {
        vibra::BackgroundChecksum bg(path.string());
        REQUIRE(bg.get() == expected);
        REQUIRE(bg.get() == expected);  // a second get() returns the same value
    }
    std::atomic<bool> stop{true};
    REQUIRE(vibra::file_checksum(path.string(), &stop).empty());
    { vibra::BackgroundChecksum dropped(path.string()); }  // destroyed unasked: stops and joins
    {
        vibra::BackgroundChecksum missing((path.string() + ".absent"));
        REQUIRE_THROWS_WITH(missing.get(), Catch::Contains(".absent") && Catch::Contains("cannot open"));
    }
    fs::remove(path);
}
