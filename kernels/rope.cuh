#pragma once
// ============================================================================
// RoPE, interleaved pairs (llama2.c / GGUF layout), deterministic version 1.
//
// Formula:   for each head and pair i < head_dim/2, with (c, s) =
//            (cos_table[pos, i], sin_table[pos, i]):
//              x0 = v[2i], x1 = v[2i+1];
//              v[2i]   = sub_rn(mul_rn(x0, c), mul_rn(x1, s));
//              v[2i+1] = add_rn(mul_rn(x0, s), mul_rn(x1, c)).
//            The tables are computed once on the host with rope_freq /
//            rope_cos_sin (numerics/numerics.h) and copied to the device:
//            both pipelines use the same float bits.
// Shapes:    q (T, n_heads * head_dim), k (T, n_kv_heads * head_dim), in place;
//            pos (T) absolute positions; cos_table, sin_table (seq_len, head_dim/2).
// Thread mapping: one thread per (token, head over q then k, pair), 256 per block.
// Reduction order: none (elementwise).
// Matches:   docs/numerics.md §4 "RoPE" (reference rope) bit for bit.
// ============================================================================
#include "kernels/launch.h"

namespace oracle::kernels {

void rope(float* q, float* k, const int* pos, const float* cos_table, const float* sin_table,
          int T, int n_heads, int n_kv_heads, int head_dim, cudaStream_t stream = nullptr);

}  // namespace oracle::kernels
