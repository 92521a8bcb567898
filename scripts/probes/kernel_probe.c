// Roofline probe for the reference's stored-type matmul (issue 30): the same
// op sequence as reference/compute/isa_simd.h on AVX-512, outside the model.
// Not part of the product build; scripts/probes/run.sh builds and runs it.
//
// Canonical order (docs/numerics.md, numerics v2): element k of a row goes into
// lane k mod 16 in increasing k, one fma per product; a block is dequantized
// with quant.cpp's operations (Q4_1: fma((float)q, d, m); Q8_0 / Q5_0:
// (float)q * d; F32: as stored); the 16 lanes are summed by the halving tree
// (w = 8, 4, 2, 1: acc[i] += acc[i + w]).
//
//   kernel_probe TYPE PHASE [ROWS] [K] [REPS]
//     TYPE  q4_1 | q8_0 | q5_0 | f32
//     PHASE decode : one token, 4-row tiles over a ROWS x K matrix streamed
//                    from memory (default 234376 x 576: about SmolLM2-135M's weights)
//           prefill: 8 tokens, 2-row x 8-token tiles (each decoded block applied to
//                    8 tokens), ROWS x K in L2 (default 512 x 576), repeated
//   OMP_NUM_THREADS=1|2 : rows split over threads (static, as the thread pool)
// First every output of a sample of rows is checked bit for bit against a
// scalar loop of the canonical order (fmaf, -ffp-contract=off); any mismatch
// exits 1. Then it prints the best of REPS: G weights/s (decode) or G MAC/s.
//   gcc -O3 -mavx512f -mavx512bw -mfma -mf16c -ffp-contract=off -fopenmp kernel_probe.c -lm
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { Q4_1, Q8_0, Q5_0, F32 };
static const int kElems[] = {32, 32, 32, 16}, kBytes[] = {20, 34, 22, 64};

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
static float half(const uint8_t* p) {
  uint16_t h;
  memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// ---- scalar canonical order ----------------------------------------------------
static float dequant(int type, const uint8_t* b, int j) {  // element j of one block
  switch (type) {
    case Q4_1: {
      int q = j < 16 ? (b[4 + j] & 15) : (b[4 + j - 16] >> 4);
      return fmaf((float)q, half(b), half(b + 2));
    }
    case Q8_0: return (float)(int8_t)b[2 + j] * half(b);
    case Q5_0: {
      uint32_t qh;
      memcpy(&qh, b + 2, 4);
      int lo = j < 16 ? (b[6 + j] & 15) : (b[6 + j - 16] >> 4);
      return (float)((lo | (int)((qh >> j) & 1) << 4) - 16) * half(b);
    }
    default: { float f; memcpy(&f, b + 4 * j, 4); return f; }
  }
}
static float tree16(float* a) {
  for (int w = 8; w >= 1; w /= 2)
    for (int i = 0; i < w; i++) a[i] = a[i] + a[i + w];
  return a[0];
}
static float scalar_dot(int type, const uint8_t* row, const float* x, int k) {
  float acc[16] = {0};
  for (int e = 0; e < k; e++) {
    const uint8_t* b = row + (int64_t)(e / kElems[type]) * kBytes[type];
    acc[e % 16] = fmaf(dequant(type, b, e % kElems[type]), x[e], acc[e % 16]);
  }
  return tree16(acc);
}

// ---- AVX-512: the decoders of isa_simd.h ---------------------------------------
static inline __m128i lo4(__m128i v) { return _mm_and_si128(v, _mm_set1_epi8(15)); }
static inline __m128i hi4(__m128i v) { return _mm_and_si128(_mm_srli_epi16(v, 4), _mm_set1_epi8(15)); }
static inline __m512 u8f(__m128i q) { return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(q)); }
static inline __m512 i8f(__m128i q) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)); }
static inline __m128i ld16(const uint8_t* p) { return _mm_loadu_si128((const __m128i*)p); }
static inline __m128i q5_high(uint32_t qh, int h) {
  __m128i v = _mm_cvtsi32_si128((int)qh);
  __m128i sel = h == 0 ? _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1)
                       : _mm_setr_epi8(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  __m128i bit = _mm_setr_epi8(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128);
  __m128i set = _mm_cmpeq_epi8(_mm_and_si128(_mm_shuffle_epi8(v, sel), bit), bit);
  return _mm_and_si128(set, _mm_set1_epi8(0x10));
}
// One block -> its 16-element chunks w[0..n) (n = 2, or 1 for F32).
static inline void decode(int type, const uint8_t* b, __m512* w) {
  if (type == Q4_1) {
    __m512 d = _mm512_set1_ps(half(b)), m = _mm512_set1_ps(half(b + 2));
    __m128i q = ld16(b + 4);
    w[0] = _mm512_fmadd_ps(u8f(lo4(q)), d, m);
    w[1] = _mm512_fmadd_ps(u8f(hi4(q)), d, m);
  } else if (type == Q8_0) {
    __m512 d = _mm512_set1_ps(half(b));
    w[0] = _mm512_mul_ps(i8f(ld16(b + 2)), d);
    w[1] = _mm512_mul_ps(i8f(ld16(b + 18)), d);
  } else if (type == Q5_0) {
    __m512 d = _mm512_set1_ps(half(b));
    uint32_t qh;
    memcpy(&qh, b + 2, 4);
    __m128i q = ld16(b + 6), s = _mm_set1_epi8(16);
    w[0] = _mm512_mul_ps(i8f(_mm_sub_epi8(_mm_or_si128(lo4(q), q5_high(qh, 0)), s)), d);
    w[1] = _mm512_mul_ps(i8f(_mm_sub_epi8(_mm_or_si128(hi4(q), q5_high(qh, 1)), s)), d);
  } else {
    w[0] = _mm512_loadu_ps((const float*)b);
  }
}
static inline float tree(__m512 a) {  // the same adds as tree16
  __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(a), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
}

static int g_prefetch;  // $PROBE_PREFETCH: bytes ahead in each row (0: none), an experiment knob
// Decode: 4 rows x 1 token (isa_simd.h tile_stored<V, D, 4, 1>).
static void tile_decode(int type, const uint8_t* w, int64_t rb, const float* x, int k, float* out) {
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  const int E = kElems[type], B = kBytes[type], nc = E / 16;
  for (int blk = 0; blk < k / E; blk++) {
    const float* xb = x + blk * E;
    for (int r = 0; r < 4; r++) {
      __m512 wv[2];
      if (g_prefetch) _mm_prefetch((const char*)(w + r * rb + (int64_t)blk * B + g_prefetch), _MM_HINT_T0);
      decode(type, w + r * rb + (int64_t)blk * B, wv);
      for (int c = 0; c < nc; c++) acc[r] = _mm512_fmadd_ps(wv[c], _mm512_loadu_ps(xb + 16 * c), acc[r]);
    }
  }
  for (int r = 0; r < 4; r++) out[r] = tree(acc[r]);
}

// Prefill: 2 rows x 8 tokens (isa_simd.h tile_prefill<V, D, 2, 8>); out (8, ldo).
static void tile_prefill(int type, const uint8_t* w, int64_t rb, const float* x, int k, float* out, int ldo) {
  __m512 acc[2][8];
  for (int r = 0; r < 2; r++)
    for (int t = 0; t < 8; t++) acc[r][t] = _mm512_setzero_ps();
  const int E = kElems[type], B = kBytes[type], nc = E / 16;
  for (int blk = 0; blk < k / E; blk++) {
    __m512 w0[2], w1[2];
    decode(type, w + (int64_t)blk * B, w0);
    decode(type, w + rb + (int64_t)blk * B, w1);
    const float* xb = x + blk * E;
    for (int c = 0; c < nc; c++)
      for (int t = 0; t < 8; t++) {
        __m512 xv = _mm512_loadu_ps(xb + (int64_t)t * k + 16 * c);
        acc[0][t] = _mm512_fmadd_ps(w0[c], xv, acc[0][t]);
        acc[1][t] = _mm512_fmadd_ps(w1[c], xv, acc[1][t]);
      }
  }
  for (int r = 0; r < 2; r++)
    for (int t = 0; t < 8; t++) out[t * ldo + r] = tree(acc[r][t]);
}

static void fill(int type, uint8_t* w, int64_t bytes) {
  srand(1);
  for (int64_t i = 0; i < bytes; i++) w[i] = (uint8_t)rand();
  const int B = kBytes[type];
  for (int64_t i = 0; i + B <= bytes; i += B) {  // sane scales (no NaN / Inf halves, finite floats)
    if (type == F32) {
      for (int j = 0; j < 16; j++) { float f = (float)(rand() % 2001 - 1000) / 1000.0f; memcpy(w + i + 4 * j, &f, 4); }
      continue;
    }
    uint16_t d = (uint16_t)(0x2000 + rand() % 0x1000), m = (uint16_t)(0xa000 + rand() % 0x1000);
    memcpy(w + i, &d, 2);
    if (type == Q4_1) memcpy(w + i + 2, &m, 2);
  }
}

int main(int argc, char** argv) {
  if (argc < 3) { fprintf(stderr, "usage: kernel_probe q4_1|q8_0|q5_0|f32 decode|prefill [ROWS] [K] [REPS]\n"); return 2; }
  const char* names[] = {"q4_1", "q8_0", "q5_0", "f32"};
  int type = -1;
  for (int i = 0; i < 4; i++) if (!strcmp(argv[1], names[i])) type = i;
  int prefill = !strcmp(argv[2], "prefill");
  if (type < 0 || (!prefill && strcmp(argv[2], "decode"))) { fprintf(stderr, "bad TYPE or PHASE\n"); return 2; }
  const long rows = argc > 3 ? atol(argv[3]) : prefill ? 512 : 234376;
  const int k = argc > 4 ? atoi(argv[4]) : 576, reps = argc > 5 ? atoi(argv[5]) : prefill ? 200 : 20;
  const int T = prefill ? 8 : 1;
  if (getenv("PROBE_PREFETCH")) g_prefetch = atoi(getenv("PROBE_PREFETCH"));
  if (rows % 4 || k % kElems[type]) { fprintf(stderr, "ROWS must be a multiple of 4, K of the block\n"); return 2; }
  const int64_t rb = (int64_t)k / kElems[type] * kBytes[type];
  uint8_t* w = aligned_alloc(64, (size_t)((rows * rb + 63) / 64 * 64));
  fill(type, w, rows * rb);
  float* x = aligned_alloc(64, sizeof(float) * T * k);
  for (int i = 0; i < T * k; i++) x[i] = (float)(rand() % 2001 - 1000) / 997.0f;
  float* y = malloc(sizeof(float) * T * rows);
  // bit check: the first 16 rows, every token
  for (long r = 0; r < 16; r += prefill ? 2 : 4) {
    if (prefill) tile_prefill(type, w + r * rb, rb, x, k, y + r, (int)rows);
    else tile_decode(type, w + r * rb, rb, x, k, y + r);
  }
  for (long r = 0; r < 16; r++)
    for (int t = 0; t < T; t++) {
      float want = scalar_dot(type, w + r * rb, x + (int64_t)t * k, k), got = y[(int64_t)t * rows + r];
      if (memcmp(&want, &got, 4)) { printf("MISMATCH row %ld token %d: %a vs %a\n", r, t, got, want); return 1; }
    }
  double best = 1e9;
  const int inner = prefill ? 20 : 1;  // prefill: L2-resident, many passes per timing
  for (int rep = 0; rep < reps; rep++) {
    double t0 = now();
    for (int it = 0; it < inner; it++) {
#pragma omp parallel for schedule(static)
      for (long r = 0; r < rows; r += prefill ? 2 : 4) {
        if (prefill) tile_prefill(type, w + r * rb, rb, x, k, y + r, (int)rows);
        else tile_decode(type, w + r * rb, rb, x, k, y + r);
      }
    }
    double t = (now() - t0) / inner;
    if (t < best) best = t;
  }
  double per_s = (double)rows * k * T / best / 1e9;
  printf("%s %s threads=%d rows=%ld k=%d: bit-identical to the scalar canonical loop; best %.3f ms = %.2f %s (%.2f GB/s of weights)\n",
         names[type], argv[2], omp_get_max_threads(), rows, k, best * 1e3, per_s, prefill ? "G MAC/s" : "G weights/s",
         rows * rb / best / 1e9);
  return 0;
}
