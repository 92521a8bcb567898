// Jinja lexer: jinja2 3.1's Lexer.tokeniter with trim_blocks and lstrip_blocks on and
// keep_trailing_newline off (as Hugging Face's environment). See jinja_impl.h.
#include <cstring>
#include <string>
#include <vector>

#include "base/errors.h"
#include "base/utf8.h"
#include "reference/tokenizer/jinja_impl.h"

namespace oracle::jinja {

void fail(const std::string& file, int line, const std::string& message) {
  throw InputError(file, "tokenizer.chat_template", "line " + std::to_string(line) + ": " + message);
}

namespace {

// Newlines normalised to \n (\r\n, \r), one trailing newline dropped (keep_trailing_newline off).
std::string normalize(const std::string& src) {
  std::string out;
  for (size_t k = 0; k < src.size(); k++) {
    if (src[k] == '\r') {
      out += '\n';
      if (k + 1 < src.size() && src[k + 1] == '\n') k++;
    } else {
      out += src[k];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// Byte length of the Python-whitespace code point at s[k], or 0.
size_t space_at(const std::string& s, size_t k) {
  if (k >= s.size()) return 0;
  const int n = utf8_sequence_length((uint8_t)s[k]);
  if (n <= 0 || k + n > s.size()) return 0;
  const std::vector<uint32_t> cp = utf8_to_codepoints(s.substr(k, n));
  return cp.size() == 1 && py_isspace(cp[0]) ? (size_t)n : 0;
}
size_t skip_spaces(const std::string& s, size_t k) {
  while (size_t n = space_at(s, k)) k += n;
  return k;
}
bool all_spaces(const std::string& s, size_t from) { return skip_spaces(s, from) == s.size(); }

std::string rstrip(const std::string& s) {  // Python str.rstrip()
  const std::vector<uint32_t> cps = utf8_to_codepoints(s);
  size_t n = cps.size();
  while (n > 0 && py_isspace(cps[n - 1])) n--;
  std::string out;
  for (size_t k = 0; k < n; k++) utf8_append(out, cps[k]);
  return out;
}

struct Lexer {
  const std::string& file;
  std::string src;
  size_t pos = 0;
  int line = 1;
  std::vector<Token> out;

  size_t counted = 0;  // line_at's cache: newlines in src[0, counted) make line - 1
  int line_at(size_t upto) {
    if (upto < counted) counted = 0, line = 1;
    for (; counted < upto && counted < src.size(); counted++) line += src[counted] == '\n';
    return line;
  }
  void emit(Tok kind, std::string text = "") { out.push_back({kind, std::move(text), 0, 0, line_at(pos)}); }
  [[noreturn]] void error(const std::string& m) { fail(file, line_at(pos), m); }

  void run();
  bool text_until_tag(bool* line_starting);
  void comment(bool* line_starting);
  void tag(bool block, bool* line_starting);
  bool tag_end(bool block, bool* line_starting);
  void number();
  void string_literal();
  void op(int* depth);
};

const char* const kOps[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[", "]", "(",
                            ")", "{", "}", ">", "<", "=", ".", ":", "|", ",", ";"};

void Lexer::run() {
  bool line_starting = true;
  while (text_until_tag(&line_starting)) {
    const char kind = src[pos + 1];
    pos += 2;
    if (pos < src.size() && (src[pos] == '-' || src[pos] == '+')) pos++;
    if (kind == '#') comment(&line_starting);
    else tag(kind == '%', &line_starting);
  }
  emit(Tok::Eof);
}

// The text before the next `{{`, `{%` or `{#` (whitespace control and lstrip_blocks
// applied); false at the end of the source.
bool Lexer::text_until_tag(bool* line_starting) {
  size_t at = pos;
  while ((at = src.find('{', at)) != std::string::npos && at + 1 < src.size() && (src[at + 1] == 0 || !std::strchr("{%#", src[at + 1]))) at++;
  if (at == std::string::npos || at + 1 >= src.size()) {
    if (pos < src.size()) emit(Tok::Text, src.substr(pos));
    pos = src.size();
    return false;
  }
  std::string text = src.substr(pos, at - pos);
  const char kind = src[at + 1], sign = at + 2 < src.size() ? src[at + 2] : 0;
  if (kind == '%') {  // {% raw %} is jinja2's own rule: refused
    size_t k = skip_spaces(src, at + 2 + (sign == '-' || sign == '+'));
    if (src.compare(k, 3, "raw") == 0 && (k + 3 >= src.size() || !std::isalnum((unsigned char)src[k + 3])))
      fail(file, line_at(at), "{% raw %} blocks are not supported");
  }
  if (sign == '-') {
    text = rstrip(text);
  } else if (sign != '+' && kind != '{') {  // lstrip_blocks: not for {{ }}
    const size_t l_pos = text.rfind('\n') + 1;  // npos + 1 == 0
    if ((l_pos > 0 || *line_starting) && l_pos < text.size() && all_spaces(text, l_pos)) text.resize(l_pos);
  }
  if (!text.empty()) emit(Tok::Text, text);
  pos = at;
  return true;
}

// {# ... #}: `-#}` strips the following whitespace, `+#}` keeps it, `#}` eats one newline.
void Lexer::comment(bool* line_starting) {
  const size_t start = pos, end = src.find("#}", pos);
  if (end == std::string::npos) error("missing end of comment tag");
  const char sign = end > start ? src[end - 1] : 0;
  pos = end + 2;
  if (sign == '-') pos = skip_spaces(src, pos);
  else if (sign != '+' && pos < src.size() && src[pos] == '\n') pos++;
  *line_starting = src[pos - 1] == '\n';
}

// {% ... %} or {{ ... }}: expression tokens up to the end marker at bracket depth 0.
void Lexer::tag(bool block, bool* line_starting) {
  emit(block ? Tok::BlockBegin : Tok::VarBegin);
  int depth = 0;
  while (true) {
    pos = skip_spaces(src, pos);
    if (pos >= src.size()) error(block ? "missing end of block tag %}" : "missing end of variable tag }}");
    if (depth == 0 && tag_end(block, line_starting)) return;
    const char c = src[pos];
    if (std::isdigit((unsigned char)c)) {
      number();
    } else if (std::isalpha((unsigned char)c) || c == '_') {
      size_t e = pos;
      while (e < src.size() && (std::isalnum((unsigned char)src[e]) || src[e] == '_')) e++;
      emit(Tok::Name, src.substr(pos, e - pos));
      pos = e;
    } else if (c == '\'' || c == '"') {
      string_literal();
    } else {
      op(&depth);
    }
  }
}

bool Lexer::tag_end(bool block, bool* line_starting) {
  const char* close = block ? "%}" : "}}";
  const bool minus = src.compare(pos, 3, std::string("-") + close) == 0;
  const bool plus = block && src.compare(pos, 3, std::string("+") + close) == 0;
  if (!minus && !plus && src.compare(pos, 2, close) != 0) return false;
  emit(block ? Tok::BlockEnd : Tok::VarEnd);
  pos += (minus || plus) ? 3 : 2;
  if (minus) pos = skip_spaces(src, pos);
  else if (block && !plus && pos < src.size() && src[pos] == '\n') pos++;  // trim_blocks
  *line_starting = src[pos - 1] == '\n';
  return true;
}

// Decimal integers and floats (`1`, `0`, `1.5`, `2e3`, `1.5e-3`); other forms are refused.
void Lexer::number() {
  size_t e = pos;
  auto digits = [&] { while (e < src.size() && std::isdigit((unsigned char)src[e])) e++; };
  digits();
  bool is_float = false;
  if (e + 1 < src.size() && src[e] == '.' && std::isdigit((unsigned char)src[e + 1])) {
    e++, digits(), is_float = true;
  }
  if (e < src.size() && (src[e] == 'e' || src[e] == 'E')) {
    size_t k = e + 1 + (e + 1 < src.size() && (src[e + 1] == '+' || src[e + 1] == '-'));
    if (k < src.size() && std::isdigit((unsigned char)src[k])) e = k, digits(), is_float = true;
  }
  if (e < src.size() && (std::isalpha((unsigned char)src[e]) || src[e] == '_'))
    error("number literal '" + src.substr(pos, e + 1 - pos) + "' (prefixes and '_') is not supported");
  const std::string text = src.substr(pos, e - pos);
  Token t{is_float ? Tok::Float : Tok::Int, text, 0, 0, line_at(pos)};
  if (is_float) {
    t.fval = std::stod(text);
  } else {
    if (text.size() > 1 && text[0] == '0') error("integer literal with a leading zero: " + text);
    if (text.size() > 18) error("integer literal too large: " + text);
    t.ival = std::stoll(text);
  }
  out.push_back(t);
  pos = e;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Python's unicode-escape decoding of a jinja2 string literal.
void Lexer::string_literal() {
  const char quote = src[pos];
  size_t k = pos + 1;
  std::string value;
  while (true) {
    if (k >= src.size()) error("unterminated string literal");
    const char c = src[k];
    if (c == quote) break;
    if (c != '\\') {
      value += c, k++;
      continue;
    }
    if (k + 1 >= src.size()) error("unterminated string literal");
    const char e = src[k + 1];
    k += 2;
    static const char kSimple[] = "\\\\''\"\"a\ab\bf\fn\nr\rt\tv\v";
    const char* hit = nullptr;
    for (size_t s = 0; kSimple[s]; s += 2)
      if (kSimple[s] == e) hit = &kSimple[s + 1];
    if (hit) {
      value += *hit;
    } else if (e == '\n') {  // line continuation
    } else if (e >= '0' && e <= '7') {
      uint32_t cp = e - '0';
      for (int d = 0; d < 2 && k < src.size() && src[k] >= '0' && src[k] <= '7'; d++) cp = cp * 8 + (src[k++] - '0');
      utf8_append(value, cp);
    } else if (e == 'x' || e == 'u' || e == 'U') {
      const int n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
      uint32_t cp = 0;
      for (int d = 0; d < n; d++, k++) {
        if (k >= src.size() || hex_value(src[k]) < 0) error(std::string("bad \\") + e + " escape in a string literal");
        cp = cp * 16 + hex_value(src[k]);
      }
      if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) error("string escape outside Unicode scalar values");
      utf8_append(value, cp);
    } else if ((unsigned char)e >= 0x80 || e == 'N') {
      error(std::string("string escape '\\") + e + "...' is not supported");
    } else {
      value += '\\', value += e;  // unknown escapes keep the backslash
    }
  }
  emit(Tok::String, value);
  pos = k + 1;
}

void Lexer::op(int* depth) {
  for (const char* o : kOps) {
    const size_t n = std::strlen(o);
    if (src.compare(pos, n, o) != 0) continue;
    if (n == 1 && std::strchr("([{", o[0])) (*depth)++;
    if (n == 1 && std::strchr(")]}", o[0])) {
      if (*depth == 0) error(std::string("unexpected '") + o + "'");
      (*depth)--;
    }
    emit(Tok::Op, o);
    pos += n;
    return;
  }
  error(std::string("unexpected character '") + src[pos] + "' in a tag");
}

}  // namespace

std::vector<Token> lex(const std::string& file, const std::string& source) {
  require_input(utf8_valid(source), file, "tokenizer.chat_template", "the template is not valid UTF-8");
  Lexer lexer{file, normalize(source), 0, 1, {}};
  lexer.run();
  return std::move(lexer.out);
}

}  // namespace oracle::jinja
