#pragma once
// Sampler options of `oracle run` and what --preset means (docs/sampling.md#presets):
//   llamacpp            llama.cpp's own defaults (common_params_sampling in
//                       common/common.h of the llama.cpp vendored by
//                       llama-cpp-python 0.3.36): temperature 0.8, top-k 40,
//                       top-p 0.95, min-p 0.05, repeat-last-n 64, penalties off;
//                       llama.cpp's processor order.
//   hf                  transformers' GenerationConfig defaults (transformers
//                       5.23.0, generation/configuration_utils.py): do_sample
//                       false (greedy), temperature 1, top-k 50, top-p 1,
//                       no min-p, repetition penalty 1; HF's processor order.
//                       --do-sample or an explicit --temperature > 0 samples,
//                       as generate(do_sample=True, ...) does.
//   llamacpp-semantics  llama.cpp's order and semantics with every filter off
//   hf-semantics        HF's order and semantics with every filter off
// Without --preset: llamacpp-semantics, greedy (temperature 0).
// Options given on the command line override the preset's values.
#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "reference/sampling/sampler.h"

namespace oracle::tools {

struct SamplerOptions {
  std::string preset;    // "" = llamacpp-semantics with temperature 0
  bool do_sample = false;
  SamplerConfig given;   // the values of the options below, as parsed
  std::vector<std::pair<CLI::Option*, std::function<void(SamplerConfig&, const SamplerConfig&)>>> options;
};

// --preset, --temperature, --top-k, --top-p, --min-p, --repeat-penalty,
// --frequency-penalty, --presence-penalty, --penalty-window, --seed, --do-sample.
void add_sampler_options(CLI::App* sub, SamplerOptions& args);

// The preset's values with every option given on the command line on top.
// InputError("--preset") for an unknown preset name.
SamplerConfig resolve_sampler(const SamplerOptions& args);

// What a preset name sets before any option (exposed for tests and docs).
SamplerConfig preset_defaults(const std::string& name, bool do_sample);

}  // namespace oracle::tools
