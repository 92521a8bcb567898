// SHA-256 per FIPS 180-4, section 6.2: 64 rounds over 512-bit blocks, padding
// with 0x80, zeros and the 64-bit big-endian message length in bits.
#include "base/sha256.h"

#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define ORACLE_SHA_X86 1
#else
#define ORACLE_SHA_X86 0
#endif

#include "base/mmap_file.h"

namespace oracle {

namespace {

constexpr uint32_t kRound[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

}  // namespace

Sha256::Sha256()
    : state_{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
             0x5be0cd19} {}

namespace sha256_detail {

void compress_portable(uint32_t* state, const uint8_t* blocks, size_t n_blocks) {
  for (size_t i = 0; i < n_blocks; i++) {
    const uint8_t* block = blocks + 64 * i;
    uint32_t w[64];  // message schedule
    for (int t = 0; t < 16; t++)
      w[t] = uint32_t(block[4 * t]) << 24 | uint32_t(block[4 * t + 1]) << 16 |
             uint32_t(block[4 * t + 2]) << 8 | uint32_t(block[4 * t + 3]);
    for (int t = 16; t < 64; t++) {
      uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
      uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
      w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
    uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
    for (int t = 0; t < 64; t++) {
      uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + kRound[t] + w[t];
      uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      h = g; g = f; f = e; e = d + t1;
      d = c; c = b; b = a; a = t1 + t2;
    }
    state[0] += a; state[1] += b; state[2] += c; state[3] += d;
    state[4] += e; state[5] += f; state[6] += g; state[7] += h;
  }
}

#if ORACLE_SHA_X86
// CPUID leaf 7 EBX bit 29 (SHA), leaf 1 ECX bits 9 (SSSE3) and 19 (SSE4.1).
bool sha_ext_available() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 9)) || !(c & (1u << 19))) return false;
  return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 29));
}

// The FIPS rounds four at a time: the state as (ABEF, CDGH), W[4g..4g+3] in
// w[g % 4] (msg1 adds sigma0, alignr brings W[t-7], msg2 adds sigma1), each
// sha256rnds2 doing two rounds with W + K.
__attribute__((target("sha,sse4.1,ssse3"))) void compress_sha_ni(uint32_t* state, const uint8_t* blocks,
                                                                  size_t n_blocks) {
  const __m128i kBswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  __m128i tmp = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i*)state), 0xB1);  // CDAB
  __m128i s1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i*)(state + 4)), 0x1B);  // EFGH
  __m128i s0 = _mm_alignr_epi8(tmp, s1, 8);  // ABEF
  s1 = _mm_blend_epi16(s1, tmp, 0xF0);       // CDGH
  for (size_t i = 0; i < n_blocks; i++) {
    const uint8_t* block = blocks + 64 * i;
    const __m128i abef = s0, cdgh = s1;
    __m128i w[4];
    for (int g = 0; g < 16; g++) {
      if (g < 4) {
        w[g] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i*)(block + 16 * g)), kBswap);
      } else {
        __m128i x = _mm_sha256msg1_epu32(w[g % 4], w[(g + 1) % 4]);
        x = _mm_add_epi32(x, _mm_alignr_epi8(w[(g + 3) % 4], w[(g + 2) % 4], 4));
        w[g % 4] = _mm_sha256msg2_epu32(x, w[(g + 3) % 4]);
      }
      const __m128i m = _mm_add_epi32(w[g % 4], _mm_loadu_si128((const __m128i*)(kRound + 4 * g)));
      s1 = _mm_sha256rnds2_epu32(s1, s0, m);
      s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(m, 0x0E));
    }
    s0 = _mm_add_epi32(s0, abef);
    s1 = _mm_add_epi32(s1, cdgh);
  }
  tmp = _mm_shuffle_epi32(s0, 0x1B);  // FEBA
  s1 = _mm_shuffle_epi32(s1, 0xB1);   // DCHG
  _mm_storeu_si128((__m128i*)state, _mm_blend_epi16(tmp, s1, 0xF0));   // DCBA
  _mm_storeu_si128((__m128i*)(state + 4), _mm_alignr_epi8(s1, tmp, 8));  // HGFE
}

bool compress_sha_ext(uint32_t* state, const uint8_t* blocks, size_t n_blocks) {
  if (!sha_ext_available()) return false;
  compress_sha_ni(state, blocks, n_blocks);
  return true;
}
#else
bool sha_ext_available() { return false; }
void compress_sha_ni(uint32_t* state, const uint8_t* blocks, size_t n_blocks) {  // never chosen
  compress_portable(state, blocks, n_blocks);
}
bool compress_sha_ext(uint32_t*, const uint8_t*, size_t) { return false; }
#endif

}  // namespace sha256_detail

void Sha256::compress(const uint8_t* blocks, size_t n_blocks) {
  static const bool use_ext = sha256_detail::sha_ext_available();  // CPUID once (a VM may trap it)
  if (use_ext)
    sha256_detail::compress_sha_ni(state_.data(), blocks, n_blocks);
  else
    sha256_detail::compress_portable(state_.data(), blocks, n_blocks);
}

void Sha256::update(const void* data, size_t n) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  total_bytes_ += n;
  while (n > 0) {
    if (buffered_ == 0 && n >= 64) {  // whole blocks straight from the input
      const size_t whole = n / 64;
      compress(p, whole);
      p += 64 * whole;
      n -= 64 * whole;
      continue;
    }
    size_t take = std::min(n, size_t(64) - buffered_);
    std::memcpy(buffer_.data() + buffered_, p, take);
    buffered_ += take;
    p += take;
    n -= take;
    if (buffered_ == 64) {
      compress(buffer_.data(), 1);
      buffered_ = 0;
    }
  }
}

std::array<uint8_t, 32> Sha256::digest() {
  uint64_t bits = total_bytes_ * 8;
  uint8_t pad[72] = {0x80};
  size_t pad_len = (buffered_ < 56) ? 56 - buffered_ : 120 - buffered_;
  for (int k = 0; k < 8; k++) pad[pad_len + k] = uint8_t(bits >> (56 - 8 * k));
  update(pad, pad_len + 8);
  std::array<uint8_t, 32> out;
  for (int k = 0; k < 8; k++)
    for (int b = 0; b < 4; b++) out[4 * k + b] = uint8_t(state_[k] >> (24 - 8 * b));
  return out;
}

std::string Sha256::hex() {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (uint8_t byte : digest()) {
    s += digits[byte >> 4];
    s += digits[byte & 15];
  }
  return s;
}

std::string sha256_hex(const void* data, size_t n) {
  Sha256 h;
  h.update(data, n);
  return h.hex();
}

std::string sha256_file(const std::string& path) {
  MappedFile f(path);
  return sha256_hex(f.data(), f.size());
}

}  // namespace oracle
