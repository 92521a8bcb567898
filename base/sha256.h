#pragma once
// ============================================================================
// SHA-256 (FIPS 180-4), streaming: update() any number of times, then hex().
// Used to identify checkpoint files in reports and golden transcripts.
// Whole blocks go through the CPU's SHA extensions where it has them (x86
// SHA-NI: sha256rnds2 / sha256msg1 / sha256msg2), else the portable FIPS
// loop; the two are the same function (test_sha256 compares them on random
// data). Loading a model hashes its whole file, so this is load time.
// ============================================================================
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace oracle {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t n);
  void update(const std::string& s) { update(s.data(), s.size()); }
  std::array<uint8_t, 32> digest();  // finishes the hash; call once
  std::string hex();                 // finishes the hash; lowercase hex digest

 private:
  void compress(const uint8_t* blocks, size_t n_blocks);  // 64-byte blocks
  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

std::string sha256_hex(const void* data, size_t n);

// The two block functions, for tests: state (8 words) updated by n_blocks
// 64-byte blocks. compress_sha_ext returns false (state untouched) when the
// CPU lacks the extensions; sha_ext_available() says which Sha256 uses.
namespace sha256_detail {
void compress_portable(uint32_t* state, const uint8_t* blocks, size_t n_blocks);
bool compress_sha_ext(uint32_t* state, const uint8_t* blocks, size_t n_blocks);
bool sha_ext_available();
}  // namespace sha256_detail
// Hash of a file's bytes (memory-mapped); InputError when it cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace oracle
