#include "tools/model_args.h"

#include <filesystem>

#include "reference/base/errors.h"
#include "reference/model/gguf.h"
#include "reference/base/sha256.h"
#include "reference/model/synthetic.h"
#include "tools/synth_gguf.h"

namespace oracle::tools {

namespace fs = std::filesystem;

void add_model_options(CLI::App* sub, ModelOptions& a) {
  sub->add_option("--model,-m", a.model,
                  "Checkpoint: GGUF, llama2.c .bin or safetensors folder (default: embedded tiny model)");
  sub->add_option("--tokenizer,-z", a.tokenizer,
                  "Tokenizer: llama2.c tokenizer.bin or a GGUF with tokenizer.ggml.* (default: the "
                  "model's own, or tok<vocab>.bin / tokenizer.bin beside a .bin)");
  sub->add_option("--context", a.context, "Context length override (0: the file's)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--threads,-t", a.threads, "Worker threads (changes no bit of the output)")
      ->check(CLI::Range(1, 1024));
}

// ---- the embedded default ---------------------------------------------------------
Model embedded_default_model(int context_override) {
  const SyntheticPreset& preset = synthetic_preset(kDefaultPreset);
  Model m = synthetic_model(preset, kDefaultSeed, synthetic_byte_vocab(preset.config.vocab_size));
  const std::string gguf = synthetic_gguf_bytes(preset, kDefaultSeed, m.vocab);
  m.sha256 = sha256_hex(gguf.data(), gguf.size());
  if (context_override > 0) m.config.seq_len = context_override;
  return m;
}

Model load_model_arg(const ModelOptions& a) {
  if (a.model.empty()) return embedded_default_model(a.context);
  LoadOptions options;
  options.context_length_override = a.context;
  return load_model(a.model, options);
}

// ---- tokenizer resolution -----------------------------------------------------------
static bool is_gguf_file(const std::string& path) {
  return path.size() >= 5 && path.compare(path.size() - 5, 5, ".gguf") == 0;
}

// A llama2.c checkpoint names no tokenizer: look beside it (docs/cli.md).
static std::string tokenizer_beside(const Model& m) {
  if (m.format != "llama2c") return "";
  const fs::path dir = fs::path(m.path).parent_path();
  for (const std::string& name : {"tok" + std::to_string(m.config.vocab_size) + ".bin",
                                 std::string("tokenizer.bin")}) {
    if (fs::exists(dir / name)) return (dir / name).string();
  }
  return "";
}

Vocab load_tokenizer_file(const std::string& path, int vocab_size) {
  if (is_gguf_file(path)) return load_gguf_vocab(path);
  return load_llama2c_tokenizer(path, vocab_size);
}

LoadedModel load_model_and_tokenizer(const ModelOptions& a) {
  Model model = load_model_arg(a);
  std::string path = a.tokenizer;
  if (path.empty() && model.vocab.tokens.empty()) path = tokenizer_beside(model);
  require_input(!path.empty() || !model.vocab.tokens.empty(), model.path, "tokenizer",
                "the model embeds no vocabulary and none was found beside it; pass --tokenizer");
  Vocab vocab = path.empty() ? model.vocab : load_tokenizer_file(path, model.config.vocab_size);
  const std::string source = path.empty() ? "embedded" : path;
  require_input((int)vocab.tokens.size() == model.config.vocab_size,
                path.empty() ? model.path : path, "vocab_size",
                "tokenizer has " + std::to_string(vocab.tokens.size()) + " tokens but the model " +
                    model.path + " has vocab_size " + std::to_string(model.config.vocab_size));
  std::string tok_sha = path.empty() ? model.sha256 : sha256_file(path);
  Tokenizer tokenizer(std::move(vocab));
  return LoadedModel{std::move(model), std::move(tokenizer), source, tok_sha};
}

}  // namespace oracle::tools
