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
  avx512.avx512f = true;
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
  CHECK(isa::feature_names(avx512) == std::vector<std::string>{"sse2", "avx", "avx2", "f16c", "fma", "avx512f"});
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
