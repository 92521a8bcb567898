// Jinja parser: jinja2 3.1's grammar (jinja2/parser.py) for the statements and
// expressions jinja_impl.h lists; every other statement is refused by name.
#include <set>
#include <string>
#include <vector>

#include "reference/tokenizer/jinja_impl.h"

namespace oracle::jinja {

namespace {

const std::set<std::string> kRefusedStatements = {
    "macro", "call", "filter", "with", "include", "import", "from", "extends", "block", "raw", "do",
    "autoescape", "trans", "pluralize", "endmacro", "endcall", "endfilter", "endwith", "endblock"};

Node make_node(NK kind, int line, std::string text = "") {
  Node n;
  n.kind = kind, n.line = line, n.text = std::move(text);
  return n;
}

constexpr int kMaxNesting = 200;  // deeper templates are refused (bounded recursion, no stack overflow)

struct Parser {
  const std::string& file;
  const std::vector<Token>& toks;
  size_t p = 0;
  int depth = 0;

  struct Nest {  // counts one level of recursion while alive
    Parser& parser;
    explicit Nest(Parser& x) : parser(x) {
      if (++parser.depth > kMaxNesting)
        parser.error("nesting deeper than " + std::to_string(kMaxNesting) + " levels is not supported");
    }
    ~Nest() { parser.depth--; }
  };

  const Token& peek(size_t ahead = 0) const { return toks[std::min(p + ahead, toks.size() - 1)]; }
  const Token& next() { return toks[std::min(p++, toks.size() - 1)]; }
  [[noreturn]] void error(const std::string& m) const { fail(file, peek().line, m); }
  bool is_op(const char* o, size_t ahead = 0) const { return peek(ahead).kind == Tok::Op && peek(ahead).text == o; }
  bool is_name(const char* n, size_t ahead = 0) const {
    return peek(ahead).kind == Tok::Name && peek(ahead).text == n;
  }
  bool accept_op(const char* o) { return is_op(o) ? (p++, true) : false; }
  bool accept_name(const char* n) { return is_name(n) ? (p++, true) : false; }
  void expect_op(const char* o) {
    if (!accept_op(o)) error(std::string("expected '") + o + "', got '" + peek().text + "'");
  }
  std::string expect_name() {
    if (peek().kind != Tok::Name) error("expected a name, got '" + peek().text + "'");
    return next().text;
  }
  void expect_block_end() {
    if (peek().kind != Tok::BlockEnd) error("expected the end of the statement, got '" + peek().text + "'");
    p++;
  }
  std::shared_ptr<Expr> make(EK kind, int line, std::vector<ExprPtr> args = {}, std::string name = "") const {
    auto e = std::make_shared<Expr>();
    e->kind = kind, e->line = line, e->args = std::move(args), e->name = std::move(name);
    return e;
  }

  // Statements
  Body body(const std::set<std::string>& ends, std::string* end_found);
  Node statement(const std::string& keyword, int line);
  Node for_statement(int line);
  Node if_statement(int line);
  Node set_statement(int line);
  std::vector<std::string> targets();

  // Expressions, loosest first (jinja2 Parser.parse_expression ... parse_primary)
  ExprPtr expression(bool with_condexpr = true);
  ExprPtr or_expr();
  ExprPtr and_expr();
  ExprPtr not_expr();
  ExprPtr compare();
  ExprPtr math1();
  ExprPtr concat();
  ExprPtr math2();
  ExprPtr pow_expr();
  ExprPtr unary(bool with_filter);
  ExprPtr primary();
  ExprPtr postfix(ExprPtr e);
  ExprPtr filter_expr(ExprPtr e);
  ExprPtr subscript(ExprPtr e);
  ExprPtr list_or_tuple(const char* close, EK kind, int line);
  ExprPtr dict_literal(int line);
  void call_args(Expr* e);
};

// Nodes up to one of `ends` (a block keyword) or the end of the template.
Body Parser::body(const std::set<std::string>& ends, std::string* end_found) {
  const Nest nest(*this);
  Body out;
  while (true) {
    const Token& t = peek();
    if (t.kind == Tok::Eof) {
      if (!ends.empty()) error("unexpected end of template (expected {% " + *ends.begin() + " %})");
      return out;
    }
    p++;
    if (t.kind == Tok::Text) {
      out.push_back(make_node(NK::Text, t.line, t.text));
    } else if (t.kind == Tok::VarBegin) {
      Node n = make_node(NK::Output, t.line);
      n.expr = expression();
      if (peek().kind != Tok::VarEnd) error("expected '}}', got '" + peek().text + "'");
      p++;
      out.push_back(std::move(n));
    } else if (t.kind == Tok::BlockBegin) {
      const std::string keyword = expect_name();
      if (ends.count(keyword)) {
        *end_found = keyword;
        return out;
      }
      out.push_back(statement(keyword, t.line));
    } else {
      error("unexpected '" + t.text + "'");
    }
  }
}

Node Parser::statement(const std::string& keyword, int line) {
  if (keyword == "for") return for_statement(line);
  if (keyword == "if") return if_statement(line);
  if (keyword == "set") return set_statement(line);
  if (keyword == "break" || keyword == "continue") {
    expect_block_end();
    return make_node(keyword == "break" ? NK::Break : NK::Continue, line);
  }
  if (kRefusedStatements.count(keyword)) fail(file, line, "the {% " + keyword + " %} statement is not supported");
  fail(file, line, "unknown statement {% " + keyword + " %}");
}

std::vector<std::string> Parser::targets() {
  std::vector<std::string> names{expect_name()};
  while (accept_op(",")) names.push_back(expect_name());
  return names;
}

Node Parser::for_statement(int line) {
  Node n = make_node(NK::For, line);
  n.targets = targets();
  if (!accept_name("in")) error("expected 'in' in {% for %}");
  n.expr = expression(false);
  if (accept_name("if")) n.filter = expression();
  if (is_name("recursive")) error("recursive loops are not supported");
  expect_block_end();
  std::string end;
  n.body = body({"endfor", "else"}, &end);
  if (end == "else") {
    expect_block_end();
    n.else_body = body({"endfor"}, &end);
  }
  expect_block_end();
  return n;
}

Node Parser::if_statement(int line) {
  Node n = make_node(NK::If, line);
  std::string end = "if";
  while (end == "if" || end == "elif") {
    ExprPtr cond = expression(false);  // jinja2: no `a if b else c` as an if test
    expect_block_end();
    Body b = body({"elif", "else", "endif"}, &end);
    n.branches.emplace_back(cond, std::move(b));
  }
  if (end == "else") {
    expect_block_end();
    n.else_body = body({"endif"}, &end);
  }
  expect_block_end();
  return n;
}

Node Parser::set_statement(int line) {
  if (peek().kind == Tok::Name && is_op(".", 1)) {  // {% set ns.attr = value %}
    Node n = make_node(NK::SetAttr, line);
    n.targets = {next().text};
    p++;
    n.text = expect_name();
    expect_op("=");
    n.expr = expression();
    expect_block_end();
    return n;
  }
  Node n = make_node(NK::Set, line);
  n.targets = targets();
  if (is_op("|")) fail(file, line, "filtered block assignments ({% set x | f %}) are not supported");
  if (peek().kind == Tok::BlockEnd) {  // {% set x %}body{% endset %}: the body's text
    if (n.targets.size() != 1) fail(file, line, "a block assignment takes one name");
    p++;
    std::string end;
    n.kind = NK::SetBlock;
    n.body = body({"endset"}, &end);
    expect_block_end();
    return n;
  }
  expect_op("=");
  n.expr = expression();
  expect_block_end();
  return n;
}

// ---- Expressions ---------------------------------------------------------------------

ExprPtr Parser::expression(bool with_condexpr) {
  const Nest nest(*this);
  ExprPtr e = or_expr();
  if (!with_condexpr) return e;
  while (accept_name("if")) {  // a if cond [else b]
    const int line = peek().line;
    ExprPtr cond = or_expr();
    std::vector<ExprPtr> args{e, cond};
    if (accept_name("else")) args.push_back(expression());
    e = make(EK::Cond, line, std::move(args));
  }
  return e;
}

ExprPtr Parser::or_expr() {
  ExprPtr e = and_expr();
  while (is_name("or")) {
    const int line = next().line;  // consumed before the operand is parsed
    e = make(EK::Or, line, {e, and_expr()});
  }
  return e;
}

ExprPtr Parser::and_expr() {
  ExprPtr e = not_expr();
  while (is_name("and")) {
    const int line = next().line;
    e = make(EK::And, line, {e, not_expr()});
  }
  return e;
}

ExprPtr Parser::not_expr() {
  const Nest nest(*this);
  if (is_name("not")) {
    const int line = next().line;
    return make(EK::Not, line, {not_expr()});
  }
  return compare();
}

ExprPtr Parser::compare() {
  ExprPtr first = math1();
  auto e = std::make_shared<Expr>();
  e->kind = EK::Compare, e->line = first->line, e->args = {first};
  while (true) {
    const Token& t = peek();
    if (t.kind == Tok::Op && (t.text == "==" || t.text == "!=" || t.text == "<" || t.text == "<=" ||
                              t.text == ">" || t.text == ">=")) {
      e->ops.push_back(next().text);
    } else if (is_name("in")) {
      p++, e->ops.push_back("in");
    } else if (is_name("not") && is_name("in", 1)) {
      p += 2, e->ops.push_back("not in");
    } else {
      break;
    }
    e->args.push_back(math1());
  }
  return e->ops.empty() ? first : e;
}

ExprPtr Parser::math1() {
  ExprPtr e = concat();
  while (is_op("+") || is_op("-")) {
    const Token& t = next();
    e = make(EK::Binary, t.line, {e, concat()}, t.text);
  }
  return e;
}

ExprPtr Parser::concat() {
  ExprPtr e = math2();
  while (is_op("~")) {
    const int line = next().line;
    e = make(EK::Concat, line, {e, math2()});
  }
  return e;
}

ExprPtr Parser::math2() {
  ExprPtr e = pow_expr();
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    const Token& t = next();
    e = make(EK::Binary, t.line, {e, pow_expr()}, t.text);
  }
  return e;
}

ExprPtr Parser::pow_expr() {
  ExprPtr e = unary(true);
  while (is_op("**")) {
    const int line = next().line;
    e = make(EK::Binary, line, {e, unary(true)}, "**");
  }
  return e;
}

ExprPtr Parser::unary(bool with_filter) {
  const Nest nest(*this);
  ExprPtr e;
  if (is_op("-") || is_op("+")) {
    const Token& t = next();
    e = make(t.text == "-" ? EK::Neg : EK::Pos, t.line, {unary(false)});
  } else {
    e = postfix(primary());
  }
  return with_filter ? filter_expr(e) : e;
}

ExprPtr Parser::primary() {
  const Token& t = next();
  auto lit = [&](Value v) {
    auto e = std::make_shared<Expr>();
    e->kind = EK::Literal, e->line = t.line, e->literal = std::move(v);
    return e;
  };
  switch (t.kind) {
    case Tok::Name:
      if (t.text == "true" || t.text == "True") return lit(Value::boolean(true));
      if (t.text == "false" || t.text == "False") return lit(Value::boolean(false));
      if (t.text == "none" || t.text == "None") return lit(Value::none());
      return make(EK::Name, t.line, {}, t.text);
    case Tok::String: {
      std::string s = t.text;
      while (peek().kind == Tok::String) s += next().text;  // adjacent literals concatenate
      return lit(Value::string(s));
    }
    case Tok::Int: return lit(Value::integer(t.ival));
    case Tok::Float: return lit(Value::number(t.fval));
    case Tok::Op:
      if (t.text == "(") return list_or_tuple(")", EK::Tuple, t.line);
      if (t.text == "[") return list_or_tuple("]", EK::List, t.line);
      if (t.text == "{") return dict_literal(t.line);
      break;
    default: break;
  }
  fail(file, t.line, "unexpected '" + t.text + "' in an expression");
}

// `( ... )` (a parenthesised expression or a tuple) or `[ ... ]`.
ExprPtr Parser::list_or_tuple(const char* close, EK kind, int line) {
  std::vector<ExprPtr> items;
  bool comma = false;
  while (!is_op(close)) {
    if (!items.empty()) {
      expect_op(",");
      comma = true;
      if (is_op(close)) break;
    }
    items.push_back(expression());
  }
  p++;
  if (kind == EK::Tuple && items.size() == 1 && !comma) return items[0];
  return make(kind, line, std::move(items));
}

ExprPtr Parser::dict_literal(int line) {
  auto e = std::make_shared<Expr>();
  e->kind = EK::Dict, e->line = line;
  while (!is_op("}")) {
    if (!e->args.empty()) {
      expect_op(",");
      if (is_op("}")) break;
    }
    e->args.push_back(expression());  // key, value alternate
    expect_op(":");
    e->args.push_back(expression());
  }
  p++;
  return e;
}

ExprPtr Parser::postfix(ExprPtr e) {
  while (true) {
    if (is_op(".")) {
      const int line = next().line;
      if (peek().kind == Tok::Int) {
        auto item = make(EK::Item, line, {e});
        auto idx = std::make_shared<Expr>();
        idx->kind = EK::Literal, idx->line = line, idx->literal = Value::integer(next().ival);
        item->args.push_back(idx);
        e = item;
      } else {
        e = make(EK::Attr, line, {e}, expect_name());
      }
    } else if (is_op("[")) {
      e = subscript(e);
    } else if (is_op("(")) {
      auto call = std::make_shared<Expr>();
      call->kind = EK::Call, call->line = next().line, call->args = {e};
      call_args(call.get());
      e = call;
    } else {
      return e;
    }
  }
}

// `[i]` or `[a:b:c]` (each part optional).
ExprPtr Parser::subscript(ExprPtr e) {
  const int line = next().line;
  std::vector<ExprPtr> parts(1);
  bool slice = false;
  while (!is_op("]")) {
    if (accept_op(":")) {
      slice = true;
      parts.emplace_back();
      if (parts.size() > 3) error("a slice takes at most three parts");
      continue;
    }
    if (parts.back()) error("expected ':' or ']' in a subscript");
    parts.back() = expression();
  }
  p++;
  if (!slice) {
    if (!parts[0]) error("empty subscript");
    return make(EK::Item, line, {e, parts[0]});
  }
  parts.resize(3);
  auto s = make(EK::Slice, line, {e});
  for (ExprPtr& part : parts) s->args.push_back(part);  // null: omitted
  return s;
}

void Parser::call_args(Expr* e) {
  while (!is_op(")")) {
    if (e->args.size() > 1 || !e->kwargs.empty()) expect_op(",");
    if (is_op(")")) break;
    if (is_op("*") || is_op("**")) error("*args / **kwargs in calls are not supported");
    if (peek().kind == Tok::Name && is_op("=", 1)) {
      std::string key = next().text;
      p++;
      e->kwargs.emplace_back(key, expression());
    } else {
      if (!e->kwargs.empty()) error("a positional argument after a keyword argument");
      e->args.push_back(expression());
    }
  }
  p++;
}

// `| filter(args)` and `is [not] test args`, each followed by postfix operators.
ExprPtr Parser::filter_expr(ExprPtr e) {
  while (true) {
    if (is_op("|")) {
      const int line = next().line;
      auto f = std::make_shared<Expr>();
      f->kind = EK::Filter, f->line = line, f->name = expect_name(), f->args = {e};
      while (accept_op(".")) f->name += "." + expect_name();
      if (!known_filter(f->name)) fail(file, line, "no filter named '" + f->name + "'");
      if (accept_op("(")) call_args(f.get());
      e = postfix(f);
    } else if (is_name("is")) {
      const int line = next().line;
      auto t = std::make_shared<Expr>();
      t->kind = EK::Test, t->line = line, t->negated = accept_name("not"), t->args = {e};
      t->name = expect_name();
      while (accept_op(".")) t->name += "." + expect_name();
      if (!known_test(t->name)) fail(file, line, "no test named '" + t->name + "'");
      if (accept_op("(")) {
        call_args(t.get());
      } else if (peek().kind == Tok::String || peek().kind == Tok::Int || peek().kind == Tok::Float ||
                 is_op("[") || is_op("{") ||
                 (peek().kind == Tok::Name && !is_name("else") && !is_name("or") && !is_name("and"))) {
        if (is_name("is")) error("tests cannot be chained with 'is'");
        t->args.push_back(postfix(primary()));  // `x is divisibleby 3`, `x is sameas none`
      }
      e = t;
    } else if (is_op("(") || is_op("[") || is_op(".")) {
      e = postfix(e);
    } else {
      return e;
    }
  }
}

}  // namespace

Body parse(const std::string& file, const std::vector<Token>& tokens) {
  Parser parser{file, tokens};
  std::string end;
  return parser.body({}, &end);
}

}  // namespace oracle::jinja
