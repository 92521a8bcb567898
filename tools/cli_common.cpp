#include "tools/cli_common.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <nlohmann/json.hpp>

#include "base/errors.h"
#include "base/escape.h"

namespace oracle::tools {

void print_error(const ErrorReport& e, bool json) {
  const std::string prefix = e.command.empty() ? "oracle" : "oracle " + e.command;
  std::string line = escape_bytes(prefix) + ": error: ";
  if (!e.file.empty()) line += escape_bytes(e.file) + ": ";
  if (!e.field.empty()) line += escape_bytes(e.field) + ": ";
  line += escape_bytes(e.message);
  std::fprintf(stderr, "%s\n", line.c_str());
  if (!json) return;
  const nlohmann::json j = {{"error",
                             {{"file", e.file}, {"field", e.field}, {"message", e.message}, {"exit_code", e.exit_code}}}};
  std::fflush(stdout);
  std::printf("%s\n", j.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace).c_str());
  std::fflush(stdout);
}

int guarded(const std::string& command, bool json, const std::function<int()>& body) {
  ErrorReport r{command, "", "", "", kExitBadInput};
  try {
    return body();
  } catch (const InputError& e) {
    r.file = e.file(), r.field = e.field(), r.message = input_error_message(e);
  } catch (const std::bad_alloc&) {
    r.file = "memory", r.field = "allocation";
    r.message = "out of memory (the request is larger than the memory this process can get)";
  } catch (const std::exception& e) {
    r.file = "oracle", r.field = "internal error", r.message = e.what();
  }
  print_error(r, json);
  return r.exit_code;
}

bool wants_json(int argc, const char* const* argv) {
  for (int i = 1; i < argc; i++)
    if (std::strcmp(argv[i], "--json") == 0 || std::strncmp(argv[i], "--json=", 7) == 0) return true;
  return false;
}

// ---- CLI11 parse errors -> one report -------------------------------------------------
namespace {

// The subcommand path that was being parsed ("golden verify"), deepest first found.
std::string parsed_path(const CLI::App& app) {
  std::string path;
  const CLI::App* at = &app;
  for (;;) {
    const CLI::App* next = nullptr;
    for (const CLI::App* sub : at->get_subcommands([](const CLI::App*) { return true; }))
      if (sub->parsed()) next = sub;
    if (!next) return path;
    path += (path.empty() ? "" : " ") + next->get_name();
    at = next;
  }
}

const CLI::App* deepest(const CLI::App& app) {
  const CLI::App* at = &app;
  for (bool more = true; more;) {
    more = false;
    for (const CLI::App* sub : at->get_subcommands([](const CLI::App*) { return true; }))
      if (sub->parsed()) at = sub, more = true;
  }
  return at;
}

std::string subcommand_names(const CLI::App& app) {
  std::string names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    names += (names.empty() ? "" : ", ") + sub->get_name();
  return names;
}

// "NAME: message" (CLI11's ValidationError) -> (NAME, message).
bool split_name(const std::string& what, std::string* name, std::string* rest) {
  const size_t colon = what.find(": ");
  if (colon == std::string::npos || colon == 0 || what.find(' ') < colon) return false;
  *name = what.substr(0, colon);
  *rest = what.substr(colon + 2);
  return true;
}

}  // namespace

ErrorReport parse_error_report(const CLI::App& app, const CLI::ParseError& e) {
  std::string what = e.what();
  if (what.rfind(": ", 0) == 0) what = what.substr(2);  // a hidden option: the name is in the message
  ErrorReport r{parsed_path(app), kCommandLine, "arguments", what, kExitBadInput};
  const CLI::App* at = deepest(app);
  const std::string subs = subcommand_names(*at);
  std::string name, rest;
  const std::vector<std::string> extra = at->remaining();
  const bool word = !extra.empty() && extra[0].rfind("-", 0) != 0;
  if (dynamic_cast<const CLI::RequiredError*>(&e) && what.rfind("A subcommand", 0) == 0 && !word) {
    r.field = "subcommand";
    r.message = "a subcommand is required (" + subs + ")";
  } else if ((dynamic_cast<const CLI::RequiredError*>(&e) || dynamic_cast<const CLI::ExtrasError*>(&e)) &&
             !subs.empty() && at->get_subcommands().empty() && word) {
    r.field = "subcommand";
    r.message = "unknown subcommand '" + at->remaining()[0] + "' (" + subs + ")";
  } else if (dynamic_cast<const CLI::ExtrasError*>(&e)) {
    r.field = !extra.empty() && extra[0].rfind("-", 0) == 0 ? extra[0] : "arguments";
    r.message = !extra.empty() && extra[0].rfind("-", 0) == 0 ? "unknown option" : what;
  } else if (dynamic_cast<const CLI::RequiredError*>(&e) && what.size() > 12 &&
             what.compare(what.size() - 12, 12, " is required") == 0) {
    r.field = what.substr(0, what.size() - 12);
    r.message = "is required";
  } else if (split_name(what, &name, &rest)) {
    r.field = name;
    r.message = rest;
  }
  return r;
}

CLI::Validator float_in(double lo, double hi, bool lo_open) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%s%g, %g]", lo_open ? "(" : "[", lo, hi);
  const std::string range = buf;
  return CLI::Validator(
      [lo, hi, lo_open, range](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size()) return "expected a number, got '" + text + "'";
        if (!std::isfinite(v)) return "must be a finite number in " + range + ", got '" + text + "'";
        if (v < lo || v > hi || (lo_open && v == lo)) return "'" + text + "' is outside " + range;
        return "";
      },
      "NUMBER in " + range);
}

}  // namespace oracle::tools
