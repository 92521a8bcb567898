#pragma once
// ============================================================================
// The one error-text formatter (used by tools/cli_common.cpp print_error for
// every error line and --json object): bytes that came from a file or the
// command line are made safe for a one-line terminal message.
// ============================================================================
#include <string>
#include <string_view>

#include "base/errors.h"

namespace oracle {

// The one error-text formatter: bytes that came from a file or the command
// line are made safe for a one-line terminal message. Valid UTF-8 stays; each
// control character (C0, DEL, C1 — so ANSI escape sequences lose their ESC),
// each byte of invalid UTF-8, and NUL become \n, \r, \t or \xNN.
inline std::string escape_bytes(std::string_view s) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  auto esc = [&](unsigned char b) {
    if (b == '\n') out += "\\n";
    else if (b == '\r') out += "\\r";
    else if (b == '\t') out += "\\t";
    else out += {'\\', 'x', hex[b >> 4], hex[b & 15]};
  };
  for (size_t i = 0; i < s.size();) {
    const unsigned char b = (unsigned char)s[i];
    if (b < 0x80) {
      if (b < 0x20 || b == 0x7f) esc(b);
      else out += (char)b;
      i++;
      continue;
    }
    // A well-formed UTF-8 sequence (no overlongs, surrogates or > U+10FFFF), and not C1.
    const int len = b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (int k = 1; ok && k < len; k++) ok = ((unsigned char)s[i + k] & 0xc0) == 0x80;
    if (ok && len == 3) {
      const unsigned char c1 = (unsigned char)s[i + 1];
      ok = !(b == 0xe0 && c1 < 0xa0) && !(b == 0xed && c1 >= 0xa0);
    }
    if (ok && len == 4) {
      const unsigned char c1 = (unsigned char)s[i + 1];
      ok = !(b == 0xf0 && c1 < 0x90) && !(b == 0xf4 && c1 >= 0x90);
    }
    if (ok && len == 2 && b == 0xc2 && (unsigned char)s[i + 1] < 0xa0) ok = false;  // C1 controls
    if (!ok) {
      esc(b);
      i++;
      continue;
    }
    out.append(s.substr(i, (size_t)len));
    i += (size_t)len;
  }
  return out;
}

// The <message> part of an InputError's "<file>: <field>: <message>".
inline std::string input_error_message(const InputError& e) {
  const std::string what = e.what();
  const std::string prefix = e.file() + ": " + e.field() + ": ";
  return what.rfind(prefix, 0) == 0 ? what.substr(prefix.size()) : what;
}

}  // namespace oracle
