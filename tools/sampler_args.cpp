// Sampler options and presets of `oracle run` — see sampler_args.h.
#include "tools/sampler_args.h"
#include "tools/cli_common.h"

#include <cstdio>
#include <type_traits>

#include "base/errors.h"

namespace oracle::tools {

SamplerConfig preset_defaults(const std::string& name, bool do_sample) {
  if (name == "llamacpp") return preset_config(Preset::LlamaCpp);
  if (name == "hf") {
    SamplerConfig c = preset_config(Preset::Hf);  // temperature 1, top-k 50, top-p 1
    if (!do_sample) c.temperature = 0.0f;   // GenerationConfig.do_sample = False: greedy
    return c;
  }
  require_input(name.empty() || name == "llamacpp-semantics" || name == "hf-semantics", name, "--preset",
                "unknown preset (want llamacpp, hf, llamacpp-semantics or hf-semantics)");
  SamplerConfig c;  // every filter off
  c.preset = name == "hf-semantics" ? Preset::Hf : Preset::LlamaCpp;
  c.temperature = 0.0f;
  return c;
}

template <typename T>
static void add(CLI::App* sub, SamplerOptions& a, const std::string& name, T SamplerConfig::*field,
                const std::string& help, const CLI::Validator& check) {
  CLI::Option* o = sub->add_option(name, a.given.*field, help)->check(check);
  // The help shows the value without --preset (a preset changes it: docs/sampling.md).
  const SamplerConfig plain = preset_defaults("", false);
  char shown[64];
  if constexpr (std::is_floating_point_v<T>) std::snprintf(shown, sizeof shown, "%g", (double)(plain.*field));
  else std::snprintf(shown, sizeof shown, "%lld", (long long)(plain.*field));
  o->default_str(shown);
  a.options.push_back({o, [field](SamplerConfig& out, const SamplerConfig& given) { out.*field = given.*field; }});
}

void add_sampler_options(CLI::App* sub, SamplerOptions& a) {
  constexpr double kBig = 3.4e38;  // finite float32 values (checked readers: tools/cli_common.h)
  sub->add_option("--preset", a.preset,
                  "llamacpp or hf: that engine's defaults and semantics; llamacpp-semantics or "
                  "hf-semantics: its semantics, every filter off (default: llamacpp-semantics, greedy)");
  add(sub, a, "--temperature", &SamplerConfig::temperature, "0: greedy (argmax, ties to the lowest id) (a --preset changes it)", float_in(0.0, kBig));
  add(sub, a, "--top-k", &SamplerConfig::top_k, "Keep the k most likely tokens (0: off) (a --preset changes it)", int_in<int>(0));
  add(sub, a, "--top-p", &SamplerConfig::top_p, "Nucleus sampling mass (1: off) (a --preset changes it)", float_in(0.0, 1.0));
  add(sub, a, "--min-p", &SamplerConfig::min_p, "Drop tokens below min_p x the top probability (0: off) (a --preset changes it)", float_in(0.0, 1.0));
  add(sub, a, "--repeat-penalty", &SamplerConfig::repetition_penalty, "Repetition penalty (1: off) (a --preset changes it)", float_in(0.0, kBig, true));
  add(sub, a, "--frequency-penalty", &SamplerConfig::frequency_penalty, "Frequency penalty (0: off) (a --preset changes it)", float_in(-kBig, kBig));
  add(sub, a, "--presence-penalty", &SamplerConfig::presence_penalty, "Presence penalty (0: off) (a --preset changes it)", float_in(-kBig, kBig));
  add(sub, a, "--penalty-window", &SamplerConfig::penalty_window, "Last N tokens penalised (-1: all) (a --preset changes it)", int_in<int>(-1));
  add(sub, a, "--seed", &SamplerConfig::seed, "Sampling seed (Philox key)", int_in<uint64_t>());
  sub->add_flag("--do-sample", a.do_sample, "With --preset hf: sample instead of greedy (HF do_sample=True)");
}

SamplerConfig resolve_sampler(const SamplerOptions& a) {
  bool temperature_given = false;
  for (const auto& [opt, apply] : a.options)
    if (opt->count() > 0 && opt->get_name() == "--temperature") temperature_given = true;
  // An explicit temperature > 0 with --preset hf is generate(do_sample=True, temperature=T).
  const bool do_sample = a.do_sample || (temperature_given && a.given.temperature > 0.0f);
  SamplerConfig c = preset_defaults(a.preset, do_sample);
  for (const auto& [opt, apply] : a.options)
    if (opt->count() > 0) apply(c, a.given);
  if (a.do_sample && !temperature_given && c.temperature <= 0.0f) c.temperature = 1.0f;
  return c;
}

}  // namespace oracle::tools
