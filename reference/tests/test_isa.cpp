// The ISA dispatch (reference/compute/isa.h): every kernel of every path this
// CPU has (AVX2, AVX-512) against the scalar path, bit for bit, on random and
// adversarial inputs — NaN, ±inf, ±0, subnormals, overflowing and
// underflowing products, every length around the 16-lane chunks (tails),
// misaligned pointers, partial row ranges; and the choice of the path from
// CPU features and $ORACLE_ISA (with hand-made feature sets, so those cases
// run on every CPU). A path the CPU lacks is reported and skipped.
//
// NaN: two NaN results count as equal whatever their payloads (x86 keeps one
// operand's payload and the compiler may commute an add; vcvtph2ps quiets a
// signalling fp16 NaN where fp16_to_f32 keeps it: docs/numerics.md §5.1).
// Golden logits never hold NaN; every other bit must match.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "base/errors.h"
#include "numerics/numerics.h"
#include "reference/compute/isa.h"
#include "reference/model/quant.h"
#include "block_fields.h"

using namespace oracle;
using isa::Isa;

namespace {

bool same(float a, float b) { return num::f32_bits(a) == num::f32_bits(b) || (std::isnan(a) && std::isnan(b)); }

std::string first_mismatch(const std::vector<float>& got, const std::vector<float>& want) {
  for (size_t i = 0; i < got.size(); i++) {
    if (same(got[i], want[i])) continue;
    char buf[160];
    std::snprintf(buf, sizeof buf, "first mismatch at %zu: %.9g (0x%08x) vs scalar %.9g (0x%08x)", i, (double)got[i],
                  num::f32_bits(got[i]), (double)want[i], num::f32_bits(want[i]));
    return buf;
  }
  return "";
}

// The SIMD paths this CPU can run (the scalar one is the reference here).
std::vector<Isa> simd_paths() {
  std::vector<Isa> out;
  for (Isa p : isa::available_isas())
    if (p != Isa::Scalar) out.push_back(p);
  if (out.empty()) WARN("this CPU has no SIMD path: only the scalar one is checked");
  for (Isa p : isa::kAllIsas)
    if (!isa::missing_feature(p, isa::cpu_features()).empty())
      WARN("skipped: the " << isa::isa_name(p) << " path (this CPU lacks "
                           << isa::missing_feature(p, isa::cpu_features()) << ")");
  return out;
}

// One value: mostly uniform in [-1, 1]; with `special`, 1 in 4 is one of the
// adversarial values below.
float pick(std::mt19937& rng, bool special) {
  static const float kSpecial[] = {
      std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
      std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
      0.0f, -0.0f, std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
      std::numeric_limits<float>::denorm_min(), -1.0e-40f, std::numeric_limits<float>::min(),
      1.0e30f, -1.0e30f, 1.0e-30f, 3.0e-20f, 65504.0f};
  if (special && rng() % 4 == 0) {
    if (rng() % 3 == 0) return num::f32_from_bits((rng() & 0x80000000u) | (1 + rng() % 0x7FFFFF));  // subnormal
    return kSpecial[rng() % (sizeof kSpecial / sizeof kSpecial[0])];
  }
  return std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng);
}

std::vector<float> values(std::mt19937& rng, size_t n, bool special) {
  std::vector<float> v(n);
  for (auto& x : v) x = pick(rng, special);
  return v;
}

// ---- stored blocks ------------------------------------------------------------
using oracle::test::half_fields;  // block_fields.h

// Finite fp16 scales (the loaders refuse non-finite ones): extremes,
// subnormals, the smallest normal, zero, random normals.
uint16_t pick_half(std::mt19937& rng) {
  switch (rng() % 7) {
    case 0: return 0x7BFF;                                    // +65504
    case 1: return 0xFBFF;                                    // -65504
    case 2: return (uint16_t)((rng() & 0x8000) | (1 + rng() % 0x3FF));  // subnormal
    case 3: return 0x0400;
    case 4: return 0;
    default: return (uint16_t)((rng() & 0x8000) | ((1 + rng() % 30) << 10) | (rng() & 0x3FF));
  }
}

// n_rows rows of k elements of type t: random bytes; scales finite as above;
// F32 / BF16 / F16 weights may be any value, NaN and inf included.
std::vector<uint8_t> random_rows(DType t, std::mt19937& rng, int n_rows, int k) {
  const int64_t rb = dtype_row_bytes(t, k);
  std::vector<uint8_t> w((size_t)(n_rows * rb) + 64);  // slack: the row-range tests read nothing past it
  for (auto& b : w) b = (uint8_t)rng();
  if (t == DType::F32) {
    for (int64_t i = 0; i < (int64_t)n_rows * k; i++) {
      float f = pick(rng, true);
      std::memcpy(&w[(size_t)i * 4], &f, 4);
    }
    return w;
  }
  const int64_t be = dtype_block_elems(t), bb = dtype_block_bytes(t);
  if (be == 1) return w;  // F16 / BF16: every bit pattern
  for (int r = 0; r < n_rows; r++)
    for (int64_t blk = 0; blk < k / be; blk++) {
      uint8_t* b = &w[(size_t)(r * rb + blk * bb)];
      for (int off : half_fields(t)) {
        uint16_t h = pick_half(rng);
        std::memcpy(b + off, &h, 2);
      }
      if (t == DType::Q8_K) {  // float32 scale d first
        float d = std::uniform_real_distribution<float>(-2.0f, 2.0f)(rng);
        std::memcpy(b, &d, 4);
      }
      if (rng() % 8 == 0) std::memset(b + 4, 0xFF, (size_t)(bb - 8));  // max-magnitude quants, scales kept
    }
  return w;
}

std::vector<int> row_lengths(DType t) {
  const int be = (int)dtype_block_elems(t);
  if (be == 1) return {1, 2, 7, 15, 16, 17, 31, 32, 33, 40, 48, 63, 79};
  return be == QK_K ? std::vector<int>{QK_K, 2 * QK_K, 3 * QK_K} : std::vector<int>{be, 2 * be, 3 * be, 5 * be};
}

constexpr DType kStoredTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q4_0, DType::Q4_1,
                                  DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q8_1, DType::Q2_K,
                                  DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q8_K};

}  // namespace

TEST_CASE("isa: dot of every SIMD path equals the scalar path's", "[isa]") {
  const isa::Kernels& ref = isa::kernels_for(Isa::Scalar);
  for (Isa p : simd_paths()) {
    const isa::Kernels& k = isa::kernels_for(p);
    REQUIRE(k.isa == p);
    std::mt19937 rng(7);
    std::vector<int> lengths;
    for (int n = 0; n <= 70; n++) lengths.push_back(n);
    for (int n : {127, 128, 129, 255, 1000, 4099}) lengths.push_back(n);
    for (bool special : {false, true})
      for (int n : lengths)
        for (int misalign = 0; misalign < 3; misalign++) {
          auto a = values(rng, n + 3, special), b = values(rng, n + 3, special);
          const float got = k.dot(a.data() + misalign, b.data() + misalign, n);
          const float want = ref.dot(a.data() + misalign, b.data() + misalign, n);
          INFO(isa::isa_name(p) << " n=" << n << " misalign=" << misalign << " special=" << special);
          CHECK(same(got, want));
          if (!special) CHECK(num::f32_bits(want) == num::f32_bits(num::dot_canonical(a.data() + misalign,
                                                                                       b.data() + misalign, n)));
        }
  }
}

TEST_CASE("isa: scale_fma (attention p·v, merge) of every path is fma_rn(x, s, y * a) per element", "[isa]") {
  std::mt19937 rng(9);
  for (Isa p : isa::available_isas())
    for (bool special : {false, true})
      for (int n : {0, 1, 7, 15, 16, 17, 33, 64, 100, 129})
        for (float a : {1.0f, 0.75f, 3.0e-3f}) {
          auto x = values(rng, n, special), y = values(rng, n, special);
          const float s = special ? pick(rng, true) : pick(rng, false);
          std::vector<float> got = y, want(n);
          isa::kernels_for(p).scale_fma(got.data(), a, x.data(), s, n);
          for (int d = 0; d < n; d++) want[d] = std::fma(x[d], s, a == 1.0f ? y[d] : y[d] * a);  // -ffp-contract=off
          INFO(isa::isa_name(p) << " n=" << n << " a=" << a << " special=" << special);
          CHECK(first_mismatch(got, want) == "");
        }
}

// A SwiGLU gate value: exp_canonical(-g)'s every case — NaN, ±inf, the edges of the +inf
// (-g > 88.7228394) and 0 (-g < -103.972694) cutoffs and their neighbours, 2^n with n = 128
// (the doubling step) and n < -125 (the two-step subnormal scale), 0, subnormals — plus
// uniform values over [-120, 120] and [-1, 1].
float pick_gate(std::mt19937& rng) {
  static const float kEdge[] = {-88.7228394f, -88.72284f, -88.7228317f, -88.5f, -88.4f, 103.972694f,
                                103.97270f, 103.972687f, 103.5f, 100.0f, 90.0f, 87.4f, 87.0f, 86.5f,
                                -1.0e30f, 1.0e30f, 1.0e-30f, -3.0e-20f, 0.5f, -0.5f};
  switch (rng() % 4) {
    case 0: return kEdge[rng() % (sizeof kEdge / sizeof kEdge[0])];
    case 1: return pick(rng, true);
    case 2: return std::uniform_real_distribution<float>(-120.0f, 120.0f)(rng);
    default: return std::nextafter(kEdge[rng() % 6], (rng() & 1) ? 200.0f : -200.0f);
  }
}

TEST_CASE("isa: swiglu of every path is mul_rn(silu_canonical(g), u) per element", "[isa]") {
  std::mt19937 rng(21);
  for (Isa p : isa::available_isas())
    for (int n : {0, 1, 5, 15, 16, 17, 31, 32, 33, 47, 64, 100, 131, 1536}) {
      std::vector<float> g(n + 2), u = values(rng, n + 2, true);
      for (auto& x : g) x = pick_gate(rng);
      for (int misalign = 0; misalign < 2; misalign++) {
        std::vector<float> got(n), want(n), alias(g.begin() + misalign, g.begin() + misalign + n);
        isa::kernels_for(p).swiglu(got.data(), g.data() + misalign, u.data() + misalign, n);
        isa::kernels_for(p).swiglu(alias.data(), alias.data(), u.data() + misalign, n);  // h aliasing gate
        for (int k = 0; k < n; k++)  // the definition, element by element (numerics.h)
          want[k] = num::silu_canonical(g[k + misalign]) * u[k + misalign];
        INFO(isa::isa_name(p) << " n=" << n << " misalign=" << misalign);
        CHECK(first_mismatch(got, want) == "");
        CHECK(first_mismatch(alias, want) == "");
      }
    }
}

TEST_CASE("isa: exp_f32 of every path is exp_canonical per element", "[isa]") {
  std::mt19937 rng(22);
  for (Isa p : isa::available_isas())
    for (int n : {0, 1, 3, 15, 16, 17, 31, 32, 33, 64, 100, 257}) {
      std::vector<float> v(n + 1);
      for (auto& x : v) x = -pick_gate(rng);  // exp's own edges, as swiglu's gate negated
      for (int misalign = 0; misalign < 2; misalign++) {
        std::vector<float> got(n), want(n), alias(v.begin() + misalign, v.begin() + misalign + n);
        isa::kernels_for(p).exp_f32(v.data() + misalign, got.data(), n);
        isa::kernels_for(p).exp_f32(alias.data(), alias.data(), n);
        for (int k = 0; k < n; k++) want[k] = num::exp_canonical(v[k + misalign]);
        INFO(isa::isa_name(p) << " n=" << n << " misalign=" << misalign);
        CHECK(first_mismatch(got, want) == "");
        CHECK(first_mismatch(alias, want) == "");
      }
    }
}

TEST_CASE("isa: attention's dot_rows (q·k) and pv_rows (p·v) of every path, per query and key in order", "[isa]") {
  std::mt19937 rng(23);
  for (Isa p : isa::available_isas())
    for (bool special : {false, true})
      for (int n : {1, 7, 16, 17, 33, 64, 80, 128})
        for (int m : {0, 1, 3, 4, 5, 9, 16, 17, 21, 32, 47, 64})
          for (int nq : {1, 2, 3, 4, 6, 7, 13}) {
            const int offset = (int)(rng() % 3) * n;  // kv head g of a row holding 3 heads
            std::vector<std::vector<float>> keys, vals, qs, os;
            std::vector<const float*> kp, vp, qp;
            std::vector<float*> op;
            for (int j = 0; j < m; j++) {
              keys.push_back(values(rng, 3 * (size_t)n, special));
              vals.push_back(values(rng, 3 * (size_t)n, special));
            }
            for (int j = 0; j < m; j++) kp.push_back(keys[j].data()), vp.push_back(vals[j].data());
            std::vector<int> mi(nq);  // each query's own count of value rows, at most m (the largest: m)
            for (int i = 0; i < nq; i++) {
              qs.push_back(values(rng, n, special));
              os.push_back(values(rng, n, special));
              mi[i] = i == 0 || m == 0 ? m : m - (int)(rng() % std::min(m, 6));
            }
            const int ld = m + 3;  // the scores' row stride
            auto e = values(rng, (size_t)nq * ld, special);
            std::vector<float> dots((size_t)nq * ld, 1234.5f), want_dots = dots;
            auto want_o = os;
            for (int i = 0; i < nq; i++) qp.push_back(qs[i].data()), op.push_back(os[i].data());
            isa::kernels_for(p).dot_rows(dots.data(), ld, qp.data(), nq, kp.data(), offset, m, n);
            isa::kernels_for(p).pv_rows(op.data(), e.data(), ld, mi.data(), nq, vp.data(), offset, n);
            for (int i = 0; i < nq; i++)  // the definitions: dot_canonical per (query, key); one fma per term, j in order
              for (int j = 0; j < m; j++) {
                want_dots[(size_t)i * ld + j] = num::dot_canonical(qs[i].data(), keys[j].data() + offset, n);
                if (j < mi[i])
                  for (int d = 0; d < n; d++) want_o[i][d] = std::fma(vals[j][offset + d], e[(size_t)i * ld + j], want_o[i][d]);
              }
            INFO(isa::isa_name(p) << " n=" << n << " m=" << m << " nq=" << nq << " special=" << special);
            CHECK(first_mismatch(dots, want_dots) == "");  // the stride's gap keeps its sentinel
            for (int i = 0; i < nq; i++) CHECK(first_mismatch(os[i], want_o[i]) == "");
          }
}

TEST_CASE("isa: matmul_rows_f32 of every SIMD path equals the scalar path's", "[isa]") {
  const isa::Kernels& ref = isa::kernels_for(Isa::Scalar);
  for (Isa p : simd_paths()) {
    const isa::Kernels& k = isa::kernels_for(p);
    std::mt19937 rng(11);
    for (bool special : {false, true})
      for (int K : {1, 3, 15, 16, 17, 32, 33, 47, 100})
        for (int T : {1, 2, 3, 4, 5, 8, 9})
          for (int N : {1, 2, 4, 5, 9, 37}) {
            auto x = values(rng, (size_t)T * K, special), w = values(rng, (size_t)N * K, special);
            for (auto [r0, r1] : {std::pair{0, N}, std::pair{N > 2 ? 1 : 0, N > 2 ? N - 1 : N}}) {
              std::vector<float> got((size_t)T * N, 1234.5f), want(got);  // untouched rows keep the sentinel
              k.matmul_rows_f32(got.data(), x.data(), w.data(), T, K, N, r0, r1);
              ref.matmul_rows_f32(want.data(), x.data(), w.data(), T, K, N, r0, r1);
              INFO(isa::isa_name(p) << " K=" << K << " T=" << T << " N=" << N << " rows " << r0 << ".." << r1
                                    << " special=" << special);
              REQUIRE(first_mismatch(got, want) == "");
            }
          }
  }
}

TEST_CASE("isa: stored_rows of every SIMD path equals the scalar path's, every type", "[isa]") {
  const isa::Kernels& ref = isa::kernels_for(Isa::Scalar);
  for (Isa p : simd_paths()) {
    const isa::Kernels& k = isa::kernels_for(p);
    for (DType t : kStoredTypes) {
      std::mt19937 rng(1000u + (uint32_t)t);
      for (int K : row_lengths(t))
        for (int T : {1, 2, 4, 5, 8, 13})  // decode, 4-token and 8-token prefill tiles, remainders
          for (int N : {1, 4, 5, 9}) {
            const auto w = random_rows(t, rng, N, K);
            const auto x = values(rng, (size_t)T * K, t == DType::F32);
            const int64_t rb = dtype_row_bytes(t, K);
            for (auto [r0, r1] : {std::pair{0, N}, std::pair{N > 2 ? 1 : 0, N > 2 ? N - 1 : N}}) {
              std::vector<float> got((size_t)T * N, 1234.5f), want(got);
              INFO(isa::isa_name(p) << " " << dtype_name(t) << " K=" << K << " T=" << T << " N=" << N << " rows "
                                    << r0 << ".." << r1);
              REQUIRE(k.stored_rows(got.data(), x.data(), t, w.data(), rb, T, K, N, r0, r1));
              REQUIRE(ref.stored_rows(want.data(), x.data(), t, w.data(), rb, T, K, N, r0, r1));
              REQUIRE(first_mismatch(got, want) == "");
            }
          }
    }
  }
}

// The prefill tiles' bookkeeping at sizes the loop above does not reach: K in several
// 4096 / T-element segments (the packed x and the accumulators carried between them,
// a short last segment, an F32 tail past the last whole chunk), row ranges across
// 32-row blocks with odd remainders, and token counts with 8-token, 4-token and single
// groups. Every output against the scalar path.
TEST_CASE("isa: stored_rows prefill over K segments, row blocks and token groups", "[isa]") {
  const isa::Kernels& ref = isa::kernels_for(Isa::Scalar);
  struct Case {
    DType t;
    int K;
  };
  const Case cases[] = {{DType::F32, 513}, {DType::F32, 1040}, {DType::F32, 1027}, {DType::Q8_0, 512},
                        {DType::Q8_0, 1568}, {DType::Q4_1, 1056}, {DType::Q5_0, 544}, {DType::F16, 1120},
                        {DType::Q4_K, 1536}, {DType::Q6_K, 768}};
  for (Isa p : simd_paths()) {
    const isa::Kernels& k = isa::kernels_for(p);
    for (const Case& c : cases) {
      std::mt19937 rng(77u + (uint32_t)c.K);
      for (int T : {4, 8, 13, 21})
        for (int N : {35, 70}) {
          const auto w = random_rows(c.t, rng, N, c.K);
          const auto x = values(rng, (size_t)T * c.K, c.t == DType::F32);
          const int64_t rb = dtype_row_bytes(c.t, c.K);
          for (auto [r0, r1] : {std::pair{0, N}, std::pair{3, N - 2}}) {
            std::vector<float> got((size_t)T * N, 1234.5f), want(got);
            INFO(isa::isa_name(p) << " " << dtype_name(c.t) << " K=" << c.K << " T=" << T << " N=" << N << " rows "
                                  << r0 << ".." << r1);
            REQUIRE(k.stored_rows(got.data(), x.data(), c.t, w.data(), rb, T, c.K, N, r0, r1));
            REQUIRE(ref.stored_rows(want.data(), x.data(), c.t, w.data(), rb, T, c.K, N, r0, r1));
            REQUIRE(first_mismatch(got, want) == "");
          }
        }
    }
  }
}

// ---- the bit-unpacking decoders (Q5_0 / Q5_1 / Q4_K / Q5_K / Q6_K) on chosen blocks ----
// Element j of one block, from the ggml block layouts written out here (not quant.cpp):
// the exact integer the format stores, and its (scale, offset) pair, each as the integer
// or fp16 field they come from; the value is then formed the way docs/numerics.md says.
struct Elem {
  int q;
  int sc, m;  // k-quants: 6-bit sub-block scale and min (Q6_K: the int8 scale); else unused
};
Elem elem_of(DType t, const uint8_t* b, int j) {
  auto bit = [](const uint8_t* bytes, int e) { return (bytes[e / 8] >> (e % 8)) & 1; };
  auto nib = [](const uint8_t* qs, int j) { return j < 16 ? qs[j] & 15 : qs[j - 16] >> 4; };
  auto k4 = [](const uint8_t* s, int sb, int* sc, int* m) {  // get_scale_min_k4
    *sc = sb < 4 ? s[sb] & 63 : (s[sb + 4] & 15) | (s[sb - 4] >> 6) << 4;
    *m = sb < 4 ? s[sb + 4] & 63 : (s[sb + 4] >> 4) | (s[sb] >> 6) << 4;
  };
  Elem e{0, 0, 0};
  if (t == DType::Q5_0) e.q = (nib(b + 6, j) | bit(b + 2, j) << 4) - 16;
  if (t == DType::Q5_1) e.q = nib(b + 8, j) | bit(b + 4, j) << 4;
  if (t == DType::Q4_K || t == DType::Q5_K) {
    const int g = j / 64, upper = j % 64 / 32, l = j % 32;
    const uint8_t byte = b[(t == DType::Q4_K ? 16 : 48) + 32 * g + l];
    e.q = upper ? byte >> 4 : byte & 15;
    if (t == DType::Q5_K) e.q += ((b[16 + l] >> (2 * g + upper)) & 1) * 16;  // qh[l], bit 2g + upper
    k4(b + 4, 2 * g + upper, &e.sc, &e.m);
  }
  if (t == DType::Q6_K) {
    const int h = j / 128, qt = j % 128 / 32, l = j % 32;
    const uint8_t lo = b[64 * h + l + 32 * (qt & 1)];
    e.q = ((qt < 2 ? lo & 15 : lo >> 4) | ((b[128 + 32 * h + l] >> (2 * qt)) & 3) << 4) - 32;
    e.sc = (int8_t)b[192 + 8 * h + l / 16 + 2 * qt];
  }
  return e;
}
float fp16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return num::fp16_to_f32(h);
}
// The dequantized weight (docs/numerics.md: the scale products rounded once each).
float weight_of(DType t, const uint8_t* b, int j) {
  const Elem e = elem_of(t, b, j);
  switch (t) {
    case DType::Q5_0: return (float)e.q * fp16(b);
    case DType::Q5_1: return num::fma_rn((float)e.q, fp16(b), fp16(b + 2));
    case DType::Q4_K: case DType::Q5_K:
      return num::fma_rn(fp16(b) * (float)e.sc, (float)e.q, -(fp16(b + 2) * (float)e.m));
    default: return fp16(b + 208) * (float)e.sc * (float)e.q;  // Q6_K
  }
}

// Block patterns: all zero; every quant byte 0xFF with the largest scales (+65504) and
// negative mins (-65504); every quant and scale byte 0xFF with d = -65504; one Q5 high bit
// at a time (bit e of qh in block e); alternating 0x55 / 0xAA; random bytes.
std::vector<uint8_t> pattern_rows(DType t, int pattern, int n_rows, int k, std::mt19937& rng) {
  const int64_t rb = dtype_row_bytes(t, k), bb = dtype_block_bytes(t), nb = k / dtype_block_elems(t);
  std::vector<uint8_t> w((size_t)(n_rows * rb) + 64, 0);
  const auto fields = half_fields(t);
  for (int r = 0; r < n_rows; r++)
    for (int64_t blk = 0; blk < nb; blk++) {
      uint8_t* b = &w[(size_t)(r * rb + blk * bb)];
      const int64_t idx = r * nb + blk;
      if (pattern == 0) continue;
      for (int64_t i = 0; i < bb; i++)
        b[i] = pattern == 1 || pattern == 2 ? 0xFF : pattern == 4 ? (i % 2 ? 0xAA : 0x55) : (uint8_t)rng();
      uint16_t h[2] = {0x7BFF, 0xFBFF};  // d = +65504, m / dmin = -65504
      if (pattern == 2) h[0] = 0xFBFF;
      if (pattern >= 3) h[0] = 0x3C00 + (uint16_t)(rng() % 0x400), h[1] = (uint16_t)(0xB800 + rng() % 0x800);
      for (size_t f = 0; f < fields.size(); f++) std::memcpy(b + fields[f], &h[f], 2);
      if (pattern == 3) {  // one high bit: qh = 1 << (idx % 32)
        const int qh_at = t == DType::Q5_0 ? 2 : t == DType::Q5_1 ? 4 : -1;
        if (qh_at >= 0) {
          const uint32_t qh = 1u << (idx % 32);
          std::memcpy(b + qh_at, &qh, 4);
        }
      }
    }
  return w;
}

TEST_CASE("isa: Q5_0 / Q5_1 / Q4_K / Q5_K / Q6_K weights of every path equal the format's definition", "[isa]") {
  // x = unit vector e_j: output = weight j exactly (fma(w, 1, 0) = w; the other lanes add +0).
  for (Isa p : isa::available_isas()) {
    const isa::Kernels& k = isa::kernels_for(p);
    for (DType t : {DType::Q5_0, DType::Q5_1, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
      std::mt19937 rng(77u + (uint32_t)t);
      const int K = (int)dtype_block_elems(t), N = 5;  // a 4-row tile and one row
      for (int pattern = 0; pattern < 6; pattern++) {
        const auto w = pattern_rows(t, pattern, N, K, rng);
        const int64_t rb = dtype_row_bytes(t, K);
        for (int j = 0; j < K; j++) {
          std::vector<float> x((size_t)K, 0.0f), got((size_t)N, 1234.5f);
          x[(size_t)j] = 1.0f;
          REQUIRE(k.stored_rows(got.data(), x.data(), t, w.data(), rb, 1, K, N, 0, N));
          for (int r = 0; r < N; r++) {
            const float want = weight_of(t, w.data() + r * rb, j) + 0.0f;  // -0 sums to +0
            INFO(isa::isa_name(p) << " " << dtype_name(t) << " pattern " << pattern << " row " << r << " element " << j);
            REQUIRE(num::f32_bits(got[(size_t)r]) == num::f32_bits(want));
          }
        }
      }
    }
  }
}

TEST_CASE("isa: Q5 / k-quant decoders on extreme blocks, every path equals the scalar path, tails of rows and tokens", "[isa]") {
  const isa::Kernels& ref = isa::kernels_for(Isa::Scalar);
  for (Isa p : simd_paths()) {
    const isa::Kernels& k = isa::kernels_for(p);
    for (DType t : {DType::Q5_0, DType::Q5_1, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
      std::mt19937 rng(99u + (uint32_t)t);
      const int be = (int)dtype_block_elems(t);
      for (int pattern = 0; pattern < 6; pattern++)
        for (int T : {1, 3, 8, 13})
          for (int N : {1, 4, 7}) {
            const int K = be == 32 ? 34 * be : 3 * be;  // Q5: 34 blocks, every qh bit position twice
            const auto w = pattern_rows(t, pattern, N, K, rng);
            const auto x = values(rng, (size_t)T * K, pattern == 5);
            const int64_t rb = dtype_row_bytes(t, K);
            std::vector<float> got((size_t)T * N, 1234.5f), want(got);
            INFO(isa::isa_name(p) << " " << dtype_name(t) << " pattern " << pattern << " T=" << T << " N=" << N);
            REQUIRE(k.stored_rows(got.data(), x.data(), t, w.data(), rb, T, K, N, 0, N));
            REQUIRE(ref.stored_rows(want.data(), x.data(), t, w.data(), rb, T, K, N, 0, N));
            REQUIRE(first_mismatch(got, want) == "");
          }
    }
  }
}

TEST_CASE("isa: register decoders: every SIMD path has them for the same types, scalar none", "[isa]") {
  for (DType t : kStoredTypes) CHECK_FALSE(isa::kernels_for(Isa::Scalar).register_decoder(t));
  for (Isa p : simd_paths())
    for (DType t : kStoredTypes) {
      const bool want = t != DType::Q8_1 && t != DType::Q2_K && t != DType::Q3_K && t != DType::Q8_K;
      INFO(isa::isa_name(p) << " " << dtype_name(t));
      CHECK(isa::kernels_for(p).register_decoder(t) == want);
    }
}

TEST_CASE("isa: the path is chosen from the CPU features and ORACLE_ISA", "[isa]") {
  isa::CpuFeatures none, avx2, avx512;
  none.sse2 = true;
  avx2 = none;
  avx2.avx = avx2.avx2 = avx2.f16c = avx2.fma = true;
  avx512 = avx2;
  avx512.avx512f = avx512.avx512bw = true;
  CHECK(isa::best_isa(none) == Isa::Scalar);
  CHECK(isa::best_isa(avx2) == Isa::Avx2);
  CHECK(isa::choose_isa(nullptr, avx2) == Isa::Avx2);
  CHECK(isa::choose_isa("", avx512) == Isa::Avx512);
  CHECK(isa::choose_isa("scalar", avx512) == Isa::Scalar);
  CHECK(isa::choose_isa("avx2", avx512) == Isa::Avx2);
  isa::CpuFeatures no_f16c = avx2;
  no_f16c.f16c = false;  // the AVX2 path converts fp16 scales with F16C
  CHECK(isa::missing_feature(Isa::Avx2, no_f16c) == "f16c");
  CHECK(isa::best_isa(no_f16c) == Isa::Scalar);
  isa::CpuFeatures no_fma = avx512;
  no_fma.fma = false;  // numerics v2: both SIMD paths' lanes are fused multiply-adds (FMA3)
  CHECK(isa::missing_feature(Isa::Avx2, no_fma) == "fma");
  CHECK(isa::missing_feature(Isa::Avx512, no_fma) == "fma");
  CHECK(isa::best_isa(no_fma) == Isa::Scalar);
  isa::CpuFeatures no_bw = avx512;
  no_bw.avx512bw = false;  // AVX-512F alone (Xeon Phi): the AVX-512 TU is built with -mavx512bw
  CHECK(isa::missing_feature(Isa::Avx512, no_bw) == "avx512bw");
  CHECK(isa::best_isa(no_bw) == Isa::Avx2);
  try {
    isa::choose_isa("avx512", avx2);
    FAIL("an unavailable path was accepted");
  } catch (const InputError& e) {
    CHECK(e.file() == "ORACLE_ISA");
    CHECK(std::string(e.what()).find("avx512f") != std::string::npos);
  }
  try {
    isa::choose_isa("bogus", avx512);
    FAIL("an unknown path was accepted");
  } catch (const InputError& e) {
    CHECK(e.file() == "ORACLE_ISA");
    CHECK(e.field() == "bogus");
  }
  CHECK(isa::feature_names(avx512) ==
        std::vector<std::string>{"sse2", "avx", "avx2", "f16c", "fma", "avx512f", "avx512bw"});
  // This CPU: the scalar path always, and the table of each path says which it is.
  REQUIRE(isa::available_isas().front() == Isa::Scalar);
  for (Isa p : isa::available_isas()) CHECK(isa::kernels_for(p).isa == p);
}

// The features read with CPUID (and XGETBV) against the kernel's own reading of the same CPU:
// the flags line of /proc/cpuinfo (Linux clears the AVX flags when the OS does not save the
// registers, as cpu_features does). Skipped where there is no such file (not Linux, not x86-64).
TEST_CASE("isa: features_from_cpuid reads each feature from its own bit (Intel SDM vol. 2A, CPUID)", "[isa]") {
  // Every bit set, all OS state enabled: every feature. Then each feature's bit cleared alone: only
  // that feature goes (and the ones the bit's register state gates).
  isa::CpuidRegs all;
  all.leaf1_ecx = (1u << 27) | (1u << 28) | (1u << 12) | (1u << 29);  // OSXSAVE, AVX, FMA, F16C
  all.leaf1_edx = 1u << 26;                                             // SSE2
  all.has_leaf7 = true;
  all.leaf7_ebx = (1u << 5) | (1u << 16) | (1u << 17) | (1u << 30) | (1u << 31);  // AVX2, 512 F DQ BW VL
  all.xcr0 = 0xE7;
  const std::vector<std::string> every = {"sse2", "avx", "avx2", "f16c", "fma",
                                          "avx512f", "avx512bw", "avx512dq", "avx512vl"};
  CHECK(isa::feature_names(isa::features_from_cpuid(all)) == every);
  struct Drop {
    uint32_t isa::CpuidRegs::*reg;
    int bit;
    const char* name;
  };
  for (const Drop& d : {Drop{&isa::CpuidRegs::leaf1_edx, 26, "sse2"}, Drop{&isa::CpuidRegs::leaf1_ecx, 28, "avx"},
                        Drop{&isa::CpuidRegs::leaf1_ecx, 12, "fma"}, Drop{&isa::CpuidRegs::leaf1_ecx, 29, "f16c"},
                        Drop{&isa::CpuidRegs::leaf7_ebx, 5, "avx2"}, Drop{&isa::CpuidRegs::leaf7_ebx, 16, "avx512f"},
                        Drop{&isa::CpuidRegs::leaf7_ebx, 17, "avx512dq"},
                        Drop{&isa::CpuidRegs::leaf7_ebx, 30, "avx512bw"},
                        Drop{&isa::CpuidRegs::leaf7_ebx, 31, "avx512vl"}}) {
    INFO("bit " << d.bit << " cleared");
    isa::CpuidRegs r = all;
    r.*d.reg &= ~(1u << d.bit);
    std::vector<std::string> want;
    for (const std::string& n : every)
      if (n != d.name) want.push_back(n);
    CHECK(isa::feature_names(isa::features_from_cpuid(r)) == want);
  }
  // OSXSAVE clear: XCR0 is not read, so no AVX-family feature; YMM state only: no AVX-512.
  isa::CpuidRegs r = all;
  r.leaf1_ecx &= ~(1u << 27);
  CHECK(isa::feature_names(isa::features_from_cpuid(r)) == std::vector<std::string>{"sse2"});
  r = all;
  r.xcr0 = 0x7;
  CHECK(isa::feature_names(isa::features_from_cpuid(r)) ==
        std::vector<std::string>{"sse2", "avx", "avx2", "f16c", "fma"});
  r = all;
  r.has_leaf7 = false;
  CHECK(isa::feature_names(isa::features_from_cpuid(r)) == std::vector<std::string>{"sse2", "avx", "f16c", "fma"});
  CHECK(isa::feature_names(isa::features_from_cpuid({})).empty());
}

TEST_CASE("isa: cpu_features agree with the kernel's /proc/cpuinfo flags", "[isa]") {
  std::ifstream in("/proc/cpuinfo");
  std::string line, flags;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) {
      flags = " " + line.substr(line.find(':') + 1) + " ";
      break;
    }
  if (flags.empty()) {
    SUCCEED("no /proc/cpuinfo flags line");
    return;
  }
  auto has = [&](const char* f) { return flags.find(std::string(" ") + f + " ") != std::string::npos; };
  const isa::CpuFeatures f = isa::cpu_features();
  CHECK(f.sse2 == has("sse2"));
  CHECK(f.avx == has("avx"));
  CHECK(f.fma == has("fma"));
  CHECK(f.f16c == has("f16c"));
  CHECK(f.avx2 == has("avx2"));
  CHECK(f.avx512f == has("avx512f"));
  CHECK(f.avx512dq == has("avx512dq"));
  CHECK(f.avx512bw == has("avx512bw"));
  CHECK(f.avx512vl == has("avx512vl"));
}

// The decode prefetch policy (isa.h): the vendor read from CPUID leaf 0's string (the
// register values are the documented ones: Intel SDM vol. 2A and AMD APM vol. 3, CPUID
// function 0), Intel -> Ahead, every other vendor -> Span, and $ORACLE_PREFETCH's spellings.
TEST_CASE("isa: the decode prefetch follows the CPU vendor; ORACLE_PREFETCH forces or is refused", "[isa]") {
  using isa::CpuVendor;
  using isa::DecodePrefetch;
  CHECK(isa::vendor_from_cpuid(0x756e6547, 0x6c65746e, 0x49656e69) == CpuVendor::Intel);  // "Genu" "ntel" "ineI"
  CHECK(isa::vendor_from_cpuid(0x68747541, 0x444d4163, 0x69746e65) == CpuVendor::Amd);    // "Auth" "cAMD" "enti"
  CHECK(isa::vendor_from_cpuid(0x6f677948, 0x656e6975, 0x6e65476e) == CpuVendor::Other);  // "HygonGenuine"
  CHECK(isa::vendor_from_cpuid(0x756e6547, 0x49656e69, 0x6c65746e) == CpuVendor::Other);  // ECX / EDX swapped
  CHECK(isa::vendor_from_cpuid(0, 0, 0) == CpuVendor::Other);
  CHECK(isa::default_prefetch(CpuVendor::Intel) == DecodePrefetch::Ahead);
  CHECK(isa::default_prefetch(CpuVendor::Amd) == DecodePrefetch::Span);
  CHECK(isa::default_prefetch(CpuVendor::Other) == DecodePrefetch::Span);
  for (CpuVendor v : {CpuVendor::Intel, CpuVendor::Amd, CpuVendor::Other}) {
    INFO(isa::vendor_name(v));
    CHECK(isa::choose_prefetch(nullptr, v) == isa::default_prefetch(v));
    CHECK(isa::choose_prefetch("", v) == isa::default_prefetch(v));
    CHECK(isa::choose_prefetch("auto", v) == isa::default_prefetch(v));
    CHECK(isa::choose_prefetch("span", v) == DecodePrefetch::Span);
    CHECK(isa::choose_prefetch("ahead", v) == DecodePrefetch::Ahead);
  }
  for (const char* bad : {"Ahead", "span ", "none", "1"}) {
    try {
      isa::choose_prefetch(bad, CpuVendor::Intel);
      FAIL("ORACLE_PREFETCH=" << bad << " was accepted");
    } catch (const InputError& e) {
      CHECK(e.file() == "ORACLE_PREFETCH");
      CHECK(e.field() == bad);
    }
  }
  // This CPU: the vendor agrees with the kernel's reading of it (/proc/cpuinfo vendor_id).
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("vendor_id", 0) == 0) {
      const bool intel = line.find("GenuineIntel") != std::string::npos;
      const bool amd = line.find("AuthenticAMD") != std::string::npos;
      CHECK(isa::cpu_vendor() == (intel ? CpuVendor::Intel : amd ? CpuVendor::Amd : CpuVendor::Other));
      break;
    }
}
