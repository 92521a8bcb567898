#pragma once
// ============================================================================
// Matmul over weights in their stored type (F32, F16, BF16, ggml quant blocks,
// I8_ROW), read straight from the mapped file.
//
//   out[t*N + i] = dot_canonical(dequantize_row(w row i, K), &x[t*K], K)
//     out (T, N), x (T, K), w (N, K) stored as w.type
//
// bit for bit: each block is dequantized in registers with exactly the float32
// operations dequantize_row (quant.cpp) uses, in the same order, and every
// product goes into canonical lane (k mod 16) as one fused multiply-add
// (numerics v2; docs/numerics.md §2 and "Stored-type weights"). Splitting rows over
// threads, grouping tokens or rows, and the ISA path (scalar, AVX2, AVX-512:
// isa.h) change which outputs are computed together, never one output's order.
// ============================================================================
#include <span>

#include "reference/compute/isa.h"
#include "reference/model/model.h"
#include "base/thread_pool.h"

namespace oracle::ops {

void matmul(float* out, const float* x, const WeightMatrix& w, int T, int K, int N,
            ThreadPool* pool);

// Several matrices applied to the same input (q/k/v, gate/up): one
// parallel_for over all their rows, so the pool synchronises once.
struct MatmulJob {
  float* out;      // (T, n_out)
  WeightMatrix w;  // (n_out, K)
  int n_out;
};
void matmul_jobs(std::span<const MatmulJob> jobs, const float* x, int T, int K, ThreadPool* pool);

// Prefill's chunk of 4-row groups for `threads` threads: two chunks per
// thread (fewer when there are fewer groups), as even as whole groups allow.
int prefill_chunk(int groups, int threads);

// One ISA path's kernels over rows [row_begin, row_end), for tests: the
// scalar table dequantize_row's each block into a buffer (plain lane loops);
// the SIMD tables decode in registers (k.register_decoder(type)) or, for the
// other types, from a dequantize_row buffer with the SIMD lane loop.
void matmul_rows(const isa::Kernels& k, float* out, const float* x, const WeightMatrix& w, int T,
                 int K, int N, int row_begin, int row_end);

}  // namespace oracle::ops
