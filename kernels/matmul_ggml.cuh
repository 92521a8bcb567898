#pragma once
// ============================================================================
// MatMul in the engine-numerics profile ggml (deterministic, version 1;
// docs/numerics.md §5.2, docs/cuda.md "The ggml profile on the device").
//
// Two kernels per call, both a function of their own (row, token) only:
//
// 1. Activation quantizer: x (T, K) -> the weight type's ggml dot partner,
//    ggml_act_partner(W.type) (ggml-cpu's vec_dot_type), written to `act`
//    (T rows of ggml_act_row_bytes(partner, K) bytes, the host block layouts):
//      Q8_0 {fp16 d; int8 qs[32]}, Q8_1 {fp16 d; fp16 s; int8 qs[32]}, per 32-block:
//        amax = max |x| (scan in increasing j); d = div_rn(amax, 127);
//        id = amax != 0 ? div_rn(127, amax) : 0; q = round_half_even(mul_rn(x, id))
//        (num::round_even_small: ties to even, x86's _mm256_round_ps); d stored f32_to_fp16;
//        Q8_1 also s = f32_to_fp16(mul_rn(d, (float)Σq)).
//      Q8_K {float d; int8 qs[256]; int16 bsums[16]}, per 256-block: max = the
//        first x of largest |x| (strict > in increasing j); amax == 0: all zero;
//        else iscale = div_rn(-127, max); q = min(127, round_half_even(mul_rn(iscale, x)));
//        bsums[s] = Σ of q[16s .. 16s+15]; d = div_rn(1, iscale).
//      F16 / BF16: act holds x rounded to F16 / BF16 (nearest even) as float32 (T, K).
//      F32: nothing (x is used as it is).
//    Thread mapping: one thread per (token, block) (F16/BF16: per element).
// 2. Integer-dot matmul, out (T, N) from W (N, K) and act:
//      32-block types (Q4_0 Q5_0 Q8_0 against Q8_0; Q4_1 Q5_1 against Q8_1):
//        isum_b = Σ_j lv_j · q_j  (int32, exact: 8 dp4a of 4 int8 pairs)
//        acc = fma_rn(mul_rn(d_w[b], fp16(d_x[b])), (float)isum_b, acc)
//        Q4_1/Q5_1: mins = fma_rn(m_w[b], fp16(s_x[b]), mins); out = add_rn(acc, mins)
//      k-quants (Q2_K … Q6_K against Q8_K), per super-block b, sub-blocks s of 16:
//        isum_b = Σ_s sc_s · (Σ_{j in s} lv_j · q_j) (4 dp4a per s), imin_b = Σ_s mn_s · bsums_s
//        acc  = fma_rn(mul_rn(d_w[b], d_x[b]), (float)isum_b, acc)
//        mins = fma_rn(mul_rn(dmin_w[b], d_x[b]), (float)imin_b, mins)   (types with a min)
//        out = sub_rn(acc, mins)
//      blocks b in increasing order; acc, mins start at +0. lv, sc, mn, d, dmin are the
//      weight's integer view (reference/model/quant_levels.h: Q4_0 nib − 8, Q4_1 nib,
//      Q5_0 q5 − 16, Q5_1 q5, Q8_0 q; Q2_K q2, Q3_K q2 − (hbit ? 0 : 4), Q4_K nib,
//      Q5_K nib + 16·hbit, Q6_K q6 − 32).
//      F16 / BF16 / F32: kernels::matmul (the canonical 16-lane dot) over the rounded x.
//    Thread mapping: one thread per (row, token) pair, 128 threads per block,
//      pair p = row-major over (t, i): i = p mod N, t = p / N.
// Integer dots: dp4a(a, b, c) = c + Σ of the four int8 products of a and b's bytes,
//   `__dp4a` on the device and an exact host loop in the emulation; every integer sum is
//   exact (|isum| < 2^24), so its grouping changes no bit — only the float steps are ordered.
// Tie rule: round half to even for the activation levels and every float32 conversion.
// Matches:  reference/compute/qmatmul_ggml.h quantize_act_q8_0 / q8_1 / q8_K (the act
//   blocks, byte for byte) and matmul_ggml (out, bit for bit) for any T, N, K (K a
//   multiple of the weight's block), in any launch grouping.
// ============================================================================
#include <cstddef>
#include <cstdint>

#include "kernels/launch.h"
#include "kernels/matmul.cuh"
#include "numerics/dtype.h"

namespace oracle::kernels {

// ggml-cpu's vec_dot_type of a weight type: Q8_0 for Q4_0/Q5_0/Q8_0, Q8_1 for
// Q4_1/Q5_1, Q8_K for Q2_K…Q6_K, the type itself for F32/F16/BF16; I8_ROW and the
// activation types themselves (Q8_1, Q8_K) have none: returns I8_ROW for them.
DType ggml_act_partner(DType weight);
// True when the profile's device matmul runs on this weight type.
inline bool matmul_ggml_reads(DType weight) { return ggml_act_partner(weight) != DType::I8_ROW; }

// Bytes of one token's activation row in `partner` (F16/BF16: K floats; F32: 0).
size_t ggml_act_row_bytes(DType partner, int K);

// x (T, K) -> act (T rows of ggml_act_row_bytes(partner, K)); K a multiple of the block.
void quantize_act_ggml(void* act, const float* x, DType partner, int T, int K, cudaStream_t stream = nullptr);

// out (T, N) = W (N, K) against x (T, K) in the ggml profile: quantizes x into `act`
// (at least T * ggml_act_row_bytes(ggml_act_partner(W.type), K) bytes) and runs the
// integer-dot matmul (the formula above). Throws std::invalid_argument for a weight
// type with no ggml dot or K not a multiple of its block.
void matmul_ggml(float* out, const float* x, WeightView W, int T, int K, int N, void* act,
                 cudaStream_t stream = nullptr);

}  // namespace oracle::kernels
