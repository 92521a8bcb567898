// Sampler presets (engine orders and defaults), validation, chain building,
// and the JSON form of SamplerConfig used by the replay log.
#include <algorithm>
#include <cmath>

#include <type_traits>

#include <nlohmann/json.hpp>

#include "base/errors.h"
#include "base/json_util.h"
#include "reference/sampling/sampler.h"

namespace oracle {

// ---- presets ------------------------------------------------------------------------
// hf: transformers' _get_logits_processor order (sequence bias, repetition
//     penalty, bad words, then the warpers temperature -> top-k -> top-p -> min-p).
// llamacpp: common_sampler's chain (logit bias, penalties, top-k, top-p, min-p,
//     temperature last); banned tokens are llama.cpp's -inf logit bias.
const char* preset_name(Preset p) { return p == Preset::Hf ? "hf" : "llamacpp"; }

Preset parse_preset(const std::string& name, const std::string& file, const std::string& field) {
  if (name == "hf") return Preset::Hf;
  if (name == "llamacpp") return Preset::LlamaCpp;
  throw InputError(file, field, "unknown preset '" + name + "' (hf, llamacpp)");
}

// ---- processor names: the one table ------------------------------------------------
namespace {
constexpr const char* kProcessorNames[Processor::kCount] = {"logit_bias", "banned", "penalties", "temperature",
                                                             "top_k", "top_p", "min_p"};  // by Processor::Id
}  // namespace

const char* processor_name(Processor p) { return kProcessorNames[p.id()]; }
const char* Processor::name() const { return processor_name(*this); }

Processor parse_processor(const std::string& name, const std::string& file, const std::string& field) {
  for (int i = 0; i < Processor::kCount; i++)
    if (name == kProcessorNames[i]) return Processor((Processor::Id)i);
  throw InputError(file, field, "unknown processor '" + name + "'");
}


std::vector<Processor> preset_order(Preset preset) {
  using P = Processor;
  if (preset == Preset::Hf) return {P::LogitBias, P::Penalties, P::Banned, P::Temperature, P::TopK, P::TopP, P::MinP};
  return {P::LogitBias, P::Banned, P::Penalties, P::TopK, P::TopP, P::MinP, P::Temperature};
}

// Engine defaults: llama.cpp common_params_sampling (temp 0.8, top-k 40,
// top-p 0.95, min-p 0.05, penalty_last_n 64); transformers GenerationConfig
// with do_sample (temperature 1, top-k 50, top-p 1, no min-p).
SamplerConfig preset_config(Preset preset) {
  SamplerConfig c;
  c.preset = preset;
  c.order = preset_order(preset);
  if (preset == Preset::LlamaCpp) {
    c.temperature = 0.8f;
    c.top_k = 40;
    c.top_p = 0.95f;
    c.min_p = 0.05f;
    c.penalty_window = 64;
  } else {
    c.temperature = 1.0f;
    c.top_k = 50;
  }
  return c;
}

bool plain_greedy(const SamplerConfig& c) {
  return c.temperature <= 0.0f && c.repetition_penalty == 1.0f && c.frequency_penalty == 0.0f &&
         c.presence_penalty == 0.0f && c.logit_bias.empty() && c.banned_tokens.empty();
}

// ---- validation -------------------------------------------------------------------------
// Unknown names are refused where they are parsed (parse_processor); here: no processor twice.
static void validate_order(const SamplerConfig& c) {
  const std::vector<Processor>& order = c.order;
  for (size_t i = 0; i < order.size(); i++)
    require_input(std::find(order.begin(), order.begin() + (long)i, order[i]) == order.begin() + (long)i,
                  "sampler", "order", std::string("processor '") + order[i].name() + "' listed twice");
}

void validate(const SamplerConfig& c, int vocab_size) {
  validate_order(c);
  // Negative temperatures are not "greedy": 0 is, and anything below is a mistake.
  require_input(std::isfinite(c.temperature) && c.temperature >= 0.0f, "sampler", "temperature",
                "must be a finite number >= 0 (0: greedy), got " + std::to_string(c.temperature));
  require_input(c.top_k >= 0, "sampler", "top_k", "must be >= 0 (0: off), got " + std::to_string(c.top_k));
  require_input(c.top_p >= 0.0f && c.top_p <= 1.0f, "sampler", "top_p", "must be in [0, 1]");
  require_input(c.min_p >= 0.0f && c.min_p <= 1.0f, "sampler", "min_p", "must be in [0, 1]");
  require_input(c.min_keep >= 1, "sampler", "min_keep", "must be >= 1");
  require_input(c.repetition_penalty > 0.0f && std::isfinite(c.repetition_penalty), "sampler",
                "repetition_penalty", "must be finite and > 0");
  require_input(std::isfinite(c.frequency_penalty), "sampler", "frequency_penalty", "must be finite");
  require_input(std::isfinite(c.presence_penalty), "sampler", "presence_penalty", "must be finite");
  require_input(c.penalty_window >= -1, "sampler", "penalty_window", "must be >= -1");
  for (const auto& [id, b] : c.logit_bias) {
    require_input(id >= 0 && id < vocab_size, "sampler", "logit_bias", "token id out of range");
    require_input(!std::isnan(b), "sampler", "logit_bias", "bias is NaN");
  }
  for (int id : c.banned_tokens)
    require_input(id >= 0 && id < vocab_size, "sampler", "banned_tokens", "token id out of range");
}

// ---- chain ------------------------------------------------------------------------------
SamplerChain build_chain(const SamplerConfig& config) {
  SamplerChain chain;
  for (Processor p : config.order.empty() ? preset_order(config.preset) : config.order)
    chain.add(make_processor(p, config));
  chain.add(make_selector(config));
  return chain;
}

// ---- JSON --------------------------------------------------------------------------------
// The order as its names (the JSON spelling of replay logs and golden records), and back.
static nlohmann::json processors_to_json(const std::vector<Processor>& order) {
  nlohmann::json names = nlohmann::json::array();
  for (Processor p : order) names.push_back(p.name());
  return names;
}

static std::vector<Processor> processors_from_json(const nlohmann::json& j) {
  require_input(j.is_array(), "sampler", "order", "wrong JSON type");
  std::vector<Processor> order;
  for (const auto& name : j) {
    require_input(name.is_string(), "sampler", "order", "wrong JSON type");
    order.push_back(parse_processor(name.get<std::string>(), "sampler", "order"));
  }
  return order;
}

void to_json(nlohmann::json& j, const SamplerConfig& c) {
  nlohmann::json bias = nlohmann::json::array();
  for (const auto& [id, b] : c.logit_bias) bias.push_back({id, json_float(b)});
  j = {{"preset", preset_name(c.preset)},
       {"order", processors_to_json(c.order.empty() ? preset_order(c.preset) : c.order)},
       {"temperature", json_float(c.temperature)},
       {"top_k", c.top_k},
       {"top_p", json_float(c.top_p)},
       {"min_p", json_float(c.min_p)},
       {"min_keep", c.min_keep},
       {"repetition_penalty", json_float(c.repetition_penalty)},
       {"frequency_penalty", json_float(c.frequency_penalty)},
       {"presence_penalty", json_float(c.presence_penalty)},
       {"penalty_window", c.penalty_window},
       {"logit_bias", bias},
       {"banned_tokens", c.banned_tokens},
       {"seed", c.seed}};
}

// Missing keys keep their defaults; wrong types raise InputError naming the key.
void from_json(const nlohmann::json& j, SamplerConfig& c) {
  require_input(j.is_object(), "sampler", "config", "expected a JSON object");
  auto field = [&](const char* key, auto& out) {
    if (!j.contains(key)) return;
    try {
      using T = std::remove_reference_t<decltype(out)>;
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) out = int_from_json<T>(j.at(key), key);
      else if constexpr (std::is_same_v<T, std::vector<int>>) out = ints_from_json(j.at(key), key);
      else j.at(key).get_to(out);
    } catch (const nlohmann::json::exception&) {
      throw InputError("sampler", key, "wrong JSON type");
    }
  };
  auto ffield = [&](const char* key, float& out) {
    if (j.contains(key)) out = float_from_json(j.at(key), key);
  };
  if (j.contains("preset")) {
    require_input(j.at("preset").is_string(), "sampler", "preset", "wrong JSON type");
    c.preset = parse_preset(j.at("preset").get<std::string>(), "sampler", "preset");
  }
  if (j.contains("order")) c.order = processors_from_json(j.at("order"));
  ffield("temperature", c.temperature);
  field("top_k", c.top_k);
  ffield("top_p", c.top_p);
  ffield("min_p", c.min_p);
  field("min_keep", c.min_keep);
  ffield("repetition_penalty", c.repetition_penalty);
  ffield("frequency_penalty", c.frequency_penalty);
  ffield("presence_penalty", c.presence_penalty);
  field("penalty_window", c.penalty_window);
  field("banned_tokens", c.banned_tokens);
  field("seed", c.seed);
  if (j.contains("logit_bias")) {
    c.logit_bias.clear();
    for (const auto& e : j.at("logit_bias")) {
      require_input(e.is_array() && e.size() == 2 && e[0].is_number_integer(), "sampler", "logit_bias",
                    "expected [id, bias] pairs");
      c.logit_bias.emplace_back(int_from_json<int>(e[0], "logit_bias"), float_from_json(e[1], "logit_bias"));
    }
  }
}

}  // namespace oracle
