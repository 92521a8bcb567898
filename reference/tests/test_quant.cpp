// Dequantizers: every ggml block type against hand-built blocks whose expected
// values are worked out by hand from the format definition (ggml-common.h),
// plus seeded random blocks whose output digest was computed independently
// with the python `gguf` package (gguf.quants.dequantize, numpy float32) by
// reference/tests/quant_digests.py.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "numerics/numerics.h"
#include "reference/model/quant.h"
#include "base/sha256.h"

using namespace oracle;

namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

template <class Block>
std::vector<float> dequant(DType t, const Block& b) {
  std::vector<float> out(static_cast<size_t>(dtype_block_elems(t)));
  dequantize_row(t, reinterpret_cast<const uint8_t*>(&b), static_cast<int64_t>(out.size()), out.data());
  return out;
}

// Compares selected elements bit for bit; prints both bit patterns on mismatch.
void expect_values(const std::vector<float>& got, const std::vector<std::pair<int, float>>& want) {
  for (const auto& [index, value] : want) {
    INFO("element " << index << ": got " << got[index] << " (0x" << std::hex << bits(got[index])
                    << ") want " << std::dec << value << " (0x" << std::hex << bits(value) << ")");
    CHECK(bits(got[index]) == bits(value));
  }
}

constexpr uint16_t kHalf0_25 = 0x3400, kHalf0_5 = 0x3800, kHalf1 = 0x3C00, kHalf2 = 0x4000;
constexpr uint16_t kHalfMinus1 = 0xBC00;

}  // namespace

// ---- type table ---------------------------------------------------------------------------
TEST_CASE("quant: block sizes and row bytes", "[quant]") {
  CHECK(dtype_row_bytes(DType::F32, 7) == 28);
  CHECK(dtype_row_bytes(DType::F16, 7) == 14);
  CHECK(dtype_row_bytes(DType::BF16, 7) == 14);
  CHECK(dtype_row_bytes(DType::Q4_0, 64) == 36);
  CHECK(dtype_row_bytes(DType::Q4_0, 33) == -1);
  CHECK(dtype_row_bytes(DType::Q8_0, 64) == 68);
  CHECK(dtype_row_bytes(DType::Q8_1, 32) == 36);
  CHECK(dtype_row_bytes(DType::Q4_K, 512) == 288);
  CHECK(dtype_row_bytes(DType::Q6_K, 256) == 210);
  CHECK(dtype_row_bytes(DType::Q8_K, 256) == 292);
  CHECK(dtype_row_bytes(DType::Q2_K, 128) == -1);
  CHECK(dtype_row_bytes(DType::I8_ROW, 5) == 9);
  CHECK_FALSE(dtype_supported(16));  // IQ2_XXS
  CHECK_FALSE(dtype_supported(4));   // removed Q4_2
  CHECK(dtype_supported(30));        // BF16
  CHECK(std::string(dtype_name(DType::Q5_K)) == "Q5_K");
}

// ---- plain types ----------------------------------------------------------------------------
TEST_CASE("quant: F16, BF16, F32 rows", "[quant]") {
  const uint16_t h[4] = {0x3C00, 0x0001, 0xFC00, 0xC500};  // 1, 2^-24, -inf, -5
  float out[4];
  dequantize_row(DType::F16, reinterpret_cast<const uint8_t*>(h), 4, out);
  expect_values({out, out + 4}, {{0, 1.0f}, {1, 5.9604644775390625e-8f}, {2, -INFINITY}, {3, -5.0f}});
  const uint16_t b[2] = {0x3F80, 0xC0A0};  // 1, -5
  dequantize_row(DType::BF16, reinterpret_cast<const uint8_t*>(b), 2, out);
  expect_values({out, out + 2}, {{0, 1.0f}, {1, -5.0f}});
  const float f[2] = {0.1f, -3.0f};
  dequantize_row(DType::F32, reinterpret_cast<const uint8_t*>(f), 2, out);
  expect_values({out, out + 2}, {{0, 0.1f}, {1, -3.0f}});
}

TEST_CASE("quant: I8_ROW is one float32 scale then int8", "[quant]") {
  uint8_t row[4 + 3];
  const float s = 0.5f;
  std::memcpy(row, &s, 4);
  row[4] = 0x80;  // -128
  row[5] = 1;
  row[6] = 127;
  float out[3];
  dequantize_row(DType::I8_ROW, row, 3, out);
  expect_values({out, out + 3}, {{0, -64.0f}, {1, 0.5f}, {2, 63.5f}});
}

// ---- 32-element blocks ------------------------------------------------------------------------
TEST_CASE("quant: Q4_0 hand-built block", "[quant]") {
  BlockQ4_0 b{};
  b.d = kHalf0_5;
  b.qs[3] = 0xF3;  // element 3: nibble 3, element 19: nibble 15
  expect_values(dequant(DType::Q4_0, b), {{3, -2.5f}, {19, 3.5f}, {0, -4.0f}, {31, -4.0f}});
}

TEST_CASE("quant: Q4_1 hand-built block", "[quant]") {
  BlockQ4_1 b{};
  b.d = kHalf0_5;
  b.m = kHalfMinus1;
  b.qs[3] = 0xF3;
  expect_values(dequant(DType::Q4_1, b), {{3, 0.5f}, {19, 6.5f}, {0, -1.0f}});
}

TEST_CASE("quant: Q5_0 hand-built block (5th bit from qh)", "[quant]") {
  BlockQ5_0 b{};
  b.d = kHalf1;
  b.qs[0] = 0x21;               // element 0 low bits 1, element 16 low bits 2
  const uint32_t qh = (1u << 0) | (1u << 16);  // 5th bits of elements 0 and 16
  std::memcpy(b.qh, &qh, 4);
  expect_values(dequant(DType::Q5_0, b), {{0, 1.0f}, {16, 2.0f}, {1, -16.0f}, {17, -16.0f}});
}

TEST_CASE("quant: Q5_1 hand-built block", "[quant]") {
  BlockQ5_1 b{};
  b.d = kHalf2;
  b.m = kHalf0_5;
  b.qs[0] = 0x21;
  const uint32_t qh = (1u << 0) | (1u << 16);
  std::memcpy(b.qh, &qh, 4);
  expect_values(dequant(DType::Q5_1, b), {{0, 34.5f}, {16, 36.5f}, {1, 0.5f}});
}

TEST_CASE("quant: Q8_0 and Q8_1 hand-built blocks", "[quant]") {
  BlockQ8_0 b{};
  b.d = kHalf0_25;
  b.qs[5] = -128;
  b.qs[6] = 127;
  expect_values(dequant(DType::Q8_0, b), {{5, -32.0f}, {6, 31.75f}, {0, 0.0f}});
  BlockQ8_1 c{};
  c.d = kHalf0_25;
  c.s = 0x7C00;  // the stored sum does not enter the values
  c.qs[5] = -128;
  expect_values(dequant(DType::Q8_1, c), {{5, -32.0f}, {6, 0.0f}});
}

// ---- k-quants -----------------------------------------------------------------------------------
TEST_CASE("quant: Q2_K hand-built block", "[quant]") {
  BlockQ2_K b{};
  b.d = kHalf1;
  b.dmin = kHalf0_5;
  b.scales[0] = 0x23;  // elements 0..15: scale 3, min 2
  b.scales[1] = 0x10;  // elements 16..31: scale 0, min 1
  b.scales[2] = 0x05;  // elements 32..47 (bits 2-3 of qs[0..15]): scale 5, min 0
  b.scales[8] = 0x11;  // elements 128..143 (bits 0-1 of qs[32..47]): scale 1, min 1
  b.qs[0] = 0x07;      // element 0: 3, element 32: 1
  b.qs[16] = 0x02;     // element 16: 2
  b.qs[32] = 0x03;     // element 128: 3
  expect_values(dequant(DType::Q2_K, b), {{0, 8.0f}, {16, -0.5f}, {32, 5.0f}, {128, 2.5f}, {1, -1.0f}});
}

TEST_CASE("quant: Q3_K hand-built block (6-bit scales, inverted high bit)", "[quant]") {
  BlockQ3_K b{};
  b.d = kHalf0_5;
  b.scales[0] = 0x0A;  // sub-block 0 low bits 10; sub-block 8 low bits 0
  b.scales[8] = 0x02;  // sub-block 0 high bits 2 -> 42 - 32 = 10; sub-blocks 2, 8 -> -32
  b.qs[0] = 0x02;      // element 0: 2, element 32 (bits 2-3): 0
  b.qs[1] = 0x01;      // element 1: 1
  b.qs[32] = 0x03;     // element 128: 3
  b.hmask[0] = 0x11;   // element 0 (bit 0) and element 128 (bit 4) have the high bit: no -4
  expect_values(dequant(DType::Q3_K, b), {{0, 10.0f}, {1, -15.0f}, {32, 64.0f}, {128, -48.0f}});
}

TEST_CASE("quant: Q4_K hand-built block (get_scale_min_k4 packing)", "[quant]") {
  BlockQ4_K b{};
  b.d = kHalf1;
  b.dmin = kHalf0_5;
  b.scales[0] = 5;     // sub-block 0 scale 5
  b.scales[4] = 2;     // sub-block 0 min 2
  b.scales[1] = 0x41;  // sub-block 1 scale 1; top bits 01 -> sub-block 5 scale bit 4
  b.scales[9] = 0x32;  // sub-block 5: scale 2 | 16 = 18, min 3
  b.qs[0] = 0x37;      // element 0: 7, element 32: 3
  b.qs[64] = 0x20;     // element 160 (sub-block 5, high nibble): 2
  expect_values(dequant(DType::Q4_K, b), {{0, 34.0f}, {32, 3.0f}, {160, 34.5f}, {1, -1.0f}});
}

TEST_CASE("quant: Q5_K hand-built block", "[quant]") {
  BlockQ5_K b{};
  b.d = kHalf1;
  b.scales[0] = 1;
  b.scales[1] = 1;
  b.scales[2] = 2;  // sub-block 2 (elements 64..95)
  b.qs[0] = 0x21;
  b.qh[0] = 0x07;   // bit 0: element 0, bit 1: element 32, bit 2: element 64
  expect_values(dequant(DType::Q5_K, b), {{0, 17.0f}, {32, 18.0f}, {64, 32.0f}, {1, 0.0f}});
}

TEST_CASE("quant: Q6_K hand-built block", "[quant]") {
  BlockQ6_K b{};
  b.d = kHalf0_5;
  b.scales[0] = 2;
  b.scales[2] = -1;
  b.scales[4] = 3;
  b.ql[0] = 0x4A;  // element 0 low 4 bits 10, element 64 low 4 bits 4
  b.qh[0] = 0x06;  // element 0 high 2 bits 2, element 32 high bits 1, element 64 high bits 0
  expect_values(dequant(DType::Q6_K, b), {{0, 10.0f}, {32, 8.0f}, {64, -42.0f}, {1, -32.0f}});
}

TEST_CASE("quant: Q8_K hand-built block (float32 scale)", "[quant]") {
  BlockQ8_K b{};
  b.d = 0.125f;
  b.qs[7] = -3;
  b.bsums[0] = 999;  // not part of the values
  expect_values(dequant(DType::Q8_K, b), {{7, -0.375f}, {0, 0.0f}});
}

// ---- random blocks vs the python gguf package -----------------------------------------------------
namespace {

uint64_t splitmix64(uint64_t& state) {
  state += 0x9E3779B97F4A7C15ull;
  uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Flips an fp16 (bf16) field away from Inf/NaN, the same rule as the python script.
void fix_half(uint8_t* p, bool bf16) {
  uint16_t h = static_cast<uint16_t>(p[0] | (p[1] << 8));
  if (bf16 ? ((h >> 7) & 0xff) == 0xff : ((h >> 10) & 0x1f) == 0x1f) h ^= 0x4000;
  p[0] = static_cast<uint8_t>(h & 0xff);
  p[1] = static_cast<uint8_t>(h >> 8);
}

struct DigestCase {
  DType type;
  std::vector<int> half_fields;  // byte offsets of fp16 scales in a block; empty: all (F16/BF16)
  const char* sha256;            // from gguf.quants.dequantize (python gguf 0.19.0)
};

std::string random_digest(const DigestCase& c) {
  const int64_t block_bytes = dtype_block_bytes(c.type), elems = dtype_block_elems(c.type);
  const int64_t nb = elems > 1 ? 8 : 256;
  std::vector<uint8_t> bytes(static_cast<size_t>(nb * block_bytes));
  uint64_t state = 0x1234567 + static_cast<uint64_t>(c.type);
  for (uint8_t& byte : bytes) byte = static_cast<uint8_t>(splitmix64(state) & 0xff);
  if (c.half_fields.empty())
    for (size_t off = 0; off < bytes.size(); off += 2) fix_half(&bytes[off], c.type == DType::BF16);
  else
    for (int64_t b = 0; b < nb; b++)
      for (int off : c.half_fields) fix_half(&bytes[b * block_bytes + off], false);
  std::vector<float> out(static_cast<size_t>(nb * elems));
  dequantize_row(c.type, bytes.data(), static_cast<int64_t>(out.size()), out.data());
  return sha256_hex(out.data(), out.size() * sizeof(float));
}

}  // namespace

TEST_CASE("quant: seeded random blocks match the python gguf dequantizers", "[quant]") {
  const DigestCase cases[] = {
      {DType::F16, {}, "454561611f92e87e189a7d1cb946a584efb53baae8982e612245d9a0ae096cce"},
      {DType::BF16, {}, "bd143f3eb5d6dd7a7468e9f2f045d577d11bf7818d6926e39d4eca1e78d3cece"},
      {DType::Q4_0, {0}, "7b3dac1217f93d46c95dadf6c785820583c253a742568808a331bab4af3085a1"},
      {DType::Q4_1, {0, 2}, "8f5eeb7c113c4a3f080e63b05fe0b71331e29bb87cde02766ac1c4cb4a2ab1eb"},
      {DType::Q5_0, {0}, "25abd7444b354c7b3b984add1684993cc429976740d1f11aa1fd5f581624c2a1"},
      {DType::Q5_1, {0, 2}, "8d14e2601a28589565ac477b1cd36cf91cf7c8d4a2260804f5f7466579e915f4"},
      {DType::Q8_0, {0}, "a6d075614b82996e8e48fdb20cf638c49f59a429a37b2e2ba7b92ba923960a9e"},
      {DType::Q2_K, {80, 82}, "d164ac17d8b0739882f8690a51b53b3af8c40131f4dedc2efeef3178cee9adef"},
      {DType::Q3_K, {108}, "fb35ac3732a9f66a8cb41f742673f19c4db32810e033c4049d9127601184be97"},
      {DType::Q4_K, {0, 2}, "7b38561002501abfc02646181999dd720eca5a887aa251b31009d174319e947e"},
      {DType::Q5_K, {0, 2}, "88bf35e6eaf34680056f98ca16a6d7e415671fb23ce94475c58beb7df35a1fde"},
      {DType::Q6_K, {208}, "18e72f26c6e498cbc5ebfe0f87800b70b1a2679557f256e31641425c882f053d"},
  };
  for (const DigestCase& c : cases) {
    INFO(dtype_name(c.type));
    CHECK(random_digest(c) == c.sha256);
  }
}
