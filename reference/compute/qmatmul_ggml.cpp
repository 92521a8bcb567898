// The ggml numerics profile's matmul and norm (qmatmul_ggml.h, docs/numerics.md
// "Engine-numerics profile ggml"). Plain loops: integer block dots (exact in
// int32, so their evaluation order is free), then one fixed float order.
#include "reference/compute/qmatmul_ggml.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "faults/fault.h"
#include "numerics/numerics.h"
#include "base/errors.h"
#include "reference/compute/ops.h"
#include "reference/model/quant_levels.h"

namespace oracle::ops {

DType ggml_dot_partner(DType t) {
  switch (t) {
    case DType::F32: case DType::F16: case DType::BF16: return t;
    case DType::Q4_0: case DType::Q5_0: case DType::Q8_0: return DType::Q8_0;
    case DType::Q4_1: case DType::Q5_1: return DType::Q8_1;
    case DType::Q2_K: case DType::Q3_K: case DType::Q4_K: case DType::Q5_K: case DType::Q6_K: return DType::Q8_K;
    default:
      throw InputError(dtype_name(t), "numerics",
                       "the ggml numerics profile has no dot product for this weight type (ggml-cpu has none)");
  }
}

// ---- activation quantizers ------------------------------------------------------------------
namespace {

float block_amax(const float* x, int n) {  // max |x| (AVX max_ps: NaN-free inputs, order irrelevant)
  float amax = 0.0f;
  for (int j = 0; j < n; j++) amax = std::max(amax, std::fabs(x[j]));
  return amax;
}

// round-half-even(v) as _mm256_round_ps(_MM_ROUND_NEAREST) + cvtps_epi32 (|v| <= 127 here).
int round_even_i(float v) { return (int)num::round_even_small(v); }

// One 32-block of Q8_0/Q8_1 (x86 quantize_row_q8_0/q8_1): q and Σq; returns d before fp16.
float quantize_block32(const float* x, int8_t* qs, int* sum) {
  const float amax = block_amax(x, QK4_0);
  const float levels = fault::active(fault::Fault::GGML_ACT_SCALE_128) ? 128.0f : 127.0f;  // FAULT: amax/128
  const float d = num::div_rn(amax, levels);
  const float id = amax != 0.0f ? num::div_rn(levels, amax) : 0.0f;
  *sum = 0;
  for (int j = 0; j < QK4_0; j++) {
    const float v = num::mul_rn(x[j], id);
    const bool away = fault::active(fault::Fault::GGML_ACT_ROUND_AWAY);  // FAULT: roundf (ties away from zero)
    qs[j] = (int8_t)(away ? (int)std::round(v) : round_even_i(v));
    *sum += qs[j];
  }
  return d;
}

}  // namespace

void quantize_act_q8_0(const float* x, int64_t k, BlockQ8_0* y) {
  for (int64_t i = 0; i < k / QK4_0; i++) {
    int sum;
    y[i].d = num::f32_to_fp16(quantize_block32(x + i * QK4_0, y[i].qs, &sum));
  }
}

void quantize_act_q8_1(const float* x, int64_t k, BlockQ8_1* y) {
  for (int64_t i = 0; i < k / QK4_0; i++) {
    int sum;
    const float d = quantize_block32(x + i * QK4_0, y[i].qs, &sum);
    y[i].d = num::f32_to_fp16(d);
    y[i].s = num::f32_to_fp16(num::mul_rn(d, (float)sum));
  }
}

void quantize_act_q8_K(const float* x, int64_t k, BlockQ8_K* y) {
  for (int64_t i = 0; i < k / QK_K; i++, x += QK_K) {
    float max = 0.0f, amax = 0.0f;
    for (int j = 0; j < QK_K; j++) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) amax = ax, max = x[j];
    }
    BlockQ8_K& b = y[i];
    b = BlockQ8_K{};
    if (amax == 0.0f) continue;  // d = 0, all q and bsums 0
    const float iscale = num::div_rn(-127.0f, max);
    for (int j = 0; j < QK_K; j++) {
      const float v = num::mul_rn(iscale, x[j]);
      b.qs[j] = (int8_t)std::min(127, round_even_i(v));  // nearest_int: half to even (|v| <= 127)
    }
    for (int s = 0; s < QK_K / 16; s++) {
      int sum = 0;
      for (int j = 0; j < 16; j++) sum += b.qs[16 * s + j];
      b.bsums[s] = (int16_t)sum;
    }
    b.d = num::div_rn(1.0f, iscale);
  }
}

// ---- one token's activation row, in the partner type --------------------------------------------
namespace {

struct ActRow {
  std::vector<BlockQ8_0> q80;  // (K / 32)
  std::vector<BlockQ8_1> q81;  // (K / 32)
  std::vector<BlockQ8_K> q8k;  // (K / 256)
  std::vector<float> f;        // (K) F32 / F16 / BF16 partners: the values as ggml converts them
};

void prepare_act(DType partner, const float* x, int K, ActRow& a) {
  switch (partner) {
    case DType::Q8_0: a.q80.resize(K / QK4_0); quantize_act_q8_0(x, K, a.q80.data()); break;
    case DType::Q8_1: a.q81.resize(K / QK4_0); quantize_act_q8_1(x, K, a.q81.data()); break;
    case DType::Q8_K: a.q8k.resize(K / QK_K); quantize_act_q8_K(x, K, a.q8k.data()); break;
    default:
      a.f.assign(x, x + K);
      for (float& v : a.f)
        v = partner == DType::F16 ? num::fp16_to_f32(num::f32_to_fp16(v))
            : partner == DType::BF16 ? num::bf16_to_f32(num::f32_to_bf16(v)) : v;
  }
}

int32_t dot_i8(const int8_t* a, const int8_t* b, int n) {  // exact
  int32_t s = 0;
  for (int j = 0; j < n; j++) s += (int32_t)a[j] * (int32_t)b[j];
  return s;
}

// Q4_0 … Q8_0 against Q8_0 / Q8_1 blocks, in increasing block order.
template <class Act>
float dot_blocks32(const LevelRow& w, const Act* a, int nb) {
  float acc = 0.0f, min = 0.0f;
  const bool reversed = fault::active(fault::Fault::GGML_COMBINE_REVERSED);  // FAULT: decreasing block order
  for (int i = 0; i < nb; i++) {
    const int b = reversed ? nb - 1 - i : i;
    const float isum = (float)dot_i8(&w.lv[(size_t)b * QK4_0], a[b].qs, QK4_0);
    const float dd = num::mul_rn(w.d[b], num::fp16_to_f32(a[b].d));
    acc = num::fma_rn(dd, isum, acc);
    if constexpr (std::is_same_v<Act, BlockQ8_1>) min = num::fma_rn(w.m[b], num::fp16_to_f32(a[b].s), min);
  }
  if constexpr (std::is_same_v<Act, BlockQ8_1>) return num::add_rn(acc, min);
  return acc;
}

// k-quants against Q8_K super-blocks: isum = Σ_s sc_s·(lv·q)_s, imin = Σ_s mn_s·bsums_s (exact).
float dot_blocks_k(const LevelRow& w, const BlockQ8_K* a, int nb) {
  float acc = 0.0f, min = 0.0f;
  const bool reversed = fault::active(fault::Fault::GGML_COMBINE_REVERSED);  // FAULT: decreasing block order
  for (int k = 0; k < nb; k++) {
    const int b = reversed ? nb - 1 - k : k;
    int32_t isum = 0, imin = 0;
    for (int s = 0; s < QK_K / 16; s++) {
      const int i = b * (QK_K / 16) + s;
      isum += (int32_t)w.sc[i] * dot_i8(&w.lv[(size_t)i * 16], a[b].qs + 16 * s, 16);
      imin += (int32_t)w.mn[i] * (int32_t)a[b].bsums[s];
    }
    acc = num::fma_rn(num::mul_rn(w.d[b], a[b].d), (float)isum, acc);
    if (w.has_min) min = num::fma_rn(num::mul_rn(w.m[b], a[b].d), (float)imin, min);
  }
  return num::sub_rn(acc, min);
}

float dot_row(DType partner, const LevelRow& w, const std::vector<float>& wf, const ActRow& a, int K) {
  switch (partner) {
    case DType::Q8_0: return dot_blocks32(w, a.q80.data(), K / QK4_0);
    case DType::Q8_1: return dot_blocks32(w, a.q81.data(), K / QK4_0);
    case DType::Q8_K: return dot_blocks_k(w, a.q8k.data(), K / QK_K);
    default: return dot(wf.data(), a.f.data(), K);  // F32/F16/BF16: canonical dot, exact products
  }
}

// Rows [r0, r1) of one matrix for every token; acts (T) prepared once per call.
void rows_ggml(float* out, const std::vector<ActRow>& acts, const WeightMatrix& w, int T, int K, int N, int r0,
               int r1) {
  const DType partner = ggml_dot_partner(w.type);
  const int64_t row_bytes = dtype_row_bytes(w.type, K);
  LevelRow lr;
  std::vector<float> wf;  // (K) plain types: the row as float32 (exact)
  for (int i = r0; i < r1; i++) {
    const uint8_t* row = w.data + (int64_t)i * row_bytes;
    if (has_levels(w.type)) decode_levels(w.type, row, K, lr);
    else wf.resize(K), dequantize_row(w.type, row, K, wf.data());
    for (int t = 0; t < T; t++) out[(size_t)t * N + i] = dot_row(partner, lr, wf, acts[t], K);
  }
}

std::vector<ActRow> prepare_acts(DType partner, const float* x, int T, int K) {
  std::vector<ActRow> acts(T);  // (T)
  for (int t = 0; t < T; t++) prepare_act(partner, x + (size_t)t * K, K, acts[t]);
  return acts;
}

constexpr int kRowsPerTask = 4;

}  // namespace

void matmul_ggml(float* out, const float* x, const WeightMatrix& w, int T, int K, int N, ThreadPool* pool) {
  const MatmulJob job{out, w, N};
  matmul_jobs_ggml(std::span<const MatmulJob>(&job, 1), x, T, K, pool);
}

// One parallel_for over the row groups of every job; each output is a function of its own
// (row, token) only, so the split changes no bit.
void matmul_jobs_ggml(std::span<const MatmulJob> jobs, const float* x, int T, int K, ThreadPool* pool) {
  std::vector<std::vector<ActRow>> acts;  // (jobs) the activation rows in each job's partner type
  std::vector<int> first_task{0};         // (jobs + 1)
  for (const MatmulJob& j : jobs) {
    acts.push_back(prepare_acts(ggml_dot_partner(j.w.type), x, T, K));
    first_task.push_back(first_task.back() + (j.n_out + kRowsPerTask - 1) / kRowsPerTask);
  }
  auto work = [&](int begin, int end) {
    for (int task = begin; task < end; task++) {
      size_t j = 0;
      while (first_task[j + 1] <= task) j++;
      const int r0 = (task - first_task[j]) * kRowsPerTask, r1 = std::min(r0 + kRowsPerTask, jobs[j].n_out);
      rows_ggml(jobs[j].out, acts[j], jobs[j].w, T, K, jobs[j].n_out, r0, r1);
    }
  };
  if (pool) pool->parallel_for(first_task.back(), work);
  else work(0, first_task.back());
}

void rmsnorm_ggml(float* out, const float* x, const float* w, int n, float eps) {
  double sum = 0.0;
  for (int k = 0; k < n; k++) sum += (double)num::mul_rn(x[k], x[k]);  // ggml_float, increasing k
  const float mean = (float)(sum / (double)n);
  const float scale = num::div_rn(1.0f, num::sqrt_rn(num::add_rn(mean, eps)));
  for (int k = 0; k < n; k++) out[k] = num::mul_rn(num::mul_rn(x[k], scale), w[k]);
}

void fp16_roundtrip(float* x, int n) {
  for (int k = 0; k < n; k++) x[k] = num::fp16_to_f32(num::f32_to_fp16(x[k]));
}

}  // namespace oracle::ops
