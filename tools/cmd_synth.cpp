// oracle synth --preset NAME --seed S -o out.gguf: a deterministic synthetic
// model written as a real GGUF file (docs/cli.md#synth).
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/errors.h"
#include "base/sha256.h"
#include "reference/model/synthetic.h"
#include "base/file_io.h"
#include "tools/commands.h"
#include "tools/model_args.h"
#include "tools/synth_gguf.h"

namespace oracle::tools {

struct SynthOptions {
  std::string preset = kDefaultPreset;
  uint64_t seed = kDefaultSeed;
  std::string output;
  std::string tokenizer;  // empty: the byte-level vocabulary
  std::string dtype = "f32";
  int layers = 0;  // 0: the preset's; else the first `layers` of its layers (a shape with fewer blocks)
  std::vector<std::string> meta;  // KEY=TYPE:VALUE, extra metadata
  bool list = false;
  bool json = false;
};

// A llama2.c tokenizer.bin stores no token types; GGUF readers want them.
static void fill_token_types(Vocab& v) {
  if (!v.token_types.empty()) return;
  for (size_t i = 0; i < v.tokens.size(); i++) {
    const std::string& t = v.tokens[i];
    const bool byte = t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>';
    int type = byte ? 6 : 1;
    if ((int)i == v.unk_id) type = 2;
    if ((int)i == v.bos_id || (int)i == v.eos_id) type = 3;
    v.token_types.push_back(type);
  }
}

static Vocab synth_vocab(const SynthOptions& o, const SyntheticPreset& p) {
  if (o.tokenizer.empty()) return synthetic_byte_vocab(p.config.vocab_size);
  Vocab v = load_tokenizer_file(o.tokenizer, p.config.vocab_size);
  v.source = o.tokenizer;
  fill_token_types(v);
  return v;
}

static int list_presets(bool json) {
  nlohmann::json out = nlohmann::json::array();
  for (const SyntheticPreset& p : synthetic_presets()) {
    if (!json) std::printf("%-12s %s\n", p.name.c_str(), p.description.c_str());
    out.push_back({{"name", p.name}, {"description", p.description}});
  }
  if (json) std::printf("%s\n", out.dump().c_str());
  return kExitOk;
}

int run_synth(const SynthOptions& o) {
  if (o.list) return list_presets(o.json);
  require_input(!o.output.empty(), "-o", "output", "an output path is required (-o out.gguf)");
  require_input(o.dtype == "f32" || o.dtype == "f16", o.dtype, "dtype", "must be f32 or f16");
  SyntheticPreset preset = synthetic_preset(o.preset);
  require_input(o.layers >= 0 && o.layers <= preset.config.n_layers, std::to_string(o.layers), "--layers",
                "must be 1.." + std::to_string(preset.config.n_layers) + " for preset " + preset.name + " (0: all)");
  if (o.layers > 0) preset.config.n_layers = o.layers;
  const Vocab vocab = synth_vocab(o, preset);
  std::vector<SynthMeta> meta;  // parsed before the output is opened
  for (const std::string& m : o.meta) meta.push_back(parse_synth_meta(m));
  AtomicWriter file(o.output, "output");  // temp + rename: an existing file survives any failure
  Sha256 hash;
  SynthGgufOptions options;
  options.dtype = o.dtype == "f16" ? DType::F16 : DType::F32;
  options.meta = meta;
  const uint64_t bytes = write_synthetic_gguf(preset, o.seed, vocab, options,
                                              [&](const void* p, size_t n) {
                                                file.write(p, n);
                                                hash.update(p, n);
                                              });
  file.commit();
  const std::string sha256 = hash.hex();
  nlohmann::json out = {{"path", o.output},     {"preset", preset.name}, {"seed", o.seed},
                        {"dtype", o.dtype},     {"bytes", bytes},        {"sha256", sha256},
                        {"layers", preset.config.n_layers},
                        {"tokenizer", o.tokenizer.empty() ? "byte-level" : o.tokenizer}};
  if (o.json) std::printf("%s\n", out.dump().c_str());
  else std::printf("wrote %s (%s, seed %llu, %llu bytes, sha256 %s)\n", o.output.c_str(),
                   preset.name.c_str(), (unsigned long long)o.seed, (unsigned long long)bytes,
                   sha256.c_str());
  return kExitOk;
}

Command setup_synth(CLI::App& app) {
  auto opts = std::make_shared<SynthOptions>();
  auto* sub = app.add_subcommand("synth", "Write a deterministic synthetic model as GGUF");
  sub->add_option("--preset,-p", opts->preset, "Shape preset (see --list)");
  sub->add_option("--seed,-s", opts->seed, "Weight seed (default: the embedded model's)")->check(int_in<uint64_t>());
  sub->add_option("--output,-o", opts->output, "Output .gguf path");
  sub->add_option("--tokenizer,-z", opts->tokenizer,
                  "Vocabulary to embed: llama2.c tokenizer.bin or GGUF (default: byte-level)");
  sub->add_option("--dtype", opts->dtype, "Tensor type: f32 or f16");
  sub->add_option("--layers", opts->layers, "Keep only the first N blocks of the preset's shape (0: all)");
  sub->add_option("--meta", opts->meta, "Extra metadata KEY=TYPE:VALUE (u32, i32, f32, bool, str)");
  sub->add_flag("--list", opts->list, "List the presets");
  sub->add_flag("--json", opts->json, "Print one JSON object");
  return {sub, [opts] { return run_synth(*opts); }};
}

}  // namespace oracle::tools
