// quantize.h: our Q8_0/Q4_0 blocks are byte-identical to llama.cpp's own
// llama-quantize output for llama2xs; quantize -> dequantize stays within each
// format's error bound (RapidCheck); edge cases of the scalar helpers.
#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "reference/base/errors.h"
#include "reference/model/gguf.h"
#include "numerics/numerics.h"
#include "reference/model/quant.h"
#include "audit/quantize_gguf.h"
#include "reference/model/quantize_rows.h"
#include "test_support.h"

using namespace oracle;

namespace {

// ---- byte comparison against a llama.cpp-quantized file ------------------------------
// Quantizes every F32 tensor of the reference file that the quantized file stores
// as `type`, and compares the blocks byte for byte. Returns the number of
// tensors compared; prints the first mismatching blocks with both byte patterns.
int compare_with_llamacpp(const std::string& f32_path, const std::string& q_path, DType type) {
  REQUIRE(oracle::test::have(f32_path));
  REQUIRE(oracle::test::have(q_path));
  GgufFile ref(f32_path), q(q_path);
  int compared = 0, reported = 0;
  for (const GgufTensorInfo& t : q.tensors()) {
    if (t.ggml_type != static_cast<uint32_t>(type)) continue;
    const GgufTensorInfo* src = ref.find_tensor(t.name);
    REQUIRE(src != nullptr);
    REQUIRE(src->ggml_type == 0u);  // F32
    int64_t row = t.dims[0], rows = t.n_elements() / row;
    int64_t row_bytes = dtype_row_bytes(type, row);
    REQUIRE((uint64_t)(row_bytes * rows) == t.n_bytes);
    std::vector<uint8_t> ours(t.n_bytes);
    const float* x = reinterpret_cast<const float*>(src->data);
    for (int64_t r = 0; r < rows; r++) quantize_row(type, x + r * row, row, ours.data() + r * row_bytes);
    int64_t block = dtype_block_bytes(type);
    for (uint64_t b = 0; b < t.n_bytes / block && reported < 5; b++)
      if (std::memcmp(ours.data() + b * block, t.data + b * block, block) != 0) {
        std::string ob, lb;
        char hex[4];
        for (int64_t k = 0; k < block; k++) {
          std::snprintf(hex, sizeof hex, "%02x", ours[b * block + k]);
          ob += hex;
          std::snprintf(hex, sizeof hex, "%02x", t.data[b * block + k]);
          lb += hex;
        }
        UNSCOPED_INFO(t.name << " block " << b << "\n  ours     " << ob << "\n  llama.cpp " << lb);
        reported++;
      }
    CHECK(std::memcmp(ours.data(), t.data, t.n_bytes) == 0);
    compared++;
  }
  return compared;
}

// ---- error bounds ------------------------------------------------------------------------
// fp16 rounding of a scale d: |fp16(d) - d| <= max(|d| 2^-11, 2^-25) (half an
// ulp: relative 2^-11 in the normal range, absolute 2^-25 below 2^-14).
double fp16_err(double d) { return std::max(std::fabs(d) * 0x1p-11, 0x1p-25); }

// Q8_0, block of 32, A = max|x|: d = A/127, q = round(x/d), |q| <= 127, x^ = q fp16(d).
// |x - x^| <= |x - q d| + |q| |d - fp16(d)| <= d/2 (1 + 1e-4) + 127 fp16_err(d)
// (the 1e-4 covers the float32 roundings of d, 1/d and x * (1/d)).
double bound_q8_0(const float* x) {
  double a = 0;
  for (int j = 0; j < 32; j++) a = std::max(a, (double)std::fabs(x[j]));
  double d = a / 127.0;
  return 0.5 * d * (1 + 1e-4) + 127 * fp16_err(d) + 1e-30;
}

// Q4_0, block of 32, M = the value of largest magnitude: d = M / -8, v = x/d in
// [-8, 8]; stored q = min(15, floor(v + 8.5)) - 8, i.e. round(v) except that
// v >= 7.5 clamps to 7: |v - q| <= 1. So |x - x^| <= |d| (1 + 1e-4) + 8 fp16_err(d).
double bound_q4_0(const float* x) {
  double a = 0;
  for (int j = 0; j < 32; j++) a = std::max(a, (double)std::fabs(x[j]));
  double d = a / 8.0;
  return d * (1 + 1e-4) + 8 * fp16_err(d) + 1e-30;
}

// Q4_K, super-block of 256 = 8 sub-blocks of 32. Sub-block j dequantizes to
// d_j * L - m_j (L = 0..15, d_j = fp16(D) * sc_j, m_j = fp16(Dmin) * mn_j,
// sc_j, mn_j 6-bit). Every element is re-quantized to the nearest grid point
// (clamped), so |x - x^| <= d_j / 2 inside the grid's span. The span is chosen
// by a least-squares search that may clip the extremes, and the 6-bit scales
// are relative to the largest sub-block scale, so the error is bounded by the
// super-block's range R = max - min(min, 0), not by one sub-block's: the fitted
// step is at most R/14 (the search widens the grid to at most 15 - 1 = 14
// steps), half a step plus at most one step of clipping gives 1.5 R/14, and
// the 6-bit rounding of scale and min moves the grid by at most
// 15 * (max_scale / 126) + max_min / 126 <= 16 R/(14*126) more. Total < 0.12 R.
// Plus the fp16 rounding of D and Dmin where it is absolute (subnormal half):
// 15 * 63 * 2^-25 + 63 * 2^-25 = 1008 * 2^-25.
double bound_q4_K(const float* x) {
  double lo = 0, hi = x[0];
  for (int j = 0; j < 256; j++) {
    lo = std::min(lo, (double)x[j]);
    hi = std::max(hi, (double)x[j]);
  }
  return 0.12 * (hi - lo) + 1008 * 0x1p-25;
}

// I8_ROW, any length, A = max|x|: s = A/127 (float32, kept exactly), q = round(x/s):
// |x - s q| <= s/2 (1 + 1e-4).
double bound_i8_row(const float* x, int n) {
  double a = 0;
  for (int j = 0; j < n; j++) a = std::max(a, (double)std::fabs(x[j]));
  return 0.5 * (a / 127.0) * (1 + 1e-4) + 1e-30;
}

// Random row: magnitudes spread over many binades (and exact zeros), seeded by rapidcheck.
std::vector<float> gen_row(int n) {
  auto exps = *rc::gen::container<std::vector<int>>(n, rc::gen::inRange(-20, 8));
  auto mant = *rc::gen::container<std::vector<int>>(n, rc::gen::inRange(-1000000, 1000001));
  std::vector<float> x(n);
  for (int i = 0; i < n; i++) x[i] = std::ldexp((float)mant[i] / 1e6f, exps[i]);
  return x;
}

template <class Bound>
void check_roundtrip(DType type, const std::vector<float>& x, int block, Bound bound) {
  int n = (int)x.size();
  std::vector<uint8_t> q(dtype_row_bytes(type, n));
  quantize_row(type, x.data(), n, q.data());
  std::vector<float> y(n);
  dequantize_row(type, q.data(), n, y.data());
  for (int b = 0; b < n; b += block) {
    double lim = bound(x.data() + b);
    for (int j = b; j < b + block; j++) {
      double err = std::fabs((double)x[j] - (double)y[j]);
      if (!(err <= lim))
        RC_FAIL(std::string(dtype_name(type)) + " element " + std::to_string(j) + ": x=" +
                std::to_string(x[j]) + " x^=" + std::to_string(y[j]) + " err=" +
                std::to_string(err) + " > bound " + std::to_string(lim));
    }
  }
}

}  // namespace

// ---- bit-identical blocks vs llama.cpp -----------------------------------------------------
TEST_CASE("Q8_0 blocks are byte-identical to llama-quantize's llama2xs-q8_0.gguf") {
  int n = compare_with_llamacpp(oracle::test::models("gguf/llama2xs.gguf"),
                                oracle::test::models("gguf/llama2xs-q8_0.gguf"), DType::Q8_0);
  CHECK(n == 37);  // 5 layers x 7 matrices + token_embd + output
}

TEST_CASE("Q4_0 blocks are byte-identical to llama-quantize's llama2xs-q4_0.gguf") {
  int n = compare_with_llamacpp(oracle::test::models("gguf/llama2xs.gguf"),
                                oracle::test::models("gguf/llama2xs-q4_0.gguf"), DType::Q4_0);
  CHECK(n == 37);
}

TEST_CASE("quantize_gguf Q8_0 of llama2xs.gguf holds llama.cpp's blocks; I8_ROW of stories260K loads") {
  auto dir = std::filesystem::temp_directory_path() / "oracle_test_quantize";
  std::filesystem::create_directories(dir);
  std::string q8 = (dir / "llama2xs-q8_0.gguf").string();
  QuantizeReport rep = quantize_gguf(oracle::test::models("gguf/llama2xs.gguf"), q8, DType::Q8_0);
  CHECK(rep.quantized == 37);
  CHECK(rep.kept == 11);
  GgufFile ours(q8), theirs(oracle::test::models("gguf/llama2xs-q8_0.gguf"));
  REQUIRE(ours.tensors().size() == theirs.tensors().size());
  for (const GgufTensorInfo& t : theirs.tensors()) {
    const GgufTensorInfo* o = ours.find_tensor(t.name);
    REQUIRE(o != nullptr);
    CHECK(o->ggml_type == t.ggml_type);
    REQUIRE(o->n_bytes == t.n_bytes);
    CHECK(std::memcmp(o->data, t.data, t.n_bytes) == 0);
  }
  CHECK(ours.get_int("general.file_type") == theirs.get_int("general.file_type"));
  std::string i8 = (dir / "stories260K-i8.gguf").string();
  CHECK_THROWS_AS(quantize_gguf(oracle::test::models("gguf/stories260K.gguf"), i8, DType::Q8_0), InputError);
  quantize_gguf(oracle::test::models("gguf/stories260K.gguf"), i8, DType::I8_ROW);
  Model m = load_model(i8);
  CHECK(m.config.hidden_dim == 172);
  const TensorInfo* down = nullptr;
  for (const TensorInfo& t : m.tensors)
    if (t.name == "blk.0.ffn_down.weight") down = &t;
  REQUIRE(down != nullptr);
  CHECK(down->type == DType::I8_ROW);
}

// ---- hand-built blocks ------------------------------------------------------------------------
TEST_CASE("Q8_0 of a hand-built block: d = 127/127, q = round half away") {
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;
  x[1] = -2.5f;  // roundf(-2.5) = -3 (away from zero), not -2 (even)
  x[2] = 0.5f;
  std::vector<uint8_t> q(34);
  quantize_row_q8_0(x.data(), 32, q.data());
  uint16_t d;
  std::memcpy(&d, q.data(), 2);
  CHECK(d == 0x3c00);  // 1.0 in fp16
  CHECK((int8_t)q[2] == 127);
  CHECK((int8_t)q[3] == -3);
  CHECK((int8_t)q[4] == 1);
}

TEST_CASE("Q4_0 of a hand-built block: d = max / -8, the extreme maps to level 0") {
  std::vector<float> x(32, 0.0f);
  x[0] = -16.0f;  // largest magnitude: d = 2, id = 0.5
  x[16] = 16.0f;  // v = 8 -> floor(16.5) = 16 -> clamped to 15 (value 7 d = 14)
  x[1] = 3.0f;    // v = 1.5 -> floor(10) = 10 (value 2 d = 4)
  std::vector<uint8_t> q(18);
  quantize_row_q4_0(x.data(), 32, q.data());
  uint16_t d;
  std::memcpy(&d, q.data(), 2);
  CHECK(d == 0x4000);  // 2.0
  CHECK((q[2] & 0xF) == 0);
  CHECK((q[2] >> 4) == 15);
  CHECK((q[3] & 0xF) == 10);
  CHECK((q[4] & 0xF) == 8);  // zero
}

TEST_CASE("round_half_away matches C roundf on halves and large values") {
  CHECK(round_half_away(0.5f) == 1.0f);
  CHECK(round_half_away(-0.5f) == -1.0f);
  CHECK(round_half_away(2.5f) == 3.0f);
  CHECK(round_half_away(0.49999997f) == 0.0f);
  CHECK(round_half_away(8388609.0f) == 8388609.0f);
  for (float v = -20.0f; v <= 20.0f; v += 0.125f) CHECK(round_half_away(v) == std::roundf(v));
}

TEST_CASE("quantize_row rejects lengths that are not whole blocks, naming the field") {
  std::vector<float> x(172, 1.0f);
  std::vector<uint8_t> q(4096);
  try {
    quantize_row(DType::Q8_0, x.data(), 172, q.data());
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(e.field() == "n");
    CHECK(std::string(e.what()).find("172") != std::string::npos);
  }
  CHECK_THROWS_AS(quantize_row(DType::Q5_K, x.data(), 256, q.data()), InputError);
  quantize_row(DType::I8_ROW, x.data(), 172, q.data());  // any length
}

TEST_CASE("int8_row_roundtrip equals dequantize(quantize_row_i8_row)") {
  std::vector<float> x(172);
  for (int i = 0; i < 172; i++) x[i] = std::sin(0.37f * i) * (i % 7 == 0 ? 3.0f : 0.25f);
  std::vector<uint8_t> q(4 + 172);
  quantize_row_i8_row(x.data(), 172, q.data());
  std::vector<float> y(172), z = x;
  dequantize_row(DType::I8_ROW, q.data(), 172, y.data());
  int8_row_roundtrip(z.data(), 172);
  for (int i = 0; i < 172; i++) CHECK(num::f32_bits(y[i]) == num::f32_bits(z[i]));
}

// ---- property: quantize -> dequantize within the format's bound -------------------------------
TEST_CASE("quantize -> dequantize error stays within each format's bound") {
  setenv("RC_PARAMS", "seed=20261130", 0);  // seeded unless the caller chose one
  rc::prop("Q8_0", [] { check_roundtrip(DType::Q8_0, gen_row(32 * 4), 32, bound_q8_0); });
  rc::prop("Q4_0", [] { check_roundtrip(DType::Q4_0, gen_row(32 * 4), 32, bound_q4_0); });
  rc::prop("Q4_K", [] { check_roundtrip(DType::Q4_K, gen_row(256 * 2), 256, bound_q4_K); });
  rc::prop("I8_ROW", [] {
    int n = *rc::gen::inRange(1, 300);
    std::vector<float> x = gen_row(n);
    check_roundtrip(DType::I8_ROW, x, n, [n](const float* p) { return bound_i8_row(p, n); });
  });
}
