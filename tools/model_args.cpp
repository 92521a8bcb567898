#include "tools/model_args.h"

#include "base/errors.h"
#include "reference/model/gguf.h"
#include "base/sha256.h"
#include "reference/model/synthetic.h"
#include "reference/model/loaders.h"
#include "reference/tokenizer/tokenizer_files.h"
#include "tools/cli_common.h"
#include "tools/synth_gguf.h"

namespace oracle::tools {

void add_model_options(CLI::App* sub, ModelOptions& a) {
  sub->add_option("--model,-m", a.model,
                  "Checkpoint: GGUF, llama2.c .bin or safetensors folder (default: embedded tiny model)");
  sub->add_option("--tokenizer,-z", a.tokenizer,
                  "Tokenizer: llama2.c tokenizer.bin or a GGUF with tokenizer.ggml.* (default: the "
                  "model's own, or tok<vocab>.bin / tokenizer.bin beside a .bin)");
  sub->add_option("--context", a.context, "Context length override (0: the file's)")
      ->check(int_in<int>(0, 1 << 24));
  sub->add_flag("--allow-context-extension", a.allow_context_extension,
                "Allow --context above the model's trained context (recorded in --json)");
  sub->add_option("--threads,-t", a.threads, "Worker threads (changes no bit of the output)")
      ->check(int_in<int>(1, 1024));
}

// ---- the embedded default ---------------------------------------------------------
Model embedded_default_model(int context_override, bool allow_context_extension) {
  const SyntheticPreset& preset = synthetic_preset(kDefaultPreset);
  Model m = synthetic_model(preset, kDefaultSeed, synthetic_byte_vocab(preset.config.vocab_size));
  const std::string gguf = synthetic_gguf_bytes(preset, kDefaultSeed, m.vocab);
  m.sha256 = sha256_hex(gguf.data(), gguf.size());
  LoadOptions options;
  options.context_length_override = context_override;
  options.allow_context_extension = allow_context_extension;
  apply_context_override(m.config, options, m.path);
  return m;
}

Model load_model_arg(const ModelOptions& a) {
  if (a.model.empty()) return embedded_default_model(a.context, a.allow_context_extension);
  LoadOptions options;
  options.context_length_override = a.context;
  options.allow_context_extension = a.allow_context_extension;
  options.residency = a.residency;
  return load_model(a.model, options);
}

// ---- tokenizer resolution (reference/tokenizer/tokenizer_files.h) --------------------
LoadedModel load_model_and_tokenizer(const ModelOptions& a) {
  Model model = load_model_arg(a);
  std::string source;
  Vocab vocab = resolve_vocab(model, a.tokenizer, &source);
  std::string tok_sha = source == "embedded" ? model.sha256 : sha256_file(source);
  Tokenizer tokenizer(std::move(vocab));
  return LoadedModel{std::move(model), std::move(tokenizer), source, tok_sha};
}

}  // namespace oracle::tools
