#pragma once
// Internals of the Jinja-subset interpreter (jinja.h): values, tokens, the
// syntax tree, and the helpers the lexer, parser, evaluator and builtins share.
// Semantics follow Python's jinja2 3.1 as Hugging Face configures it
// (trim_blocks, lstrip_blocks, keep_trailing_newline off, default Undefined).
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace oracle::jinja {

// Every error names the template (`file`) and the line; thrown as InputError.
[[noreturn]] void fail(const std::string& file, int line, const std::string& message);

// ---- Values --------------------------------------------------------------------------
struct Value;
using ValueList = std::vector<Value>;
using ValueDict = std::vector<std::pair<std::string, Value>>;  // insertion order, string keys

enum class Type { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace };

struct Value {
  Type type = Type::Undefined;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;                      // String; for Undefined: the jinja2 hint ("'x' is undefined")
  std::shared_ptr<ValueList> list;    // List (tuple / generator flagged below)
  std::shared_ptr<ValueDict> dict;    // Dict, Namespace (a namespace is mutable: shared)
  bool tuple = false;                 // a Python tuple (immutable list)
  bool generator = false;             // selectattr/map results: iterable, not sized, always truthy

  static Value undefined(std::string hint) { Value v; v.s = std::move(hint); return v; }
  static Value none() { Value v; v.type = Type::None; return v; }
  static Value boolean(bool x) { Value v; v.type = Type::Bool; v.b = x; return v; }
  static Value integer(int64_t x) { Value v; v.type = Type::Int; v.i = x; return v; }
  static Value number(double x) { Value v; v.type = Type::Float; v.f = x; return v; }
  static Value string(std::string x) { Value v; v.type = Type::String; v.s = std::move(x); return v; }
  static Value make_list(ValueList items) {
    Value v; v.type = Type::List; v.list = std::make_shared<ValueList>(std::move(items)); return v;
  }
  static Value make_dict(ValueDict items) {
    Value v; v.type = Type::Dict; v.dict = std::make_shared<ValueDict>(std::move(items)); return v;
  }
  bool is(Type t) const { return type == t; }
  const Value* find(const std::string& key) const;  // Dict/Namespace key, or nullptr
};

// Python semantics (jinja_builtins.cpp); `file`/`line` name the template position on error.
struct Where {
  const std::string& file;
  int line;
};
bool truthy(const Value& v);
bool equal(const Value& a, const Value& b);
std::string to_str(const Value& v, Where w);      // str(v); lists/dicts are refused
std::string type_name(const Value& v);            // Python's type name, for messages
size_t py_len(const Value& v, Where w);           // len(v)
ValueList iterate(const Value& v, Where w);       // for x in v
std::string py_float_repr(double x);
bool py_isspace(uint32_t cp);
// Python attribute names of the types a template sees: reading one is refused
// (jinja2 would yield a bound method or a number); any other name is undefined.
bool python_attribute(const Value& v, const std::string& name);
Value arith(const Value& a, const std::string& op, const Value& b, Where w);  // + - * / // % **
bool contains(const Value& container, const Value& needle, Where w);         // needle in container
bool less(const Value& a, const Value& b, Where w);                           // a < b
std::string py_strip(const std::string& s, const Value& chars, bool left, bool right, Where w);

// ---- Tokens --------------------------------------------------------------------------
enum class Tok { Text, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, Eof };
struct Token {
  Tok kind;
  std::string text;  // Text data, name, decoded string, operator
  int64_t ival = 0;
  double fval = 0;
  int line = 1;
};
std::vector<Token> lex(const std::string& file, const std::string& source);

// ---- Syntax tree ---------------------------------------------------------------------
struct Expr;
using ExprPtr = std::shared_ptr<const Expr>;
enum class EK {
  Literal, Name, List, Tuple, Dict, Attr, Item, Slice, Call, Filter, Test,
  Neg, Pos, Not, And, Or, Binary, Compare, Cond, Concat
};
struct Expr {
  EK kind = EK::Literal;
  int line = 1;
  Value literal;                  // Literal
  std::string name;               // Name, Attr, Filter, Test, Binary operator
  std::vector<ExprPtr> args;      // operands / positional arguments (args[0]: the subject)
  std::vector<std::pair<std::string, ExprPtr>> kwargs;  // Call/Filter/Test keyword arguments
  std::vector<std::string> ops;   // Compare: one operator per further operand
  bool negated = false;           // Test: `is not`
};

struct Node;
using Body = std::vector<Node>;
enum class NK { Text, Output, If, For, Set, SetBlock, SetAttr, Break, Continue };
struct Node {
  NK kind = NK::Text;
  int line = 1;
  std::string text;                           // Text; SetAttr: the attribute
  ExprPtr expr;                               // Output, Set/SetAttr value, For iterable
  std::vector<std::string> targets;           // For / Set names (several: unpacking); SetAttr: the namespace
  ExprPtr filter;                             // For ... if filter
  std::vector<std::pair<ExprPtr, Body>> branches;  // If: (condition, body) for if and each elif
  Body body, else_body;                       // For/SetBlock body; If/For else
};
Body parse(const std::string& file, const std::vector<Token>& tokens);

// ---- Builtins (jinja_builtins.cpp) ---------------------------------------------------
struct Args {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
};
Value apply_filter(const std::string& name, const Value& subject, const Args& args, Where w);
bool apply_test(const std::string& name, const Value& subject, const Args& args, Where w);
Value call_method(const Value& object, const std::string& name, const Args& args, Where w);
bool known_filter(const std::string& name);
bool known_test(const std::string& name);

}  // namespace oracle::jinja
