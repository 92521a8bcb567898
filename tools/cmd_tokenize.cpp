// oracle tokenize: the token ids of a text, as llama-tokenize prints them
// (docs/cli.md#tokenize, docs/tokenizer.md).
//   oracle tokenize -m MODEL [-z TOKENIZER] (-p TEXT | -f FILE|-) [--ids] [--no-bos]
//                   [--no-parse-special] [--json]
// BOS/EOS as the vocabulary says (tokenizer.ggml.add_bos_token / add_eos_token,
// or the llama2.c default), special-token texts parsed unless --no-parse-special
// — the same encoding `oracle run` gives its prompt.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "base/errors.h"
#include "base/escape.h"
#include "tools/commands.h"
#include "tools/model_args.h"

namespace oracle::tools {

struct TokenizeOptions {
  ModelOptions model;
  std::string prompt;
  std::string file;             // -f: the text from a file, "-" for stdin
  bool ids = false;             // --ids: one Python-style list, like llama-tokenize --ids
  bool no_bos = false;          // --no-bos: no BOS even where the vocabulary adds one
  bool no_parse_special = false;
  bool json = false;
};

static std::string read_text(const TokenizeOptions& o) {
  require_input(o.file.empty() || o.prompt.empty(), "command line", "--file", "give --prompt or --file, not both");
  if (o.file.empty()) return o.prompt;
  if (o.file == "-") return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  std::ifstream in(o.file, std::ios::binary);
  require_input(in.good(), o.file, "--file", "cannot open the text file");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

static void print_ids(const std::vector<int>& ids) {
  std::fputc('[', stdout);
  for (size_t i = 0; i < ids.size(); i++) std::printf(i ? ", %d" : "%d", ids[i]);
  std::fputs("]\n", stdout);
}

// Without --ids: "id -> 'piece'" per token, as llama-tokenize prints by default,
// except that bytes outside printable ASCII are escaped (\n, \xNN) instead of
// written raw. Control and user-defined tokens show their text (decode drops them).
static void print_pieces(const Tokenizer& t, const std::vector<int>& ids) {
  const Vocab& v = t.vocab();
  for (int id : ids) {
    const int type = (size_t)id < v.token_types.size() ? v.token_types[id] : 1;
    const std::string piece = type == 3 || type == 4 ? v.tokens[id] : t.decode({id});
    std::printf("%6d -> '%s'\n", id, escape_bytes(piece).c_str());
  }
}

static int run_tokenize(const TokenizeOptions& o) {
  const std::string text = read_text(o);
  const LoadedModel lm = load_model_and_tokenizer(o.model);
  const Vocab& v = lm.tokenizer.vocab();
  const EncodeOptions eo{v.add_bos && !o.no_bos, v.add_eos, !o.no_parse_special};
  const std::vector<int> ids = lm.tokenizer.encode(text, eo);
  if (o.json) {
    const nlohmann::json j = {{"tokenizer", lm.tokenizer_source}, {"add_bos", eo.add_bos}, {"add_eos", eo.add_eos},
                              {"parse_special", eo.parse_special}, {"n_tokens", ids.size()}, {"ids", ids}};
    std::printf("%s\n", j.dump().c_str());
  } else if (o.ids) {
    print_ids(ids);
  } else {
    print_pieces(lm.tokenizer, ids);
  }
  return kExitOk;
}

Command setup_tokenize(CLI::App& app) {
  auto o = std::make_shared<TokenizeOptions>();
  auto* sub = app.add_subcommand("tokenize", "Print the token ids of a text (llama-tokenize's output)");
  add_model_options(sub, o->model);
  sub->add_option("--prompt,-p", o->prompt, "The text");
  sub->add_option("--file,-f", o->file, "Read the text from this file (- for stdin), byte for byte");
  sub->add_flag("--ids", o->ids, "Only the ids, as one list [a, b, ...] (llama-tokenize --ids)");
  sub->add_flag("--no-bos", o->no_bos, "No BOS, even where the vocabulary adds one");
  sub->add_flag("--no-parse-special", o->no_parse_special, "Special-token texts stay plain text");
  sub->add_flag("--json", o->json, "One JSON object: ids and the encoding options used");
  return {sub, [o] { return run_tokenize(*o); }};
}

}  // namespace oracle::tools
