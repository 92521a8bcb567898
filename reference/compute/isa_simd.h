#pragma once
// The SIMD kernels of the dispatch table (isa.h), written once over a lane
// layer V that holds the 16 canonical lanes of one output: isa_avx2.cpp's
// (two __m256: lanes 0..7, 8..15) and isa_avx512.cpp's (one __m512). Each of
// those TUs includes this header compiled with its own -m flags.
//
// Everything here has internal linkage (the anonymous namespace): each ISA TU
// gets its own copy, so the linker cannot merge an AVX-512 instance into the
// AVX2 path or the baseline code (isa_paths.h; scripts/isa_check.py).
//
// V provides (all per lane, each one IEEE rounding; fma/fms are the only
// fused operations, written where the contract puts them):
//   using reg;  zero(); set1(float); add(a, b); mul(a, b); sub(a, b);
//   fma(a, b, c) = num::fma_rn(a, b, c); fms(a, b, c) = num::fma_rn(a, b, -c);
//   load(const float* 16); store(float* 16, reg);
//   i8(__m128i) / u8(__m128i): 16 signed / unsigned bytes -> float (exact);
//   f16(const uint8_t* 32 bytes) (vcvtph2ps, exact); bf16(32 bytes) (bits << 16);
//   tree(reg): num::lane_tree_reduce (w = 8, 4, 2, 1: acc[i] += acc[i + w]);
//   five_bit<kBias>(qs, qh, out[2]): Q5_0 / Q5_1 values (nibble | qh bit << 4) - kBias
//   as exact floats, elements 0..15 and 16..31 (see five_bit_bytes).
//
// Decoders: isa_decoders.h (one storage block into float32 chunks of 16).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "reference/compute/isa_decoders.h"
#include "reference/compute/isa_paths.h"
#include "reference/model/quant.h"

namespace oracle::isa {
namespace {  // NOLINT(google-build-namespaces): internal linkage per ISA TU, on purpose

constexpr int kL = 16;  // canonical lanes (num::kLanes)

inline int min_i(int a, int b) { return a < b ? a : b; }

// ============================================================================
// Tiles: R rows x T tokens, one V::reg (16 lanes) per output
// ============================================================================
// Plain F32 rows (ops::matmul, ops::dot): w rows k floats apart; the k % 16
// tail goes through the baseline finish_lanes_f32.
template <class V, int R, int T>
void tile_f32(float* out, int ldo, const float* w, const float* x, int k) {
  typename V::reg acc[R][T];  // (rows, tokens) x 16 lanes
  for (int r = 0; r < R; r++)
    for (int t = 0; t < T; t++) acc[r][t] = V::zero();
  const int k16 = k - k % kL;
  for (int kk = 0; kk < k16; kk += kL)
    for (int r = 0; r < R; r++) {
      _mm_prefetch((const char*)(w + r * k + kk + 128), _MM_HINT_T0);  // 512 bytes ahead
      const auto wv = V::load(w + r * k + kk);
      for (int t = 0; t < T; t++) acc[r][t] = V::fma(wv, V::load(x + t * k + kk), acc[r][t]);
    }
  for (int r = 0; r < R; r++)
    for (int t = 0; t < T; t++) {
      if (k16 == k) {  // no tail: the lane tree in registers
        out[t * ldo + r] = V::tree(acc[r][t]);
        continue;
      }
      alignas(64) float lanes[kL];
      V::store(lanes, acc[r][t]);
      out[t * ldo + r] = finish_lanes_f32(lanes, w + r * k, x + t * k, k16, k);
    }
}

template <class V>
float dot(const float* a, const float* b, int n) {
  float out;
  tile_f32<V, 1, 1>(&out, 1, a, b, n);
  return out;
}

// Rows [r0, r1) x all tokens. One token (decode): rows one after another, a
// single sequential weight stream. Several tokens (prefill): blocks of 32 rows
// (stay in L2) times blocks of 4 tokens (stay in L1).
template <class V>
void matmul_rows_f32(float* out, const float* x, const float* w, int T, int K, int N, int r0, int r1) {
  for (int rb = r0; rb < r1; rb += 32) {
    int rb1 = min_i(r1, rb + 32), t = 0;
    for (; t + 4 <= T; t += 4)
      for (int i = rb; i < rb1; i++)
        tile_f32<V, 1, 4>(out + (long)t * N + i, N, w + (long)i * K, x + (long)t * K, K);
    for (; t < T; t++)
      for (int i = rb; i < rb1; i++)
        tile_f32<V, 1, 1>(out + (long)t * N + i, N, w + (long)i * K, x + (long)t * K, K);
  }
}

// The R x T outputs of a tile from their accumulators: out[t * ldo + r] =
// tree(acc[r][t]) when k is whole 16-element chunks (a tile of 16 outputs all
// at once where V has tree16: the same adds, transposed), else
// finish_lanes_stored's tail. Inlined, so the accumulators stay in registers.
template <class V, int R, int T>
[[gnu::always_inline]] inline void finish_tile(float* out, int ldo, typename V::reg (&acc)[R][T], DType type,
                                               const uint8_t* w, int64_t row_bytes, const float* x, int k16, int k) {
  if constexpr (requires { V::kTree16; } && R * T == 16)
    if (k16 == k) {
      alignas(64) float s[16];  // (tokens, rows)
      V::template tree16<R>(&acc[0][0], s);
      for (int t = 0; t < T; t++) std::memcpy(out + t * ldo, s + t * R, sizeof(float) * R);
      return;
    }
  for (int r = 0; r < R; r++)
    for (int t = 0; t < T; t++) {
      if (k16 == k) {
        out[t * ldo + r] = V::tree(acc[r][t]);
        continue;
      }
      alignas(64) float lanes[kL];  // the k % 16 tail of a plain-type row
      V::store(lanes, acc[r][t]);
      out[t * ldo + r] = finish_lanes_stored(lanes, type, w + r * row_bytes, x + (int64_t)t * k, k16, k);
    }
}

// Stored-type rows: each decoded chunk goes into the outputs' lanes.
// `ahead` > 0 (decode): each block's byte `ahead` further on is prefetched as
// the block is decoded (a hint only: never faults, changes no value).
template <class V, class D, int R, int T>
void tile_stored(float* out, int ldo, DType type, const uint8_t* w, int64_t row_bytes, const float* x, int k,
                 int64_t ahead = 0) {
  typename V::reg acc[R][T];  // (rows, tokens) x 16 lanes
  for (int r = 0; r < R; r++)
    for (int t = 0; t < T; t++) acc[r][t] = V::zero();
  const int nb = k / D::kElems;
  // Fully unrolled over rows and tokens so the R·T accumulators stay in
  // registers (a rolled loop keeps them on the stack: a load-add-store chain
  // per update, about 3× slower). The order of each output's adds is unchanged.
  for (int blk = 0; blk < nb; blk++) {
    const float* xb = x + (int64_t)blk * D::kElems;
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
      const uint8_t* b = w + r * row_bytes + (int64_t)blk * D::kBytes;
      if (ahead > 0) _mm_prefetch((const char*)(b + ahead), _MM_HINT_T0);
      D::block(b, [&](int c, typename V::reg wv) {
#pragma GCC unroll 8
        for (int t = 0; t < T; t++)
          acc[r][t] = V::fma(wv, V::load(xb + (int64_t)t * k + 16 * c), acc[r][t]);
      });
    }
  }
  finish_tile<V, R, T>(out, ldo, acc, type, w, row_bytes, x, nb * D::kElems, k);
}

// ---- prefill (several tokens) --------------------------------------------------
// x of T tokens, elements [k0, k0 + len) (len a multiple of 16), chunk-interleaved:
// xp[(c * T + t) * 16 + l] = x[t * k + k0 + 16 * c + l] (copies, no arithmetic).
// The tiles then read one sequential stream at fixed offsets (with T token rows
// k floats apart, the 8 token addresses took most of the general registers).
template <int T>
void pack_tokens(float* xp, const float* x, int k, int k0, int len) {
  for (int c = 0; c < len / kL; c++)
    for (int t = 0; t < T; t++)
      std::memcpy(xp + ((int64_t)c * T + t) * kL, x + (int64_t)t * k + k0 + kL * c, sizeof(float) * kL);
}

// Blocks [s0, s1) (of at most 32 elements) of R rows x T tokens into acc (x
// packed from block s0 on): each row's block decoded into registers (wv: R x 2
// chunks), then chunk by chunk into the R·T accumulators (x of one token loaded
// once per chunk for the R rows). Each block's chunks are consumed in
// increasing element order, so each output's lane sequence is tile_stored's.
template <class V, class D, int R, int T>
inline void prefill_blocks(typename V::reg (&acc)[R][T], const uint8_t* w, int64_t row_bytes, const float* xp,
                           int s0, int s1) {
  constexpr int kChunks = D::kElems / kL;
  static_assert(kChunks <= 2);
  for (int blk = s0; blk < s1; blk++) {
    const float* xb = xp + (int64_t)(blk - s0) * kChunks * T * kL;
    typename V::reg wv[R][kChunks];  // (rows, chunks) decoded weights
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
      D::block(w + r * row_bytes + (int64_t)blk * D::kBytes, [&](int c, typename V::reg v) { wv[r][c] = v; });
#pragma GCC unroll 2
    for (int c = 0; c < kChunks; c++)
#pragma GCC unroll 16
      for (int t = 0; t < T; t++) {
        const auto xv = V::load(xb + (c * T + t) * kL);
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) acc[r][t] = V::fma(wv[r][c], xv, acc[r][t]);
      }
  }
}

// Prefill tile, one K segment (blocks [s0, s1)): the accumulators start at zero
// (first) or from `state` (R x T x 16 floats, the previous segment's), and go
// back to `state` or, after the last segment, through finish_tile into out
// (`state` is unused when first and last).
template <class V, class D, int R, int T>
void prefill_tile(float* out, int ldo, DType type, const uint8_t* w, int64_t row_bytes, const float* x, int k,
                  const float* xp, int s0, int s1, float* state, bool first, bool last) {
  typename V::reg acc[R][T];  // (rows, tokens) x 16 lanes
#pragma GCC unroll 8
  for (int r = 0; r < R; r++)
#pragma GCC unroll 16
    for (int t = 0; t < T; t++) acc[r][t] = first ? V::zero() : V::load(state + (r * T + t) * kL);
  prefill_blocks<V, D, R, T>(acc, w, row_bytes, xp, s0, s1);
  if (last) return finish_tile<V, R, T>(out, ldo, acc, type, w, row_bytes, x, s1 * D::kElems, k);
#pragma GCC unroll 8
  for (int r = 0; r < R; r++)
#pragma GCC unroll 16
    for (int t = 0; t < T; t++) V::store(state + (r * T + t) * kL, acc[r][t]);
}

// Prefill tile (T tokens, R rows): each row's block is decoded once into a
// small L1 buffer, then every 16-element chunk of it goes into the R·T
// accumulators (x of one token loaded once per chunk for the R rows). The
// chunks of a block are consumed in increasing element order, so each
// output's lane sequence is tile_stored's. The buffer keeps the accumulators
// out of the decoder's closure, so they stay in registers (16 zmm for 2 x 8).
// Decode of 256-element blocks (k-quants) uses it too, with T = 1: fed
// straight from the decoder, a block's 16 chunks would be one chain of 16
// dependent fmas on one row's accumulator; from the buffer the R rows' chains
// interleave. There `ahead` > 0 prefetches each block that many bytes ahead
// (row_block: two tiles on): the hardware prefetcher alone leaves these 4
// interleaved streams of 864-1260-byte rows at about half the bandwidth
// (scripts/probes: Q4_K / Q6_K decode at K = 1536).
template <class V, class D, int R, int T>
void tile_prefill(float* out, int ldo, DType type, const uint8_t* w, int64_t row_bytes, const float* x, int k,
                  int64_t ahead = 0) {
  constexpr int kChunks = D::kElems / kL;
  alignas(64) float buf[R][D::kElems];  // (rows, block elements) decoded weights
  typename V::reg acc[R][T];            // (rows, tokens) x 16 lanes
#pragma GCC unroll 8
  for (int r = 0; r < R; r++)
#pragma GCC unroll 16
    for (int t = 0; t < T; t++) acc[r][t] = V::zero();
  const int nb = k / D::kElems;
  for (int blk = 0; blk < nb; blk++) {
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
      const uint8_t* b = w + r * row_bytes + (int64_t)blk * D::kBytes;
      if (ahead > 0)  // a hint only: never faults, changes no value
        for (int o = 0; o < D::kBytes; o += 64) _mm_prefetch((const char*)(b + ahead + o), _MM_HINT_T0);
      D::block(b, [&](int c, typename V::reg wv) { V::store(&buf[r][16 * c], wv); });
    }
    const float* xb = x + (int64_t)blk * D::kElems;
    for (int c = 0; c < kChunks; c++) {
      typename V::reg wv[R];
#pragma GCC unroll 8
      for (int r = 0; r < R; r++) wv[r] = V::load(&buf[r][16 * c]);
#pragma GCC unroll 16
      for (int t = 0; t < T; t++) {
        const auto xv = V::load(xb + (int64_t)t * k + 16 * c);
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) acc[r][t] = V::fma(wv[r], xv, acc[r][t]);
      }
    }
  }
  finish_tile<V, R, T>(out, ldo, acc, type, w, row_bytes, x, nb * D::kElems, k);
}

// Decode streams each matrix once, 4 rows per tile: 4 short interleaved
// streams (SmolLM2 Q8_0: 612 bytes a row) that the loop's loads reach one
// line at a time. Asking for every cache line of the tile at its start puts
// them all in flight together. Measured (scripts/probes/kernel_probe.c decode,
// 1 thread, AMD Zen 4, docs/performance.md): Q8_0 at K = 576 5.3 -> 18.7 GB/s,
// F32 at K = 288 11.2 -> 27.8 GB/s; in the model, starting the span 512 or
// 1024 bytes on, or covering the next tile too, was slower or no better.
// A hint only: never faults, changes no value.
inline void prefetch_span(const uint8_t* p, int64_t bytes) {
  for (int64_t o = 0; o < bytes; o += 64) _mm_prefetch((const char*)(p + o), _MM_HINT_T0);
}

// Rows [r0, r1) x tokens [t0, t1) in tiles of R rows x T tokens (the rest of
// the rows one at a time, with the same T).
template <class V, class D, int R, int T>
void row_block(float* out, const float* x, DType type, const uint8_t* w, int64_t rb, int k, int n_out, int r0,
               int r1, int t0) {
  int i = r0;
  float* o = out + (int64_t)t0 * n_out;
  const float* xt = x + (int64_t)t0 * k;
  // Decode, 256-element blocks: through the buffer, each block's twin two
  // tiles on prefetched (one tile on: Q6_K rows streamed at 9.8 G weights/s,
  // two: 10.7, three: 10.8, Q4_K 11.3 for each; bench_decode_seq smollm2
  // Q4_K_M 1 thread: ffn_down 2.45-2.56 -> 2.40-2.46 ms; Zen 4).
  if (T == 1 && D::kElems > 32) {
    for (; i + R <= r1; i += R) tile_prefill<V, D, R, T>(o + i, n_out, type, w + (int64_t)i * rb, rb, xt, k, 2 * R * rb);
    for (; i < r1; i++) tile_prefill<V, D, 1, T>(o + i, n_out, type, w + (int64_t)i * rb, rb, xt, k, rb);
    return;
  }
  // decode: the decoder feeds the accumulators directly. 34-byte Q8_0 blocks:
  // besides the span, each block's next-tile twin (R rows on) is prefetched as
  // it is decoded (scripts/probes/kernel_probe.c, PROBE_PREFETCH = 4 rows, 1
  // thread, Zen 4, load 3.4: K = 1536 (ffn_down) 9.9-10.6 -> 15.2-15.4 G
  // weights/s, K = 576 16.7-16.9 -> 17.2-17.3). For the smaller 32-element
  // blocks (Q4_0 .. Q5_1) it was mixed or slower on Zen 4 but 15-18 % faster
  // on an Intel Xeon (bench_decode_seq smollm2 Q4_1 / Q4_K_M, 1 thread), so
  // there it follows the CPU's policy (isa.h decode_prefetch).
  const bool ahead = D::kElems == 32 && (D::kBytes >= 32 || decode_prefetch() == DecodePrefetch::Ahead);
  for (; i + R <= r1; i += R) {
    prefetch_span(w + (int64_t)i * rb, R * rb);
    tile_stored<V, D, R, T>(o + i, n_out, type, w + (int64_t)i * rb, rb, xt, k, ahead ? R * rb : 0);
  }
  for (; i < r1; i++) tile_stored<V, D, 1, T>(o + i, n_out, type, w + (int64_t)i * rb, rb, xt, k);
}

// Prefill: at most this many floats of packed x per K segment (T tokens x
// 6144 / T elements, 24 KiB: stays in L1 while every tile of the rows reads it;
// 16 KiB segments were 5-8 % slower, 32 KiB no faster: SmolLM2 shapes, Zen 4).
constexpr int kSegmentFloats = 6144;

// Prefill: rows [b0, b1) x the T tokens from t0, in tiles of R rows (the rest
// of the rows one at a time), over K in segments of at most kSegmentFloats / T
// elements, balanced: each segment's x packed once, the accumulators kept in
// `state` between segments (so more than one segment needs b1 - b0 <= 32).
// Segments split no output's sequence: each lane still takes its elements in
// increasing k. Blocks of more than 32 elements (k-quants) go through
// tile_prefill, which reads x in place (packed, they measured slower).
template <class V, class D, int R, int T>
void prefill_block(float* out, const float* x, DType type, const uint8_t* w, int64_t rb, int k, int n_out, int b0,
                   int b1, int t0) {
  float* o = out + (int64_t)t0 * n_out;
  const float* xt = x + (int64_t)t0 * k;
  int i = b0;
  if constexpr (D::kElems > 32) {
    for (; i + R <= b1; i += R) tile_prefill<V, D, R, T>(o + i, n_out, type, w + i * rb, rb, xt, k);
    for (; i < b1; i++) tile_prefill<V, D, 1, T>(o + i, n_out, type, w + i * rb, rb, xt, k);
  } else {
    constexpr int kSegBlocks = kSegmentFloats / T / D::kElems;
    alignas(64) float xp[kSegBlocks * D::kElems * T];  // (segment chunks, T, 16) packed x
    alignas(64) float state[32 * T * kL];               // (rows, T, 16) accumulators between segments
    const int nb = k / D::kElems, n_seg = (nb + kSegBlocks - 1) / kSegBlocks;
    const int per = n_seg > 1 ? (nb + n_seg - 1) / n_seg : nb;  // blocks per segment
    int s0 = 0;
    do {  // at least once: k < one block still finishes its (tail-only) outputs
      const int s1 = min_i(nb, s0 + per);
      const bool first = s0 == 0, last = s1 == nb;
      pack_tokens<T>(xp, xt, k, s0 * D::kElems, (s1 - s0) * D::kElems);
      for (i = b0; i + R <= b1; i += R)
        prefill_tile<V, D, R, T>(o + i, n_out, type, w + i * rb, rb, xt, k, xp, s0, s1,
                                 first && last ? nullptr : state + (i - b0) * T * kL, first, last);
      for (; i < b1; i++)
        prefill_tile<V, D, 1, T>(o + i, n_out, type, w + i * rb, rb, xt, k, xp, s0, s1,
                                 first && last ? nullptr : state + (i - b0) * T * kL, first, last);
      s0 = s1;
    } while (s0 < nb);
  }
}

// One token (decode): 4 rows at a time, independent accumulator chains over
// one shared x. Several tokens (prefill): groups of V::kTileTokens tokens, then
// of 4, then single tokens, in tiles of V::kTileRows rows (AVX-512: 2 x 8, 16
// zmm accumulators; AVX2: 1 x 4), each decoded block applied to every token of
// the tile (prefill_block). Where K fits one segment (blocks of at most 32
// elements), each group's packed x serves all the rows (one pack per group);
// else 32-row blocks (their accumulators kept between segments; k-quants:
// their weights reused from L1) times the groups.
template <class V, class D>
void rows_stored(float* out, const float* x, DType type, const uint8_t* w, int64_t rb, int n_tok, int k,
                 int n_out, int r0, int r1) {
  if (n_tok == 1) return row_block<V, D, 4, 1>(out, x, type, w, rb, k, n_out, r0, r1, 0);
  constexpr int TR = V::kTileRows, TT = V::kTileTokens;
  const int t4 = n_tok / TT * TT, t1 = t4 + (TT > 4 ? (n_tok - t4) / 4 * 4 : 0);  // first 4-group, first single
  const bool one_segment = D::kElems <= 32 && k / D::kElems <= kSegmentFloats / TT / D::kElems;
  const int block = one_segment ? r1 - r0 : 32;  // rows per pass over the token groups
  for (int b0 = r0; b0 < r1; b0 += block) {
    const int b1 = min_i(r1, b0 + block);
    for (int t = 0; t < t4; t += TT) prefill_block<V, D, TR, TT>(out, x, type, w, rb, k, n_out, b0, b1, t);
    for (int t = t4; t < t1; t += 4) prefill_block<V, D, TR, 4>(out, x, type, w, rb, k, n_out, b0, b1, t);
    for (int t = t1; t < n_tok; t++) row_block<V, D, 1, 1>(out, x, type, w, rb, k, n_out, b0, b1, t);
  }
}

template <class V>
bool stored_rows(float* out, const float* x, DType type, const uint8_t* w, int64_t rb, int T, int K, int N,
                 int r0, int r1) {
  using Q8_1 = DecBuffered<V, DType::Q8_1>;
  using Q2_K = DecBuffered<V, DType::Q2_K>;
  using Q3_K = DecBuffered<V, DType::Q3_K>;
  using Q8_K = DecBuffered<V, DType::Q8_K>;
  switch (type) {
#define ORACLE_ROWS(D) rows_stored<V, D>(out, x, type, w, rb, T, K, N, r0, r1); return true
    case DType::F32: ORACLE_ROWS(DecF32<V>);
    case DType::F16: ORACLE_ROWS(DecF16<V>);
    case DType::BF16: ORACLE_ROWS(DecBF16<V>);
    case DType::Q8_0: ORACLE_ROWS(DecQ8_0<V>);
    case DType::Q4_0: ORACLE_ROWS(DecQ4_0<V>);
    case DType::Q4_1: ORACLE_ROWS(DecQ4_1<V>);
    case DType::Q5_0: ORACLE_ROWS(DecQ5_0<V>);
    case DType::Q5_1: ORACLE_ROWS(DecQ5_1<V>);
    case DType::Q4_K: ORACLE_ROWS(DecQ4_K<V>);
    case DType::Q5_K: ORACLE_ROWS(DecQ5_K<V>);
    case DType::Q6_K: ORACLE_ROWS(DecQ6_K<V>);
    case DType::Q8_1: ORACLE_ROWS(Q8_1);
    case DType::Q2_K: ORACLE_ROWS(Q2_K);
    case DType::Q3_K: ORACLE_ROWS(Q3_K);
    case DType::Q8_K: ORACLE_ROWS(Q8_K);
#undef ORACLE_ROWS
    default: return false;
  }
}

inline bool register_decoder(DType t) {
  switch (t) {
    case DType::F32: case DType::F16: case DType::BF16: case DType::Q8_0: case DType::Q4_0:
    case DType::Q4_1: case DType::Q5_0: case DType::Q5_1: case DType::Q4_K: case DType::Q5_K:
    case DType::Q6_K:
      return true;
    default: return false;
  }
}

// y[d] = fma(x[d], s, y[d] * a) (a == 1: fma(x[d], s, y[d])), 16 elements at a time.
template <class V>
void scale_fma(float* y, float a, const float* x, float s, int n) {
  const auto av = V::set1(a), sv = V::set1(s);
  const int n16 = n - n % kL;
  for (int d = 0; d < n16; d += kL) {
    const auto yv = a == 1.0f ? V::load(y + d) : V::mul(V::load(y + d), av);
    V::store(y + d, V::fma(V::load(x + d), sv, yv));
  }
  scale_fma_tail(y, a, x, s, n16, n);
}

// num::exp_d, 8 doubles per step (GCC vector extensions: one zmm with -mavx512f, two ymm
// with -mavx2). Each lane runs exp_d's operations in exp_d's order, one rounding each
// (-ffp-contract=off: nothing fused): n = round(x/ln2) by the 1.5·2^52 shift, r = x - n·ln2
// (two parts), the Taylor series to r^20 with one division per term, times 2^n — formed
// from the bits of n + 1.5·2^52 (0x4338000000000000 + n: an integer identity, no rounding).
// Lanes below -700 give 0. The tail (n % 8) is the scalar exp_d.
typedef double v8d __attribute__((vector_size(64)));
typedef int64_t v8l __attribute__((vector_size(64)));

// 8 elements of v to out (no vector crosses a call: the AVX2 TU has no 64-byte register ABI).
inline void exp_lanes(const double* v, double* out) {
  v8d x;
  std::memcpy(&x, v, sizeof x);
  const v8d magic = v8d{} + 6755399441055744.0;
  const v8d shifted = x * 1.4426950408889634 + magic;  // mul, then add: two roundings
  const v8d n = shifted - magic;
  const v8d r = (x - n * 0.693147180369123816490) - n * 1.90821492927058770002e-10;
  v8d t = v8d{} + 1.0;
  for (int i = 20; i >= 1; i--) t = 1.0 + t * r / (double)i;
  const v8l e = ((v8l)shifted - (int64_t)0x4338000000000000LL + 1023) << 52;
  const v8d y = t * (v8d)e;
  const v8d res = (v8d)(x < -700.0 ? (v8l){} : (v8l)y);
  std::memcpy(out, &res, sizeof res);
}

inline void exp_nonpositive_f64(const double* v, double* out, int n) {
  int k = 0;
  for (; k + 8 <= n; k += 8) exp_lanes(v + k, out + k);
  exp_nonpositive_tail(v, out, k, n);
}

// num::silu_canonical(g) * u, 16 floats per step (GCC vector extensions, like exp_lanes:
// one zmm with -mavx512f, two ymm with -mavx2). Each lane runs exp_canonical(-g)'s operations
// in its order, one rounding each (-ffp-contract=off): fn = round(x·log2e) by the 1.5·2^23
// shift, r = x - fn·C1 - fn·C2, the Cephes polynomial, scale_by_pow2 (its three cases by
// blend: n > 127 doubles y first, n < -125 scales by 2^(n+100) then 2^-100, else 2^n, the
// powers formed from the bits of n + bias: exact); then NaN -> x, x > 88.7228394 -> inf,
// x < -103.972694 -> 0 by blend; then g / (1 + e) and · u. The tail (n % 16) is scalar.
typedef float v16f __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));

inline v16f exp_canonical_lanes(v16f x) {
  const v16f magic = v16f{} + 12582912.0f;  // 1.5 * 2^23
  const v16f fn = (x * 1.44269504088896341f + magic) - magic;
  v16f r = x - fn * 0.693359375f;
  r = r - fn * -2.12194440e-4f;
  const v16f z = r * r;
  v16f p = v16f{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = (p * z + r) + 1.0f;
  v16i n = __builtin_convertvector(fn, v16i);  // fn is an integer in [-150, 128]: exact
  const v16i big = n > 127;
  p = big ? p * 2.0f : p;
  n = big ? n - 1 : n;
  const v16f normal = p * (v16f)((n + 127) << 23);
  const v16f tiny = (p * (v16f)((n + 227) << 23)) * (v16f)(v16i{} + 0x0d800000);
  v16f e = n < -125 ? tiny : normal;
  e = x > 88.7228394f ? v16f{} + __builtin_inff() : e;
  e = x < -103.972694f ? v16f{} : e;
  return x != x ? x : e;
}

// 16 elements (no vector crosses a call: the AVX2 TU has no 64-byte register ABI).
inline void swiglu_lanes(float* h, const float* gate, const float* up) {
  v16f g, u;
  std::memcpy(&g, gate, sizeof g);
  std::memcpy(&u, up, sizeof u);
  const v16f res = (g / (1.0f + exp_canonical_lanes(-g))) * u;
  std::memcpy(h, &res, sizeof res);
}

inline void swiglu(float* h, const float* gate, const float* up, int n) {
  int k = 0;
  for (; k + 16 <= n; k += 16) swiglu_lanes(h + k, gate + k, up + k);
  swiglu_tail(h, gate, up, k, n);
}

// out[j] = dot(q, rows[j] + offset, n) for j < m (attention's q·k): the keys four at a time,
// each q chunk loaded once; every output has dot<V>'s lanes, fmas and tree.
template <class V, int G>
void dot_group(float* out, const float* q, const float* const* rows, int64_t offset, int n) {
  typename V::reg acc[G];
  for (int i = 0; i < G; i++) acc[i] = V::zero();
  const int n16 = n - n % kL;
  for (int kk = 0; kk < n16; kk += kL) {
    const auto qv = V::load(q + kk);
    for (int i = 0; i < G; i++) acc[i] = V::fma(qv, V::load(rows[i] + offset + kk), acc[i]);
  }
  for (int i = 0; i < G; i++) {
    if (n16 == n) {
      out[i] = V::tree(acc[i]);
      continue;
    }
    alignas(64) float lanes[kL];
    V::store(lanes, acc[i]);
    out[i] = finish_lanes_f32(lanes, q, rows[i] + offset, n16, n);
  }
}

// QT queries x KT keys, QT * KT == 16 (V with tree16, n whole 16-element
// chunks): out[a * ld + b] = dot(q[a], rows[b] + offset, n). Each chunk of the
// KT keys and QT queries loaded once for all 16 pairs; each pair's lanes take
// their fmas in increasing k, then the 16 trees at once (tree16: the same adds).
template <class V, int QT, int KT>
void dot_tile16(float* out, int ld, const float* const* q, const float* const* rows, int64_t offset, int n) {
  typename V::reg acc[QT * KT];  // (queries, keys) x 16 lanes
#pragma GCC unroll 16
  for (int i = 0; i < QT * KT; i++) acc[i] = V::zero();
  for (int kk = 0; kk < n; kk += kL) {
    typename V::reg kv[KT];
#pragma GCC unroll 16
    for (int b = 0; b < KT; b++) kv[b] = V::load(rows[b] + offset + kk);
#pragma GCC unroll 16
    for (int a = 0; a < QT; a++) {
      const auto qv = V::load(q[a] + kk);
#pragma GCC unroll 16
      for (int b = 0; b < KT; b++) acc[a * KT + b] = V::fma(qv, kv[b], acc[a * KT + b]);
    }
  }
  alignas(64) float s[16];  // (queries, keys)
  V::template tree16<1>(acc, s);
  for (int a = 0; a < QT; a++) std::memcpy(out + (int64_t)a * ld, s + a * KT, sizeof(float) * KT);
}

// One query: out[j] = dot(q, rows[j] + offset, n) for j < m, keys 16 (tree16), then 4, then 1 at a time.
template <class V>
void dot_query(float* out, const float* q, const float* const* rows, int64_t offset, int m, int n) {
  int j = 0;
  if constexpr (requires { V::kTree16; })
    if (n % kL == 0)
      for (; j + 16 <= m; j += 16) dot_tile16<V, 1, 16>(out + j, 0, &q, rows + j, offset, n);
  for (; j + 4 <= m; j += 4) dot_group<V, 4>(out + j, q, rows + j, offset, n);
  for (; j < m; j++) dot_group<V, 1>(out + j, q, rows + j, offset, n);
}

// out[i * ld + j] = dot(q[i], rows[j] + offset, n) for i < nq, j < m (attention's
// q·k for queries sharing a kv head): 4 queries x 4 keys per tile where V has
// tree16, the rest query by query (16 keys per tile: 2 or 3 queries padded to a
// 4 x 4 tile measured slower, the trees being per tile). Every output has
// dot<V>'s lanes, fmas and tree.
template <class V>
void dot_rows(float* out, int ld, const float* const* q, int nq, const float* const* rows, int64_t offset, int m,
              int n) {
  int i = 0;
  if constexpr (requires { V::kTree16; })
    if (n % kL == 0)
      for (; i + 4 <= nq; i += 4) {
        int j = 0;
        for (; j + 4 <= m; j += 4) dot_tile16<V, 4, 4>(out + (int64_t)i * ld + j, ld, q + i, rows + j, offset, n);
        for (int a = 0; a < 4 && j < m; a++)
          dot_query<V>(out + (int64_t)(i + a) * ld + j, q[i + a], rows + j, offset, m - j, n);
      }
  for (; i < nq; i++) dot_query<V>(out + (int64_t)i * ld, q[i], rows, offset, m, n);
}

// o[a][d0 + d] += rows[j][offset + d0 + d] * e[a * ld + j] (one fma_rn) for j < m in turn,
// a < Q, d < 16 B: Q x B chunks of o in registers across all j (their chains
// independent), each chunk of a value row loaded once for the Q queries.
template <class V, int Q, int B>
void pv_tile(float* const* o, const float* e, int ld, int m, const float* const* rows, int64_t offset, int d0) {
  typename V::reg ov[Q][B];  // (queries, chunks) x 16 elements of o
  for (int a = 0; a < Q; a++)
    for (int b = 0; b < B; b++) ov[a][b] = V::load(o[a] + d0 + b * kL);
  for (int j = 0; j < m; j++) {
    const float* v = rows[j] + offset + d0;
    typename V::reg vb[B];
    for (int b = 0; b < B; b++) vb[b] = V::load(v + b * kL);
    for (int a = 0; a < Q; a++) {
      const auto ea = V::set1(e[(int64_t)a * ld + j]);
      for (int b = 0; b < B; b++) ov[a][b] = V::fma(vb[b], ea, ov[a][b]);
    }
  }
  for (int a = 0; a < Q; a++)
    for (int b = 0; b < B; b++) V::store(o[a] + d0 + b * kL, ov[a][b]);
}

// Elements [0, n16) of Q queries' o over the value rows [0, m).
template <class V, int Q>
void pv_chunks(float* const* o, const float* e, int ld, int m, const float* const* rows, int64_t offset, int n16) {
  int d = 0;
  if constexpr (Q == 1)
    for (; d + 8 * kL <= n16; d += 8 * kL) pv_tile<V, 1, 8>(o, e, ld, m, rows, offset, d);
  for (; d + 4 * kL <= n16; d += 4 * kL) pv_tile<V, Q, 4>(o, e, ld, m, rows, offset, d);
  for (; d < n16; d += kL) pv_tile<V, Q, 1>(o, e, ld, m, rows, offset, d);
}

// Q queries together over the value rows all of them take, then each query's
// own further rows (each element's fmas still in j order).
template <class V, int Q>
void pv_queries(float* const* o, const float* e, int ld, const int* m, const float* const* rows, int64_t offset,
                int n16) {
  int common = m[0];
  for (int a = 1; a < Q; a++) common = std::min(common, m[a]);
  pv_chunks<V, Q>(o, e, ld, common, rows, offset, n16);
  if constexpr (Q > 1)
    for (int a = 0; a < Q; a++)
      pv_chunks<V, 1>(o + a, e + (int64_t)a * ld + common, ld, m[a] - common, rows + common, offset, n16);
}

// o[i][d] = fma_rn(rows[j][offset + d], e[i * ld + j], o[i][d]) for j = 0, 1, ..., m[i] - 1
// in turn, d < n, i < nq (attention's p·v): 4 queries at a time, the last 1-3 together.
template <class V>
void pv_rows(float* const* o, const float* e, int ld, const int* m, int nq, const float* const* rows, int64_t offset,
             int n) {
  const int n16 = n - n % kL;
  int i = 0;
  for (; i + 4 <= nq; i += 4) pv_queries<V, 4>(o + i, e + (int64_t)i * ld, ld, m + i, rows, offset, n16);
  const float* ei = e + (int64_t)i * ld;
  switch (nq - i) {
    case 3: pv_queries<V, 3>(o + i, ei, ld, m + i, rows, offset, n16); break;
    case 2: pv_queries<V, 2>(o + i, ei, ld, m + i, rows, offset, n16); break;
    case 1: pv_queries<V, 1>(o + i, ei, ld, m + i, rows, offset, n16); break;
    default: break;
  }
  if (n16 == n) return;
  for (i = 0; i < nq; i++)
    for (int j = 0; j < m[i]; j++) scale_fma_tail(o[i], 1.0f, rows[j] + offset, e[(int64_t)i * ld + j], n16, n);
}

// out[k] = num::exp_canonical(v[k]) for k < n, 16 per step (exp_canonical_lanes; the tail
// on zero-padded lanes); v, out may alias.
inline void exp_f32(const float* v, float* out, int n) {
  int k = 0;
  for (; k + 16 <= n; k += 16) {
    v16f x;
    std::memcpy(&x, v + k, sizeof x);
    const v16f e = exp_canonical_lanes(x);
    std::memcpy(out + k, &e, sizeof e);
  }
  if (k == n) return;
  alignas(64) float pad[16] = {};  // the n - k tail on 16 lanes (zeros after it): each element's own ops
  std::memcpy(pad, v + k, sizeof(float) * (n - k));
  v16f x;
  std::memcpy(&x, pad, sizeof x);
  const v16f e = exp_canonical_lanes(x);
  std::memcpy(out + k, &e, sizeof(float) * (n - k));
}

template <class V>
constexpr Kernels make_kernels(Isa isa) {
  return Kernels{isa, dot<V>, matmul_rows_f32<V>, stored_rows<V>, register_decoder, scale_fma<V>, exp_nonpositive_f64,
                 swiglu,  dot_rows<V>, pv_rows<V>, exp_f32};
}

}  // namespace
}  // namespace oracle::isa
