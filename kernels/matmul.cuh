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
// Stored types (W.type beyond F32 / Q8_0 / Q4_0): element k of row i is dequantized exactly as
//            reference/model/quant.cpp dequantize_row (ggml's dequantize_row_*)
//            computes it, each C expression as its mul_rn sequence left to right,
//            an offset added by one fma_rn (numerics v2):
//            F16 / BF16: fp16_to_f32 / bf16_to_f32 of the element;
//            Q4_1 {d, m, qs[16]}: fma(q, d, m);  Q5_0 {d, qh[4], qs[16]}: (q - 16)*d;
//            Q5_1 {d, m, qh[4], qs[16]}: fma(q, d, m) (q5: 4 bits of qs, the 5th from qh);
//            Q8_1 {d, s, qs[32]}: q*d;  Q2_K: fma(d*(sc & 15), q, -(dmin*(sc >> 4)));
//            Q3_K: (d*(scale6 - 32))*(q2 - (hmask ? 0 : 4));  Q4_K / Q5_K:
//            fma(d*sc, q, -(dmin*m)) with get_scale_min_k4 pairs; Q6_K: (d*sc)*(q6 - 32);
//            Q8_K: d*q (float32 d). 32-element blocks; k-quants 256-element super-blocks.
//            K must be a multiple of the block. The dot is the same canonical one,
//            so out equals ops::matmul over the dequantized rows bit for bit.
// Thread mapping: 16 consecutive threads per (row, token) pair, thread = lane
//            l = k mod 16; 256 threads per block = 16 pairs; pair p = row-major
//            over (t, i): i = p mod N, t = p / N.
// Reduction order: lane l does acc = fma_rn(w[k], x[k], acc) for k ≡ l (mod 16) in
//            increasing k from +0.0f; lanes combine by __shfl_down_sync
//            offsets 8, 4, 2, 1 (lane i += lane i + w); lane 0 writes.
// Matches:   numerics/numerics.h dot_canonical, i.e. the reference matmul
//            (docs/numerics.md §4 "MatMul / GEMV"), for any T and any batch order.
// ============================================================================
#include <cstdint>

#include "kernels/launch.h"
#include "numerics/dtype.h"
#include "numerics/numerics.h"

namespace oracle::kernels {

// The weight formats the GEMV reads: every DType (numerics/dtype.h, the one weight
// type of every layer) but the project's I8_ROW, which the device model dequantizes
// to float32 at load: float32 rows, and the stored types' blocks as the file holds them.
ORACLE_HD bool matmul_reads(DType t) { return t != DType::I8_ROW && dtype_block_elems(t) > 0; }

// A weight matrix (N, K) on the device, typed: N rows of K / dtype_block_elems(type)
// blocks of dtype_block_bytes(type), row-major, as the file stores them (F32: N x K floats).
struct WeightView {
  const void* data = nullptr;
  DType type = DType::F32;
};

// The one matmul entry point: out (T, N) = x (T, K) times W^T, dispatching once on
// W.type to its row reader (the formula above). K must be a multiple of the type's
// block and matmul_reads(W.type) must hold (throws std::invalid_argument otherwise).
void matmul(float* out, const float* x, WeightView W, int T, int K, int N, cudaStream_t stream = nullptr);

}  // namespace oracle::kernels
