#pragma once
// ============================================================================
// SHA-256 (FIPS 180-4), streaming: update() any number of times, then hex().
// Used to identify checkpoint files in reports and golden transcripts.
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
  void compress(const uint8_t* block);  // one 64-byte block
  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

std::string sha256_hex(const void* data, size_t n);
// Hash of a file's bytes (memory-mapped); InputError when it cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace oracle
