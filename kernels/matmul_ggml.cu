// MatMul in the ggml numerics profile, deterministic version 1 — see kernels/matmul_ggml.cuh.
#include "kernels/matmul_ggml.cuh"

#include <cmath>

#include "faults/fault.h"
#include "numerics/numerics.h"

namespace oracle::kernels {
namespace {

constexpr int kThreads = 128;
constexpr int kQ32 = 32;    // Q8_0 / Q8_1 block
constexpr int kQK = 256;    // Q8_K super-block
constexpr int kQ8_0Bytes = 34, kQ8_1Bytes = 36, kQ8_KBytes = 292;  // {d; qs}, {d; s; qs}, {f32 d; qs; bsums}

// ---- integer helpers --------------------------------------------------------------------
// c + the four signed int8 products of a's and b's bytes: __dp4a on the device; the same
// exact sum on the host (every term and partial sum fits int32).
__device__ __forceinline__ int dp4a(int a, int b, int c) {
#if defined(__CUDA_ARCH__)
  return __dp4a(a, b, c);
#else
  for (int i = 0; i < 4; i++)
    c += (int)(int8_t)(uint8_t)((unsigned)a >> (8 * i)) * (int)(int8_t)(uint8_t)((unsigned)b >> (8 * i));
  return c;
#endif
}

__device__ __forceinline__ int pack4(int v0, int v1, int v2, int v3) {  // four int8 values, byte 0 first
  return (int)((unsigned)(uint8_t)v0 | (unsigned)(uint8_t)v1 << 8 | (unsigned)(uint8_t)v2 << 16 |
               (unsigned)(uint8_t)v3 << 24);
}
__device__ __forceinline__ int pack4_bytes(const uint8_t* p) { return pack4(p[0], p[1], p[2], p[3]); }

__device__ __forceinline__ float fp16_at(const uint8_t* p) {
  return oracle::num::fp16_to_f32((uint16_t)(p[0] | (p[1] << 8)));
}
__device__ __forceinline__ void put_fp16(uint8_t* p, float v) {
  const uint16_t h = oracle::num::f32_to_fp16(v);
  p[0] = (uint8_t)(h & 0xFF), p[1] = (uint8_t)(h >> 8);
}
__device__ __forceinline__ uint32_t u32_at(const uint8_t* p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
__device__ __forceinline__ void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

// ---- activation quantizers (one thread per (token, block)) ----------------------------------
// One 32-block of Q8_0 / Q8_1 (x86 quantize_row_q8_0 / q8_1): qs, Σq; returns d before fp16.
__device__ float quantize_block32(const float* x, int8_t* qs, int* sum) {
  using namespace oracle::num;
  float amax = 0.0f;
  for (int j = 0; j < kQ32; j++) {
    const float ax = f32_from_bits(f32_bits(x[j]) & 0x7FFFFFFFu);
    amax = amax < ax ? ax : amax;  // std::max(amax, |x|)
  }
  const bool scale128 = oracle::fault::active(oracle::fault::Fault::KERNEL_GGML_ACT_SCALE_128);  // FAULT: amax/128
  const float levels = scale128 ? 128.0f : 127.0f;
  const float d = div_rn(amax, levels);
  const float id = amax != 0.0f ? div_rn(levels, amax) : 0.0f;
  const bool away = oracle::fault::active(oracle::fault::Fault::KERNEL_GGML_ACT_ROUND_AWAY);  // FAULT: roundf
  *sum = 0;
  for (int j = 0; j < kQ32; j++) {
    const float v = mul_rn(x[j], id);
    qs[j] = (int8_t)(away ? (int)::roundf(v) : (int)round_even_small(v));
    *sum += qs[j];
  }
  return d;
}

__global__ void quantize_q8_32_kernel(const float* x, uint8_t* act, int T, int K, bool q8_1) {
  const int nb = K / kQ32, bytes = q8_1 ? kQ8_1Bytes : kQ8_0Bytes;
  const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;  // (t, b)
  if (idx >= (long long)T * nb) return;
  uint8_t* blk = act + idx * bytes;
  int sum = 0;
  const float d = quantize_block32(x + idx * kQ32, (int8_t*)(blk + (q8_1 ? 4 : 2)), &sum);
  put_fp16(blk, d);
  if (q8_1) put_fp16(blk + 2, oracle::num::mul_rn(d, (float)sum));
}

// One 256-block of Q8_K (quantize_row_q8_K_ref).
__global__ void quantize_q8_k_kernel(const float* x, uint8_t* act, int T, int K) {
  using namespace oracle::num;
  const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;  // (t, b)
  if (idx >= (long long)T * (K / kQK)) return;
  const float* xb = x + idx * kQK;
  uint8_t* blk = act + idx * kQ8_KBytes;
  int8_t* qs = (int8_t*)(blk + 4);
  float max = 0.0f, amax = 0.0f;
  for (int j = 0; j < kQK; j++) {
    const float ax = f32_from_bits(f32_bits(xb[j]) & 0x7FFFFFFFu);
    if (ax > amax) amax = ax, max = xb[j];
  }
  float d = 0.0f;
  if (amax == 0.0f) {
    for (int j = 0; j < kQK; j++) qs[j] = 0;
  } else {
    const float iscale = div_rn(-127.0f, max);
    for (int j = 0; j < kQK; j++) {
      const int q = (int)round_even_small(mul_rn(iscale, xb[j]));
      qs[j] = (int8_t)(q < 127 ? q : 127);
    }
    d = div_rn(1.0f, iscale);
  }
  for (int s = 0; s < kQK / 16; s++) {
    int sum = 0;
    for (int j = 0; j < 16; j++) sum += qs[16 * s + j];
    const uint16_t u = (uint16_t)(int16_t)sum;
    blk[4 + kQK + 2 * s] = (uint8_t)(u & 0xFF), blk[4 + kQK + 2 * s + 1] = (uint8_t)(u >> 8);
  }
  put_u32(blk, f32_bits(d));
}

// F16 / BF16 partners: x rounded to the partner type, kept as float32.
__global__ void round_act_kernel(const float* x, float* act, long long n, bool bf16) {
  using namespace oracle::num;
  const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= n) return;
  act[idx] = bf16 ? bf16_to_f32(f32_to_bf16(x[idx])) : fp16_to_f32(f32_to_fp16(x[idx]));
}

// ---- the weight's integer view (reference/model/quant_levels.h) --------------------------------
// Level j < 32 of a 32-element block.
__device__ __forceinline__ int q5_bits(const uint8_t* qs, uint32_t qh, int j) {
  return j < 16 ? (qs[j] & 0x0F) | (int)(((qh >> j) << 4) & 0x10) : (qs[j - 16] >> 4) | (int)((qh >> (j - 4)) & 0x10);
}
__device__ int level32(DType t, const uint8_t* b, int j) {
  switch (t) {
    case DType::Q4_0: return (j < 16 ? b[2 + j] & 0x0F : b[2 + j - 16] >> 4) - 8;
    case DType::Q4_1: return j < 16 ? b[4 + j] & 0x0F : b[4 + j - 16] >> 4;
    case DType::Q5_0: return q5_bits(b + 6, u32_at(b + 2), j) - 16;
    case DType::Q5_1: return q5_bits(b + 8, u32_at(b + 4), j);
    default: return (int)(int8_t)b[2 + j];  // Q8_0
  }
}

// Level j < 256 of a k-quant super-block (element order as dequantize_row).
__device__ int level_k(DType t, const uint8_t* b, int j) {
  const int n = j / 128, r = j % 128, s = r / 32, l = r % 32;
  switch (t) {
    case DType::Q2_K: return (b[16 + 32 * n + l] >> (2 * s)) & 3;
    case DType::Q3_K: return ((b[32 + 32 * n + l] >> (2 * s)) & 3) - ((b[l] & (1 << (n * 4 + s))) ? 0 : 4);
    case DType::Q4_K:
    case DType::Q5_K: {
      const bool five = t == DType::Q5_K;
      const int g = j / 64, hi = (j % 64) >= 32, m = j % 32;
      const uint8_t* qs = b + (five ? 48 : 16) + 32 * g;
      int q = hi ? qs[m] >> 4 : qs[m] & 0xF;
      if (five && (b[16 + m] & ((hi ? 2 : 1) << (2 * g)))) q += 16;
      return q;
    }
    default: {  // Q6_K: ql[128] qh[64] scales[16] d
      const uint8_t* ql = b + 64 * n;
      const uint8_t qh = b[128 + 32 * n + l];
      const int low = s == 0 ? ql[l] & 0xF : s == 1 ? ql[l + 32] & 0xF : s == 2 ? ql[l] >> 4 : ql[l + 32] >> 4;
      return (low | (((qh >> (2 * s)) & 3) << 4)) - 32;
    }
  }
}

// ggml get_scale_min_k4: pair j of Q4_K / Q5_K's packed 12 bytes.
__device__ __forceinline__ void scale_min_k4(int j, const uint8_t* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63, *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4), *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// Sub-block s < 16 (16 elements) of a k-quant super-block: integer scale and min (0 without mins).
__device__ void scale_min_k(DType t, const uint8_t* b, int s, int* sc, int* mn) {
  *mn = 0;
  switch (t) {
    case DType::Q2_K: *sc = b[s] & 0xF, *mn = b[s] >> 4; return;
    case DType::Q3_K: {
      const uint8_t* packed = b + 96;
      const int low = s < 8 ? packed[s] & 0xF : packed[s - 8] >> 4;
      const int high = (packed[8 + s % 4] >> (2 * (s / 4))) & 3;
      *sc = (low | (high << 4)) - 32;
      return;
    }
    case DType::Q4_K: case DType::Q5_K: scale_min_k4(s / 2, b + 4, sc, mn); return;
    default: *sc = (int)(int8_t)b[192 + s]; return;  // Q6_K
  }
}

// Block scale d and min scale dmin (0 where the type has none) of a k-quant super-block.
__device__ void scales_k(DType t, const uint8_t* b, float* d, float* dmin) {
  *dmin = 0.0f;
  switch (t) {
    case DType::Q2_K: *d = fp16_at(b + 80), *dmin = fp16_at(b + 82); return;
    case DType::Q3_K: *d = fp16_at(b + 108); return;
    case DType::Q4_K: case DType::Q5_K: *d = fp16_at(b), *dmin = fp16_at(b + 2); return;
    default: *d = fp16_at(b + 208); return;  // Q6_K
  }
}

// ---- integer-dot matmuls (one thread per (row, token)) -----------------------------------------
// 32-block weights against Q8_0 / Q8_1 blocks, in increasing block order.
__global__ void matmul_ggml32_kernel(const uint8_t* W, DType type, const uint8_t* act, float* out, int N, int K,
                                     int T) {
  using namespace oracle::num;
  const long long pair = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (pair >= (long long)N * T) return;
  const long long i = pair % N, t = pair / N;
  const int nb = K / kQ32, wbytes = (int)dtype_block_bytes(type);
  const bool q8_1 = type == DType::Q4_1 || type == DType::Q5_1;
  const int abytes = q8_1 ? kQ8_1Bytes : kQ8_0Bytes;
  const uint8_t* wrow = W + i * nb * wbytes;
  const uint8_t* arow = act + t * nb * abytes;
  const bool reversed = oracle::fault::active(oracle::fault::Fault::KERNEL_GGML_COMBINE_REVERSED);  // FAULT
  float acc = 0.0f, mins = 0.0f;
  for (int k = 0; k < nb; k++) {
    const int b = reversed ? nb - 1 - k : k;
    const uint8_t* wb = wrow + (long long)b * wbytes;
    const uint8_t* ab = arow + (long long)b * abytes;
    const uint8_t* qs = ab + (q8_1 ? 4 : 2);
    int isum = 0;
    for (int j = 0; j < kQ32; j += 4)
      isum = dp4a(pack4(level32(type, wb, j), level32(type, wb, j + 1), level32(type, wb, j + 2),
                        level32(type, wb, j + 3)), pack4_bytes(qs + j), isum);
    acc = fma_rn(mul_rn(fp16_at(wb), fp16_at(ab)), (float)isum, acc);
    if (q8_1) mins = fma_rn(fp16_at(wb + 2), fp16_at(ab + 2), mins);
  }
  out[t * N + i] = q8_1 ? add_rn(acc, mins) : acc;
}

// k-quant weights against Q8_K super-blocks, in increasing block order.
__global__ void matmul_ggml_k_kernel(const uint8_t* W, DType type, const uint8_t* act, float* out, int N, int K,
                                     int T) {
  using namespace oracle::num;
  const long long pair = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (pair >= (long long)N * T) return;
  const long long i = pair % N, t = pair / N;
  const int nb = K / kQK, wbytes = (int)dtype_block_bytes(type);
  const bool has_min = type == DType::Q2_K || type == DType::Q4_K || type == DType::Q5_K;
  const uint8_t* wrow = W + i * nb * wbytes;
  const uint8_t* arow = act + t * nb * kQ8_KBytes;
  const bool reversed = oracle::fault::active(oracle::fault::Fault::KERNEL_GGML_COMBINE_REVERSED);  // FAULT
  float acc = 0.0f, mins = 0.0f;
  for (int k = 0; k < nb; k++) {
    const int b = reversed ? nb - 1 - k : k;
    const uint8_t* wb = wrow + (long long)b * wbytes;
    const uint8_t* ab = arow + (long long)b * kQ8_KBytes;
    int isum = 0, imin = 0;
    for (int s = 0; s < kQK / 16; s++) {
      int dot = 0;
      for (int j = 16 * s; j < 16 * s + 16; j += 4)
        dot = dp4a(pack4(level_k(type, wb, j), level_k(type, wb, j + 1), level_k(type, wb, j + 2),
                         level_k(type, wb, j + 3)), pack4_bytes(ab + 4 + j), dot);
      int sc, mn;
      scale_min_k(type, wb, s, &sc, &mn);
      const int bsum = (int)(int16_t)(uint16_t)(ab[4 + kQK + 2 * s] | (ab[4 + kQK + 2 * s + 1] << 8));
      isum += sc * dot;
      imin += mn * bsum;
    }
    float d, dmin;
    scales_k(type, wb, &d, &dmin);
    const float dx = f32_from_bits(u32_at(ab));
    acc = fma_rn(mul_rn(d, dx), (float)isum, acc);
    if (has_min) mins = fma_rn(mul_rn(dmin, dx), (float)imin, mins);
  }
  out[t * N + i] = sub_rn(acc, mins);
}

}  // namespace

DType ggml_act_partner(DType t) {
  switch (t) {
    case DType::F32: case DType::F16: case DType::BF16: return t;
    case DType::Q4_0: case DType::Q5_0: case DType::Q8_0: return DType::Q8_0;
    case DType::Q4_1: case DType::Q5_1: return DType::Q8_1;
    case DType::Q2_K: case DType::Q3_K: case DType::Q4_K: case DType::Q5_K: case DType::Q6_K: return DType::Q8_K;
    default: return DType::I8_ROW;
  }
}

size_t ggml_act_row_bytes(DType partner, int K) {
  switch (partner) {
    case DType::Q8_0: return (size_t)(K / kQ32) * kQ8_0Bytes;
    case DType::Q8_1: return (size_t)(K / kQ32) * kQ8_1Bytes;
    case DType::Q8_K: return (size_t)(K / kQK) * kQ8_KBytes;
    case DType::F16: case DType::BF16: return sizeof(float) * (size_t)K;
    default: return 0;
  }
}

void quantize_act_ggml(void* act, const float* x, DType partner, int T, int K, cudaStream_t stream) {
  if (T <= 0) return;
  uint8_t* a = static_cast<uint8_t*>(act);
  switch (partner) {
    case DType::Q8_0: case DType::Q8_1:
      if (K % kQ32 != 0) throw std::invalid_argument("quantize_act_ggml: K must be a multiple of 32");
      return launch(flat_launch((long long)T * (K / kQ32), kThreads, stream), quantize_q8_32_kernel, x, a, T, K,
                    partner == DType::Q8_1);
    case DType::Q8_K:
      if (K % kQK != 0) throw std::invalid_argument("quantize_act_ggml: K must be a multiple of 256");
      return launch(flat_launch((long long)T * (K / kQK), kThreads, stream), quantize_q8_k_kernel, x, a, T, K);
    case DType::F16: case DType::BF16:
      return launch(flat_launch((long long)T * K, kThreads, stream), round_act_kernel, x, static_cast<float*>(act),
                    (long long)T * K, partner == DType::BF16);
    default: return;  // F32: nothing to convert
  }
}

void matmul_ggml(float* out, const float* x, WeightView W, int T, int K, int N, void* act, cudaStream_t stream) {
  const DType partner = ggml_act_partner(W.type);
  if (partner == DType::I8_ROW) throw std::invalid_argument("matmul_ggml: the ggml profile has no dot for this type");
  if (K % dtype_block_elems(W.type) != 0)
    throw std::invalid_argument("matmul_ggml: K must be a multiple of the weight type's block");
  if (N <= 0 || T <= 0) return;
  quantize_act_ggml(act, x, partner, T, K, stream);
  const uint8_t* w = static_cast<const uint8_t*>(W.data);
  const uint8_t* a = static_cast<const uint8_t*>(act);
  switch (partner) {
    case DType::F32: return matmul(out, x, W, T, K, N, stream);
    case DType::F16: case DType::BF16: return matmul(out, static_cast<const float*>(act), W, T, K, N, stream);
    case DType::Q8_K:
      return launch(flat_launch((long long)N * T, kThreads, stream), matmul_ggml_k_kernel, w, W.type, a, out, N, K, T);
    default:
      return launch(flat_launch((long long)N * T, kThreads, stream), matmul_ggml32_kernel, w, W.type, a, out, N, K, T);
  }
}

}  // namespace oracle::kernels
