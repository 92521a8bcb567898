#pragma once
// Shared CLI options for subcommands that load a model: --model, --tokenizer,
// --context, --threads, and how a model finds its tokenizer (docs/cli.md):
//   1. --tokenizer T (a llama2.c tokenizer.bin or a GGUF holding tokenizer.ggml.*);
//   2. else the vocabulary embedded in the model (GGUF, synthetic);
//   3. else, for a llama2.c .bin, tok<vocab_size>.bin then tokenizer.bin beside it;
//   4. else an InputError asking for --tokenizer.
// Without --model the embedded default is used: the `tiny` synthetic preset,
// generated in memory from a fixed seed (identical to `oracle synth --preset tiny`).
#include <CLI/CLI.hpp>
#include <string>

#include "reference/model/model.h"
#include "reference/tokenizer/tokenizer.h"
#include "reference/tokenizer/tokenizer_files.h"  // load_tokenizer_file, resolve_vocab

namespace oracle::tools {

struct ModelOptions {
  std::string model;      // empty: the embedded default
  std::string tokenizer;  // empty: embedded vocabulary or found beside the model
  int context = 0;        // 0: the file's context length
  int threads = 1;
  bool allow_context_extension = false;  // --context above the file's trained context
  // Not a flag: tensor-parallel ranks set mapped (they drop the pages they do not read).
  FileResidency residency = FileResidency::automatic;
};

void add_model_options(CLI::App* sub, ModelOptions& args);

struct LoadedModel {
  Model model;
  Tokenizer tokenizer;
  std::string tokenizer_source;  // file path, or "embedded"
  std::string tokenizer_sha256;  // of the tokenizer file (embedded: the model's)
};

// Loads the model only (bench). InputError on any bad input.
Model load_model_arg(const ModelOptions& args);
// Loads the model and its tokenizer and checks that their vocabulary sizes agree
// (InputError(tokenizer, "vocab_size", ...) otherwise).
LoadedModel load_model_and_tokenizer(const ModelOptions& args);

// The embedded default model, sha256 = that of the GGUF `oracle synth` writes.
Model embedded_default_model(int context_override, bool allow_context_extension = false);

}  // namespace oracle::tools
