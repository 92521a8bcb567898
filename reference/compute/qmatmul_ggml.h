#pragma once
// ============================================================================
// The ggml numerics profile's ops (docs/numerics.md "Engine-numerics profile
// ggml"): llama.cpp's CPU backend, as one fixed, deterministic order.
//
//   matmul against a quantized weight: each activation row x (K) is quantized
//   to the weight type's ggml dot partner (Q8_0 for Q4_0/Q5_0/Q8_0, Q8_1 for
//   Q4_1/Q5_1, Q8_K for the k-quants), each block's integer dot is exact, and
//   the blocks are combined in increasing order with num::fma_rn (one rounding):
//     acc = fma(d_w[b] * d_x[b], (float)isum[b], acc)      (d_w·d_x one rounded mul)
//     min = fma(m_w[b] * s_x[b] ..., min)                  (types with a min)
//     out = acc + min  (Q4_1, Q5_1)   or   acc - min  (k-quants)
//   F16 / BF16 weights: x rounded to F16 / BF16 (ggml's vec_dot_type), then
//   the canonical dot (every product is exact). F32: the canonical dot.
//   Every output depends on its own row and token only: any thread split or
//   token grouping gives the same bits.
//   rmsnorm_ggml: ggml_compute_forward_rms_norm_f32's order (sum of float32
//   squares in float64, in increasing k).
// ============================================================================
#include <span>

#include "reference/compute/qmatmul.h"
#include "reference/model/model.h"
#include "reference/model/quant.h"
#include "base/thread_pool.h"

namespace oracle::ops {

// ggml-cpu's type_traits_cpu[t].vec_dot_type; InputError (field "numerics")
// for types with no ggml CPU dot (Q8_1, Q8_K, I8_ROW as weights).
DType ggml_dot_partner(DType weight);

// ggml-cpu's activation quantizers on x86 (AVX/AVX2 quantize_row_q8_0 /
// q8_1, which the repacked kernels mirror; quantize_row_q8_K_ref for Q8_K).
//   Q8_0/Q8_1: amax = max|x|; d = amax / 127; id = amax != 0 ? 127 / amax : 0;
//              q = round-half-even(x * id); stored d = fp16(d);
//              Q8_1 also s = fp16(d * (float)Σq).
//   Q8_K:      max = the first x of largest |x|; 0: all zero; else
//              iscale = -127 / max; q = min(127, nearest_int(iscale * x));
//              d = 1 / iscale (float32); bsums = Σ of each 16 q.
void quantize_act_q8_0(const float* x, int64_t k, BlockQ8_0* y);
void quantize_act_q8_1(const float* x, int64_t k, BlockQ8_1* y);
void quantize_act_q8_K(const float* x, int64_t k, BlockQ8_K* y);

// out (T, N) = W (N, K) · x (T, K) in the profile's order (above).
void matmul_ggml(float* out, const float* x, const WeightMatrix& w, int T, int K, int N, ThreadPool* pool);
void matmul_jobs_ggml(std::span<const MatmulJob> jobs, const float* x, int T, int K, ThreadPool* pool);

// out = (x * r) * w, r = 1 / sqrtf((float)(Σ_k (double)(x[k]*x[k]) / n) + eps)   out, x, w: (n)
void rmsnorm_ggml(float* out, const float* x, const float* w, int n, float eps);

// Rounds each value to the nearest F16 (the KV cache llama.cpp stores by default).
void fp16_roundtrip(float* x, int n);

}  // namespace oracle::ops
