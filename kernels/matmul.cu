// MatMul / GEMV, deterministic version 1 — see kernels/matmul.cuh.
#include "kernels/matmul.cuh"

#include "kernels/lane_group.cuh"
#include "numerics/spec.h"

namespace oracle::kernels {

namespace spec = oracle::spec;
constexpr int kQB = spec::kQuantBlock;  // elements per Q8_0/Q4_0 block
namespace {

constexpr int kThreads = 256;                 // threads per block
constexpr int kPairsPerBlock = kThreads / kGroup;

// ---- row accessors: element k of weight row i, in float32 --------------------
struct RowF32 {
  const float* W;
  int K;
  __device__ float at(long long i, int k) const { return W[i * K + k]; }
};

__device__ __forceinline__ float fp16_at(const uint8_t* p) {
  return oracle::num::fp16_to_f32((uint16_t)(p[0] | (p[1] << 8)));
}

struct RowQ8_0 {
  const uint8_t* W;
  int K;
  __device__ float at(long long i, int k) const {
    const uint8_t* block = W + i * (long long)(K / kQB) * spec::kQ8_0BlockBytes + (k / kQB) * spec::kQ8_0BlockBytes;
    float q = (float)(int8_t)block[2 + k % kQB];
    return oracle::num::mul_rn(fp16_at(block), q);
  }
};

struct RowQ4_0 {
  const uint8_t* W;
  int K;
  __device__ float at(long long i, int k) const {
    const uint8_t* block = W + i * (long long)(K / kQB) * spec::kQ4_0BlockBytes + (k / kQB) * spec::kQ4_0BlockBytes;
    int j = k % kQB;
    int q = j < kQB / 2 ? (block[2 + j] & 15) - 8 : (block[2 + j - kQB / 2] >> 4) - 8;
    return oracle::num::mul_rn(fp16_at(block), (float)q);
  }
};

// ---- kernel: 16 lanes per (row, token) pair ------------------------------------
template <typename Row>
__global__ void matmul_kernel(Row W, const float* x, float* out, int N, int K, int T) {
  const int lane = threadIdx.x % kGroup;
  const long long pair = (long long)blockIdx.x * kPairsPerBlock + threadIdx.x / kGroup;
  const bool valid = pair < (long long)N * T;  // invalid pairs still join the shuffles
  const long long i = valid ? pair % N : 0;
  const long long t = valid ? pair / N : 0;
  float acc = 0.0f;
  if (valid)
    for (int k = lane; k < K; k += kGroup)
      acc = oracle::num::add_rn(acc, oracle::num::mul_rn(W.at(i, k), x[t * K + k]));
  float sum = group_tree_sum(acc);
  if (valid && lane == 0) out[t * N + i] = sum;
}

template <typename Row>
void launch_matmul(float* out, const float* x, Row W, int T, int K, int N, cudaStream_t stream) {
  if (N <= 0 || T <= 0) return;
  launch(group_launch((long long)N * T, kPairsPerBlock, kThreads, stream), matmul_kernel<Row>, W, x, out, N, K, T);
}

void require_k32(int K, const char* what) {
  if (K % 32 != 0) throw std::invalid_argument(std::string(what) + ": K must be a multiple of 32");
}

}  // namespace

void matmul_f32(float* out, const float* x, const float* W, int T, int K, int N, cudaStream_t stream) {
  launch_matmul(out, x, RowF32{W, K}, T, K, N, stream);
}

void matmul_q8_0(float* out, const float* x, const uint8_t* W, int T, int K, int N, cudaStream_t stream) {
  require_k32(K, "matmul_q8_0");
  launch_matmul(out, x, RowQ8_0{W, K}, T, K, N, stream);
}

void matmul_q4_0(float* out, const float* x, const uint8_t* W, int T, int K, int N, cudaStream_t stream) {
  require_k32(K, "matmul_q4_0");
  launch_matmul(out, x, RowQ4_0{W, K}, T, K, N, stream);
}

}  // namespace oracle::kernels
