// SHA-256 against the FIPS 180-2 / NIST example vectors, streaming in odd
// chunk sizes, and the fixture hashes recorded in models/PROVENANCE.md.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/sha256.h"
#include "test_support.h"

using namespace oracle;

TEST_CASE("sha256: FIPS 180-2 example vectors", "[sha256]") {
  CHECK(sha256_hex("", 0) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc", 3) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  CHECK(sha256_hex(two_blocks.data(), two_blocks.size()) ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  const std::string million(1000000, 'a');
  CHECK(sha256_hex(million.data(), million.size()) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("sha256: padding boundaries 55, 56, 63, 64 bytes", "[sha256]") {
  // Expected digests of repeated 'a' computed with coreutils sha256sum.
  const std::string a55(55, 'a'), a56(56, 'a'), a64(64, 'a');
  CHECK(sha256_hex(a55.data(), a55.size()) == "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  CHECK(sha256_hex(a56.data(), a56.size()) == "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  CHECK(sha256_hex(a64.data(), a64.size()) == "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

TEST_CASE("sha256: streaming in any chunk size equals one-shot", "[sha256]") {
  std::string data;
  for (int k = 0; k < 1000; k++) data += static_cast<char>((k * 131 + 7) & 0xff);
  const std::string whole = sha256_hex(data.data(), data.size());
  for (size_t chunk : {1, 3, 63, 64, 65, 127, 999}) {
    Sha256 h;
    for (size_t pos = 0; pos < data.size(); pos += chunk)
      h.update(data.data() + pos, std::min(chunk, data.size() - pos));
    INFO("chunk " << chunk);
    CHECK(h.hex() == whole);
  }
}

TEST_CASE("sha256: fixture files match PROVENANCE.md", "[sha256][fixtures]") {
  const std::string bin = test::models("stories260K/stories260K.bin");
  if (!test::have(bin)) FAIL("missing fixture " << bin);
  CHECK(sha256_file(bin) == "b0a507e7ad0f626624f17112325e66691f9076d622e1d3274d103d00299f2696");
  CHECK(sha256_file(test::models("stories260K/tok512.bin")) ==
        "037cb335abb25d1fa9e8ecae30ed2a3a8ace9302862ebcdc05d51a6bbb10c312");
  CHECK(sha256_file(test::models("llama2xs/llama2xs.bin")) ==
        "b1e0376c2456e18f294ffe062a2b44e5cb2e207c8aa53538209d2689122ea641");
}

// The CPU's SHA extensions against the portable FIPS loop: the same state after
// any number of random blocks from any starting state (the FIPS vectors above
// go through whichever Sha256 chose). Skipped where the CPU has none.
TEST_CASE("sha256: SHA extensions equal the portable rounds", "[sha256]") {
  if (!sha256_detail::sha_ext_available()) {
    SUCCEED("no SHA extensions on this CPU: Sha256 uses the portable rounds");
    return;
  }
  std::mt19937 rng(20261204);
  for (int trial = 0; trial < 200; trial++) {
    const size_t n_blocks = 1 + rng() % 9;
    std::vector<uint8_t> data(64 * n_blocks);
    for (auto& byte : data) byte = uint8_t(rng());
    if (trial % 4 == 0) std::memset(data.data(), trial % 8 == 0 ? 0x00 : 0xFF, data.size());
    uint32_t a[8], b[8];
    for (int k = 0; k < 8; k++) a[k] = b[k] = uint32_t(rng());
    sha256_detail::compress_portable(a, data.data(), n_blocks);
    REQUIRE(sha256_detail::compress_sha_ext(b, data.data(), n_blocks));
    INFO("trial " << trial << ", " << n_blocks << " blocks");
    CHECK(std::memcmp(a, b, sizeof a) == 0);
  }
}
