#pragma once
// ============================================================================
// Speculative verification on the device (deterministic, version 1).
//
// Formula (docs/speculative.md, reference speculative_step): position
// t_i = position + i, p_i / q_i the target / draft processed distributions,
// x_i the drafts; for i = 0..k-1:
//   accept x_i iff mul_rn(u_acc_i, q_i[x_i]) < p_i[x_i]
//     (u_acc_i = philox(seed, seq, t_i, 0, kPurposeSpecAccept));
//   on the first rejection emit y = draw(max(0, sub_rn(p_i, q_i)), u_res_i),
//     or draw(p_i, u_res_i) if that residual is all zero
//     (u_res_i = philox(seed, seq, t_i, 0, kPurposeSpecResample)), and stop;
//   after k acceptances emit the bonus draw(p_k, philox(seed, seq, t_k, 0, kPurposeSample)).
// draw() is the sampler's inverse CDF (kernels/sampler.cuh): (p desc, id asc)
// order, target = u * sequential total, first running sum > target.
// Shapes: p (k+1, vocab); q (k, vocab); drafts (k); out (k+2):
//         out[0] = accepted, out[1 .. accepted+1] = emitted tokens.
// Thread mapping: residual — 1 thread / element; every candidate draw
//         (residual rows, p rows) is computed with the sampler building blocks
//         (rank sort per row, 1 thread / row draw); the accept chain — 1 thread.
//         Draws of rows after the first rejection are computed and ignored.
// Matches: reference/generate/speculative.cpp speculative_step bit for bit.
// ============================================================================
#include <cstddef>
#include <cstdint>

#include "kernels/launch.h"

namespace oracle::kernels {

size_t speculative_workspace_floats(int k, int vocab);
size_t speculative_workspace_ints(int k, int vocab);

void speculative_verify(int* out, const float* p, const float* q, const int* drafts, int k, int vocab, uint64_t seed,
                        int seq, int position, float* workspace_f, int* workspace_i,
                        cudaStream_t stream = nullptr);

}  // namespace oracle::kernels
