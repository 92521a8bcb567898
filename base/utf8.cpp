#include "base/utf8.h"

#include "base/errors.h"

#include "faults/fault.h"

namespace oracle {

// ---- Well-formed byte sequences (Unicode Table 3-7) ----------------------------
// Total length announced by a lead byte; 0 = the byte cannot start a character.
static int lead_length(uint8_t b) {
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return 2;
  if (b >= 0xE0 && b <= 0xEF) return 3;
  if (b >= 0xF0 && b <= 0xF4) return 4;
  return 0;
}

// Whether `b` may be byte number `index` (1..3) of a sequence starting with `lead`.
static bool continuation_ok(uint8_t lead, int index, uint8_t b) {
  uint8_t lo = 0x80, hi = 0xBF;
  if (index == 1) {
    if (lead == 0xE0) lo = 0xA0;       // no overlong 3-byte forms
    if (lead == 0xED) hi = 0x9F;       // no surrogates
    if (lead == 0xF0) lo = 0x90;       // no overlong 4-byte forms
    if (lead == 0xF4) hi = 0x8F;       // nothing above U+10FFFF
  }
  return b >= lo && b <= hi;
}

// Length of the well-formed sequence at s[pos], or 0 if it is ill-formed.
static int valid_sequence_at(const std::string& s, size_t pos) {
  uint8_t lead = (uint8_t)s[pos];
  int len = lead_length(lead);
  if (len == 0 || pos + (size_t)len > s.size()) return 0;
  for (int i = 1; i < len; i++)
    if (!continuation_ok(lead, i, (uint8_t)s[pos + i])) return 0;
  return len;
}

void require_utf8(const std::string& s, const std::string& file, const std::string& field) {
  const size_t bad = utf8_first_invalid(s);
  require_input(bad == std::string::npos, file, field, "invalid UTF-8 at byte " + std::to_string(bad));
}

size_t utf8_first_invalid(const std::string& s) {
  size_t pos = 0;
  while (pos < s.size()) {
    int len = valid_sequence_at(s, pos);
    if (len == 0) return pos;
    pos += (size_t)len;
  }
  return std::string::npos;
}

int utf8_sequence_length(uint8_t lead) {
  static const int lengths[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return lengths[lead >> 4];
}

// ---- Code points ---------------------------------------------------------------
std::vector<uint32_t> utf8_to_codepoints(const std::string& s) {
  std::vector<uint32_t> cps;
  size_t pos = 0;
  while (pos < s.size()) {
    int len = valid_sequence_at(s, pos);
    if (len == 0) {
      cps.push_back(0xFFFD);
      pos++;
      continue;
    }
    uint8_t lead = (uint8_t)s[pos];
    uint32_t cp = len == 1 ? lead : len == 2 ? (lead & 0x1Fu) : len == 3 ? (lead & 0x0Fu) : (lead & 0x07u);
    for (int i = 1; i < len; i++) cp = (cp << 6) | ((uint8_t)s[pos + i] & 0x3Fu);
    cps.push_back(cp);
    pos += (size_t)len;
  }
  return cps;
}

void utf8_append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += (char)cp;
  } else if (cp < 0x800) {
    out += (char)(0xC0 | (cp >> 6));
    out += (char)(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += (char)(0xE0 | (cp >> 12));
    out += (char)(0x80 | ((cp >> 6) & 0x3F));
    out += (char)(0x80 | (cp & 0x3F));
  } else {
    out += (char)(0xF0 | (cp >> 18));
    out += (char)(0x80 | ((cp >> 12) & 0x3F));
    out += (char)(0x80 | ((cp >> 6) & 0x3F));
    out += (char)(0x80 | (cp & 0x3F));
  }
}

// ---- Incremental decoder -----------------------------------------------------------
void Utf8Decoder::replace(std::string& out) {
  out += kReplacementChar;
  n_replaced_++;
  pending_.clear();
  need_ = 0;
}

void Utf8Decoder::push(uint8_t byte, std::string& out) {
  if (!pending_.empty()) {
    if (continuation_ok((uint8_t)pending_[0], (int)pending_.size(), byte)) {
      pending_ += (char)byte;
      if ((int)pending_.size() == need_) {
        out += pending_;
        pending_.clear();
        need_ = 0;
      }
      return;
    }
    replace(out);  // the maximal subpart ends here; `byte` starts afresh
  }
  int len = lead_length(byte);
  if (len == 1) {
    out += (char)byte;
  } else if (len == 0) {
    if (fault::active(fault::Fault::UTF8_DROP_INVALID)) {
      n_replaced_++;  // FAULT: an invalid byte is dropped instead of shown as U+FFFD
      return;
    }
    replace(out);
  } else {
    pending_ = std::string(1, (char)byte);
    need_ = len;
  }
}

void Utf8Decoder::finish(std::string& out) {
  if (!pending_.empty()) replace(out);
}

}  // namespace oracle
