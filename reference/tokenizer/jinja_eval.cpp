// Jinja evaluator: renders the syntax tree (jinja_impl.h) with jinja2 3.1's semantics:
// Python values and operators, default Undefined, per-iteration loop scopes.
#include <map>
#include <string>
#include <vector>

#include "base/errors.h"
#include "base/utf8.h"
#include "reference/tokenizer/jinja.h"
#include "reference/tokenizer/jinja_impl.h"

namespace oracle::jinja {

namespace {

enum class Flow { Normal, Break, Continue };

// Budgets that keep a hostile template from hanging or exhausting memory (refused beyond).
constexpr size_t kMaxIterations = 1'000'000;  // loop iterations, all loops together
constexpr size_t kMaxOutput = 64u << 20;       // bytes of rendered text

struct Renderer {
  const std::string& file;
  std::vector<std::map<std::string, Value>> frames;  // [0]: the context; innermost last
  std::string out;
  size_t iterations = 0;

  Where at(int line) const { return Where{file, line}; }
  [[noreturn]] void error(int line, const std::string& m) const { fail(file, line, m); }

  Flow run(const Body& body);
  Flow run_node(const Node& n);
  Flow run_for(const Node& n);
  void assign(const std::vector<std::string>& names, const Value& v, int line);
  void bind(std::map<std::string, Value>& frame, const std::vector<std::string>& names, const Value& v, int line);

  Value eval(const Expr& e);
  Value eval_name(const Expr& e) const;
  Value eval_literal(const Expr& e);
  Value eval_unary(const Expr& e);
  Value lookup(const std::string& name) const;
  Value eval_attr(const Expr& e);
  Value eval_item(const Value& obj, const Value& key, int line);
  Value eval_slice(const Expr& e);
  Value eval_call(const Expr& e);
  Args eval_args(const Expr& e, size_t first);
  Value eval_binary(const Expr& e);
  Value eval_compare(const Expr& e);
  bool compare_pair(const Value& a, const std::string& op, const Value& b, int line);
};

Flow Renderer::run(const Body& body) {
  for (const Node& n : body) {
    const Flow f = run_node(n);
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

Flow Renderer::run_node(const Node& n) {
  switch (n.kind) {
    case NK::Text: case NK::Output:
      out += n.kind == NK::Text ? n.text : to_str(eval(*n.expr), at(n.line));
      if (out.size() > kMaxOutput) error(n.line, "a rendering longer than 64 MiB is not supported");
      return Flow::Normal;
    case NK::If:
      for (const auto& [cond, body] : n.branches)
        if (truthy(eval(*cond))) return run(body);
      return run(n.else_body);
    case NK::For: return run_for(n);
    case NK::Set: assign(n.targets, eval(*n.expr), n.line); return Flow::Normal;
    case NK::SetBlock: {
      std::string outer;
      out.swap(outer);
      const Flow f = run(n.body);
      out.swap(outer);  // `outer` now holds the body's text
      if (f != Flow::Normal) error(n.line, "break or continue inside a block assignment");
      assign(n.targets, Value::string(outer), n.line);
      return Flow::Normal;
    }
    case NK::SetAttr: {
      const Value ns = lookup(n.targets[0]);
      if (!ns.is(Type::Namespace)) error(n.line, "cannot assign attribute on non-namespace object '" + n.targets[0] + "'");
      const Value v = eval(*n.expr);
      for (auto& [k, old] : *ns.dict)
        if (k == n.text) return old = v, Flow::Normal;
      ns.dict->emplace_back(n.text, v);
      return Flow::Normal;
    }
    case NK::Break: return Flow::Break;
    case NK::Continue: return Flow::Continue;
  }
  return Flow::Normal;
}

void Renderer::bind(std::map<std::string, Value>& frame, const std::vector<std::string>& names, const Value& v,
                    int line) {
  if (names.size() == 1) {
    frame[names[0]] = v;
    return;
  }
  const ValueList items = iterate(v, at(line));
  if (items.size() != names.size())
    error(line, "cannot unpack " + std::to_string(items.size()) + " values into " + std::to_string(names.size()));
  for (size_t k = 0; k < names.size(); k++) frame[names[k]] = items[k];
}

void Renderer::assign(const std::vector<std::string>& names, const Value& v, int line) {
  bind(frames.back(), names, v, line);
}

Value loop_object(size_t k, const ValueList& items) {
  const int64_t n = (int64_t)items.size(), i = (int64_t)k;
  return Value::make_dict({{"index", Value::integer(i + 1)},
                           {"index0", Value::integer(i)},
                           {"revindex", Value::integer(n - i)},
                           {"revindex0", Value::integer(n - i - 1)},
                           {"first", Value::boolean(i == 0)},
                           {"last", Value::boolean(i == n - 1)},
                           {"length", Value::integer(n)},
                           {"depth", Value::integer(1)},
                           {"depth0", Value::integer(0)},
                           {"previtem", k > 0 ? items[k - 1] : Value::undefined("there is no previous item")},
                           {"nextitem", k + 1 < items.size() ? items[k + 1] : Value::undefined("there is no next item")}});
}

// One fresh scope per iteration (a `set` inside the body does not outlive it); the
// `if` filter is applied before loop.index/length are counted, as jinja2.
Flow Renderer::run_for(const Node& n) {
  ValueList items;
  for (const Value& item : iterate(eval(*n.expr), at(n.line))) {
    if (n.filter) {
      frames.emplace_back();
      bind(frames.back(), n.targets, item, n.line);
      const bool keep = truthy(eval(*n.filter));
      frames.pop_back();
      if (!keep) continue;
    }
    items.push_back(item);
  }
  for (size_t k = 0; k < items.size(); k++) {
    if (++iterations > kMaxIterations) error(n.line, "more than 1 million loop iterations are not supported");
    frames.emplace_back();
    bind(frames.back(), n.targets, items[k], n.line);
    frames.back()["loop"] = loop_object(k, items);
    const Flow f = run(n.body);
    frames.pop_back();
    if (f == Flow::Break) break;
  }
  if (items.empty()) return run(n.else_body);
  return Flow::Normal;
}

Value Renderer::lookup(const std::string& name) const {
  for (size_t k = frames.size(); k-- > 0;) {
    auto it = frames[k].find(name);
    if (it != frames[k].end()) return it->second;
  }
  return Value::undefined("'" + name + "' is undefined");
}

Value Renderer::eval_name(const Expr& e) const {
  Value v = lookup(e.name);
  if (v.is(Type::Undefined) && (e.name == "range" || e.name == "namespace" || e.name == "raise_exception" ||
                                e.name == "dict" || e.name == "lipsum" || e.name == "cycler" || e.name == "joiner"))
    error(e.line, "the function '" + e.name + "' used as a value is not supported");
  return v;
}

// [a, b], (a, b), {'k': v} (string keys; a repeated key keeps its first position, last value).
Value Renderer::eval_literal(const Expr& e) {
  if (e.kind != EK::Dict) {
    ValueList items;
    for (const ExprPtr& a : e.args) items.push_back(eval(*a));
    Value v = Value::make_list(std::move(items));
    v.tuple = e.kind == EK::Tuple;
    return v;
  }
  ValueDict d;
  for (size_t k = 0; k + 1 < e.args.size(); k += 2) {
    const Value key = eval(*e.args[k]);
    if (!key.is(Type::String)) error(e.line, "dictionary keys other than strings are not supported");
    Value val = eval(*e.args[k + 1]);
    bool replaced = false;
    for (auto& [dk, dv] : d)
      if (dk == key.s) dv = val, replaced = true;
    if (!replaced) d.emplace_back(key.s, val);
  }
  return Value::make_dict(std::move(d));
}

Value Renderer::eval_unary(const Expr& e) {
  const Value v = eval(*e.args[0]);
  if (v.is(Type::Float)) return Value::number(e.kind == EK::Neg ? -v.f : v.f);
  if (v.is(Type::Int) || v.is(Type::Bool)) {
    const int64_t i = v.is(Type::Bool) ? v.b : v.i;
    if (i == INT64_MIN) error(e.line, "integer arithmetic beyond 64 bits is not supported");
    return Value::integer(e.kind == EK::Neg ? -i : i);
  }
  if (v.is(Type::Undefined)) error(e.line, v.s);
  error(e.line, "bad operand type for unary " + std::string(e.kind == EK::Neg ? "-" : "+") + ": '" + type_name(v) +
                    "'");
}

Value Renderer::eval(const Expr& e) {
  switch (e.kind) {
    case EK::Literal: return e.literal;
    case EK::Name: return eval_name(e);
    case EK::List: case EK::Tuple: case EK::Dict: return eval_literal(e);
    case EK::Attr: return eval_attr(e);
    case EK::Item: return eval_item(eval(*e.args[0]), eval(*e.args[1]), e.line);
    case EK::Slice: return eval_slice(e);
    case EK::Call: return eval_call(e);
    case EK::Filter: {
      const Value subject = eval(*e.args[0]);
      return apply_filter(e.name, subject, eval_args(e, 1), at(e.line));
    }
    case EK::Test: {
      const Value subject = eval(*e.args[0]);
      return Value::boolean(apply_test(e.name, subject, eval_args(e, 1), at(e.line)) != e.negated);
    }
    case EK::Neg: case EK::Pos: return eval_unary(e);
    case EK::Not: return Value::boolean(!truthy(eval(*e.args[0])));
    case EK::And: {
      Value a = eval(*e.args[0]);
      return truthy(a) ? eval(*e.args[1]) : a;
    }
    case EK::Or: {
      Value a = eval(*e.args[0]);
      return truthy(a) ? a : eval(*e.args[1]);
    }
    case EK::Binary: return eval_binary(e);
    case EK::Compare: return eval_compare(e);
    case EK::Cond:
      if (truthy(eval(*e.args[1]))) return eval(*e.args[0]);
      return e.args.size() > 2 ? eval(*e.args[2]) : Value::undefined("the inline if expression evaluated to false");
    case EK::Concat: {
      const Value a = eval(*e.args[0]), b = eval(*e.args[1]);
      return Value::string(to_str(a, at(e.line)) + to_str(b, at(e.line)));
    }
  }
  error(e.line, "unsupported expression");
}

Args Renderer::eval_args(const Expr& e, size_t first) {
  Args a;
  for (size_t k = first; k < e.args.size(); k++) a.pos.push_back(eval(*e.args[k]));
  for (const auto& [key, v] : e.kwargs) a.kw.emplace_back(key, eval(*v));
  return a;
}

}  // namespace

namespace {

// jinja2's sandboxed getattr: the Python attribute first, then the item.
Value Renderer::eval_attr(const Expr& e) {
  const Value obj = eval(*e.args[0]);
  if (obj.is(Type::Undefined)) error(e.line, obj.s);
  if (!e.name.empty() && e.name[0] == '_') error(e.line, "attribute '" + e.name + "' is not supported");
  if (python_attribute(obj, e.name))
    error(e.line, "'" + type_name(obj) + "." + e.name + "' used as a value is not supported");
  if (const Value* v = obj.find(e.name)) return *v;
  return Value::undefined("'" + type_name(obj) + " object' has no attribute '" + e.name + "'");
}

int64_t as_index(const Value& v, bool* ok) {
  *ok = v.is(Type::Int) || v.is(Type::Bool);
  return v.is(Type::Bool) ? v.b : v.i;
}

// jinja2's getitem: obj[key], else the attribute named by a string key.
Value Renderer::eval_item(const Value& obj, const Value& key, int line) {
  if (obj.is(Type::Undefined)) error(line, obj.s);
  const Value missing = Value::undefined("'" + type_name(obj) + " object' has no element " +
                                         (key.is(Type::String) ? "'" + key.s + "'" : "of that index"));
  if (obj.is(Type::Dict) || obj.is(Type::Namespace)) {
    if (key.is(Type::String))
      if (const Value* v = obj.find(key.s)) return *v;
  } else if ((obj.is(Type::List) && !obj.generator) || obj.is(Type::String)) {
    bool is_int = false;
    int64_t i = as_index(key, &is_int);
    if (is_int) {
      const std::vector<uint32_t> cps = obj.is(Type::String) ? utf8_to_codepoints(obj.s) : std::vector<uint32_t>{};
      const int64_t n = obj.is(Type::String) ? (int64_t)cps.size() : (int64_t)obj.list->size();
      if (i < 0) i += n;
      if (i < 0 || i >= n) return missing;
      if (obj.is(Type::List)) return (*obj.list)[i];
      std::string ch;
      utf8_append(ch, cps[i]);
      return Value::string(ch);
    }
  } else if (!key.is(Type::String)) {
    error(line, "'" + type_name(obj) + "' object is not subscriptable");
  }
  if (key.is(Type::String)) {
    if (python_attribute(obj, key.s) || (!key.s.empty() && key.s[0] == '_'))
      error(line, "'" + type_name(obj) + "." + key.s + "' used as a value is not supported");
  }
  return missing;
}

// Python's slice semantics (PySlice_AdjustIndices) on lists, tuples and strings.
Value Renderer::eval_slice(const Expr& e) {
  const Value obj = eval(*e.args[0]);
  if (obj.is(Type::Undefined)) error(e.line, obj.s);
  if (!(obj.is(Type::List) && !obj.generator) && !obj.is(Type::String))
    error(e.line, "'" + type_name(obj) + "' object cannot be sliced");
  int64_t part[3] = {0, 0, 1};
  bool given[3] = {false, false, false};
  for (int k = 0; k < 3; k++) {
    if (!e.args[k + 1]) continue;
    const Value v = eval(*e.args[k + 1]);
    if (v.is(Type::None)) continue;
    bool ok = false;
    part[k] = as_index(v, &ok);
    if (!ok) error(e.line, "slice indices must be integers or None");
    given[k] = true;
  }
  const int64_t step = part[2];
  if (step == 0) error(e.line, "slice step cannot be zero");
  const std::vector<uint32_t> cps = obj.is(Type::String) ? utf8_to_codepoints(obj.s) : std::vector<uint32_t>{};
  const int64_t n = obj.is(Type::String) ? (int64_t)cps.size() : (int64_t)obj.list->size();
  auto adjust = [&](int64_t v, bool has, int64_t dflt) {
    if (!has) return dflt;
    if (v < 0) v += n, v = std::max(v, step < 0 ? (int64_t)-1 : (int64_t)0);
    else v = std::min(v, step < 0 ? n - 1 : n);
    return v;
  };
  const int64_t start = adjust(part[0], given[0], step < 0 ? n - 1 : 0);
  const int64_t stop = adjust(part[1], given[1], step < 0 ? -1 : n);
  ValueList items;
  std::string s;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (obj.is(Type::String)) utf8_append(s, cps[i]);
    else items.push_back((*obj.list)[i]);
  }
  if (obj.is(Type::String)) return Value::string(s);
  Value v = Value::make_list(std::move(items));
  v.tuple = obj.tuple;
  return v;
}

Value Renderer::eval_call(const Expr& e) {
  const Expr& callee = *e.args[0];
  const Args args = eval_args(e, 1);
  if (callee.kind == EK::Attr) {
    const Value obj = eval(*callee.args[0]);
    if (obj.is(Type::Undefined)) error(e.line, obj.s);
    return call_method(obj, callee.name, args, at(e.line));
  }
  if (callee.kind == EK::Name && lookup(callee.name).is(Type::Undefined)) {
    const std::string& f = callee.name;
    if (f == "raise_exception") {
      if (args.pos.size() != 1 || !args.kw.empty()) error(e.line, "raise_exception takes one argument");
      throw InputError(file, "tokenizer.chat_template", "the template raised: " + to_str(args.pos[0], at(e.line)));
    }
    if (f == "namespace") {
      if (!args.pos.empty()) error(e.line, "namespace() with positional arguments is not supported");
      Value ns = Value::make_dict(args.kw);
      ns.type = Type::Namespace;
      return ns;
    }
    if (f == "range") {
      int64_t r[3] = {0, 0, 1};
      const size_t n = args.pos.size();
      if (n < 1 || n > 3 || !args.kw.empty()) error(e.line, "range takes 1 to 3 arguments");
      for (size_t k = 0; k < n; k++) {
        bool ok = false;
        r[n == 1 ? 1 : k] = as_index(args.pos[k], &ok);
        if (!ok) error(e.line, "range() arguments must be integers");
      }
      if (r[2] == 0) error(e.line, "range() arg 3 must not be zero");
      ValueList items;
      for (int64_t i = r[0]; r[2] > 0 ? i < r[1] : i > r[1]; i += r[2]) {
        if (items.size() >= 100000) error(e.line, "range() longer than 100000 is not supported");
        items.push_back(Value::integer(i));
      }
      return Value::make_list(std::move(items));
    }
    if (f == "dict" || f == "lipsum" || f == "cycler" || f == "joiner")
      error(e.line, "the function '" + f + "' is not supported");
  }
  const Value fn = eval(callee);
  if (fn.is(Type::Undefined)) error(e.line, fn.s);
  error(e.line, "'" + type_name(fn) + "' object is not callable");
}

Value Renderer::eval_binary(const Expr& e) {
  const Value a = eval(*e.args[0]), b = eval(*e.args[1]);
  return arith(a, e.name, b, at(e.line));
}

Value Renderer::eval_compare(const Expr& e) {
  Value left = eval(*e.args[0]);
  for (size_t k = 0; k < e.ops.size(); k++) {
    Value right = eval(*e.args[k + 1]);
    if (!compare_pair(left, e.ops[k], right, e.line)) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

bool Renderer::compare_pair(const Value& a, const std::string& op, const Value& b, int line) {
  if (op == "==") return equal(a, b);
  if (op == "!=") return !equal(a, b);
  if (op == "in") return contains(b, a, at(line));
  if (op == "not in") return !contains(b, a, at(line));
  if (op == "<") return less(a, b, at(line));
  if (op == ">") return less(b, a, at(line));
  if (op == "<=") return !less(b, a, at(line));
  return !less(a, b, at(line));  // >=
}

}  // namespace

}  // namespace oracle::jinja

namespace oracle {

void check_jinja(const std::string& file, const std::string& source) {
  jinja::parse(file, jinja::lex(file, source));
}

std::string render_jinja(const std::string& file, const std::string& source, const JinjaContext& ctx) {
  using namespace jinja;
  const Body body = parse(file, lex(file, source));
  Renderer r{file, {}, {}};
  ValueList messages;
  for (const ChatMessage& m : ctx.messages)
    messages.push_back(Value::make_dict({{"role", Value::string(m.role)}, {"content", Value::string(m.content)}}));
  r.frames.emplace_back();
  r.frames[0]["messages"] = Value::make_list(std::move(messages));
  r.frames[0]["add_generation_prompt"] = Value::boolean(ctx.add_generation_prompt);
  r.frames[0]["bos_token"] = Value::string(ctx.bos_token);
  r.frames[0]["eos_token"] = Value::string(ctx.eos_token);
  r.frames.emplace_back();  // the template's own variables
  if (r.run(body) != Flow::Normal) fail(file, 1, "break or continue outside a loop");
  return r.out;
}

}  // namespace oracle
