#pragma once
// One error type for bad input. Library code never exits the process: it throws
// InputError, and tools/ turns it into one line on stderr and exit code 2.
#include <stdexcept>
#include <string>
#include <string_view>

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

// what() reads "<file>: <field>: <message>" (escaped) so a user can find the culprit.
class InputError : public std::runtime_error {
 public:
  InputError(const std::string& file, const std::string& field, const std::string& message)
      : std::runtime_error(escape_bytes(file) + ": " + escape_bytes(field) + ": " + escape_bytes(message)),
        file_(file), field_(field), message_(message) {}
  const std::string& file() const { return file_; }
  const std::string& field() const { return field_; }
  const std::string& message() const { return message_; }

 private:
  std::string file_;
  std::string field_;
  std::string message_;
};

// A check whose failure is the caller's input, not our bug.
inline void require_input(bool ok, const std::string& file, const std::string& field,
                          const std::string& message) {
  if (!ok) throw InputError(file, field, message);
}

}  // namespace oracle
