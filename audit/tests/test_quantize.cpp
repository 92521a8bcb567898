// quantize_rows.h / audit/interop/quantize_gguf.h: our Q8_0/Q4_0 blocks are byte-identical to llama.cpp's own
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

#include <unistd.h>

#include "base/errors.h"
#include "reference/model/gguf.h"
#include "reference/model/gguf_writer.h"
#include "numerics/numerics.h"
#include "reference/model/quant.h"
#include "audit/interop/quantize_gguf.h"
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

// Q4_1 / Q5_1, block of 32, min m and max M: d = (M - m)/nmax (nmax 15 or 31),
// v = (x - m)/d in [0, nmax], q = trunc(v + 0.5) = v rounded half up (Q4_1 also
// clamps at 15, never binding): |v - q| <= 1/2. x^ = q fp16(d) + fp16(m), so
// |x - x^| <= d/2 (1 + 1e-4) + nmax fp16_err(d) + fp16_err(m).
template <int NMAX>
double bound_affine32(const float* x) {
  double lo = x[0], hi = x[0];
  for (int j = 0; j < 32; j++) {
    lo = std::min(lo, (double)x[j]);
    hi = std::max(hi, (double)x[j]);
  }
  double d = (hi - lo) / NMAX;
  return 0.5 * d * (1 + 1e-4) + NMAX * fp16_err(d) + fp16_err(lo) + 1e-30;
}

// Q5_0: as Q4_0 with 16 in place of 8: d = M / -16, q = min(31, floor(v + 16.5)) - 16,
// |v - q| <= 1, so |x - x^| <= |d| (1 + 1e-4) + 16 fp16_err(d).
double bound_q5_0(const float* x) {
  double a = 0;
  for (int j = 0; j < 32; j++) a = std::max(a, (double)std::fabs(x[j]));
  double d = a / 16.0;
  return d * (1 + 1e-4) + 16 * fp16_err(d) + 1e-30;
}

// The other k-quants, by the Q4_K argument above. Affine Q2_K (levels 0..3,
// 4-bit scales and mins against max/15) and Q5_K (0..31, 6-bit against max/63):
// fitted step <= R/(nmax-1); half a step plus one step of clipping, plus the
// scale rounding nmax * max_scale/(2 Q) and min rounding max_min/(2 Q):
// R (1.5/(nmax-1) + nmax/(2 Q (nmax-1)) + 1/(2 Q)) = 0.833 R (Q2_K), 0.066 R (Q5_K).
// Symmetric Q3_K (levels -4..3, 6-bit signed scales against max/32) and Q6_K
// (-32..31, int8 scales against max/128), A = max|x|: step <= A/(nmax-1),
// 1.5 steps plus nmax |max_scale|/(2 Q): 0.521 A (Q3_K), 0.0524 A (Q6_K).
// Absolute terms: the fp16 super-block scale rounds by at most 2^-25 where it
// is subnormal, times (largest level) x (largest sub-scale) [+ the min's].
// (Measured worst cases over 20000 random super-blocks: 0.58 R, 0.27 A, 0.032 R, 0.023 A.)
struct KBound {
  bool affine;
  double rel;      // of R (affine) or A (symmetric)
  double abs_ulps; // x 2^-25
};
double bound_k(const float* x, KBound k) {
  double lo = 0, hi = x[0], a = 0;
  for (int j = 0; j < 256; j++) {
    lo = std::min(lo, (double)x[j]);
    hi = std::max(hi, (double)x[j]);
    a = std::max(a, (double)std::fabs(x[j]));
  }
  return k.rel * (k.affine ? hi - lo : a) + k.abs_ulps * 0x1p-25 + 1e-30;
}
constexpr KBound kQ2K{true, 0.85, 3 * 15 + 15}, kQ3K{false, 0.55, 4 * 32};
constexpr KBound kQ5K{true, 0.07, 31 * 63 + 63}, kQ6K{false, 0.06, 32 * 128};

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
  // 172-wide rows fit no 32-block: llama-quantize's fallback gives them F16.
  QuantizeReport st = quantize_gguf(oracle::test::models("gguf/stories260K.gguf"), i8, DType::Q8_0);
  for (const QuantizedTensor& t : st.tensors)
    if (t.name == "blk.0.ffn_down.weight") CHECK((t.to == DType::F16 && t.fallback));
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
  CHECK_THROWS_AS(quantize_row(DType::Q5_K, x.data(), 172, q.data()), InputError);
  CHECK_THROWS_AS(quantize_row(DType::Q8_K, x.data(), 256, q.data()), InputError);  // not a weight type we write
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
  rc::prop("Q4_1", [] { check_roundtrip(DType::Q4_1, gen_row(32 * 4), 32, bound_affine32<15>); });
  rc::prop("Q5_0", [] { check_roundtrip(DType::Q5_0, gen_row(32 * 4), 32, bound_q5_0); });
  rc::prop("Q5_1", [] { check_roundtrip(DType::Q5_1, gen_row(32 * 4), 32, bound_affine32<31>); });
  rc::prop("Q2_K", [] { check_roundtrip(DType::Q2_K, gen_row(256 * 2), 256, [](const float* p) { return bound_k(p, kQ2K); }); });
  rc::prop("Q3_K", [] { check_roundtrip(DType::Q3_K, gen_row(256 * 2), 256, [](const float* p) { return bound_k(p, kQ3K); }); });
  rc::prop("Q4_K", [] { check_roundtrip(DType::Q4_K, gen_row(256 * 2), 256, bound_q4_K); });
  rc::prop("Q5_K", [] { check_roundtrip(DType::Q5_K, gen_row(256 * 2), 256, [](const float* p) { return bound_k(p, kQ5K); }); });
  rc::prop("Q6_K", [] { check_roundtrip(DType::Q6_K, gen_row(256 * 2), 256, [](const float* p) { return bound_k(p, kQ6K); }); });
  // F16 / BF16: round to nearest, half an ulp (relative 2^-11 / 2^-8; F16's absolute 2^-25 when subnormal).
  rc::prop("F16", [] { check_roundtrip(DType::F16, gen_row(64), 1, [](const float* p) { return fp16_err(*p); }); });
  rc::prop("BF16", [] {
    check_roundtrip(DType::BF16, gen_row(64), 1, [](const float* p) { return std::fabs(*p) * 0x1p-8 + 1e-45; });
  });
  rc::prop("I8_ROW", [] {
    int n = *rc::gen::inRange(1, 300);
    std::vector<float> x = gen_row(n);
    check_roundtrip(DType::I8_ROW, x, n, [n](const float* p) { return bound_i8_row(p, n); });
  });
}

// ---- edge cases, every type ---------------------------------------------------------------------
namespace {
const DType kAllTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q4_0, DType::Q4_1,
                           DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q2_K, DType::Q3_K,
                           DType::Q4_K, DType::Q5_K, DType::Q6_K};

std::vector<float> roundtrip(DType t, const std::vector<float>& x) {
  std::vector<uint8_t> q(dtype_row_bytes(t, (int64_t)x.size()));
  quantize_row(t, x.data(), (int64_t)x.size(), q.data());
  std::vector<float> y(x.size());
  dequantize_row(t, q.data(), (int64_t)x.size(), y.data());
  return y;
}
}  // namespace

TEST_CASE("every type: an all-zero block dequantizes to exact zeros") {
  for (DType t : kAllTypes) {
    INFO(dtype_name(t));
    std::vector<float> y = roundtrip(t, std::vector<float>(512, 0.0f));
    for (float v : y) CHECK(v == 0.0f);
  }
}

TEST_CASE("every type: max-magnitude blocks stay finite and within the format's bound") {
  // Largest magnitudes whose scales stay in fp16's range: 65504 = fp16 max, and
  // +-65504 * sin for mixed signs; F32/BF16 also take 3e38.
  std::vector<float> x(512);
  for (int i = 0; i < 512; i++) x[i] = (float)(65504.0 * std::sin(0.7 * i + 0.1));
  x[3] = 65504.0f;
  x[300] = -65504.0f;
  for (DType t : kAllTypes) {
    INFO(dtype_name(t));
    std::vector<float> y = roundtrip(t, x);
    for (int i = 0; i < 512; i++) REQUIRE(std::isfinite(y[i]));
    double worst = 0;
    for (int i = 0; i < 512; i++) worst = std::max(worst, std::fabs((double)x[i] - y[i]));
    CHECK(worst <= 0.85 * 2 * 65504.0);  // the loosest bound above (Q2_K, R = 2 * 65504)
  }
  std::vector<float> big(64, 3.0e38f);
  big[1] = -3.0e38f;
  for (DType t : {DType::F32, DType::BF16}) {
    std::vector<float> y = roundtrip(t, big);
    for (int i = 0; i < 64; i++) CHECK(std::fabs((double)y[i] - big[i]) <= std::fabs((double)big[i]) * 0x1p-8);
  }
}

TEST_CASE("every type: subnormal inputs give finite values no farther than zero is") {
  // Scales of ~1e-40 underflow fp16 to 0 (the block then decodes to 0, or to the
  // stored fp16 min): the error can be |x| but never more, and never NaN.
  std::vector<float> x(512);
  for (int i = 0; i < 512; i++) x[i] = (float)((i % 7) - 3) * 1e-40f;
  for (DType t : kAllTypes) {
    INFO(dtype_name(t));
    std::vector<float> y = roundtrip(t, x);
    for (int i = 0; i < 512; i++) {
      REQUIRE(std::isfinite(y[i]));
      CHECK(std::fabs((double)x[i] - y[i]) <= 3e-40 + 1e-45);
    }
  }
  // F32 keeps subnormals bit for bit.
  std::vector<float> y = roundtrip(DType::F32, x);
  for (int i = 0; i < 512; i++) CHECK(num::f32_bits(y[i]) == num::f32_bits(x[i]));
}

TEST_CASE("ggml's fp16 conversion (ggml_compute_fp32_to_fp16) equals num::f32_to_fp16 on every 61st float") {
  // Transcription of ggml-impl.h's ggml_compute_fp32_to_fp16, an independent algorithm
  // (scale to inf/zero, then bias) from ours (integer rounding).
  auto ggml_fp16 = [](float f) -> uint16_t {
    float base = (std::fabs(f) * 0x1.0p+112f) * 0x1.0p-110f;
    uint32_t w = num::f32_bits(f), shl1_w = w + w, sign = w & 0x80000000u;
    uint32_t bias = shl1_w & 0xFF000000u;
    if (bias < 0x71000000u) bias = 0x71000000u;
    base = num::f32_from_bits((bias >> 1) + 0x07800000u) + base;
    uint32_t bits = num::f32_bits(base);
    uint32_t exp_bits = (bits >> 13) & 0x00007C00u, mantissa_bits = bits & 0x00000FFFu;
    return (uint16_t)((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : exp_bits + mantissa_bits));
  };
  uint64_t mismatches = 0;
  for (uint64_t u = 0; u <= 0xffffffffull; u += 61) {
    float f = num::f32_from_bits((uint32_t)u);
    if (ggml_fp16(f) != num::f32_to_fp16(f) && mismatches++ < 5)
      UNSCOPED_INFO("bits " << std::hex << u << ": ggml " << ggml_fp16(f) << " ours " << num::f32_to_fp16(f));
  }
  CHECK(mismatches == 0);
}

// llama-quantize refuses to convert an already quantized tensor without --allow-requantize,
// whichever tensor it is. Here only the first tensor of llama.cpp's order (output.weight of
// an untied model) is quantized (Q8_0, the rest of llama2xs stays F32): the F16 file type wants
// F16 for it, so the file is refused naming output.weight, and converted with the flag.
TEST_CASE("requantizing is refused for the first tensor in llama.cpp's order too") {
  const GgufFile src(oracle::test::models("gguf/llama2xs.gguf"));
  const GgufTensorInfo* out = src.find_tensor("output.weight");
  REQUIRE(out != nullptr);
  REQUIRE(out->ggml_type == (uint32_t)DType::F32);
  GgufWriter w;
  w.copy_metadata(src);
  for (const GgufTensorInfo& t : src.tensors()) {
    if (&t != out) {
      w.add_tensor(t.name, (DType)t.ggml_type, t.dims, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
      continue;
    }
    const int64_t k = t.dims[0], rows = t.n_elements() / k;
    std::vector<uint8_t> q((size_t)(dtype_row_bytes(DType::Q8_0, k) * rows));
    for (int64_t r = 0; r < rows; r++)
      quantize_row(DType::Q8_0, (const float*)t.data + r * k, k, q.data() + r * dtype_row_bytes(DType::Q8_0, k));
    w.add_tensor(t.name, DType::Q8_0, t.dims, std::move(q));
  }
  const auto dir = std::filesystem::temp_directory_path() / ("oracle_test_requantize_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string in = (dir / "in.gguf").string(), to = (dir / "out.gguf").string();
  w.write(in);
  QuantizeOptions o;
  o.type = "F16";
  try {
    quantize_gguf(in, to, o);
    FAIL("a Q8_0 output.weight was requantized without allow_requantize");
  } catch (const InputError& e) {
    CHECK(e.field() == "output.weight");
  }
  o.allow_requantize = true;
  const QuantizeReport rep = quantize_gguf(in, to, o);
  for (const QuantizedTensor& t : rep.tensors)
    if (t.name == "output.weight") CHECK((t.from == DType::Q8_0 && t.to == DType::F16));
  std::filesystem::remove_all(dir);
}
