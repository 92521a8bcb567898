// The stored-type matmul (qmatmul.h) against its definition: for every
// storage type, dequantize_row each weight row, then num::dot_canonical with
// each token (numerics.h, the plain scalar spec, independent of ops.cpp).
// Blocks are seeded random bytes with the scale fields forced through
// normal, extreme (+-65504), subnormal, minimum-normal and zero halves, plus
// all-zero blocks and blocks of max-magnitude quants (0xFF, 0x80, 0x7F
// bytes). Checked bit for bit: every ISA path this CPU has (scalar, AVX2, AVX-512), matmul on
// 1 and 2 threads, and matmul_jobs splitting the rows over two matrices, for
// every row length in a range of whole blocks (plain types: 1..80 elements,
// covering the k mod 16 tails), with 1, 2, 4, 5, 8 and 13 tokens (decode rows in
// fours, prefill tiles of 8 and 4 tokens plus a remainder).
#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bit_compare.h"
#include "numerics/numerics.h"
#include "reference/compute/ops.h"
#include "reference/compute/qmatmul.h"
#include "reference/model/quant.h"
#include "block_fields.h"
#include "base/thread_pool.h"

using namespace oracle;
using oracle::test::first_bit_mismatch;

namespace {

using oracle::test::half_fields;  // block_fields.h

uint16_t pick_half(std::mt19937& rng) {
  switch (rng() % 8) {
    case 0: return 0x7BFF;                                   // +65504, the largest half
    case 1: return 0xFBFF;                                   // -65504
    case 2: return (uint16_t)(1 + rng() % 0x3FF);           // subnormal
    case 3: return (uint16_t)(0x8000 | (1 + rng() % 0x3FF));  // negative subnormal
    case 4: return 0x0400;                                   // smallest normal
    case 5: return 0;
    default: return (uint16_t)((rng() & 0x8000) | ((1 + rng() % 30) << 10) | (rng() & 0x3FF));
  }
}

float pick_f32_scale(std::mt19937& rng) {
  switch (rng() % 5) {
    case 0: return num::f32_from_bits(1 + rng() % 0x7FFFFF);  // subnormal
    case 1: return 3.0e38f;
    case 2: return 0.0f;
    default: return std::uniform_real_distribution<float>(-2.0f, 2.0f)(rng);
  }
}

// A finite element of a plain type (NaN/Inf are refused at load).
void fill_plain(DType t, std::mt19937& rng, uint8_t* p, int64_t n) {
  for (int64_t j = 0; j < n; j++) {
    if (t == DType::F32) {
      uint32_t u = rng();
      if (((u >> 23) & 0xFF) == 0xFF) u &= 0xBFFFFFFFu;  // exponent 255 -> 127
      std::memcpy(p + 4 * j, &u, 4);
      continue;
    }
    uint16_t h = (uint16_t)rng();
    if (t == DType::F16 && ((h >> 10) & 0x1F) == 0x1F) h &= 0xBFFF;
    if (t == DType::BF16 && ((h >> 7) & 0xFF) == 0xFF) h &= 0xBFFF;
    std::memcpy(p + 2 * j, &h, 2);
  }
}

// One quantized block: random / zero / 0xFF / 0x80 / 0x7F bytes, finite scales.
void fill_block(DType t, std::mt19937& rng, uint8_t* b) {
  const int64_t n = dtype_block_bytes(t);
  const int mode = (int)(rng() % 6);
  for (int64_t j = 0; j < n; j++)
    b[j] = mode == 1 ? 0 : mode == 2 ? 0xFF : mode == 3 ? 0x80 : mode == 4 ? 0x7F : (uint8_t)rng();
  if (mode == 1) return;  // all-zero block, scales included
  for (int off : half_fields(t)) {
    uint16_t h = pick_half(rng);
    std::memcpy(b + off, &h, 2);
  }
  if (t == DType::Q8_K) {
    float d = pick_f32_scale(rng);
    std::memcpy(b, &d, 4);
  }
}

std::vector<uint8_t> random_rows(DType t, std::mt19937& rng, int n_out, int k) {
  const int64_t rb = dtype_row_bytes(t, k);
  std::vector<uint8_t> w((size_t)(n_out * rb));
  for (int i = 0; i < n_out; i++) {
    uint8_t* row = w.data() + i * rb;
    if (t == DType::I8_ROW) {
      float s = pick_f32_scale(rng);
      std::memcpy(row, &s, 4);
      for (int j = 0; j < k; j++) row[4 + j] = rng() % 4 == 0 ? 0x80 : (uint8_t)rng();
    } else if (dtype_block_elems(t) == 1) {
      fill_plain(t, rng, row, k);
    } else {
      for (int64_t b = 0; b < rb / dtype_block_bytes(t); b++) fill_block(t, rng, row + b * dtype_block_bytes(t));
    }
  }
  return w;
}

std::vector<float> random_x(std::mt19937& rng, int n) {
  std::vector<float> x(n);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  for (float& v : x) v = rng() % 16 == 0 ? num::f32_from_bits(rng() % 0x7FFFFF) : u(rng);
  return x;
}

// The definition: dequantize_row, then dot_canonical.
std::vector<float> expected(DType t, const std::vector<uint8_t>& w, const std::vector<float>& x, int n_tok,
                            int k, int n_out) {
  std::vector<float> out((size_t)n_tok * n_out), row(k);
  for (int i = 0; i < n_out; i++) {
    dequantize_row(t, w.data() + i * dtype_row_bytes(t, k), k, row.data());
    for (int tk = 0; tk < n_tok; tk++) out[(size_t)tk * n_out + i] = num::dot_canonical(row.data(), &x[(size_t)tk * k], k);
  }
  return out;
}

std::vector<int> row_lengths(DType t) {
  std::vector<int> ks;
  const int be = (int)dtype_block_elems(t);
  if (be == 1)
    for (int k = 1; k <= 80; k++) ks.push_back(k);
  else
    for (int nb = 1; nb <= (be == QK_K ? 5 : 12); nb++) ks.push_back(nb * be);
  return ks;
}

void check_type(DType t) {
  std::mt19937 rng(1234u + (uint32_t)t);
  ThreadPool one(1), two(2);
  const int n_out = 9;
  for (int k : row_lengths(t))
    for (int n_tok : {1, 2, 4, 5, 8, 13}) {
      INFO(dtype_name(t) << " k=" << k << " n_tok=" << n_tok);
      auto w = random_rows(t, rng, n_out, k);
      auto x = random_x(rng, n_tok * k);
      const auto want = expected(t, w, x, n_tok, k, n_out);
      const WeightMatrix wm(t, w.data());
      std::vector<float> got(want.size());
      for (isa::Isa path : isa::available_isas()) {
        std::fill(got.begin(), got.end(), -1.0f);
        ops::matmul_rows(isa::kernels_for(path), got.data(), x.data(), wm, n_tok, k, n_out, 0, n_out);
        INFO("ISA path " << isa::isa_name(path));
        REQUIRE(first_bit_mismatch(got, want) == "");
      }
      for (ThreadPool* pool : {(ThreadPool*)nullptr, &one, &two}) {  // no pool: the calling thread
        std::fill(got.begin(), got.end(), -1.0f);
        ops::matmul(got.data(), x.data(), wm, n_tok, k, n_out, pool);
        INFO((pool ? pool->size() : 0) << " pool thread(s)");
        REQUIRE(first_bit_mismatch(got, want) == "");
      }
      // Rows 0..4 and 5..8 as two jobs of one parallel_for.
      std::vector<float> a((size_t)n_tok * 5), b((size_t)n_tok * 4);
      const ops::MatmulJob jobs[] = {{a.data(), wm, 5}, {b.data(), WeightMatrix(t, w.data() + 5 * dtype_row_bytes(t, k)), 4}};
      ops::matmul_jobs(jobs, x.data(), n_tok, k, &two);
      for (int tk = 0; tk < n_tok; tk++)
        for (int i = 0; i < n_out; i++)
          got[(size_t)tk * n_out + i] = i < 5 ? a[(size_t)tk * 5 + i] : b[(size_t)tk * 4 + i - 5];
      INFO("matmul_jobs, 2 threads");
      REQUIRE(first_bit_mismatch(got, want) == "");
    }
}

}  // namespace

TEST_CASE("qmatmul: every stored type equals dequantize_row + dot_canonical bit for bit", "[qmatmul]") {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                  DType::Q8_0, DType::Q8_1, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K,
                  DType::Q8_K, DType::I8_ROW}) {
    SECTION(dtype_name(t)) { check_type(t); }
  }
}

TEST_CASE("qmatmul: the SIMD paths decode the targeted types in registers", "[qmatmul]") {
  for (isa::Isa path : isa::available_isas()) {
    if (path == isa::Isa::Scalar) continue;
    INFO("ISA path " << isa::isa_name(path));
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                    DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K})
      CHECK(isa::kernels_for(path).register_decoder(t));
  }
}

TEST_CASE("qmatmul: a row length that is not a whole number of blocks is refused", "[qmatmul]") {
  std::vector<uint8_t> w(64);
  std::vector<float> x(40), out(1);
  CHECK_THROWS_WITH(ops::matmul(out.data(), x.data(), WeightMatrix(DType::Q8_0, w.data()), 1, 40, 1, nullptr),
                    Catch::Contains("not a whole number of blocks"));
}

TEST_CASE("prefill_chunk: two chunks per thread, as even as whole groups allow", "[qmatmul]") {
  CHECK(ops::prefill_chunk(72, 2) == 18);   // stories15m's 288 rows (72 groups of 4): 4 chunks of 72 rows
  CHECK(ops::prefill_chunk(144, 2) == 36);  // SmolLM2's 576 rows: 4 chunks of 144 rows
  CHECK(ops::prefill_chunk(144, 1) == 72);
  CHECK(ops::prefill_chunk(3, 4) == 1);
  for (int threads = 1; threads <= 6; threads++)
    for (int groups = 1; groups <= 600; groups++) {
      const int c = ops::prefill_chunk(groups, threads), n = (groups + c - 1) / c;
      INFO("groups " << groups << " threads " << threads << " chunk " << c);
      REQUIRE(c >= 1);
      REQUIRE(n <= 2 * threads);                         // never more than two chunks a thread
      if (c > 1) REQUIRE((groups + c - 2) / (c - 1) > 2 * threads);  // the smallest chunk that allows that
      if (groups % (2 * threads) == 0) REQUIRE(n == 2 * threads);  // an even split where one exists
    }
}
