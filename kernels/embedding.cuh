#pragma once
// ============================================================================
// Embedding gather (version 1).
//
// Formula:   out[t, :] = table[tokens[t], :] (exact copy). A token outside
//            [0, vocab) yields a row of NaN (the host validates ids first;
//            NaN makes a slip visible instead of reading out of bounds).
// Shapes:    table (vocab, dim); tokens (T); out (T, dim).
// Thread mapping: one thread per output element, 256 per block.
// Reduction order: none.
// Matches:   docs/numerics.md §4 "Embedding" (reference embedding lookup).
// ============================================================================
#include "kernels/launch.h"

namespace oracle::kernels {

void embedding(float* out, const float* table, const int* tokens, int T, int vocab, int dim,
               cudaStream_t stream = nullptr);

}  // namespace oracle::kernels
