// Python value semantics for the Jinja interpreter (jinja_impl.h): truthiness,
// equality, ordering, str(), len(), iteration and the arithmetic operators, as
// CPython 3 and jinja2's default Undefined define them. Where Python's result
// cannot be reproduced exactly here (unbounded ints, float floor division, repr of
// containers), the template is refused.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "base/utf8.h"
#include "reference/tokenizer/jinja_impl.h"

namespace oracle::jinja {

const Value* Value::find(const std::string& key) const {
  if (!dict || !(type == Type::Dict || type == Type::Namespace)) return nullptr;
  for (const auto& [k, v] : *dict)
    if (k == key) return &v;
  return nullptr;
}

bool py_isspace(uint32_t c) {  // str.isspace(): the whitespace `\s` and str.strip() use
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

std::string type_name(const Value& v) {
  switch (v.type) {
    case Type::Undefined: return "Undefined";
    case Type::None: return "NoneType";
    case Type::Bool: return "bool";
    case Type::Int: return "int";
    case Type::Float: return "float";
    case Type::String: return "str";
    case Type::List: return v.generator ? "generator" : v.tuple ? "tuple" : "list";
    case Type::Dict: return "dict";
    case Type::Namespace: return "Namespace";
  }
  return "?";
}

bool truthy(const Value& v) {
  switch (v.type) {
    case Type::Undefined: case Type::None: return false;
    case Type::Bool: return v.b;
    case Type::Int: return v.i != 0;
    case Type::Float: return v.f != 0;
    case Type::String: return !v.s.empty();
    case Type::List: return v.generator || !v.list->empty();
    case Type::Dict: return !v.dict->empty();
    case Type::Namespace: return true;
  }
  return false;
}

namespace {
bool numeric(const Value& v) { return v.is(Type::Int) || v.is(Type::Bool) || v.is(Type::Float); }
int64_t int_of(const Value& v) { return v.is(Type::Bool) ? v.b : v.i; }
double float_of(const Value& v) { return v.is(Type::Float) ? v.f : (double)int_of(v); }
}  // namespace

bool equal(const Value& a, const Value& b) {
  if (numeric(a) && numeric(b)) {
    if (a.is(Type::Float) || b.is(Type::Float)) return float_of(a) == float_of(b);
    return int_of(a) == int_of(b);
  }
  if (a.type != b.type) return false;
  switch (a.type) {
    case Type::Undefined: case Type::None: return true;
    case Type::String: return a.s == b.s;
    case Type::List:
      if (a.generator || b.generator) return a.list == b.list;
      if (a.tuple != b.tuple || a.list->size() != b.list->size()) return false;
      for (size_t k = 0; k < a.list->size(); k++)
        if (!equal((*a.list)[k], (*b.list)[k])) return false;
      return true;
    case Type::Dict:
      if (a.dict->size() != b.dict->size()) return false;
      for (const auto& [k, v] : *a.dict) {
        const Value* other = b.find(k);
        if (!other || !equal(v, *other)) return false;
      }
      return true;
    case Type::Namespace: return a.dict == b.dict;
    default: return false;
  }
}

std::string py_float_repr(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  std::string sci(buf, res.ptr);  // [-]d[.ddd]e[+-]XX, shortest round trip
  std::string sign;
  if (sci[0] == '-') sign = "-", sci.erase(0, 1);
  const size_t e = sci.find('e');
  std::string digits = sci.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int exp10 = std::stoi(sci.substr(e + 1));
  const int decpt = exp10 + 1, n = (int)digits.size();
  if (decpt <= -4 || decpt > 16) {  // CPython's float_repr_style 'short'
    std::string out = sign + digits.substr(0, 1);
    if (n > 1) out += "." + digits.substr(1);
    const int ae = std::abs(exp10);
    return out + (exp10 < 0 ? "e-" : "e+") + (ae < 10 ? "0" : "") + std::to_string(ae);
  }
  if (decpt <= 0) return sign + "0." + std::string(-decpt, '0') + digits;
  if (decpt >= n) return sign + digits + std::string(decpt - n, '0') + ".0";
  return sign + digits.substr(0, decpt) + "." + digits.substr(decpt);
}

std::string to_str(const Value& v, Where w) {
  switch (v.type) {
    case Type::Undefined: return "";
    case Type::None: return "None";
    case Type::Bool: return v.b ? "True" : "False";
    case Type::Int: return std::to_string(v.i);
    case Type::Float: return py_float_repr(v.f);
    case Type::String: return v.s;
    default: fail(w.file, w.line, "printing a " + type_name(v) + " (Python's repr) is not supported");
  }
}

size_t py_len(const Value& v, Where w) {
  switch (v.type) {
    case Type::Undefined: return 0;
    case Type::String: return utf8_to_codepoints(v.s).size();
    case Type::List:
      if (!v.generator) return v.list->size();
      break;
    case Type::Dict: return v.dict->size();
    default: break;
  }
  fail(w.file, w.line, "object of type '" + type_name(v) + "' has no len()");
}

ValueList iterate(const Value& v, Where w) {
  switch (v.type) {
    case Type::Undefined: return {};
    case Type::List: return *v.list;
    case Type::Dict: {
      ValueList keys;
      for (const auto& kv : *v.dict) keys.push_back(Value::string(kv.first));
      return keys;
    }
    case Type::String: {
      ValueList chars;
      for (uint32_t cp : utf8_to_codepoints(v.s)) {
        std::string ch;
        utf8_append(ch, cp);
        chars.push_back(Value::string(ch));
      }
      return chars;
    }
    default: fail(w.file, w.line, "'" + type_name(v) + "' object is not iterable");
  }
}

std::string py_strip(const std::string& s, const Value& chars, bool left, bool right, Where w) {
  std::vector<uint32_t> set;
  const bool custom = !(chars.is(Type::None) || chars.is(Type::Undefined));
  if (custom) {
    if (!chars.is(Type::String)) fail(w.file, w.line, "strip arg must be None or str");
    set = utf8_to_codepoints(chars.s);
  }
  auto strip_it = [&](uint32_t c) {
    return custom ? std::find(set.begin(), set.end(), c) != set.end() : py_isspace(c);
  };
  const std::vector<uint32_t> cps = utf8_to_codepoints(s);
  size_t a = 0, b = cps.size();
  while (left && a < b && strip_it(cps[a])) a++;
  while (right && b > a && strip_it(cps[b - 1])) b--;
  std::string out;
  for (size_t k = a; k < b; k++) utf8_append(out, cps[k]);
  return out;
}

bool python_attribute(const Value& v, const std::string& name) {
  static const std::set<std::string> kStr = {
      "capitalize", "casefold", "center", "count", "encode", "endswith", "expandtabs", "find", "format",
      "format_map", "index", "isalnum", "isalpha", "isascii", "isdecimal", "isdigit", "isidentifier", "islower",
      "isnumeric", "isprintable", "isspace", "istitle", "isupper", "join", "ljust", "lower", "lstrip",
      "maketrans", "partition", "removeprefix", "removesuffix", "replace", "rfind", "rindex", "rjust",
      "rpartition", "rsplit", "rstrip", "split", "splitlines", "startswith", "strip", "swapcase", "title",
      "translate", "upper", "zfill"};
  static const std::set<std::string> kList = {"append", "clear", "copy", "count", "extend", "index",
                                              "insert", "pop", "remove", "reverse", "sort"};
  static const std::set<std::string> kDict = {"clear", "copy", "fromkeys", "get", "items", "keys",
                                              "pop", "popitem", "setdefault", "update", "values"};
  static const std::set<std::string> kNum = {"as_integer_ratio", "bit_count", "bit_length", "conjugate",
                                             "denominator", "from_bytes", "imag", "numerator", "real",
                                             "to_bytes", "fromhex", "hex", "is_integer"};
  switch (v.type) {
    case Type::String: return kStr.count(name) > 0;
    case Type::List: return v.generator ? true : kList.count(name) > 0;
    case Type::Dict: return kDict.count(name) > 0;
    case Type::Int: case Type::Bool: case Type::Float: return kNum.count(name) > 0;
    default: return false;
  }
}

namespace {

[[noreturn]] void type_error(const Value& a, const std::string& op, const Value& b, Where w) {
  fail(w.file, w.line, "unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'");
}

[[noreturn]] void overflow(Where w) {
  fail(w.file, w.line, "integer arithmetic beyond 64 bits (Python ints are unbounded) is not supported");
}

Value repeat(const Value& seq, int64_t times, Where w) {
  if (times <= 0) return seq.is(Type::String) ? Value::string("") : Value::make_list({});
  const size_t unit = seq.is(Type::String) ? seq.s.size() : seq.list->size();
  if (unit * (size_t)std::min<int64_t>(times, 1 << 30) > (1u << 24))
    fail(w.file, w.line, "a repetition longer than 16 MiB is not supported");
  if (seq.is(Type::String)) {
    std::string out;
    for (int64_t k = 0; k < times; k++) out += seq.s;
    return Value::string(out);
  }
  ValueList out;
  for (int64_t k = 0; k < times; k++) out.insert(out.end(), seq.list->begin(), seq.list->end());
  Value r = Value::make_list(std::move(out));
  r.tuple = seq.tuple;
  return r;
}

Value int_arith(int64_t x, const std::string& op, int64_t y, Where w) {
  int64_t r = 0;
  bool over = false;
  if (op == "+" || op == "-" || op == "*") {
    over = op == "+" ? __builtin_add_overflow(x, y, &r)
           : op == "-" ? __builtin_sub_overflow(x, y, &r)
                       : __builtin_mul_overflow(x, y, &r);
    if (over) overflow(w);
    return Value::integer(r);
  }
  if (op == "//" || op == "%") {
    if (y == 0) fail(w.file, w.line, "integer division or modulo by zero");
    if (x == INT64_MIN && y == -1) overflow(w);
    int64_t q = x / y, m = x % y;
    if (m != 0 && ((m < 0) != (y < 0))) q--, m += y;  // Python floors
    return Value::integer(op == "//" ? q : m);
  }
  if (op == "**") {
    if (y < 0) fail(w.file, w.line, "negative integer powers (a float in Python) are not supported");
    int64_t acc = 1;
    for (int64_t k = 0; k < y; k++)
      if (__builtin_mul_overflow(acc, x, &acc)) overflow(w);
    return Value::integer(acc);
  }
  fail(w.file, w.line, "unknown operator " + op);
}

}  // namespace

Value arith(const Value& a, const std::string& op, const Value& b, Where w) {
  if (a.is(Type::Undefined)) fail(w.file, w.line, a.s);
  if (b.is(Type::Undefined)) fail(w.file, w.line, b.s);
  if (numeric(a) && numeric(b)) {
    const bool ints = !a.is(Type::Float) && !b.is(Type::Float);
    if (op == "/") {
      if (float_of(b) == 0) fail(w.file, w.line, "division by zero");
      if (ints && (std::llabs(int_of(a)) > (1LL << 53) || std::llabs(int_of(b)) > (1LL << 53))) overflow(w);
      return Value::number(float_of(a) / float_of(b));
    }
    if (ints) return int_arith(int_of(a), op, int_of(b), w);
    if (op == "+") return Value::number(float_of(a) + float_of(b));
    if (op == "-") return Value::number(float_of(a) - float_of(b));
    if (op == "*") return Value::number(float_of(a) * float_of(b));
    fail(w.file, w.line, "the float operator " + op + " is not supported");
  }
  if (op == "+" && a.is(Type::String) && b.is(Type::String)) {
    if (a.s.size() + b.s.size() > (64u << 20)) fail(w.file, w.line, "a string longer than 64 MiB is not supported");
    return Value::string(a.s + b.s);
  }
  if (op == "+" && a.is(Type::List) && b.is(Type::List) && !a.generator && !b.generator && a.tuple == b.tuple) {
    if (a.list->size() + b.list->size() > (1u << 20)) fail(w.file, w.line, "a list longer than 2^20 is not supported");
    ValueList out = *a.list;
    out.insert(out.end(), b.list->begin(), b.list->end());
    Value r = Value::make_list(std::move(out));
    r.tuple = a.tuple;
    return r;
  }
  if (op == "*") {
    const bool seq_a = a.is(Type::String) || (a.is(Type::List) && !a.generator);
    const bool seq_b = b.is(Type::String) || (b.is(Type::List) && !b.generator);
    if (seq_a && (b.is(Type::Int) || b.is(Type::Bool))) return repeat(a, int_of(b), w);
    if (seq_b && (a.is(Type::Int) || a.is(Type::Bool))) return repeat(b, int_of(a), w);
  }
  if (op == "%" && a.is(Type::String)) fail(w.file, w.line, "string formatting with % is not supported");
  type_error(a, op, b, w);
}

bool contains(const Value& container, const Value& needle, Where w) {
  switch (container.type) {
    case Type::Undefined: return false;
    case Type::String:
      if (!needle.is(Type::String))
        fail(w.file, w.line, "'in <string>' requires string as left operand, not " + type_name(needle));
      return container.s.find(needle.s) != std::string::npos;
    case Type::List:
      for (const Value& item : *container.list)
        if (equal(item, needle)) return true;
      return false;
    case Type::Dict:
      if (needle.is(Type::List) && !needle.tuple) fail(w.file, w.line, "unhashable type: 'list'");
      return needle.is(Type::String) && container.find(needle.s) != nullptr;
    default: fail(w.file, w.line, "argument of type '" + type_name(container) + "' is not iterable");
  }
}

bool less(const Value& a, const Value& b, Where w) {
  if (numeric(a) && numeric(b)) {
    if (a.is(Type::Float) || b.is(Type::Float)) {
      for (const Value* v : {&a, &b})
        if (!v->is(Type::Float) && std::llabs(int_of(*v)) > (1LL << 53)) overflow(w);
      return float_of(a) < float_of(b);
    }
    return int_of(a) < int_of(b);
  }
  if (a.is(Type::String) && b.is(Type::String)) return a.s < b.s;  // UTF-8 byte order == code point order
  if (a.is(Type::List) && b.is(Type::List) && !a.generator && !b.generator && a.tuple == b.tuple) {
    const size_t n = std::min(a.list->size(), b.list->size());
    for (size_t k = 0; k < n; k++)
      if (!equal((*a.list)[k], (*b.list)[k])) return less((*a.list)[k], (*b.list)[k], w);
    return a.list->size() < b.list->size();
  }
  if (a.is(Type::Undefined)) fail(w.file, w.line, a.s);
  if (b.is(Type::Undefined)) fail(w.file, w.line, b.s);
  fail(w.file, w.line, "ordering between '" + type_name(a) + "' and '" + type_name(b) + "' is not supported");
}

}  // namespace oracle::jinja
