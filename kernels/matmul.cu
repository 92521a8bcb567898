// MatMul / GEMV, deterministic version 1 — see kernels/matmul.cuh.
#include "kernels/matmul.cuh"

#include "faults/fault.h"
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

// ---- the other stored types (matmul.cuh "Stored types") -------------------------
__device__ __forceinline__ uint32_t u32_at(const uint8_t* p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

// Element j < 32 of a Q5_0 / Q5_1 block: 4 low bits in qs, the 5th in bit j (j < 16) or
// bit j - 16 + 16 (j >= 16) of qh (little-endian u32).
__device__ __forceinline__ int q5_value(const uint8_t* qs, uint32_t qh, int j) {
  if (j < 16) return (qs[j] & 0x0F) | (int)(((qh >> j) << 4) & 0x10);
  const int jj = j - 16;
  const int shift = oracle::fault::active(oracle::fault::Fault::KERNEL_Q5_HIGH_BIT_SHIFT) ? jj + 11 : jj + 12;  // FAULT
  return (qs[jj] >> 4) | (int)((qh >> shift) & 0x10);
}

// ggml get_scale_min_k4: the j-th (scale, min) pair of Q4_K / Q5_K.
__device__ __forceinline__ void scale_min_k4(int j, const uint8_t* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

struct RowStored {
  const uint8_t* W;
  DType type;
  int K;
  __device__ float at(long long i, int k) const {
    using namespace oracle::num;
    const int be = (int)dtype_block_elems(type), bb = (int)dtype_block_bytes(type);
    const uint8_t* b = W + i * (long long)(K / be) * bb + (long long)(k / be) * bb;
    const int j = k % be;
    switch (type) {
      case DType::F16: return fp16_at(b);
      case DType::BF16: return bf16_to_f32((uint16_t)(b[0] | (b[1] << 8)));
      case DType::Q4_1: {
        const int q = j < 16 ? b[4 + j] & 0x0F : b[4 + j - 16] >> 4;
        return fma_rn((float)q, fp16_at(b), fp16_at(b + 2));
      }
      case DType::Q5_0: return mul_rn((float)(q5_value(b + 6, u32_at(b + 2), j) - 16), fp16_at(b));
      case DType::Q5_1:
        return fma_rn((float)q5_value(b + 8, u32_at(b + 4), j), fp16_at(b), fp16_at(b + 2));
      case DType::Q8_1: return mul_rn((float)(int8_t)b[4 + j], fp16_at(b));
      default: return k_quant(b, j);
    }
  }
  // Element j < 256 of a k-quant super-block, in ggml's dequantize_row_* order of operations.
  __device__ float k_quant(const uint8_t* b, int j) const {
    using namespace oracle::num;
    switch (type) {
      case DType::Q2_K: {  // scales[16] qs[64] d dmin
        const int n = j / 128, r = j % 128, s = r / 32, l = r % 32, half = l / 16;
        const uint8_t sc = b[n * 8 + s * 2 + half];
        const float dl = mul_rn(fp16_at(b + 80), (float)(sc & 0xF)), ml = mul_rn(fp16_at(b + 82), (float)(sc >> 4));
        return fma_rn(dl, (float)((b[16 + 32 * n + l] >> (2 * s)) & 3), -ml);
      }
      case DType::Q3_K: {  // hmask[32] qs[64] scales[12] d
        const int n = j / 128, r = j % 128, s = r / 32, l = r % 32, is = n * 8 + s * 2 + l / 16;
        const uint8_t* packed = b + 96;
        const int low = is < 8 ? packed[is] & 0xF : packed[is - 8] >> 4;
        const int high = (packed[8 + is % 4] >> (2 * (is / 4))) & 3;
        const float dl = mul_rn(fp16_at(b + 108), (float)((low | (high << 4)) - 32));
        const int v = ((b[32 + 32 * n + l] >> (2 * s)) & 3) - ((b[l] & (1 << (n * 4 + s))) ? 0 : 4);
        return mul_rn(dl, (float)v);
      }
      case DType::Q4_K:
      case DType::Q5_K: {  // d dmin scales[12] (qh[32]) qs[128]
        const bool five = type == DType::Q5_K;
        const int g = j / 64, r = j % 64, hi = r >= 32, l = r % 32;
        int sc, m;
        const bool swap = oracle::fault::active(oracle::fault::Fault::KERNEL_K_QUANT_SCALE_PAIR);  // FAULT
        scale_min_k4(2 * g + (swap ? 0 : hi), b + 4, &sc, &m);
        const float d1 = mul_rn(fp16_at(b), (float)sc), m1 = mul_rn(fp16_at(b + 2), (float)m);
        const uint8_t* qs = b + (five ? 48 : 16) + 32 * g;
        int q = hi ? qs[l] >> 4 : qs[l] & 0xF;
        if (five) q += (b[16 + l] & ((hi ? 2 : 1) << (2 * g))) ? 16 : 0;
        return fma_rn(d1, (float)q, -m1);
      }
      case DType::Q6_K: {  // ql[128] qh[64] scales[16] d
        const int n = j / 128, r = j % 128, quarter = r / 32, l = r % 32, is = l / 16;
        const uint8_t* ql = b + 64 * n;
        const uint8_t qh = b[128 + 32 * n + l];
        const int low = quarter == 0 ? ql[l] & 0xF : quarter == 1 ? ql[l + 32] & 0xF : quarter == 2 ? ql[l] >> 4
                                                                                                    : ql[l + 32] >> 4;
        const int q = (low | (((qh >> (2 * quarter)) & 3) << 4)) - 32;
        const float sc = (float)(int8_t)b[192 + 8 * n + is + 2 * quarter];
        return mul_rn(mul_rn(fp16_at(b + 208), sc), (float)q);
      }
      default: {  // Q8_K: float d, int8 qs[256]
        return mul_rn(f32_from_bits(u32_at(b)), (float)(int8_t)b[4 + j]);
      }
    }
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
      acc = oracle::num::fma_rn(W.at(i, k), x[t * K + k], acc);
  float sum = group_tree_sum(acc);
  if (valid && lane == 0) out[t * N + i] = sum;
}

template <typename Row>
void launch_matmul(float* out, const float* x, Row W, int T, int K, int N, cudaStream_t stream) {
  if (N <= 0 || T <= 0) return;
  launch(group_launch((long long)N * T, kPairsPerBlock, kThreads, stream), matmul_kernel<Row>, W, x, out, N, K, T);
}

}  // namespace

void matmul(float* out, const float* x, WeightView W, int T, int K, int N, cudaStream_t stream) {
  if (!matmul_reads(W.type)) throw std::invalid_argument("matmul: no device reader for this weight type");
  if (K % dtype_block_elems(W.type) != 0)
    throw std::invalid_argument("matmul: K must be a multiple of the weight type's block");
  const uint8_t* bytes = static_cast<const uint8_t*>(W.data);
  switch (W.type) {
    case DType::F32: return launch_matmul(out, x, RowF32{static_cast<const float*>(W.data), K}, T, K, N, stream);
    case DType::Q8_0: return launch_matmul(out, x, RowQ8_0{bytes, K}, T, K, N, stream);
    case DType::Q4_0: return launch_matmul(out, x, RowQ4_0{bytes, K}, T, K, N, stream);
    default: return launch_matmul(out, x, RowStored{bytes, W.type, K}, T, K, N, stream);
  }
}

}  // namespace oracle::kernels
