#pragma once
// Speculative decoding on the command line (docs/speculative.md, docs/cli.md):
//   oracle run   --draft-model D [--draft-tokenizer T] --spec-k K [--spec-adaptive] | --spec-ngram N
//   oracle bench --draft-model D --spec-k K | --spec-ngram N
// tools/cmd_run.cpp and tools/cmd_bench.cpp call add_speculative_options(sub,
// opts.spec) in setup_<cmd>, then, when speculative_enabled(opts.spec),
// print_speculative_run() (run) or bench_speculative() + print_speculative_bench() (bench).
#include <CLI/CLI.hpp>
#include <memory>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "reference/generate/speculative.h"
#include "tools/model_args.h"

namespace oracle::tools {

struct DraftOptions {
  std::string draft_model;      // a second checkpoint sharing the target's vocabulary
  std::string draft_tokenizer;  // its tokenizer, checked piece by piece against the target's
  int k = 4;                    // drafted tokens per round
  int ngram = 0;                // > 0: prompt-lookup drafts (n-gram size) instead of a draft model
  bool adaptive = false;        // adapt k per round (1 .. 2k)
};

void add_speculative_options(CLI::App* sub, DraftOptions& args);
bool speculative_enabled(const DraftOptions& args);

// The drafter and the draft model it reads (kept together: the drafter holds a reference).
struct DraftSource {
  Model model;
  std::unique_ptr<Drafter> drafter;
};

// target_vocab: the target tokenizer's vocabulary, or null to compare sizes only.
// InputError(draft file, "tokens"/"vocab_size", ...) when the vocabularies differ;
// --draft-model with --spec-ngram is an InputError too.
std::unique_ptr<DraftSource> make_draft_source(const DraftOptions& args, const Model& target, const Vocab* target_vocab,
                                               const SamplerConfig& sampler, int threads);

nlohmann::json spec_metrics_json(const SpecMetrics& m, int k);

// oracle run, speculative: ids from generate_speculative (stops after EOS unless
// ignore_eos, and after BOS for llama2.c models, like generate()), text by the
// target's tokenizer without the stop token; prints the text, or with `json`
// one object {"model", ..., "output_ids", "text", "finish_reason",
// "speculative": metrics}. Stop strings are rejected (InputError "--stop").
int print_speculative_run(const LoadedModel& target, const DraftOptions& args, const std::string& prompt,
                          const SamplerConfig& sampler, int max_tokens, bool ignore_eos,
                          const std::vector<std::string>& stop_strings, int threads, bool json);

// oracle bench, speculative: greedy decoding of n tokens after `prompt`, plain
// (one target pass per token) and speculative; target passes per token, the
// wall-time speedup, and whether both produced the same ids (they must).
nlohmann::json bench_speculative(const Model& target, const DraftOptions& args, std::span<const int> prompt,
                                 int n_tokens, int threads);
void print_speculative_bench(const nlohmann::json& j);

}  // namespace oracle::tools
