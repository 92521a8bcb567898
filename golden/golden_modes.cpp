// golden_modes: golden transcripts of the serving modes (golden/modes/*.jsonl,
// golden/README.md): speculative decoding (draft model and n-gram drafter),
// continuous batching, paged KV at several block sizes, rollback, and
// prefix-shared prompts.
//   golden_modes verify DIR [--backend cuda-emu]   re-run every record; exit 1 at the first mismatch
//   golden_modes update DIR --force   regenerate DIR/<mode>.jsonl
// --backend cuda-emu runs every record on the device pipeline (optimized/, kernels
// emulated on the CPU): batched, paged and prefix-shared through DeviceBatchEngine
// (continuous batching, paged DeviceKv with copy-on-write and the prefix cache, the
// device sampler chain), rollback's passes and truncation on a DeviceSequence, speculative with the target's
// and the draft model's passes and rollbacks on DeviceSequence (the processed
// distributions and the accept/resample rule: the reference's functions on the host).
// Besides matching its committed hashes, each record is checked against an
// independent run that must give the same bits: batched, paged and
// prefix-shared members equal plain contiguous generate(); the greedy
// speculative records equal plain greedy decoding; every post-rollback step's
// logits equal a straight run of the same tokens.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "optimized/device_batch.h"
#include "optimized/device_sequence.h"
#include "base/errors.h"
#include "base/numerics_version.h"
#include "reference/compute/forward.h"
#include "reference/generate/generate.h"
#include "numerics/numerics.h"
#include "base/sha256.h"
#include "reference/generate/speculative.h"
#include "tests_common/test_support.h"

using namespace oracle;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

struct Fixture {
  Model model;
  Tokenizer tokenizer;
};

const Fixture& fixture(const std::string& name) {
  static std::map<std::string, Fixture> cache;  // loaded once per run (read-only afterwards)
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  Model m = load_model(test::models(name == "stories260K" ? "stories260K/stories260K.bin" : "llama2xs/llama2xs.bin"));
  Tokenizer t(load_llama2c_tokenizer(test::models("stories260K/tok512.bin"), m.config.vocab_size));
  return cache.emplace(name, Fixture{std::move(m), std::move(t)}).first->second;
}

SamplerConfig sampler(const std::string& kind, uint64_t seed) {
  SamplerConfig s = preset_config(Preset::LlamaCpp);
  s.seed = seed;
  if (kind == "greedy") s.temperature = 0.0f;
  else s.temperature = 0.8f, s.top_k = 40, s.top_p = 0.95f, s.min_p = 0.05f, s.repetition_penalty = 1.1f;
  return s;
}

std::string logits_hash(std::span<const float> row) { return sha256_hex(row.data(), row.size() * sizeof(float)); }

json result_json(const GenerationResult& g) {
  json hashes = json::array();
  for (const GenerationStep& s : g.steps) hashes.push_back(s.logits_sha256);
  return {{"prompt_ids", g.prompt_ids}, {"output_ids", g.output_ids}, {"text", g.text},
          {"finish", g.stop_detail}, {"logits_sha256", hashes}, {"prefix_tokens_reused", g.prefix_tokens_reused}};
}

GenerateOptions gen_options(const json& r, size_t i) {
  GenerateOptions o;
  o.max_tokens = r["max_tokens"];
  o.sampler = sampler(r["samplers"][i], r["seeds"][i]);
  o.seq_id = (uint32_t)i;
  o.logprobs_top_n = 0;
  o.kv.paged = r.value("block_size", 0) > 0;
  o.kv.block_size = std::max(1, r.value("block_size", 16));
  o.kv.prefix_cache = r.value("prefix_cache", false);
  return o;
}

// ---- the modes: each returns the fresh results and checks its own invariant ----------------
// `note` receives a failed invariant (empty when it holds).
json run_generate(const json& r, bool device, std::string& note) {  // paged | batched | prefix-shared
  const Fixture& f = fixture(r["model"]);
  const std::vector<std::string> prompts = r["prompts"];
  std::vector<GenerateOptions> opts;
  for (size_t i = 0; i < prompts.size(); i++) opts.push_back(gen_options(r, i));
  std::vector<GenerationResult> got;
  if (device) {  // every mode is a batch on the device (paged: of one)
    optimized::DeviceBatchEngine engine(f.model, opts);
    got = generate_batch_with(engine, f.model, f.tokenizer, prompts, opts);
  } else if (r["mode"] == "paged") {
    got.push_back(generate(f.model, f.tokenizer, prompts[0], opts[0]));
  } else {
    got = generate_batch(f.model, f.tokenizer, prompts, opts);
  }
  json out = json::array();
  for (size_t i = 0; i < got.size(); i++) {
    GenerateOptions solo = opts[i];
    solo.kv = KvCacheOptions{};
    const GenerationResult want = generate(f.model, f.tokenizer, prompts[i], solo);
    json a = result_json(got[i]), b = result_json(want);
    a.erase("prefix_tokens_reused"), b.erase("prefix_tokens_reused");
    if (a != b) note = "member " + std::to_string(i) + " differs from its solo contiguous run";
    out.push_back(result_json(got[i]));
  }
  return out;
}

json run_speculative(const json& r, bool device, std::string& note) {
  const Fixture& target = fixture(r["model"]);
  const SamplerConfig s = sampler(r["samplers"][0], r["seeds"][0]);
  SpecOptions o;
  o.k = r["k"];
  o.max_tokens = r["max_tokens"];
  o.sampler = s;
  o.stop_token_ids = {1, 2};
  o.kv.paged = r.value("block_size", 0) > 0;
  o.kv.block_size = std::max(1, r.value("block_size", 16));
  const std::vector<int> prompt = target.tokenizer.encode(r["prompts"][0], true);
  std::unique_ptr<Drafter> drafter;
  const int device_bs = o.kv.paged ? o.kv.block_size : 16;  // device caches are paged (changes no bit)
  if (r["drafter"] == "ngram") drafter = std::make_unique<NgramDrafter>(3, target.model.config.vocab_size);
  else if (device) drafter = std::make_unique<ModelDrafter>(std::make_unique<optimized::DeviceSequence>(fixture(r["drafter"]).model, device_bs), s);
  else drafter = std::make_unique<ModelDrafter>(fixture(r["drafter"]).model, s, o.kv);
  SpecResult got;
  if (device) {  // draft passes, verify passes and rollbacks on the device
    optimized::DeviceSequence seq(target.model, device_bs);
    got = generate_speculative_with(seq, *drafter, prompt, o);
  } else {
    got = generate_speculative(target.model, *drafter, prompt, o);
  }
  if (s.temperature <= 0.0f) {  // greedy speculative == plain greedy
    KvCache kv(target.model.config, {});
    std::vector<float> logits = forward(target.model, kv, 0, prompt);
    for (size_t i = 0; i < got.output_ids.size(); i++) {
      const int y = num::argmax_lowest(logits.data(), target.model.config.vocab_size);
      if (y != got.output_ids[i]) { note = "greedy speculative differs from plain greedy at " + std::to_string(i); break; }
      if (i + 1 < got.output_ids.size()) logits = forward(target.model, kv, 0, std::span<const int>(&y, 1));
    }
  }
  const SpecMetrics& m = got.metrics;
  return json::array({{{"prompt_ids", prompt}, {"output_ids", got.output_ids}, {"finish", got.finish_reason},
                       {"rounds", m.rounds}, {"drafted", m.drafted}, {"accepted", m.accepted},
                       {"accepted_histogram", m.accepted_histogram}}});
}

// Prompt, `first` sampled tokens, rollback to prompt + keep, then `second` sampled
// tokens with another seed; records every step's logits hash and token.
json run_rollback(const json& r, bool device, std::string& note) {
  const Fixture& f = fixture(r["model"]);
  const int vocab = f.model.config.vocab_size, keep = r["keep"];
  KvCacheOptions ko;
  ko.paged = r.value("block_size", 0) > 0;
  ko.block_size = std::max(1, r.value("block_size", 16));
  // The sequence's passes and rollback: the reference KvCache, or the device's paged DeviceKv.
  std::unique_ptr<SequenceRunner> seq;
  if (device) seq = std::make_unique<optimized::DeviceSequence>(f.model, ko.paged ? ko.block_size : 16);
  else seq = std::make_unique<ReferenceSequence>(f.model, ko);
  std::vector<int> history = f.tokenizer.encode(r["prompts"][0], true);
  const size_t n_prompt = history.size();
  json tokens = json::array(), hashes = json::array();
  std::vector<float> logits = seq->forward(history, false);
  auto decode = [&](const SamplerConfig& s, int n) {
    const SamplerChain chain = build_chain(s);
    for (int i = 0; i < n; i++) {
      hashes.push_back(logits_hash(logits));
      const int y = sample(chain, logits, SamplingContext{history, rng::RngKey{s.seed, 0, (uint32_t)history.size()}}).token;
      tokens.push_back(y);
      history.push_back(y);
      logits = seq->forward(std::span<const int>(&y, 1), false);
    }
  };
  decode(sampler(r["samplers"][0], r["seeds"][0]), r["first"]);
  history.resize(n_prompt + (size_t)keep);
  seq->truncate((int)history.size() - 1);  // re-run the last kept token for its logits
  logits = seq->forward(std::span<const int>(&history.back(), 1), false);
  const size_t after = hashes.size();
  decode(sampler(r["samplers"][1], r["seeds"][1]), r["second"]);
  // invariant: the steps after the rollback equal a straight run of the same tokens
  KvCache fresh(f.model.config, {});
  ForwardOptions all;
  all.all_logits = true;
  const std::vector<float> straight = forward(f.model, fresh, 0, std::span<const int>(history).first(history.size() - 1), all);
  for (size_t j = after; j < hashes.size(); j++) {
    const size_t pos = n_prompt + (size_t)keep + (j - after) - 1;  // row predicting the j-th recorded token
    if (logits_hash(std::span<const float>(straight).subspan(pos * vocab, vocab)) != hashes[j])
      note = "step " + std::to_string(j) + " after the rollback differs from a straight run";
  }
  return json::array({{{"output_ids", tokens}, {"logits_sha256", hashes}}});
}

json run(const json& r, bool device, std::string& note) {
  const std::string mode = r["mode"];
  if (mode == "speculative") return run_speculative(r, device, note);
  if (mode == "rollback") return run_rollback(r, device, note);
  return run_generate(r, device, note);
}

// ---- the records ----------------------------------------------------------------------------
std::vector<json> specs() {
  const std::string once = "Once upon a time", lily = "Lily and Ben went to the park. They saw a big dog.";
  const std::string shared = "Once upon a time, there was a little girl named Lily. She loved to play outside";
  std::vector<json> v;
  for (const char* d : {"stories260K", "ngram"})
    for (const char* s : {"greedy", "sampled"})
      v.push_back({{"mode", "speculative"}, {"model", "llama2xs"}, {"drafter", d}, {"k", 4}, {"max_tokens", 40},
                   {"prompts", {once}}, {"samplers", {s}}, {"seeds", {42}}, {"block_size", std::string(d) == "ngram" ? 16 : 0}});
  v.push_back({{"mode", "batched"}, {"model", "stories260K"}, {"max_tokens", 32},
               {"prompts", {once, "", lily, "The cat"}}, {"samplers", {"greedy", "sampled", "sampled", "greedy"}},
               {"seeds", {1, 2, 3, 4}}});
  for (int bs : {1, 7, 16, 32})
    v.push_back({{"mode", "paged"}, {"model", "stories260K"}, {"block_size", bs}, {"max_tokens", 48},
                 {"prompts", {lily}}, {"samplers", {"sampled"}}, {"seeds", {bs}}});
  v.push_back({{"mode", "prefix-shared"}, {"model", "stories260K"}, {"block_size", 8}, {"prefix_cache", true},
               {"max_tokens", 24}, {"prompts", {shared + " in the sun.", shared + " with her dog.", shared}},
               {"samplers", {"sampled", "greedy", "sampled"}}, {"seeds", {5, 6, 7}}});
  for (int bs : {0, 4})
    v.push_back({{"mode", "rollback"}, {"model", "stories260K"}, {"block_size", bs}, {"prompts", {once}},
                 {"first", 20}, {"keep", 7}, {"second", 20}, {"samplers", {"sampled", "sampled"}}, {"seeds", {11, 12}}});
  for (json& r : v) {
    std::string id = r["mode"].get<std::string>() + "/" + r["model"].get<std::string>();
    if (r.contains("drafter")) id += "/" + r["drafter"].get<std::string>() + "/" + r["samplers"][0].get<std::string>();
    if (r.value("block_size", 0) > 0) id += "/bs" + std::to_string(r["block_size"].get<int>());
    r["id"] = id;
  }
  return v;
}

int update(const std::string& dir, bool force) {
  std::map<std::string, std::vector<json>> files;
  for (json r : specs()) {
    std::string note;
    r["results"] = run(r, false, note);
    if (!note.empty()) {
      std::fprintf(stderr, "golden_modes: %s: %s (not written)\n", r["id"].get<std::string>().c_str(), note.c_str());
      return 1;
    }
    r["model_sha256"] = fixture(r["model"]).model.sha256;
    stamp_numerics_version(r);  // docs/numerics.md "Versioning"
    files[r["mode"]].push_back(r);
  }
  fs::create_directories(dir);
  for (const auto& [mode, records] : files) {
    const fs::path out = fs::path(dir) / (mode + ".jsonl");
    if (fs::exists(out) && !force) {
      std::fprintf(stderr, "golden_modes: %s exists; regenerate only for a deliberate numerics change (--force)\n", out.c_str());
      return 2;
    }
    const fs::path tmp = out.string() + ".tmp";
    {
      std::ofstream f(tmp, std::ios::binary);
      for (const json& r : records) f << r.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
      if (!f) return 2;
    }
    fs::rename(tmp, out);
    std::printf("%s: %zu records\n", out.c_str(), records.size());
  }
  return 0;
}

int verify(const std::string& dir, bool device) {
  int n = 0;
  std::vector<fs::path> paths;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".jsonl") paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  if (paths.empty()) { std::fprintf(stderr, "golden_modes: no *.jsonl in %s\n", dir.c_str()); return 2; }
  for (const fs::path& p : paths) {
    std::ifstream f(p, std::ios::binary);
    std::string line;
    for (int lineno = 1; std::getline(f, line); lineno++) {
      const json r = json::parse(line);
      check_numerics_version(r, p.string() + ":" + std::to_string(lineno),
                             "regenerate it with `golden_modes update golden/modes --force` (golden/README.md)");
      std::string note;
      const json got = run(r, device, note);
      const std::string where = p.string() + ":" + std::to_string(lineno) + " " + r["id"].get<std::string>();
      if (fixture(r["model"]).model.sha256 != r["model_sha256"]) note = "model sha256 differs";
      else if (got != r["results"]) note = "results differ from the record: got " + got.dump().substr(0, 300);
      if (!note.empty()) {
        std::printf("MISMATCH %s: %s\n", where.c_str(), note.c_str());
        return 1;
      }
      n++;
    }
  }
  std::printf("golden_modes verify%s: %d records in %zu files match\n", device ? " --backend cuda-emu" : "", n, paths.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> a(argv + 1, argv + argc);
  try {
    if (a.size() == 2 && a[0] == "verify") return verify(a[1], false);
    if (a.size() == 4 && a[0] == "verify" && a[2] == "--backend" && a[3] == "cuda-emu") return verify(a[1], true);
    if ((a.size() == 2 || (a.size() == 3 && a[2] == "--force")) && a[0] == "update") return update(a[1], a.size() == 3);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "golden_modes: %s\n", e.what());
    return 2;
  }
  std::fprintf(stderr, "usage: golden_modes verify DIR [--backend cuda-emu] | golden_modes update DIR [--force]\n");
  return 2;
}
