#pragma once
// ============================================================================
// UTF-8 helpers: strict validation (Unicode Table 3-7: no overlongs, no
// surrogates, nothing above U+10FFFF), code point decoding/encoding, and an
// incremental decoder that replaces each maximal ill-formed subpart by U+FFFD
// (Unicode's "best practice", the same rule as Python's errors="replace").
// ============================================================================
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace oracle {

inline constexpr const char* kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// Byte offset of the first ill-formed sequence in `s`, or std::string::npos.
size_t utf8_first_invalid(const std::string& s);
inline bool utf8_valid(const std::string& s) { return utf8_first_invalid(s) == std::string::npos; }
// InputError(file, field, "invalid UTF-8 at byte N") unless `s` is valid.
void require_utf8(const std::string& s, const std::string& file, const std::string& field);

// Length of the sequence a lead byte announces (llama.cpp's table: continuation
// and invalid lead bytes count as 1). Used only to split valid text into chars.
int utf8_sequence_length(uint8_t lead);

// Code points of valid UTF-8 (call utf8_valid first; ill-formed bytes map to U+FFFD).
std::vector<uint32_t> utf8_to_codepoints(const std::string& s);
void utf8_append(std::string& out, uint32_t cp);

// ---- Incremental decoder -----------------------------------------------------
// push(byte) appends to `out` every character that is complete and valid;
// ill-formed input becomes U+FFFD (one per maximal subpart) and is counted.
class Utf8Decoder {
 public:
  void push(uint8_t byte, std::string& out);
  void finish(std::string& out);  // an unfinished sequence at the end -> U+FFFD
  int n_replaced() const { return n_replaced_; }
  size_t n_pending() const { return pending_.size(); }

 private:
  void replace(std::string& out);
  std::string pending_;  // (0..3) bytes of a sequence that is valid so far
  int need_ = 0;         // total length of the pending sequence
  int n_replaced_ = 0;
};

}  // namespace oracle
