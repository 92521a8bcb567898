#pragma once
// ============================================================================
// MatMul / GEMV family (deterministic, version 1).
//
// Formula:   out[t, i] = dot_canonical(W[i, :], x[t, :], K)
//            for every output row i < N and token t < T.
// Shapes:    W (N, K) row-major; x (T, K); out (T, N).
//            Q8_0: W row i = K/32 blocks {fp16 d; int8 q[32]} (34 bytes),
//                  w[k] = mul_rn(fp16_to_f32(d), (float)q[k mod 32]).
//            Q4_0: W row i = K/32 blocks {fp16 d; uint8 qs[16]} (18 bytes),
//                  q[j] = (qs[j] & 15) - 8, q[j + 16] = (qs[j] >> 4) - 8,
//                  w[k] = mul_rn(fp16_to_f32(d), (float)q[k mod 32]).
//            Quantized rows are dequantized exactly as ggml (and the loader)
//            do, then reduced with the same canonical dot: the result equals
//            dot_canonical(dequantized row, x, K) bit for bit.
// Thread mapping: 16 consecutive threads per (row, token) pair, thread = lane
//            l = k mod 16; 256 threads per block = 16 pairs; pair p = row-major
//            over (t, i): i = p mod N, t = p / N.
// Reduction order: lane l sums mul_rn(w[k], x[k]) for k ≡ l (mod 16) in
//            increasing k from +0.0f; lanes combine by __shfl_down_sync
//            offsets 8, 4, 2, 1 (lane i += lane i + w); lane 0 writes.
// Matches:   numerics/numerics.h dot_canonical, i.e. the reference matmul
//            (docs/numerics.md §4 "MatMul / GEMV"), for any T and any batch order.
// ============================================================================
#include <cstdint>

#include "kernels/launch.h"

namespace oracle::kernels {

void matmul_f32(float* out, const float* x, const float* W, int T, int K, int N,
                cudaStream_t stream = nullptr);
// K must be a multiple of 32 (throws std::invalid_argument otherwise).
void matmul_q8_0(float* out, const float* x, const uint8_t* W, int T, int K, int N,
                 cudaStream_t stream = nullptr);
void matmul_q4_0(float* out, const float* x, const uint8_t* W, int T, int K, int N,
                 cudaStream_t stream = nullptr);

}  // namespace oracle::kernels
