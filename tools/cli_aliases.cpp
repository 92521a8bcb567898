// llama.cpp / HF option spellings and argv normalisation — see cli_aliases.h.
#include "tools/cli_aliases.h"

#include <algorithm>
#include <sstream>

namespace oracle::tools {

const std::vector<Alias>& alias_table() {
  static const std::vector<Alias> table = {
      {"-m", "--model", "*", "llama.cpp"},
      {"-p", "--prompt", "run diff", "llama.cpp"},
      {"-f", "--file", "run diff", "llama.cpp (prompt file; - = stdin)"},
      {"-f", "--corpus", "certify perplexity", "llama-perplexity"},
      {"-n", "--max-tokens", "run diff", "llama.cpp"},
      {"--n-predict", "--max-tokens", "run diff", "llama.cpp"},
      {"--max-new-tokens", "--max-tokens", "run diff", "transformers"},
      {"-c", "--context", "*", "llama.cpp"},
      {"--ctx-size", "--context", "*", "llama.cpp"},
      {"-c", "--ctx", "certify perplexity", "llama-perplexity"},
      {"--ctx-size", "--ctx", "certify perplexity", "llama-perplexity"},
      {"-t", "--threads", "*", "llama.cpp"},
      {"-s", "--seed", "*", "llama.cpp"},
      {"--temp", "--temperature", "run", "llama.cpp"},
      {"--repeat-last-n", "--penalty-window", "run", "llama.cpp"},
      {"--repetition-penalty", "--repeat-penalty", "run", "transformers"},
      {"-p", "--prompt-tokens", "bench", "llama-bench"},
      {"--n-prompt", "--prompt-tokens", "bench", "llama-bench"},
      {"-n", "--decode-tokens", "bench", "llama-bench"},
      {"--n-gen", "--decode-tokens", "bench", "llama-bench"},
      {"-r", "--repetitions", "bench", "llama-bench"},
      {"-o", "--output", "bench", "llama-bench"},
  };
  return table;
}

std::string command_path(const CLI::App* sub) {
  std::string path;
  for (const CLI::App* a = sub; a != nullptr && a->get_parent() != nullptr; a = a->get_parent())
    path = path.empty() ? a->get_name() : a->get_name() + " " + path;
  return path;
}

static bool applies(const Alias& a, const std::string& command) {
  if (std::string(a.commands) == "*") return true;
  std::istringstream words(a.commands);
  for (std::string w; words >> w;)
    if (w == command) return true;
  return false;
}

// The option `spelling` names in `sub`: its own, else an alias's canonical one.
static const CLI::Option* resolve(const CLI::App& sub, const std::string& command, const std::string& spelling,
                                  std::string* canonical) {
  *canonical = spelling;
  if (const CLI::Option* o = sub.get_option_no_throw(spelling)) return o;
  for (const Alias& a : alias_table())
    if (spelling == a.spelling && applies(a, command))
      if (const CLI::Option* o = sub.get_option_no_throw(a.canonical)) {
        *canonical = a.canonical;
        return o;
      }
  return nullptr;
}

std::string alias_target(const CLI::App& sub, const std::string& command, const std::string& spelling) {
  std::string canonical;
  return resolve(sub, command, spelling, &canonical) != nullptr ? canonical : "";
}

std::string alias_table_markdown() {
  std::string out = "| spelling | means | in | from |\n|---|---|---|---|\n";
  for (const Alias& a : alias_table())
    out += "| `" + std::string(a.spelling) + "` | `" + a.canonical + "` | " +
           (std::string(a.commands) == "*" ? std::string("every subcommand with ") + "`" + a.canonical + "`" : a.commands) +
           " | " + a.origin + " |\n";
  return out;
}

std::vector<std::string> option_spellings(const CLI::App& sub, const std::string& command) {
  std::vector<std::string> out;
  for (const CLI::Option* o : sub.get_options()) {
    for (const std::string& n : o->get_lnames()) out.push_back("--" + n);
    for (const std::string& n : o->get_snames()) out.push_back("-" + n);
  }
  for (const Alias& a : alias_table()) {
    std::string canonical;
    if (applies(a, command) && resolve(sub, command, a.spelling, &canonical) != nullptr &&
        std::find(out.begin(), out.end(), a.spelling) == out.end())
      out.push_back(a.spelling);
  }
  return out;
}

static size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); j++) row[j] = j;
  for (size_t i = 1; i <= a.size(); i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); j++) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string closest_spelling(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::max<size_t>(2, word.size() / 3) + 1;
  for (const std::string& c : candidates) {
    size_t d = edit_distance(word, c);
    if (c.size() > word.size() && c.compare(0, word.size(), word) == 0) d = std::min<size_t>(d, 1);  // a prefix
    if (d < best_d) best = c, best_d = d;
  }
  return best;
}

static std::string suggestion(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string best = closest_spelling(word, candidates);
  return best.empty() ? "" : " (did you mean " + best + "?)";
}

// `--top_p=0.9` -> name "--top-p", value "0.9".
static std::string long_name(const std::string& token, std::string* value, bool* has_value) {
  const size_t eq = token.find('=');
  *has_value = eq != std::string::npos;
  *value = *has_value ? token.substr(eq + 1) : "";
  std::string name = token.substr(0, eq);
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

static bool takes_value(const CLI::Option* o) { return o->get_type_size() != 0 && o->get_expected_min() > 0; }

static bool is_option_token(const std::string& t) {
  if (t.size() < 2 || t[0] != '-') return false;
  return !(std::isdigit((unsigned char)t[1]) || t[1] == '.');  // a negative number is a value
}

static CLI::App* find_subcommand(CLI::App* app, const std::string& name) {
  for (CLI::App* s : app->get_subcommands({}))
    if (s->get_name() == name) return s;
  return nullptr;
}

static std::vector<std::string> subcommand_names(CLI::App* app) {
  std::vector<std::string> out;
  for (CLI::App* s : app->get_subcommands({})) out.push_back(s->get_name());
  return out;
}

std::vector<std::string> normalize_args(CLI::App& app, const std::vector<std::string>& in) {
  std::vector<std::string> args = in;
  if (!args.empty() && (args[0] == "--version" || args[0] == "-V")) args[0] = "version";
  if (args.size() == 2 && args[0] == "help" && args[1] == "aliases") return {"help-aliases"};
  if (!args.empty() && args[0] == "help") {  // oracle help [CMD...] -> oracle [CMD...] --help
    args.erase(args.begin());
    args.push_back("--help");
  }
  std::vector<std::string> out;
  CLI::App* sub = &app;
  bool positional_only = false;
  for (size_t i = 0; i < args.size(); i++) {
    const std::string& t = args[i];
    const std::string command = command_path(sub);
    if (positional_only || !is_option_token(t)) {
      if (!positional_only && t == "--") positional_only = true;
      else if (CLI::App* next = positional_only ? nullptr : find_subcommand(sub, t)) sub = next;
      else if (sub == &app)
        throw UsageError("", "unknown subcommand '" + t + "'" + suggestion(t, subcommand_names(&app)) +
                                 "; see oracle --help");
      out.push_back(t);
      continue;
    }
    if (t == "--help" || t == "-h") {
      out.push_back(t);
      continue;
    }
    std::string value, canonical;
    bool has_value = false;
    const bool is_long = t.compare(0, 2, "--") == 0;
    const std::string name = is_long ? long_name(t, &value, &has_value) : t.substr(0, 2);
    if (!is_long && t.size() > 2) value = t.substr(2), has_value = true;  // -n24
    const CLI::Option* o = resolve(*sub, command, name, &canonical);
    if (o == nullptr)
      throw UsageError(command, "unknown option '" + name + "'" + (command.empty() ? "" : " for oracle " + command) +
                                    suggestion(name, option_spellings(*sub, command)) +
                                    "; see oracle help " + command);
    if (has_value && canonical.compare(0, 2, "--") == 0) out.push_back(canonical + "=" + value);
    else out.push_back(canonical);
    if (has_value && canonical.compare(0, 2, "--") != 0) out.push_back(value);
    if (!has_value && takes_value(o) && i + 1 < args.size()) out.push_back(args[++i]);
  }
  return out;
}

}  // namespace oracle::tools
