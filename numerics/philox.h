#pragma once
// ============================================================================
// Philox4x32-10 counter-based RNG (Salmon et al., SC'11; Random123) —
// header-only, host + device (ORACLE_HD), no state, no globals.
//
// A draw is a pure function of (key, counter):
//   key     = (seed lo 32 bits, seed hi 32 bits)
//   counter = (sequence id, position, draw index, purpose)
// so a sequence's draws never depend on its batch-mates, the thread count,
// or whether speculative decoding is on (speculative work uses its own
// `purpose` values). See docs/sampling.md, "RNG".
// ============================================================================
#include <cstdint>

#include "numerics/numerics.h"

namespace oracle::rng {

struct Philox4x32 {
  uint32_t v[4];
};
struct PhiloxKey {
  uint32_t k[2];
};

// Random123 constants: multipliers and Weyl key increments.
constexpr uint32_t kPhiloxM0 = 0xD2511F53u;
constexpr uint32_t kPhiloxM1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9u;
constexpr uint32_t kPhiloxW1 = 0xBB67AE85u;

// ---- one round ----------------------------------------------------------------
ORACLE_HD void philox_mulhilo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  uint64_t p = (uint64_t)a * (uint64_t)b;
  *hi = (uint32_t)(p >> 32);
  *lo = (uint32_t)p;
}

ORACLE_HD Philox4x32 philox_round(Philox4x32 c, PhiloxKey k) {
  uint32_t hi0, lo0, hi1, lo1;
  philox_mulhilo(kPhiloxM0, c.v[0], &hi0, &lo0);
  philox_mulhilo(kPhiloxM1, c.v[2], &hi1, &lo1);
  Philox4x32 out;
  out.v[0] = hi1 ^ c.v[1] ^ k.k[0];
  out.v[1] = lo1;
  out.v[2] = hi0 ^ c.v[3] ^ k.k[1];
  out.v[3] = lo0;
  return out;
}

// ---- Philox4x32-R (R = 10 is the standard; 7 only for the KAT table) ----------
// Round 1 uses the key as given; the key is bumped by (W0, W1) before each
// further round (Random123's philox4x32_R).
ORACLE_HD Philox4x32 philox4x32_rounds(Philox4x32 counter, PhiloxKey key, int rounds) {
  for (int r = 0; r < rounds; r++) {
    if (r > 0) {
      key.k[0] += kPhiloxW0;
      key.k[1] += kPhiloxW1;
    }
    counter = philox_round(counter, key);
  }
  return counter;
}

ORACLE_HD Philox4x32 philox4x32_10(Philox4x32 counter, PhiloxKey key) {
  return philox4x32_rounds(counter, key, 10);
}

// ---- what a counter word means ---------------------------------------------------
// The 4th counter word separates independent streams of draws.
enum Purpose : uint32_t {
  kPurposeSample = 0,       // the token draw of the sampler chain
  kPurposeSpecAccept = 1,   // speculative decoding: accept/reject uniform
  kPurposeSpecResample = 2, // speculative decoding: residual-distribution draw
  kPurposeSpecDraft = 3,    // speculative decoding: the draft model's token draw
};

ORACLE_HD PhiloxKey key_from_seed(uint64_t seed) {
  PhiloxKey k;
  k.k[0] = (uint32_t)seed;
  k.k[1] = (uint32_t)(seed >> 32);
  return k;
}

// ---- uint32 -> float in [0, 1) -------------------------------------------------------
// u = (x >> 8) * 2^-24: the top 24 bits, exact in float32, values
// {0, 2^-24, ..., 1 - 2^-24}. Never returns 1.0.
ORACLE_HD float uint32_to_unit_float(uint32_t x) {
  return num::mul_rn((float)(x >> 8), num::f32_from_bits(0x33800000u));  // 2^-24
}

// One uniform in [0, 1) for (seed, seq, position, draw, purpose): word 0 of
// philox4x32_10(counter = {seq, position, draw, purpose}, key = seed).
ORACLE_HD float philox_uniform(uint64_t seed, uint32_t seq, uint32_t position, uint32_t draw,
                               uint32_t purpose) {
  Philox4x32 c;
  c.v[0] = seq;
  c.v[1] = position;
  c.v[2] = draw;
  c.v[3] = purpose;
  return uint32_to_unit_float(philox4x32_10(c, key_from_seed(seed)).v[0]);
}

// The identity of one sampling decision, passed to samplers (never global).
struct RngKey {
  uint64_t seed = 0;
  uint32_t seq = 0;       // request / sequence id chosen by the caller
  uint32_t position = 0;  // position the sampled token will occupy in the sequence
};

ORACLE_HD float uniform_at(const RngKey& key, uint32_t draw, uint32_t purpose) {
  return philox_uniform(key.seed, key.seq, key.position, draw, purpose);
}

}  // namespace oracle::rng
