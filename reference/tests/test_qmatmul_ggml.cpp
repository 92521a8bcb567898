// The ggml numerics profile (qmatmul_ggml.h, docs/numerics.md "Engine-numerics
// profile ggml") against its definition:
//   - the activation quantizers on hand-made rows whose answers follow from
//     ggml-cpu's x86 quantize_row_q8_0/q8_1 and quantize_row_q8_K_ref by hand
//     (ties to even, scale amax/127, Q8_K's signed max and bsums);
//   - the dot of every weight type: a spec loop written from the docs (the
//     block's integers re-derived here from ggml's bit layout, one fma per
//     block in increasing order) bit for bit for the 32-blocks, and for every
//     type the float64 value Σ_j dequant(w)_j · dequant(x)_j within float
//     rounding (a wrong level, scale or min is far outside);
//   - thread counts, token grouping and matmul_jobs change no bit;
//   - the forward pass under the profile: deterministic across threads and
//     chunking, K/V on the F16 grid, close to but not equal to canonical.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "numerics/numerics.h"
#include "base/errors.h"
#include "base/thread_pool.h"
#include "reference/compute/forward.h"
#include "reference/compute/kv_cache.h"
#include "reference/compute/qmatmul_ggml.h"
#include "reference/model/quant.h"
#include "reference/model/quantize_rows.h"
#include "test_support.h"

using namespace oracle;

namespace {

std::vector<float> random_row(std::mt19937& rng, int n, float scale) {
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> x(n);
  for (float& v : x) v = nd(rng);
  return x;
}

std::vector<uint8_t> quantized(DType t, const std::vector<float>& x) {
  std::vector<uint8_t> b(dtype_row_bytes(t, (int64_t)x.size()));
  quantize_row(t, x.data(), (int64_t)x.size(), b.data());
  return b;
}

// Spec for the 32-blocks, from ggml's layout: integer sums, then
// acc = fma(fp16(wd)·fp16(xd), isum, acc) in increasing block order (+ Σ fma(m, s) for Q4_1).
float spec_dot_q4_0_q8_0(const std::vector<uint8_t>& w, const std::vector<BlockQ8_0>& a) {
  float acc = 0.0f;
  for (size_t b = 0; b < a.size(); b++) {
    const uint8_t* blk = &w[b * 18];
    uint16_t d;
    std::memcpy(&d, blk, 2);
    int isum = 0;
    for (int j = 0; j < 16; j++)
      isum += ((blk[2 + j] & 15) - 8) * a[b].qs[j] + ((blk[2 + j] >> 4) - 8) * a[b].qs[j + 16];
    acc = std::fma(num::fp16_to_f32(d) * num::fp16_to_f32(a[b].d), (float)isum, acc);
  }
  return acc;
}

float spec_dot_q4_1_q8_1(const std::vector<uint8_t>& w, const std::vector<BlockQ8_1>& a) {
  float acc = 0.0f, mins = 0.0f;
  for (size_t b = 0; b < a.size(); b++) {
    const uint8_t* blk = &w[b * 20];
    uint16_t d, m;
    std::memcpy(&d, blk, 2);
    std::memcpy(&m, blk + 2, 2);
    int isum = 0;
    for (int j = 0; j < 16; j++) isum += (blk[4 + j] & 15) * a[b].qs[j] + (blk[4 + j] >> 4) * a[b].qs[j + 16];
    acc = std::fma(num::fp16_to_f32(d) * num::fp16_to_f32(a[b].d), (float)isum, acc);
    mins = std::fma(num::fp16_to_f32(m), num::fp16_to_f32(a[b].s), mins);
  }
  return acc + mins;
}

float spec_dot_q8_0_q8_0(const std::vector<uint8_t>& w, const std::vector<BlockQ8_0>& a) {
  float acc = 0.0f;
  for (size_t b = 0; b < a.size(); b++) {
    const uint8_t* blk = &w[b * 34];
    uint16_t d;
    std::memcpy(&d, blk, 2);
    int8_t q[32];  // as int8 values: gcc 12.2 -O3 with AVX512-VNNI miscompiles a (int8_t)uint8 * int8 sum
    std::memcpy(q, blk + 2, 32);  // (vpdpbusd treats the converted bytes as unsigned)
    int isum = 0;
    for (int j = 0; j < 32; j++) isum += q[j] * a[b].qs[j];
    acc = std::fma(num::fp16_to_f32(d) * num::fp16_to_f32(a[b].d), (float)isum, acc);
  }
  return acc;
}

// The activation's values as ggml's blocks hold them (float64).
std::vector<double> act_values(DType partner, const std::vector<float>& x) {
  const int K = (int)x.size();
  std::vector<double> v(K);
  if (partner == DType::Q8_K) {
    std::vector<BlockQ8_K> a(K / 256);
    ops::quantize_act_q8_K(x.data(), K, a.data());
    for (int j = 0; j < K; j++) v[j] = (double)a[j / 256].d * a[j / 256].qs[j % 256];
  } else {
    std::vector<BlockQ8_0> a(K / 32);
    ops::quantize_act_q8_0(x.data(), K, a.data());  // Q8_1 holds the same d and q
    for (int j = 0; j < K; j++) v[j] = (double)num::fp16_to_f32(a[j / 32].d) * a[j / 32].qs[j % 32];
  }
  return v;
}

}  // namespace

TEST_CASE("Q8_0/Q8_1 activation blocks: d = amax/127, q = x·(127/amax) rounded half to even") {
  std::vector<float> x(32, 0.0f);
  const float vals[] = {127.0f, 2.5f, -2.5f, 3.5f, 0.5f, -0.5f, 1.49f, -126.5f, 64.0f};
  for (int j = 0; j < 9; j++) x[j] = vals[j];
  BlockQ8_0 q0;
  ops::quantize_act_q8_0(x.data(), 32, &q0);
  CHECK(q0.d == 0x3C00);  // fp16(1.0): amax 127
  const int want[] = {127, 2, -2, 4, 0, 0, 1, -126, 64};
  for (int j = 0; j < 9; j++) CHECK((int)q0.qs[j] == want[j]);
  for (int j = 9; j < 32; j++) CHECK(q0.qs[j] == 0);
  BlockQ8_1 q1;
  ops::quantize_act_q8_1(x.data(), 32, &q1);
  CHECK(q1.d == 0x3C00);
  CHECK(std::memcmp(q1.qs, q0.qs, 32) == 0);
  CHECK(num::fp16_to_f32(q1.s) == 127 + 2 - 2 + 4 + 0 + 0 + 1 - 126 + 64);  // d · Σq = 70
  // amax 2: d = 2/127 (fp16-rounded when stored), id = 63.5; 1 -> 63.5 -> 64 (even), -1 -> -64
  std::vector<float> y(32, 0.0f);
  y[0] = 2.0f, y[1] = 1.0f, y[2] = -1.0f, y[3] = -2.0f;
  ops::quantize_act_q8_0(y.data(), 32, &q0);
  CHECK(q0.d == num::f32_to_fp16(2.0f / 127.0f));
  CHECK((int)q0.qs[0] == 127);
  CHECK((int)q0.qs[1] == 64);
  CHECK((int)q0.qs[2] == -64);
  CHECK((int)q0.qs[3] == -127);
  std::vector<float> zero(64, 0.0f);
  BlockQ8_0 z[2];
  ops::quantize_act_q8_0(zero.data(), 64, z);
  CHECK(z[1].d == 0);
  CHECK(z[1].qs[5] == 0);
}

TEST_CASE("Q8_K activation blocks: signed max, iscale -127/max, nearest_int, bsums") {
  std::vector<float> x(256, 0.0f);
  x[0] = 1.0f, x[1] = -2.0f, x[2] = 2.0f, x[17] = -1.0f, x[255] = 0.25f;  // max = -2 (first of largest |x|)
  BlockQ8_K b;
  ops::quantize_act_q8_K(x.data(), 256, &b);
  CHECK(b.d == 1.0f / 63.5f);  // d = 1 / iscale, iscale = -127 / -2
  CHECK((int)b.qs[0] == 64);   // 63.5 -> 64 (even)
  CHECK((int)b.qs[1] == -127);
  CHECK((int)b.qs[2] == 127);
  CHECK((int)b.qs[17] == -64);  // -63.5 -> -64
  CHECK((int)b.qs[255] == 16);  // 15.875 -> 16
  CHECK(b.bsums[0] == 64 - 127 + 127);
  CHECK(b.bsums[1] == -64);
  CHECK(b.bsums[15] == 16);
  std::vector<float> zero(256, 0.0f);
  ops::quantize_act_q8_K(zero.data(), 256, &b);
  CHECK(b.d == 0.0f);
  CHECK(b.bsums[3] == 0);
}

TEST_CASE("ggml dot partners follow ggml-cpu's vec_dot_type") {
  CHECK(ops::ggml_dot_partner(DType::Q4_0) == DType::Q8_0);
  CHECK(ops::ggml_dot_partner(DType::Q5_0) == DType::Q8_0);
  CHECK(ops::ggml_dot_partner(DType::Q8_0) == DType::Q8_0);
  CHECK(ops::ggml_dot_partner(DType::Q4_1) == DType::Q8_1);
  CHECK(ops::ggml_dot_partner(DType::Q5_1) == DType::Q8_1);
  for (DType t : {DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K})
    CHECK(ops::ggml_dot_partner(t) == DType::Q8_K);
  CHECK(ops::ggml_dot_partner(DType::F16) == DType::F16);
  CHECK_THROWS_AS(ops::ggml_dot_partner(DType::I8_ROW), InputError);
}

TEST_CASE("32-block dots equal the spec loop bit for bit (one fma per block, increasing order)") {
  std::mt19937 rng(27);
  for (int nb : {1, 3, 18, 48}) {
    const int K = 32 * nb;
    for (int trial = 0; trial < 8; trial++) {
      const std::vector<float> wf = random_row(rng, K, 0.05f), xf = random_row(rng, K, 1.5f);
      std::vector<BlockQ8_0> a0(nb);
      std::vector<BlockQ8_1> a1(nb);
      ops::quantize_act_q8_0(xf.data(), K, a0.data());
      ops::quantize_act_q8_1(xf.data(), K, a1.data());
      float out;
      const std::vector<uint8_t> w40 = quantized(DType::Q4_0, wf), w41 = quantized(DType::Q4_1, wf),
                                 w80 = quantized(DType::Q8_0, wf);
      ops::matmul_ggml(&out, xf.data(), WeightMatrix(DType::Q4_0, w40.data()), 1, K, 1, nullptr);
      CHECK(num::f32_bits(out) == num::f32_bits(spec_dot_q4_0_q8_0(w40, a0)));
      ops::matmul_ggml(&out, xf.data(), WeightMatrix(DType::Q4_1, w41.data()), 1, K, 1, nullptr);
      CHECK(num::f32_bits(out) == num::f32_bits(spec_dot_q4_1_q8_1(w41, a1)));
      ops::matmul_ggml(&out, xf.data(), WeightMatrix(DType::Q8_0, w80.data()), 1, K, 1, nullptr);
      CHECK(num::f32_bits(out) == num::f32_bits(spec_dot_q8_0_q8_0(w80, a0)));
    }
  }
}

TEST_CASE("every weight type: the integer view times the activation blocks is Σ dequant(w)·dequant(x)") {
  std::mt19937 rng(2027);
  const DType types[] = {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q2_K,
                         DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::F16, DType::BF16, DType::F32};
  for (DType t : types) {
    INFO(dtype_name(t));
    const int K = 512;
    for (int trial = 0; trial < 6; trial++) {
      const std::vector<float> wf = random_row(rng, K, 0.05f), xf = random_row(rng, K, 2.0f);
      const std::vector<uint8_t> w = quantized(t, wf);
      std::vector<float> wd(K);
      dequantize_row(t, w.data(), K, wd.data());
      const DType p = ops::ggml_dot_partner(t);
      std::vector<double> xv(K);
      if (p == DType::F16 || p == DType::BF16 || p == DType::F32)
        for (int j = 0; j < K; j++)
          xv[j] = p == DType::F16 ? num::fp16_to_f32(num::f32_to_fp16(xf[j]))
                  : p == DType::BF16 ? num::bf16_to_f32(num::f32_to_bf16(xf[j])) : xf[j];
      else
        xv = act_values(p, xf);
      double exact = 0.0, mag = 0.0;
      for (int j = 0; j < K; j++) exact += (double)wd[j] * xv[j], mag += std::fabs((double)wd[j] * xv[j]);
      if (p == DType::Q8_1) {  // ggml's min term is m · s with s = fp16(d · Σq) (the Q8_1 block's own field)
        std::vector<BlockQ8_1> a1(K / 32);
        ops::quantize_act_q8_1(xf.data(), K, a1.data());
        const size_t bytes = t == DType::Q4_1 ? 20 : 24;
        for (int b = 0; b < K / 32; b++) {
          uint16_t m;
          std::memcpy(&m, &w[b * bytes + 2], 2);
          int sum = 0;
          for (int j = 0; j < 32; j++) sum += a1[b].qs[j];
          exact += (double)num::fp16_to_f32(m) *
                   ((double)num::fp16_to_f32(a1[b].s) - (double)num::fp16_to_f32(a1[b].d) * sum);
        }
      }
      float out;
      ops::matmul_ggml(&out, xf.data(), WeightMatrix(t, w.data()), 1, K, 1, nullptr);
      CHECK(std::fabs(out - exact) <= 2e-5 * mag + 1e-30);
    }
  }
}

TEST_CASE("matmul_ggml: threads, token count and matmul_jobs change no bit") {
  std::mt19937 rng(7);
  const int K = 512, N = 37, T = 5;
  for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q4_K, DType::Q6_K, DType::F16}) {
    INFO(dtype_name(t));
    std::vector<uint8_t> w;
    for (int i = 0; i < N; i++) {
      const std::vector<uint8_t> r = quantized(t, random_row(rng, K, 0.05f));
      w.insert(w.end(), r.begin(), r.end());
    }
    const std::vector<float> x = random_row(rng, T * K, 1.0f);
    const WeightMatrix W(t, w.data());
    std::vector<float> one(T * N), two(T * N), three(T * N), single(N), jobs_a(T * N), jobs_b(T * N);
    ops::matmul_ggml(one.data(), x.data(), W, T, K, N, nullptr);
    ThreadPool p2(2), p3(3);
    ops::matmul_ggml(two.data(), x.data(), W, T, K, N, &p2);
    ops::matmul_ggml(three.data(), x.data(), W, T, K, N, &p3);
    CHECK(std::memcmp(one.data(), two.data(), sizeof(float) * T * N) == 0);
    CHECK(std::memcmp(one.data(), three.data(), sizeof(float) * T * N) == 0);
    ops::matmul_ggml(single.data(), x.data() + 3 * K, W, 1, K, N, nullptr);  // token 3 alone
    CHECK(std::memcmp(single.data(), one.data() + 3 * N, sizeof(float) * N) == 0);
    const ops::MatmulJob jobs[] = {{jobs_a.data(), W, N}, {jobs_b.data(), W, N}};
    ops::matmul_jobs_ggml(jobs, x.data(), T, K, &p3);
    CHECK(std::memcmp(one.data(), jobs_a.data(), sizeof(float) * T * N) == 0);
    CHECK(std::memcmp(one.data(), jobs_b.data(), sizeof(float) * T * N) == 0);
  }
}

TEST_CASE("forward under the ggml profile: deterministic, F16 K/V, near but not equal to canonical") {
  const std::string path = oracle::test::models("gguf/llama2xs-q8_0.gguf");
  REQUIRE(oracle::test::have(path));
  const Model m = load_model(path);
  const std::vector<int> toks = {1, 403, 407, 261, 300, 41, 77, 500, 12, 9};
  auto run = [&](num::NumericsProfile p, int threads, int chunk) {
    KvCacheOptions ko;
    KvCache kv(m.config, ko);
    ForwardOptions fo;
    fo.numerics = p, fo.threads = threads, fo.all_logits = true;
    std::vector<float> all;
    for (size_t s = 0; s < toks.size(); s += chunk) {
      const size_t e = std::min(toks.size(), s + chunk);
      const std::vector<float> l = forward(m, kv, 0, std::span<const int>(toks.data() + s, e - s), fo);
      all.insert(all.end(), l.begin(), l.end());
    }
    const int kv_dim = m.config.n_kv_heads * m.config.head_dim;
    if (p == num::NumericsProfile::Ggml)
      for (int j = 0; j < kv_dim; j++) {
        const float k = kv.key(0, 2, 5)[j], v = kv.value(0, 4, 9)[j];
        CHECK(num::fp16_to_f32(num::f32_to_fp16(k)) == k);
        CHECK(num::fp16_to_f32(num::f32_to_fp16(v)) == v);
      }
    return all;
  };
  const std::vector<float> g1 = run(num::NumericsProfile::Ggml, 1, 10);
  CHECK(g1 == run(num::NumericsProfile::Ggml, 2, 10));
  CHECK(g1 == run(num::NumericsProfile::Ggml, 1, 3));
  CHECK(g1 == run(num::NumericsProfile::Ggml, 2, 1));
  const std::vector<float> c = run(num::NumericsProfile::Canonical, 1, 10);
  REQUIRE(c.size() == g1.size());
  double max_diff = 0.0, max_abs = 0.0;
  for (size_t i = 0; i < c.size(); i++)
    max_diff = std::max(max_diff, (double)std::fabs(c[i] - g1[i])), max_abs = std::max(max_abs, (double)std::fabs(c[i]));
  CHECK(max_diff > 0.0);              // the activations are quantized: not the canonical bits
  CHECK(max_diff < 0.05 * max_abs);   // but the same model
  KvCacheOptions ko;
  ko.int8 = true;
  KvCache kv(m.config, ko);
  ForwardOptions fo;
  fo.numerics = num::NumericsProfile::Ggml;
  CHECK_THROWS_AS(forward(m, kv, 0, toks, fo), InputError);
}
