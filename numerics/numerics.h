#pragma once
// ============================================================================
// Canonical numerics (docs/numerics.md) — header-only, no dependencies.
// Compiles as plain C++ and as CUDA (__host__ __device__), so the reference and
// the deterministic kernels share the exact same float32 operation sequences.
//
// Rules every function here obeys:
//   * float32 operations only (plus float64 in the RoPE-table helpers, which
//     run once per (position, frequency) and are shared by both pipelines);
//   * numerics v2: every multiply-accumulate of the contract (the dot lanes,
//     attention's p·v, dequantization with an offset) is one fused
//     multiply-add, fma_rn (IEEE fusedMultiplyAdd, one rounding); every other
//     a*b+c stays a rounded multiply then a rounded add (mul_rn/add_rn). No
//     compiler decides: -ffp-contract=off on the host, every fma written
//     explicitly (fma_rn, _mm256_fmadd_ps, __fmaf_rn), __fmul_rn/__fadd_rn on
//     the device (docs/numerics.md §1, the per-op table);
//   * no libm transcendentals: exp/log/sin/cos are our own polynomials;
//   * reductions have one fixed order (lane-strided, halving tree), never
//     dependent on batch size, thread count or vector width.
// ============================================================================
#include <cstdint>

#if defined(__CUDACC__) && !defined(ORACLE_CUDA_EMULATION)
#define ORACLE_HD __host__ __device__ __forceinline__
#define ORACLE_ON_DEVICE_COMPILER 1
#else
#define ORACLE_HD inline
#endif

namespace oracle::num {

// ---- bit casts ---------------------------------------------------------------
ORACLE_HD uint32_t f32_bits(float f) {
  uint32_t u;
  __builtin_memcpy(&u, &f, sizeof u);
  return u;
}
ORACLE_HD float f32_from_bits(uint32_t u) {
  float f;
  __builtin_memcpy(&f, &u, sizeof f);
  return f;
}
ORACLE_HD uint64_t f64_bits(double d) {
  uint64_t u;
  __builtin_memcpy(&u, &d, sizeof u);
  return u;
}
ORACLE_HD double f64_from_bits(uint64_t u) {
  double d;
  __builtin_memcpy(&d, &u, sizeof d);
  return d;
}
ORACLE_HD float inf_f32() { return f32_from_bits(0x7f800000u); }

// ---- rounded basic operations (explicit so CUDA cannot contract them) --------
#if defined(ORACLE_ON_DEVICE_COMPILER) && defined(__CUDA_ARCH__)
ORACLE_HD float mul_rn(float a, float b) { return __fmul_rn(a, b); }
ORACLE_HD float add_rn(float a, float b) { return __fadd_rn(a, b); }
ORACLE_HD float sub_rn(float a, float b) { return __fsub_rn(a, b); }
ORACLE_HD float div_rn(float a, float b) { return __fdiv_rn(a, b); }
ORACLE_HD float sqrt_rn(float a) { return __fsqrt_rn(a); }
ORACLE_HD double dmul_rn(double a, double b) { return __dmul_rn(a, b); }
ORACLE_HD double dadd_rn(double a, double b) { return __dadd_rn(a, b); }
ORACLE_HD float fma_rn(float a, float b, float c) { return __fmaf_rn(a, b, c); }
#else
ORACLE_HD float mul_rn(float a, float b) { return a * b; }
ORACLE_HD float add_rn(float a, float b) { return a + b; }
ORACLE_HD float sub_rn(float a, float b) { return a - b; }
ORACLE_HD float div_rn(float a, float b) { return a / b; }
ORACLE_HD float sqrt_rn(float a) { return __builtin_sqrtf(a); }  // IEEE, correctly rounded
ORACLE_HD double dmul_rn(double a, double b) { return a * b; }
ORACLE_HD double dadd_rn(double a, double b) { return a + b; }
// round(a*b + c) with one rounding (IEEE 754 fusedMultiplyAdd). A TU built
// with -mfma (the SIMD paths) inlines vfmadd; a baseline x86-64 TU calls
// libm's fmaf, which is exact on every CPU (hardware FMA or software).
ORACLE_HD float fma_rn(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
#endif

// ---- half / bfloat16 -> float32 (exact) --------------------------------------
ORACLE_HD float fp16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return f32_from_bits(sign | 0x7f800000u | (man << 13));  // inf / nan
  if (exp == 0) {
    if (man == 0) return f32_from_bits(sign);
    // subnormal half: man * 2^-24, exact in float32
    float v = (float)man * f32_from_bits(0x33800000u);  // 2^-24
    return (sign != 0u) ? -v : v;
  }
  return f32_from_bits(sign | ((exp + 112u) << 23) | (man << 13));
}
ORACLE_HD float bf16_to_f32(uint16_t b) { return f32_from_bits((uint32_t)b << 16); }

// float32 -> fp16, round to nearest even (used by writers and quantizers).
ORACLE_HD uint16_t f32_to_fp16(float f) {
  uint32_t x = f32_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (ax < 0x38800000u) {                                     // below 2^-14: subnormal half
    if (ax < 0x33000000u) return (uint16_t)sign;              // < 2^-25 rounds to 0
    uint32_t e = ax >> 23;
    uint32_t m = (ax & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - e;  // 14..24 -> value m * 2^(e-150) in units of 2^-24
    uint32_t q = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u))) q++;
    return (uint16_t)(sign | q);
  }
  uint32_t r = ax + 0xfffu + ((ax >> 13) & 1u) - 0x38000000u;  // rebias, round to nearest even
  return (uint16_t)(sign | (r >> 13));
}
ORACLE_HD uint16_t f32_to_bf16(float f) {
  uint32_t x = f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// ---- canonical reductions ------------------------------------------------------
// kLanes accumulators; element k goes to lane (k mod kLanes), each lane
// accumulates its elements in increasing k starting from +0.0f (a dot:
// acc = fma_rn(a[k], b[k], acc); a sum: acc = add_rn(acc, x[k])); the lanes are then combined by a
// halving tree: for w = 8, 4, 2, 1: lane[i] = lane[i] + lane[i + w] (i < w).
// A CUDA group of 16 threads reproduces it with thread = lane and
// __shfl_down_sync offsets 8, 4, 2, 1 (docs/numerics.md, "thread mapping").
constexpr int kLanes = 16;

ORACLE_HD float lane_tree_reduce(float* acc) {
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int i = 0; i < w; i++) acc[i] = add_rn(acc[i], acc[i + w]);
  return acc[0];
}

// dot_canonical(a, b, n) = tree( lane_l = fma chain over k ≡ l mod 16, increasing k )
ORACLE_HD float dot_canonical(const float* a, const float* b, int n) {
  float acc[kLanes];
  for (int l = 0; l < kLanes; l++) acc[l] = 0.0f;
  int k = 0;
  for (; k + kLanes <= n; k += kLanes)
    for (int l = 0; l < kLanes; l++) acc[l] = fma_rn(a[k + l], b[k + l], acc[l]);
  for (int l = 0; k + l < n; l++) acc[l] = fma_rn(a[k + l], b[k + l], acc[l]);
  return lane_tree_reduce(acc);
}

// sum_fixed_order(x, n): same lane/tree order as dot_canonical, of x[k] itself.
ORACLE_HD float sum_fixed_order(const float* x, int n) {
  float acc[kLanes];
  for (int l = 0; l < kLanes; l++) acc[l] = 0.0f;
  int k = 0;
  for (; k + kLanes <= n; k += kLanes)
    for (int l = 0; l < kLanes; l++) acc[l] = add_rn(acc[l], x[k + l]);
  for (int l = 0; k + l < n; l++) acc[l] = add_rn(acc[l], x[k + l]);
  return lane_tree_reduce(acc);
}

// sum of squares, same order (RMSNorm).
ORACLE_HD float sumsq_fixed_order(const float* x, int n) { return dot_canonical(x, x, n); }

// max over x[0..n) scanning in increasing k; NaN entries are skipped (a row that
// is all NaN returns -inf). Max is order-independent apart from NaN/±0, and the
// scan order fixes those too.
ORACLE_HD float max_fixed_order(const float* x, int n) {
  float m = -inf_f32();
  for (int k = 0; k < n; k++)
    if (x[k] > m) m = x[k];
  return m;
}

// argmax, ties to the lowest index; NaN never wins. Returns -1 for n == 0.
ORACLE_HD int argmax_lowest(const float* x, int n) {
  int best = -1;
  float m = 0.0f;
  for (int k = 0; k < n; k++)
    if (x[k] == x[k] && (best < 0 || x[k] > m)) {
      best = k;
      m = x[k];
    }
  return best;
}

// ---- round to nearest integer (ties to even) with basic operations -------------
// Valid for |v| < 2^22: adding and subtracting 1.5*2^23 rounds to an integer.
ORACLE_HD float round_even_small(float v) {
  const float magic = 12582912.0f;  // 1.5 * 2^23
  return sub_rn(add_rn(v, magic), magic);
}

// ---- exp_canonical (float32) ----------------------------------------------------
// exp(x) = 2^n * p(r), n = round(x / ln2), r = x - n*ln2 (Cody-Waite, two parts),
// p = Cephes expf minimax polynomial (max error ~1 ulp on [-ln2/2, ln2/2]).
// Exact edge rules: NaN -> NaN, x > 88.7228394 -> +inf, x < -103.972694 -> +0.
ORACLE_HD float scale_by_pow2(float y, int n) {
  // y * 2^n for y in [0.5, 2), n in [-152, 129]; at most one rounding (final step)
  if (n > 127) {
    y = mul_rn(y, 2.0f);
    n -= 1;
  }
  if (n < -125) {
    y = mul_rn(y, f32_from_bits((uint32_t)(n + 100 + 127) << 23));  // exact: normal range
    return mul_rn(y, f32_from_bits(0x0d800000u));                  // * 2^-100, one rounding
  }
  return mul_rn(y, f32_from_bits((uint32_t)(n + 127) << 23));
}

ORACLE_HD float exp_canonical(float x) {
  if (x != x) return x;
  if (x > 88.7228394f) return inf_f32();
  if (x < -103.972694f) return 0.0f;
  float fn = round_even_small(mul_rn(x, 1.44269504088896341f));
  float r = sub_rn(x, mul_rn(fn, 0.693359375f));  // ln2 high part: fn*C1 exact
  r = sub_rn(r, mul_rn(fn, -2.12194440e-4f));     // ln2 low part
  float z = mul_rn(r, r);
  float p = 1.9875691500e-4f;
  p = add_rn(mul_rn(p, r), 1.3981999507e-3f);
  p = add_rn(mul_rn(p, r), 8.3334519073e-3f);
  p = add_rn(mul_rn(p, r), 4.1665795894e-2f);
  p = add_rn(mul_rn(p, r), 1.6666665459e-1f);
  p = add_rn(mul_rn(p, r), 5.0000001201e-1f);
  p = add_rn(add_rn(mul_rn(p, z), r), 1.0f);
  return scale_by_pow2(p, (int)fn);
}

// ---- log_canonical (float32) ----------------------------------------------------
// x = 2^e * m with m in [sqrt(1/2), sqrt(2)); log(x) = e*ln2 + log(m) with the
// Cephes logf polynomial in f = m - 1. Edge rules: NaN/negative -> NaN, 0 -> -inf,
// +inf -> +inf; subnormals are scaled by 2^25 first.
ORACLE_HD float log_canonical(float x) {
  if (x != x) return x;
  if (x < 0.0f) return f32_from_bits(0x7fc00000u);
  if (x == 0.0f) return -inf_f32();
  if (x == inf_f32()) return x;
  int e = 0;
  if (x < 1.17549435e-38f) {
    x = mul_rn(x, 33554432.0f);  // 2^25, exact
    e = -25;
  }
  uint32_t u = f32_bits(x);
  e += (int)((u >> 23) & 0xffu) - 126;
  float m = f32_from_bits((u & 0x807fffffu) | 0x3f000000u);  // m in [0.5, 1)
  if (m < 0.707106781186547524f) {
    e -= 1;
    m = add_rn(m, m);  // exact
  }
  float f = sub_rn(m, 1.0f);  // exact (Sterbenz)
  float z = mul_rn(f, f);
  float p = 7.0376836292e-2f;
  p = add_rn(mul_rn(p, f), -1.1514610310e-1f);
  p = add_rn(mul_rn(p, f), 1.1676998740e-1f);
  p = add_rn(mul_rn(p, f), -1.2420140846e-1f);
  p = add_rn(mul_rn(p, f), 1.4249322787e-1f);
  p = add_rn(mul_rn(p, f), -1.6668057665e-1f);
  p = add_rn(mul_rn(p, f), 2.0000714765e-1f);
  p = add_rn(mul_rn(p, f), -2.4999993993e-1f);
  p = add_rn(mul_rn(p, f), 3.3333331174e-1f);
  float y = mul_rn(mul_rn(p, f), z);
  float fe = (float)e;
  y = add_rn(y, mul_rn(fe, -2.12194440e-4f));
  y = sub_rn(y, mul_rn(z, 0.5f));
  float r = add_rn(f, y);
  return add_rn(r, mul_rn(fe, 0.693359375f));
}

// ---- SiLU, stable softmax --------------------------------------------------------
// silu(x) = x / (1 + exp(-x))   (one IEEE division)
ORACLE_HD float silu_canonical(float x) { return div_rn(x, add_rn(1.0f, exp_canonical(-x))); }

// softmax_canonical_shifted(x, n, m) in place, with the shift m given:
//   e_k = exp(x_k - m); s = sum_fixed_order(e); p_k = e_k / s; returns s.
// m = max_fixed_order(x, n) is the canonical shift (softmax_canonical below);
// only the sampler's planted fault SOFTMAX_CANONICAL_NO_MAX passes another.
ORACLE_HD float softmax_canonical_shifted(float* x, int n, float m) {
  if (!(m > -inf_f32())) {
    for (int k = 0; k < n; k++) x[k] = 0.0f;
    return 0.0f;
  }
  for (int k = 0; k < n; k++) x[k] = exp_canonical(sub_rn(x[k], m));
  float s = sum_fixed_order(x, n);
  for (int k = 0; k < n; k++) x[k] = div_rn(x[k], s);
  return s;
}

// softmax_canonical(x, n) in place:
//   m = max_fixed_order(x); e_k = exp(x_k - m); s = sum_fixed_order(e); p_k = e_k / s.
// Rule for a fully masked row (every x_k = -inf, or n has no finite max): all p_k = 0.
// Returns s (useful for log-probabilities: logp_k = (x_k - m) - log(s)).
ORACLE_HD float softmax_canonical(float* x, int n) {
  return softmax_canonical_shifted(x, n, max_fixed_order(x, n));
}

// ---- float64 helpers for RoPE tables (computed once, shared with the GPU) -------
// Accurate to a few ulp of double; the result is rounded once to float32.
ORACLE_HD double round_even_d(double v) {  // |v| < 2^51
  const double magic = 6755399441055744.0;  // 1.5 * 2^52
  return (v + magic) - magic;
}

// exp(x) for |x| < 700: n = round(x/ln2), r = x - n*ln2 (two-part), Taylor to r^20.
ORACLE_HD double exp_d(double x) {
  double n = round_even_d(x * 1.4426950408889634);
  double r = (x - n * 0.693147180369123816490) - n * 1.90821492927058770002e-10;
  double t = 1.0;
  for (int i = 20; i >= 1; i--) t = 1.0 + t * r / (double)i;
  return t * f64_from_bits((uint64_t)((int64_t)n + 1023) << 52);
}

// log(x) for finite x > 0 (normal): x = 2^e m, m in [sqrt(1/2), sqrt(2)),
// log m = 2 atanh(s), s = (m-1)/(m+1), series to s^41.
ORACLE_HD double log_d(double x) {
  uint64_t u = f64_bits(x);
  int e = (int)((u >> 52) & 0x7ff) - 1022;
  double m = f64_from_bits((u & 0x800fffffffffffffULL) | 0x3fe0000000000000ULL);  // [0.5,1)
  if (m < 0.70710678118654752440) {
    m *= 2.0;
    e -= 1;
  }
  double s = (m - 1.0) / (m + 1.0), s2 = s * s, t = 0.0;
  for (int k = 41; k >= 1; k -= 2) t = 1.0 / (double)k + s2 * t;
  return (double)e * 0.693147180369123816490 + (2.0 * s * t + (double)e * 1.90821492927058770002e-10);
}

// sin and cos for |x| < 2^20: n = round(x * 2/pi), r = x - n*pi/2 (three-part
// Cody-Waite), Taylor series on |r| <= pi/4, quadrant from n mod 4.
ORACLE_HD void sincos_d(double x, double* s_out, double* c_out) {
  double n = round_even_d(x * 0.63661977236758134308);
  double r = x - n * 1.57079632673412561417;  // pi/2 = p1 + p2 + p3
  r = r - n * 6.07710050650619224932e-11;
  r = r - n * 2.02226624879595063154e-21;
  double r2 = r * r, s = 0.0, c = 0.0;
  for (int k = 27; k >= 3; k -= 2) s = (s + 1.0) * (-r2 / ((double)k * (double)(k - 1)));
  s = r * (1.0 + s);
  for (int k = 28; k >= 2; k -= 2) c = (c + 1.0) * (-r2 / ((double)k * (double)(k - 1)));
  c = 1.0 + c;
  long q = (long)n & 3;
  *s_out = q == 0 ? s : q == 1 ? c : q == 2 ? -s : -c;
  *c_out = q == 0 ? c : q == 1 ? -s : q == 2 ? -c : s;
}

// RoPE frequency for pair i of a head of width d: theta^(-2i/d), rounded to float.
ORACLE_HD float rope_freq(float theta, int i, int d) {
  return (float)exp_d(-((double)(2 * i) / (double)d) * log_d((double)theta));
}

// cos/sin of the float32 angle pos*freq (itself rounded to float, as llama2.c does).
ORACLE_HD void rope_cos_sin(int pos, float freq, float* c, float* s) {
  float angle = mul_rn((float)pos, freq);
  double sd, cd;
  sincos_d((double)angle, &sd, &cd);
  *c = (float)cd;
  *s = (float)sd;
}

}  // namespace oracle::num
