// The generation loops on the device (emulated kernels) against the reference's:
//  * continuous batching: generate_batch_with(DeviceBatchEngine) == generate_batch
//    (output ids, text, every step's logits SHA-256 and both logprob reports) for
//    mixed prompts, samplers (greedy, llama.cpp and HF presets with penalties, bias,
//    bans) and KV layouts (contiguous, paged 1/5/16, prefix cache on);
//  * speculative: generate_speculative_with on DeviceSequence targets and a
//    ModelDrafter on a DeviceSequence == generate_speculative on the reference
//    (ids, finish, acceptance counts), greedy and sampled, k = 2 and 5; the
//    round's p, rule and draws run on the device (DeviceSequence::verify_round).
//    One target DeviceSequence serves every run, so its kept sampler must follow the config.
// Catches DEVICE_BATCH_SAMPLES_ROW0, DEVICE_SEQUENCE_TRUNCATE_KEEPS_ONE and
// DEVICE_SEQUENCE_SAMPLER_KEPT_ON_NEW_CONFIG.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "optimized/device_batch.h"
#include "optimized/device_sequence.h"
#include "base/errors.h"
#include "reference/generate/generate.h"
#include "reference/generate/speculative.h"
#include "reference/model/model.h"
#include "reference/tokenizer/tokenizer.h"
#include "test_support.h"

using namespace oracle;

namespace {

struct Fixture {
  Model model, draft;
  Tokenizer tok;
};

const Fixture& fixture() {
  static const Fixture f = [] {
    for (const char* rel : {"stories260K/stories260K.bin", "llama2xs/llama2xs.bin", "stories260K/tok512.bin"}) {
      INFO("fixture " << test::models(rel) << " is missing (set ORACLE_SHARED_DIR)");
      REQUIRE(test::have(test::models(rel)));
    }
    Model m = load_model(test::models("llama2xs/llama2xs.bin")), d = load_model(test::models("stories260K/stories260K.bin"));
    Tokenizer t(load_llama2c_tokenizer(test::models("stories260K/tok512.bin"), m.config.vocab_size));
    return Fixture{std::move(m), std::move(d), std::move(t)};
  }();
  return f;
}

SamplerConfig sampler(int kind, uint64_t seed) {
  SamplerConfig s = preset_config(kind == 2 ? Preset::Hf : Preset::LlamaCpp);
  s.seed = seed;
  if (kind == 0) s.temperature = 0.0f;
  if (kind == 1) s.temperature = 0.9f, s.top_k = 40, s.top_p = 0.9f, s.min_p = 0.05f, s.repetition_penalty = 1.15f;
  if (kind == 2) s.temperature = 0.7f, s.top_k = 20, s.top_p = 0.8f, s.frequency_penalty = 0.3f, s.presence_penalty = 0.2f,
      s.logit_bias = {{13, -2.0f}, {290, 1.5f}}, s.banned_tokens = {306};
  return s;
}

std::string as_json(const GenerationResult& g) {
  nlohmann::json j = g;
  j.erase("kv_memory");
  return j.dump();
}

}  // namespace

TEST_CASE("device batch: continuous batching on the device equals generate_batch", "[emu][device_batch]") {
  const Fixture& f = fixture();
  const std::vector<std::string> prompts = {"Once upon a time", "", "Lily and Ben went to the park. They saw a big dog.",
                                            "Once upon a time, there was a", "The cat"};
  struct Layout {
    bool paged;
    int block_size;
    bool prefix_cache;
  };
  for (Layout layout : {Layout{false, 16, false}, Layout{true, 1, false}, Layout{true, 5, true}, Layout{true, 16, true}}) {
    std::vector<GenerateOptions> opts(prompts.size());
    for (size_t i = 0; i < prompts.size(); i++) {
      opts[i].max_tokens = 12 + 5 * (int)i;  // requests leave the batch at different steps
      opts[i].sampler = sampler((int)i % 3, 100 + i);
      opts[i].seq_id = (uint32_t)i;
      opts[i].logprobs_top_n = 3;
      opts[i].kv.paged = layout.paged, opts[i].kv.block_size = layout.block_size, opts[i].kv.prefix_cache = layout.prefix_cache;
    }
    const std::vector<GenerationResult> want = generate_batch(f.model, f.tok, prompts, opts);
    optimized::DeviceBatchEngine engine(f.model, opts);
    const std::vector<GenerationResult> got = generate_batch_with(engine, f.model, f.tok, prompts, opts);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); i++) {
      INFO("layout paged=" << layout.paged << " block " << layout.block_size << " prefix " << layout.prefix_cache
                           << ", request " << i);
      REQUIRE(got[i].prefix_tokens_reused == want[i].prefix_tokens_reused);
      REQUIRE(as_json(got[i]) == as_json(want[i]));
    }
  }
}

TEST_CASE("device batch: speculative rounds on device sequences equal generate_speculative", "[emu][device_batch]") {
  const Fixture& f = fixture();
  const std::vector<int> prompt = f.tok.encode("Once upon a time", true);
  // One target for every run: its DeviceSampler must follow each run's config (a kept
  // sampler of the last run's config would verify with the wrong p).
  optimized::DeviceSequence target(f.model, 4);
  for (int kind : {0, 1, 2}) {  // greedy; sampled with a repetition penalty; with frequency/presence penalties
    for (int k : {2, 5}) {
      SpecOptions o;
      o.k = k;
      o.max_tokens = 30;
      o.sampler = sampler(kind, 42);
      o.stop_token_ids = {1, 2};
      ModelDrafter ref_drafter(f.draft, o.sampler, {});
      const SpecResult want = generate_speculative(f.model, ref_drafter, prompt, o);
      ModelDrafter dev_drafter(std::make_unique<optimized::DeviceSequence>(f.draft, 3), o.sampler);
      target.truncate(0);
      INFO("sampler kind " << kind << " k " << k);
      // An InputError from the device loop (e.g. a rollback that left the cache longer than
      // the history: "no tokens to run") is a failed check here, not an escaped exception.
      SpecResult got;
      std::string error;
      try {
        got = generate_speculative_with(target, dev_drafter, prompt, o);
      } catch (const InputError& e) {
        error = e.what();
      }
      REQUIRE(error == "");
      REQUIRE(got.output_ids == want.output_ids);
      REQUIRE(got.finish_reason == want.finish_reason);
      REQUIRE(got.metrics.accepted == want.metrics.accepted);
      REQUIRE(got.metrics.accepted_histogram == want.metrics.accepted_histogram);
      REQUIRE(got.metrics.draft_passes == want.metrics.draft_passes);
      if (kind == 1 && k == 5) REQUIRE(want.metrics.accepted < want.metrics.drafted);  // rejections (rollbacks) happened
    }
  }
}
