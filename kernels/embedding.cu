// Embedding gather — see kernels/embedding.cuh.
#include "kernels/embedding.cuh"

#include "numerics/numerics.h"

namespace oracle::kernels {
namespace {

constexpr int kThreads = 256;

__global__ void embedding_kernel(const float* table, const int* tokens, float* out, int vocab, int dim,
                                 int T) {
  const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= (long long)T * dim) return;
  const long long t = idx / dim;
  const int k = (int)(idx % dim);
  const int tok = tokens[t];
  out[idx] = (tok >= 0 && tok < vocab) ? table[(long long)tok * dim + k]
                                       : oracle::num::f32_from_bits(0x7fc00000u);
}

}  // namespace

void embedding(float* out, const float* table, const int* tokens, int T, int vocab, int dim,
               cudaStream_t stream) {
  if ((long long)T * dim <= 0) return;
  LaunchConfig cfg;
  cfg.grid = dim3(blocks_for((long long)T * dim, kThreads));
  cfg.block = dim3(kThreads);
  cfg.stream = stream;
  launch(cfg, embedding_kernel, table, tokens, out, vocab, dim, T);
}

}  // namespace oracle::kernels
