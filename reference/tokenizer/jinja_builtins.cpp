// jinja2's builtin filters and tests, and the Python str/dict methods templates call
// (jinja_impl.h). jinja2 names not implemented here parse (so a template that only
// mentions them in a branch it does not take renders) and are refused when reached.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "base/utf8.h"
#include "reference/tokenizer/jinja_impl.h"

namespace oracle::jinja {

namespace {

const std::set<std::string> kFilters = {
    "abs", "attr", "batch", "capitalize", "center", "count", "d", "default", "dictsort", "e", "escape",
    "filesizeformat", "first", "float", "forceescape", "format", "groupby", "indent", "int", "items", "join",
    "last", "length", "list", "lower", "map", "max", "min", "pprint", "random", "reject", "rejectattr",
    "replace", "reverse", "round", "safe", "select", "selectattr", "slice", "sort", "string", "striptags", "sum",
    "title", "tojson", "trim", "truncate", "unique", "upper", "urlencode", "urlize", "wordcount", "wordwrap",
    "xmlattr"};
const std::set<std::string> kTests = {
    "!=", "<", "<=", "==", ">", ">=", "boolean", "callable", "defined", "divisibleby", "eq", "equalto",
    "escaped", "even", "false", "filter", "float", "ge", "greaterthan", "gt", "in", "integer", "iterable", "le",
    "lessthan", "lower", "lt", "mapping", "ne", "none", "number", "odd", "sameas", "sequence", "string", "test",
    "true", "undefined", "upper"};

[[noreturn]] void unsupported(const std::string& what, Where w) { fail(w.file, w.line, what + " is not supported"); }

// The value of argument `k` (positional) or `key` (keyword), or `dflt`.
Value arg(const Args& a, size_t k, const char* key, Value dflt) {
  if (k < a.pos.size()) return a.pos[k];
  for (const auto& [name, v] : a.kw)
    if (name == key) return v;
  return dflt;
}

void check_args(const Args& a, size_t max_pos, std::initializer_list<const char*> keys, const std::string& what,
                Where w) {
  if (a.pos.size() > max_pos) fail(w.file, w.line, what + ": too many arguments");
  for (const auto& kv : a.kw) {
    const std::string& name = kv.first;  // not a structured binding: clang 14 cannot capture one
    if (std::find_if(keys.begin(), keys.end(), [&](const char* k) { return name == k; }) == keys.end())
      fail(w.file, w.line, what + ": unexpected keyword argument '" + name + "'");
  }
}

std::string need_str(const Value& v, const std::string& what, Where w) {
  if (!v.is(Type::String)) fail(w.file, w.line, what + " must be a string, not " + type_name(v));
  return v.s;
}

bool ascii(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return (unsigned char)c < 0x80; });
}

// str.upper/lower/capitalize/title on ASCII text (Unicode case mapping is refused).
std::string case_map(const std::string& s, const std::string& how, Where w) {
  if (!ascii(s)) unsupported(how + "() of non-ASCII text", w);
  std::string out = s;
  bool prev_cased = false;
  for (size_t k = 0; k < out.size(); k++) {
    const unsigned char c = out[k];
    bool up = how == "upper" || (how == "capitalize" && k == 0) || (how == "title" && !prev_cased);
    if (how == "lower") up = false;
    out[k] = up ? (char)std::toupper(c) : (char)std::tolower(c);
    prev_cased = std::isalpha(c);
  }
  return out;
}

Value generator(ValueList items) {
  Value v = Value::make_list(std::move(items));
  v.generator = true;
  return v;
}

// jinja2's environment.getitem(item, attribute) for selectattr/map(attribute=...).
Value get_field(const Value& item, const std::string& name, Where w) {
  if (item.is(Type::Undefined)) fail(w.file, w.line, item.s);
  if (const Value* v = item.find(name)) return *v;
  if (python_attribute(item, name)) unsupported("'" + type_name(item) + "." + name + "' used as a value", w);
  return Value::undefined("'" + type_name(item) + " object' has no attribute '" + name + "'");
}

Value select_filter(const std::string& name, const Value& subject, const Args& a, Where w) {
  const bool by_attr = name == "selectattr" || name == "rejectattr", keep = name[0] == 's';
  if (!a.kw.empty()) unsupported(name + " with keyword arguments", w);
  size_t k = 0;
  std::string attr;
  if (by_attr) {
    if (a.pos.empty()) fail(w.file, w.line, name + " needs an attribute name");
    attr = need_str(a.pos[k++], name + "'s attribute", w);
    if (attr.find('.') != std::string::npos) unsupported("dotted attribute paths in " + name, w);
  }
  std::string test;
  Args test_args;
  if (k < a.pos.size()) test = need_str(a.pos[k++], name + "'s test", w);
  test_args.pos.assign(a.pos.begin() + (ptrdiff_t)k, a.pos.end());
  ValueList out;
  if (!truthy(subject)) return generator({});  // jinja2's `if value:` (none|selectattr is empty)
  for (const Value& item : iterate(subject, w)) {
    const Value v = by_attr ? get_field(item, attr, w) : item;
    const bool pass = test.empty() ? truthy(v) : apply_test(test, v, test_args, w);
    if (pass == keep) out.push_back(item);
  }
  return generator(std::move(out));
}

Value join_filter(const Value& subject, const Args& a, Where w) {
  check_args(a, 1, {"d"}, "join", w);
  if (a.pos.size() > 1 || !arg(a, 2, "attribute", Value()).is(Type::Undefined)) unsupported("join(attribute=)", w);
  const std::string sep = to_str(arg(a, 0, "d", Value::string("")), w);
  std::string out;
  bool first = true;
  for (const Value& item : iterate(subject, w)) {
    if (!first) out += sep;
    out += to_str(item, w), first = false;
  }
  return Value::string(out);
}

Value int_filter(const Value& v, const Args& a, Where w) {
  check_args(a, 1, {"default"}, "int", w);
  if (v.is(Type::Int)) return v;
  if (v.is(Type::Bool)) return Value::integer(v.b);
  if (v.is(Type::Float) && std::abs(v.f) < 9.0e18) return Value::integer((int64_t)v.f);
  if (v.is(Type::String)) {
    const std::string t = py_strip(v.s, Value::none(), true, true, w);
    size_t k = (!t.empty() && (t[0] == '-' || t[0] == '+')) ? 1 : 0;
    if (k < t.size() && t.size() - k <= 18 &&
        std::all_of(t.begin() + (ptrdiff_t)k, t.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return Value::integer(std::stoll(t));
  }
  unsupported("int() of " + type_name(v) + " value", w);
}

Value sequence_end(const Value& subject, bool first, Where w) {
  if (subject.is(Type::List) && subject.generator && !first) fail(w.file, w.line, "'generator' object is not reversible");
  if (subject.is(Type::Dict) && !first) fail(w.file, w.line, "last of a dict is not supported");
  const ValueList items = iterate(subject, w);
  if (items.empty()) return Value::undefined(std::string("no ") + (first ? "first" : "last") + " item, sequence was empty");
  return first ? items.front() : items.back();
}

Value string_method(const std::string& s, const std::string& name, const Args& a, Where w);

}  // namespace

bool known_filter(const std::string& name) { return kFilters.count(name) > 0; }
bool known_test(const std::string& name) { return kTests.count(name) > 0; }

Value apply_filter(const std::string& name, const Value& v, const Args& a, Where w) {
  if (name == "default" || name == "d") {
    check_args(a, 2, {"default_value", "boolean"}, name, w);
    const bool use = v.is(Type::Undefined) || (truthy(arg(a, 1, "boolean", Value::boolean(false))) && !truthy(v));
    return use ? arg(a, 0, "default_value", Value::string("")) : v;
  }
  if (name == "length" || name == "count") return Value::integer((int64_t)py_len(v, w));
  if (name == "trim") {
    check_args(a, 1, {"chars"}, name, w);
    return Value::string(py_strip(to_str(v, w), arg(a, 0, "chars", Value::none()), true, true, w));
  }
  if (name == "string" || name == "safe") return Value::string(to_str(v, w));
  if (name == "upper" || name == "lower" || name == "capitalize" || name == "title")
    return Value::string(case_map(to_str(v, w), name, w));
  if (name == "join") return join_filter(v, a, w);
  if (name == "first" || name == "last") return sequence_end(v, name == "first", w);
  if (name == "list") return Value::make_list(iterate(v, w));
  if (name == "selectattr" || name == "rejectattr" || name == "select" || name == "reject")
    return select_filter(name, v, a, w);
  if (name == "map") {
    const Value attr = arg(a, 99, "attribute", Value());
    if (!a.pos.empty() || a.kw.size() != 1 || !attr.is(Type::String)) unsupported("map other than map(attribute=NAME)", w);
    ValueList out;
    if (truthy(v))  // jinja2's `if value:`
      for (const Value& item : iterate(v, w)) out.push_back(get_field(item, attr.s, w));
    return generator(std::move(out));
  }
  if (name == "replace") return string_method(to_str(v, w), "replace", a, w);
  if (name == "int") return int_filter(v, a, w);
  if (name == "abs") {
    if (v.is(Type::Float)) return Value::number(std::abs(v.f));
    if (v.is(Type::Int) && v.i != INT64_MIN) return Value::integer(std::abs(v.i));
    if (v.is(Type::Bool)) return Value::integer(v.b);
    fail(w.file, w.line, "bad operand type for abs(): '" + type_name(v) + "'");
  }
  if (name == "items") {
    if (v.is(Type::Undefined)) return generator({});
    if (!v.is(Type::Dict)) fail(w.file, w.line, "can only get item pairs from a mapping");
    return call_method(v, "items", Args{}, w);
  }
  if (name == "tojson")  // jinja2 sorts keys and escapes <>&'; transformers replaces the filter
    unsupported("the tojson filter (jinja2's and Hugging Face's differ)", w);
  unsupported("the filter '" + name + "'", w);
}

bool apply_test(const std::string& name, const Value& v, const Args& a, Where w) {
  auto operand = [&]() -> const Value& {
    if (a.pos.size() != 1 || !a.kw.empty()) fail(w.file, w.line, "the test '" + name + "' takes one argument");
    return a.pos[0];
  };
  if (name == "defined") return !v.is(Type::Undefined);
  if (name == "undefined") return v.is(Type::Undefined);
  if (name == "none") return v.is(Type::None);
  if (name == "boolean") return v.is(Type::Bool);
  if (name == "true" || name == "false") return v.is(Type::Bool) && v.b == (name == "true");
  if (name == "integer") return v.is(Type::Int);
  if (name == "float") return v.is(Type::Float);
  if (name == "number") return v.is(Type::Int) || v.is(Type::Float) || v.is(Type::Bool);
  if (name == "string") return v.is(Type::String);
  if (name == "mapping") return v.is(Type::Dict);
  if (name == "iterable") return v.is(Type::Undefined) || v.is(Type::String) || v.is(Type::List) || v.is(Type::Dict);
  if (name == "sequence")
    return v.is(Type::Undefined) || v.is(Type::String) || (v.is(Type::List) && !v.generator) || v.is(Type::Dict);
  if (name == "eq" || name == "equalto" || name == "==") return equal(v, operand());
  if (name == "ne" || name == "!=") return !equal(v, operand());
  if (name == "lt" || name == "lessthan" || name == "<") return less(v, operand(), w);
  if (name == "gt" || name == "greaterthan" || name == ">") return less(operand(), v, w);
  if (name == "le" || name == "<=") return !less(operand(), v, w);
  if (name == "ge" || name == ">=") return !less(v, operand(), w);
  if (name == "in") return contains(operand(), v, w);
  if (name == "odd" || name == "even" || name == "divisibleby") {
    const Value by = name == "divisibleby" ? operand() : Value::integer(2);
    const Value m = arith(v, "%", by, w);
    return name == "odd" ? truthy(m) : !truthy(m);
  }
  if (name == "lower" || name == "upper") {
    const std::string s = to_str(v, w);
    if (!ascii(s)) unsupported("the test '" + name + "' on non-ASCII text", w);
    const bool any_cased = std::any_of(s.begin(), s.end(), [](char c) { return std::isalpha((unsigned char)c); });
    return any_cased && case_map(s, name, w) == s;
  }
  if (name == "sameas") {  // Python `is`: singletons and shared containers only
    const Value& o = operand();
    if (v.type != o.type) return false;
    if (v.is(Type::None)) return true;
    if (v.is(Type::Bool)) return v.b == o.b;
    if (v.is(Type::List)) return v.list == o.list;
    if (v.is(Type::Dict) || v.is(Type::Namespace)) return v.dict == o.dict;
    unsupported("the test 'sameas' on " + type_name(v) + " values", w);
  }
  if (name == "escaped") return false;  // no Markup objects: autoescape is off
  unsupported("the test '" + name + "'", w);
}

namespace {

Value split_method(const std::string& s, const Args& a, Where w) {
  check_args(a, 2, {"sep", "maxsplit"}, "split", w);
  const Value sep = arg(a, 0, "sep", Value::none());
  const Value maxv = arg(a, 1, "maxsplit", Value::integer(-1));
  if (!maxv.is(Type::Int)) fail(w.file, w.line, "split's maxsplit must be an int");
  int64_t max = maxv.i < 0 ? INT64_MAX : maxv.i;
  ValueList out;
  if (sep.is(Type::None)) {  // runs of whitespace, none at either end
    const std::vector<uint32_t> cps = utf8_to_codepoints(s);
    size_t k = 0;
    while (true) {
      while (k < cps.size() && py_isspace(cps[k])) k++;
      if (k == cps.size()) break;
      std::string part;
      if (max-- == 0) {
        for (; k < cps.size(); k++) utf8_append(part, cps[k]);  // the rest, trailing space kept
        out.push_back(Value::string(part));
        break;
      }
      for (; k < cps.size() && !py_isspace(cps[k]); k++) utf8_append(part, cps[k]);
      out.push_back(Value::string(part));
    }
    return Value::make_list(std::move(out));
  }
  const std::string d = need_str(sep, "split's separator", w);
  if (d.empty()) fail(w.file, w.line, "empty separator");
  size_t from = 0, at;
  while (max-- != 0 && (at = s.find(d, from)) != std::string::npos) {
    out.push_back(Value::string(s.substr(from, at - from)));
    from = at + d.size();
  }
  out.push_back(Value::string(s.substr(from)));
  return Value::make_list(std::move(out));
}

Value affix_method(const std::string& s, const std::string& name, const Args& a, Where w) {
  check_args(a, 1, {}, name, w);
  if (a.pos.size() != 1) fail(w.file, w.line, name + " takes one argument");
  ValueList options = a.pos[0].is(Type::List) && a.pos[0].tuple ? *a.pos[0].list : ValueList{a.pos[0]};
  for (const Value& o : options) {
    const std::string x = need_str(o, name + "'s argument", w);
    const bool hit = x.size() <= s.size() &&
                     (name == "startswith" ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0);
    if (hit) return Value::boolean(true);
  }
  return Value::boolean(false);
}

Value replace_method(const std::string& s, const Args& a, Where w) {
  check_args(a, 3, {"count"}, "replace", w);
  if (a.pos.size() < 2) fail(w.file, w.line, "replace takes at least two arguments");
  const std::string from = need_str(a.pos[0], "replace's first argument", w);
  const std::string to = need_str(a.pos[1], "replace's second argument", w);
  const Value countv = arg(a, 2, "count", Value::integer(-1));
  if (!countv.is(Type::Int)) fail(w.file, w.line, "replace's count must be an int");
  if (from.empty()) unsupported("replace with an empty pattern", w);
  int64_t count = countv.i < 0 ? INT64_MAX : countv.i;
  std::string out;
  size_t pos = 0, at;
  while (count-- > 0 && (at = s.find(from, pos)) != std::string::npos) {
    out += s.substr(pos, at - pos) + to;
    pos = at + from.size();
  }
  return Value::string(out + s.substr(pos));
}

Value string_method(const std::string& s, const std::string& name, const Args& a, Where w) {
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    check_args(a, 1, {}, name, w);
    return Value::string(py_strip(s, arg(a, 0, "", Value::none()), name != "rstrip", name != "lstrip", w));
  }
  if (name == "startswith" || name == "endswith") return affix_method(s, name, a, w);
  if (name == "split") return split_method(s, a, w);
  if (name == "replace") return replace_method(s, a, w);
  if (name == "upper" || name == "lower" || name == "capitalize" || name == "title") {
    check_args(a, 0, {}, name, w);
    return Value::string(case_map(s, name, w));
  }
  if (name == "join") {
    check_args(a, 1, {}, name, w);
    if (a.pos.size() != 1) fail(w.file, w.line, "join takes one argument");
    std::string out;
    bool first = true;
    for (const Value& item : iterate(a.pos[0], w)) {
      if (!first) out += s;
      out += need_str(item, "join's items", w), first = false;
    }
    return Value::string(out);
  }
  unsupported("the string method '" + name + "'", w);
}

Value dict_method(const Value& d, const std::string& name, const Args& a, Where w) {
  if (name == "items" || name == "keys" || name == "values") {
    check_args(a, 0, {}, name, w);
    ValueList out;
    for (const auto& [k, v] : *d.dict) {
      if (name == "keys") out.push_back(Value::string(k));
      else if (name == "values") out.push_back(v);
      else {
        Value pair = Value::make_list({Value::string(k), v});
        pair.tuple = true;
        out.push_back(pair);
      }
    }
    return Value::make_list(std::move(out));
  }
  if (name == "get") {
    check_args(a, 2, {}, name, w);
    if (a.pos.empty()) fail(w.file, w.line, "get takes at least one argument");
    const Value* v = a.pos[0].is(Type::String) ? d.find(a.pos[0].s) : nullptr;
    return v ? *v : arg(a, 1, "", Value::none());
  }
  unsupported("the dict method '" + name + "'", w);
}

}  // namespace

Value call_method(const Value& object, const std::string& name, const Args& args, Where w) {
  if (object.is(Type::String)) return string_method(object.s, name, args, w);
  if (object.is(Type::Dict) && python_attribute(object, name)) return dict_method(object, name, args, w);
  if (python_attribute(object, name)) unsupported("the " + type_name(object) + " method '" + name + "'", w);
  const Value* field = object.find(name);
  if (field) fail(w.file, w.line, "'" + type_name(*field) + "' object is not callable");
  fail(w.file, w.line, "'" + type_name(object) + " object' has no attribute '" + name + "'");
}

}  // namespace oracle::jinja
