// Philox4x32-R against Random123's known-answer vectors (tests/kat_vectors,
// the "philox4x32 7" and "philox4x32 10" lines: counter[4] key[2] -> out[4]),
// plus the documented uint32 -> [0,1) conversion and counter independence.
#include <catch2/catch.hpp>

#include <cstdio>
#include <set>

#include "numerics/philox.h"

using namespace oracle::rng;

namespace {

struct Kat {
  int rounds;
  uint32_t ctr[4];
  uint32_t key[2];
  uint32_t out[4];
};

// Copied from Random123 tests/kat_vectors.
const Kat kKats[] = {
    {10, {0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {10,
     {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {10,
     {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    {7, {0, 0, 0, 0}, {0, 0}, {0x5f6fb709, 0x0d893f64, 0x4f121f81, 0x4f730a48}},
    {7,
     {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x5207ddc2, 0x45165e59, 0x4d8ee751, 0x8c52f662}},
    {7,
     {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0x4dfccaba, 0x190a87f0, 0xc47362ba, 0xb6b5242a}},
};

}  // namespace

TEST_CASE("philox4x32 matches the Random123 known-answer vectors", "[philox]") {
  for (const Kat& kat : kKats) {
    Philox4x32 c{{kat.ctr[0], kat.ctr[1], kat.ctr[2], kat.ctr[3]}};
    PhiloxKey k{{kat.key[0], kat.key[1]}};
    Philox4x32 got = kat.rounds == 10 ? philox4x32_10(c, k) : philox4x32_rounds(c, k, kat.rounds);
    for (int i = 0; i < 4; i++) {
      INFO("rounds " << kat.rounds << " ctr0 " << std::hex << kat.ctr[0] << " word " << i << " got 0x"
                     << got.v[i] << " want 0x" << kat.out[i]);
      CHECK(got.v[i] == kat.out[i]);
    }
  }
}

TEST_CASE("seed maps to the key as (lo, hi)", "[philox]") {
  PhiloxKey k = key_from_seed(0x299f31d0a4093822ull);
  CHECK(k.k[0] == 0xa4093822u);
  CHECK(k.k[1] == 0x299f31d0u);
  // philox_uniform is word 0 of the pi-digits KAT, converted.
  float u = philox_uniform(0x299f31d0a4093822ull, 0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u);
  CHECK(u == (float)(0xd16cfe09u >> 8) / 16777216.0f);
}

TEST_CASE("uint32 -> unit float is (x >> 8) * 2^-24 in [0, 1)", "[philox]") {
  CHECK(uint32_to_unit_float(0u) == 0.0f);
  CHECK(uint32_to_unit_float(0xffu) == 0.0f);
  CHECK(uint32_to_unit_float(0x100u) == 0x1p-24f);
  CHECK(uint32_to_unit_float(0x80000000u) == 0.5f);
  CHECK(uint32_to_unit_float(0xffffffffu) == 1.0f - 0x1p-24f);
  CHECK(uint32_to_unit_float(0xffffffffu) < 1.0f);
  // exact: every value is a multiple of 2^-24 equal to the integer top bits
  for (uint32_t x : {0x12345678u, 0xdeadbeefu, 0x00ffff00u})
    CHECK((double)uint32_to_unit_float(x) == (double)(x >> 8) / 16777216.0);
}

TEST_CASE("every counter word and the seed change the draw", "[philox]") {
  const float base = philox_uniform(42, 3, 17, 0, kPurposeSample);
  CHECK(philox_uniform(42, 3, 17, 0, kPurposeSample) == base);  // pure function
  CHECK(philox_uniform(43, 3, 17, 0, kPurposeSample) != base);
  CHECK(philox_uniform(42ull | (1ull << 32), 3, 17, 0, kPurposeSample) != base);
  CHECK(philox_uniform(42, 4, 17, 0, kPurposeSample) != base);
  CHECK(philox_uniform(42, 3, 18, 0, kPurposeSample) != base);
  CHECK(philox_uniform(42, 3, 17, 1, kPurposeSample) != base);
  CHECK(philox_uniform(42, 3, 17, 0, kPurposeSpecAccept) != base);
  RngKey key{42, 3, 17};
  CHECK(uniform_at(key, 0, kPurposeSample) == base);
}

TEST_CASE("uniforms over positions look uniform (mean, deciles, no repeats)", "[philox]") {
  const int n = 100000;
  double sum = 0.0;
  int decile[10] = {};
  std::set<float> seen;
  for (int i = 0; i < n; i++) {
    float u = philox_uniform(1234, 0, (uint32_t)i, 0, kPurposeSample);
    REQUIRE(u >= 0.0f);
    REQUIRE(u < 1.0f);
    sum += u;
    decile[(int)(u * 10.0f)]++;
    if (i < 2000) seen.insert(u);
  }
  CHECK(sum / n == Approx(0.5).margin(0.005));
  for (int d = 0; d < 10; d++) CHECK(decile[d] == Approx(n / 10).margin(500));
  CHECK(seen.size() >= 1999);  // 24-bit values: a collision among 2000 is rare (p ~ 0.12); two are not
}
