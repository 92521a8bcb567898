// The split-pattern regex engine (see regex_split.h): a recursive-descent
// parser to a small tree, and a continuation-passing backtracking matcher.
#include "reference/tokenizer/regex_split.h"

#include <functional>
#include <stdexcept>

#include "reference/tokenizer/unicode_class.h"
#include "base/utf8.h"

namespace oracle {

// ---- Tree ------------------------------------------------------------------------
struct CharSet {
  bool negated = false;
  std::vector<std::pair<uint32_t, uint32_t>> ranges;  // inclusive, compared as literal()
  uint32_t categories = 0;                             // bit (1 << UnicodeCategory)
  bool space = false;                                  // \s
  bool non_space = false;                              // \S
};

enum class NodeKind { Set, Seq, Alt, Repeat, NotAhead, Ahead, End };

struct RegexNode {
  NodeKind kind = NodeKind::Seq;
  CharSet set;                    // Set
  std::vector<RegexNode> kids;    // Seq, Alt; Repeat/NotAhead/Ahead: kids[0]
  int min = 0, max = -1;          // Repeat (-1: unbounded)
};

// llama.cpp's std::wregex path sees non-ASCII White_Space as U+000B.
static uint32_t literal(uint32_t cp) { return cp > 0x7F && unicode_is_whitespace(cp) ? 0x0B : cp; }

static bool set_has(const CharSet& s, uint32_t cp) {
  bool in = false;
  uint32_t lit = literal(cp);
  for (const auto& r : s.ranges) in = in || (lit >= r.first && lit <= r.second);
  bool ws = unicode_is_whitespace(cp);
  in = in || (s.space && ws) || (s.non_space && !ws);
  in = in || (s.categories >> (unsigned)unicode_category(cp) & 1u);
  return in != s.negated;
}

// ---- Parser ----------------------------------------------------------------------
namespace {

class Parser {
 public:
  explicit Parser(const std::string& pattern) : p_(utf8_to_codepoints(pattern)), text_(pattern) {}
  RegexNode parse() {
    RegexNode n = alternation();
    if (i_ != p_.size()) fail("unbalanced ')'");
    return n;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw std::invalid_argument("regex '" + text_ + "' at " + std::to_string(i_) + ": " + why);
  }
  bool more() const { return i_ < p_.size(); }
  uint32_t peek() const { return more() ? p_[i_] : 0; }
  bool eat(uint32_t c) { return more() && p_[i_] == c ? (i_++, true) : false; }

  RegexNode alternation();
  RegexNode sequence();
  RegexNode atom();
  RegexNode group();
  void quantifier(RegexNode& n);
  int number();
  RegexNode char_class();
  void escape_into(CharSet& s, bool in_class);

  std::vector<uint32_t> p_;
  std::string text_;
  size_t i_ = 0;
};

RegexNode Parser::alternation() {
  RegexNode alt;
  alt.kind = NodeKind::Alt;
  alt.kids.push_back(sequence());
  while (eat('|')) alt.kids.push_back(sequence());
  return alt.kids.size() == 1 ? alt.kids[0] : alt;
}

RegexNode Parser::sequence() {
  RegexNode seq;
  seq.kind = NodeKind::Seq;
  while (more() && peek() != '|' && peek() != ')') {
    seq.kids.push_back(atom());
    quantifier(seq.kids.back());
  }
  return seq;
}

RegexNode Parser::group() {
  if (!eat('?')) fail("capturing groups are not supported; use (?:...)");
  RegexNode n;
  if (eat(':')) n = alternation();
  else if (eat('!')) n = RegexNode{NodeKind::NotAhead, {}, {alternation()}};
  else if (eat('=')) n = RegexNode{NodeKind::Ahead, {}, {alternation()}};
  else fail("unsupported group (only (?:...), (?!...), (?=...))");
  if (!eat(')')) fail("missing ')'");
  return n;
}

RegexNode Parser::atom() {
  RegexNode n;
  n.kind = NodeKind::Set;
  uint32_t c = p_[i_++];
  if (c == '(') return group();
  if (c == '[') return char_class();
  if (c == '$') return RegexNode{NodeKind::End, {}, {}};
  if (c == '\\') escape_into(n.set, false);
  else if (c == '.' || c == '^' || c == '*' || c == '+' || c == '?' || c == '{') fail("unsupported or misplaced operator");
  else n.set.ranges.push_back({c, c});
  return n;
}

int Parser::number() {
  if (!more() || peek() < '0' || peek() > '9') fail("expected a number in {}");
  int v = 0;
  while (more() && peek() >= '0' && peek() <= '9') v = v * 10 + (int)(p_[i_++] - '0');
  return v;
}

void Parser::quantifier(RegexNode& n) {
  int lo = 0, hi = -1;
  if (eat('?')) hi = 1;
  else if (eat('*')) hi = -1;
  else if (eat('+')) lo = 1;
  else if (eat('{')) {
    lo = hi = number();
    if (eat(',')) hi = peek() == '}' ? -1 : number();
    if (!eat('}')) fail("missing '}'");
  } else {
    return;
  }
  if (peek() == '?' || peek() == '+') fail("lazy and possessive quantifiers are not supported");
  if (n.kind == NodeKind::End || n.kind == NodeKind::NotAhead || n.kind == NodeKind::Ahead) fail("quantified assertion");
  RegexNode rep{NodeKind::Repeat, {}, {n}, lo, hi};
  n = rep;
}

void Parser::escape_into(CharSet& s, bool in_class) {
  if (!more()) fail("trailing '\\'");
  uint32_t c = p_[i_++];
  switch (c) {
    case 'r': s.ranges.push_back({'\r', '\r'}); return;
    case 'n': s.ranges.push_back({'\n', '\n'}); return;
    case 't': s.ranges.push_back({'\t', '\t'}); return;
    case 'f': s.ranges.push_back({'\f', '\f'}); return;
    case 'v': s.ranges.push_back({'\v', '\v'}); return;
    case 's': s.space = true; return;
    case 'S': s.non_space = true; return;
    case 'd': s.ranges.push_back({'0', '9'}); return;
    default: break;
  }
  if (c == 'p') {
    if (!eat('{') || !more()) fail("expected \\p{X}");
    const std::string cats = "?LMNPS";  // UnicodeCategory order
    size_t at = cats.find((char)p_[i_]);
    if (p_[i_] > 0x7F || at == std::string::npos || at == 0 || (i_++, !eat('}')))
      fail("only \\p{L}, \\p{M}, \\p{N}, \\p{P}, \\p{S} are supported");
    s.categories |= 1u << at;
    return;
  }
  bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  if (alnum) fail(std::string("unsupported escape \\") + (char)c);
  (void)in_class;
  s.ranges.push_back({c, c});
}

RegexNode Parser::char_class() {
  RegexNode n;
  n.kind = NodeKind::Set;
  n.set.negated = eat('^');
  bool first = true;
  while (more() && (peek() != ']' || first)) {
    first = false;
    uint32_t c = p_[i_++];
    if (c == '\\') {
      escape_into(n.set, true);
      continue;
    }
    if (c == '[') fail("nested classes are not supported");
    uint32_t hi = c;
    if (peek() == '-' && i_ + 1 < p_.size() && p_[i_ + 1] != ']') {
      i_++;
      hi = p_[i_++];
      if (hi == '\\') fail("escaped range ends are not supported");
      if (hi < c) fail("reversed range");
    }
    n.set.ranges.push_back({c, hi});
  }
  if (!eat(']')) fail("missing ']'");
  return n;
}

// ---- Matcher ---------------------------------------------------------------------
using Cont = std::function<bool(size_t)>;

class Matcher {
 public:
  Matcher(const std::vector<uint32_t>& cps, size_t end) : cps_(cps), end_(end) {}
  bool node(const RegexNode& n, size_t i, const Cont& k) const;

 private:
  bool seq(const RegexNode& n, size_t idx, size_t i, const Cont& k) const;
  bool repeat(const RegexNode& n, int count, size_t i, const Cont& k) const;
  bool repeat_set(const RegexNode& n, size_t i, const Cont& k) const;
  const std::vector<uint32_t>& cps_;
  size_t end_;
};

bool Matcher::seq(const RegexNode& n, size_t idx, size_t i, const Cont& k) const {
  if (idx == n.kids.size()) return k(i);
  return node(n.kids[idx], i, [&](size_t j) { return seq(n, idx + 1, j, k); });
}

// A repeated single character: count the longest run, then give back one at a time.
bool Matcher::repeat_set(const RegexNode& n, size_t i, const Cont& k) const {
  size_t run = 0;
  const CharSet& s = n.kids[0].set;
  while (i + run < end_ && (n.max < 0 || (int)run < n.max) && set_has(s, cps_[i + run])) run++;
  for (long c = (long)run; c >= n.min; c--)
    if (k(i + (size_t)c)) return true;
  return false;
}

bool Matcher::repeat(const RegexNode& n, int count, size_t i, const Cont& k) const {
  if ((n.max < 0 || count < n.max) &&
      node(n.kids[0], i, [&](size_t j) { return j != i && repeat(n, count + 1, j, k); }))
    return true;
  return count >= n.min && k(i);
}

bool Matcher::node(const RegexNode& n, size_t i, const Cont& k) const {
  switch (n.kind) {
    case NodeKind::Set: return i < end_ && set_has(n.set, cps_[i]) && k(i + 1);
    case NodeKind::End: return i == end_ && k(i);
    case NodeKind::Seq: return seq(n, 0, i, k);
    case NodeKind::Alt:
      for (const RegexNode& alt : n.kids)
        if (node(alt, i, k)) return true;
      return false;
    case NodeKind::Repeat:
      return n.kids[0].kind == NodeKind::Set ? repeat_set(n, i, k) : repeat(n, 0, i, k);
    case NodeKind::NotAhead: return !node(n.kids[0], i, [](size_t) { return true; }) && k(i);
    case NodeKind::Ahead: return node(n.kids[0], i, [](size_t) { return true; }) && k(i);
  }
  return false;
}

}  // namespace

// ---- Public ------------------------------------------------------------------------
SplitRegex::SplitRegex(const std::string& pattern) : pattern_(pattern) {
  if (!utf8_valid(pattern)) throw std::invalid_argument("regex is not valid UTF-8");
  Parser parser(pattern);
  root_ = std::make_shared<RegexNode>(parser.parse());
}

long SplitRegex::match_at(const std::vector<uint32_t>& cps, size_t begin, size_t end, size_t pos) const {
  (void)begin;  // no look-behind or ^ in the supported syntax
  Matcher m(cps, end);
  long found = -1;
  m.node(*root_, pos, [&](size_t j) {
    found = (long)(j - pos);
    return true;
  });
  return found;
}

std::vector<size_t> regex_split(const std::vector<uint32_t>& cps, const SplitRegex& re,
                                const std::vector<size_t>& lengths) {
  std::vector<size_t> out;
  size_t start = 0;
  for (size_t len : lengths) {
    size_t end = start + len, gap = start;  // gap: start of the text not yet emitted
    for (size_t pos = start; pos < end;) {
      long n = re.match_at(cps, start, end, pos);
      if (n <= 0) {
        pos++;
        continue;
      }
      if (pos > gap) out.push_back(pos - gap);
      out.push_back((size_t)n);
      pos += (size_t)n;
      gap = pos;
    }
    if (end > gap) out.push_back(end - gap);
    start = end;
  }
  return out;
}

std::vector<std::string> regex_split_words(const std::string& text, const std::vector<SplitRegex>& patterns) {
  const std::vector<uint32_t> cps = utf8_to_codepoints(text);
  std::vector<size_t> lengths;
  if (!cps.empty()) lengths.push_back(cps.size());
  for (const SplitRegex& re : patterns) lengths = regex_split(cps, re, lengths);
  std::vector<std::string> words;
  size_t at = 0;
  for (size_t len : lengths) {
    std::string w;
    for (size_t i = at; i < at + len; i++) utf8_append(w, cps[i]);
    words.push_back(std::move(w));
    at += len;
  }
  return words;
}

}  // namespace oracle
