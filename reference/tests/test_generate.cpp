// End-to-end generation on the real fixtures: greedy transcripts of llama2.c
// and llama.cpp reproduced byte for byte, .bin vs .gguf ids, and the
// determinism contract of sampled generation (runs, threads, batch positions,
// batch-mates' seeds), stop strings, streaming, and the JSON record.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/errors.h"
#include "reference/compute/forward.h"
#include "reference/generate/generate.h"
#include "base/sha256.h"
#include "test_support.h"

using namespace oracle;
using oracle::test::models;

namespace {

std::string fixture(const std::string& rel) {
  std::string p = models(rel);
  if (!oracle::test::have(p)) FAIL("missing fixture " << p << " (set ORACLE_SHARED_DIR)");
  return p;
}

std::string read_text(const std::string& path) {
  std::ifstream f(fixture(path), std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<int> read_ids(const std::string& path) {
  std::istringstream in(read_text(path));
  std::vector<int> ids;
  for (int v; in >> v;) ids.push_back(v);
  return ids;
}

Model load(const std::string& rel, int context = 0) {
  LoadOptions o;
  o.context_length_override = context;
  o.allow_context_extension = true;  // the llama2.c->GGUF converter wrote 128 (PROVENANCE.md)
  o.compute_sha256 = false;
  return load_model(fixture(rel), o);
}

Tokenizer tok512(const Model& m) {
  return Tokenizer(load_llama2c_tokenizer(fixture("stories260K/tok512.bin"), m.config.vocab_size));
}

GenerateOptions greedy(int max_tokens) {
  GenerateOptions o;
  o.max_tokens = max_tokens;
  o.sampler.temperature = 0.0f;
  return o;
}

// Shows the first differing byte/id with context.
void check_same_text(const std::string& got, const std::string& want) {
  size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) i++;
  INFO("first difference at byte " << i << " of " << want.size() << "\n got: ..."
                                   << got.substr(i > 40 ? i - 40 : 0, 80) << "\nwant: ..."
                                   << want.substr(i > 40 ? i - 40 : 0, 80));
  CHECK(got == want);
}

void check_same_ids(const std::vector<int>& got, const std::vector<int>& want) {
  size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) i++;
  INFO("first difference at index " << i << " (got " << got.size() << " ids, want " << want.size() << ")"
                                    << (i < got.size() ? " got " + std::to_string(got[i]) : "")
                                    << (i < want.size() ? " want " + std::to_string(want[i]) : ""));
  CHECK(got == want);
}

std::vector<int> continuation_ids(const GenerationResult& r) {  // prompt after BOS, then output
  std::vector<int> ids(r.prompt_ids.begin() + 1, r.prompt_ids.end());
  ids.insert(ids.end(), r.output_ids.begin(), r.output_ids.end());
  return ids;
}

GenerateOptions sampled(uint64_t seed, uint32_t seq_id, int max_tokens = 40) {
  GenerateOptions o;
  o.max_tokens = max_tokens;
  o.sampler = preset_config(Preset::LlamaCpp);
  o.sampler.temperature = 1.0f;
  o.sampler.repetition_penalty = 1.1f;
  o.sampler.seed = seed;
  o.seq_id = seq_id;
  o.logprobs_top_n = 3;
  return o;
}

std::string record(const GenerationResult& r) { return nlohmann::json(r).dump(); }

}  // namespace

// ---- llama2.c transcripts --------------------------------------------------------
TEST_CASE("stories260K greedy, empty prompt, 256 steps = llama2.c transcript", "[generate][golden]") {
  Model m = load("stories260K/stories260K.bin");
  GenerationResult r = generate(m, tok512(m), "", greedy(256));
  // llama2.c prints the pieces and then one "\n".
  check_same_text(r.text + "\n", read_text("stories260K/expected_greedy_empty_prompt_256steps.txt"));
  CHECK(r.finish_reason == "length");
  CHECK(r.output_ids.size() == 256);
}

TEST_CASE("stories260K greedy 'Once upon a time', 200 steps = llama2.c ids", "[generate][golden]") {
  Model m = load("stories260K/stories260K.bin");
  Tokenizer tok = tok512(m);
  int n_prompt = (int)tok.encode("Once upon a time", true).size();
  GenerationResult r = generate(m, tok, "Once upon a time", greedy(200 - (n_prompt - 1)));
  check_same_ids(continuation_ids(r), read_ids("stories260K/expected_greedy_once_upon_a_time_200steps.ids.txt"));
}

TEST_CASE("stories260K.gguf (F32 and F16) gives the .bin's greedy ids", "[generate][golden]") {
  Model bin = load("stories260K/stories260K.bin");
  std::vector<int> want = generate(bin, tok512(bin), "", greedy(256)).output_ids;
  for (const char* g : {"gguf/stories260K.gguf", "gguf/stories260K-f16.gguf"}) {
    Model m = load(g, 512);  // the converter wrote context 128
    INFO(g);
    GenerationResult r = generate(m, Tokenizer(m.vocab), "", greedy(256));
    if (std::string(g).find("f16") == std::string::npos) check_same_ids(r.output_ids, want);
    else CHECK(r.output_ids.size() == 256);  // F16 weights: different logits, same length
  }
}

// ---- llama.cpp transcript (llama2xs) -------------------------------------------------
TEST_CASE("llama2xs greedy 'Once upon a time', 200 tokens = llama.cpp output", "[generate][golden]") {
  std::string want = read_text("llama2xs/expected_llamacpp_greedy_once_upon_a_time_200.txt");
  Model bin = load("llama2xs/llama2xs.bin");
  bin.config.stop_on_bos = false;  // llama.cpp does not stop on BOS
  Tokenizer tok = tok512(bin);
  GenerationResult r = generate(bin, tok, "Once upon a time", greedy(200));
  // llama-cli echoes the prompt with SentencePiece's leading space, then the
  // text, then "\n\n" (every llama-cli fixture ends so, even mid-word).
  CHECK(r.output_ids.size() == 200);
  check_same_text(" Once upon a time" + r.text + "\n\n", want);
  Model gguf = load("gguf/llama2xs.gguf", 256);
  gguf.config.stop_on_bos = false;
  GenerationResult g = generate(gguf, Tokenizer(gguf.vocab), "Once upon a time", greedy(200));
  check_same_ids(g.prompt_ids, r.prompt_ids);
  check_same_ids(g.output_ids, r.output_ids);
}

// ---- determinism contract of sampled generation -----------------------------------------
TEST_CASE("same seed and key: identical ids and logprobs across runs and threads", "[generate][determinism]") {
  Model m = load("stories260K/stories260K.bin");
  Tokenizer tok = tok512(m);
  GenerateOptions o = sampled(1234, 7);
  GenerationResult a = generate(m, tok, "Once upon a time", o);
  GenerationResult b = generate(m, tok, "Once upon a time", o);
  o.threads = 3;
  GenerationResult c = generate(m, tok, "Once upon a time", o);
  CHECK(record(a) == record(b));
  CHECK(record(a) == record(c));
  o.sampler.seed = 1235;
  CHECK(generate(m, tok, "Once upon a time", o).output_ids != a.output_ids);
}

TEST_CASE("prefill in chunks of 1, 2, 3 or 7 tokens == one pass (ids, logprobs, logits hashes)",
          "[generate][determinism]") {
  Model m = load("stories260K/stories260K.bin");
  Tokenizer tok = tok512(m);
  GenerateOptions o = sampled(99, 1, 12);
  const GenerationResult one = generate(m, tok, "Once upon a time there was a girl", o);
  for (int chunk : {1, 2, 3, 7}) {
    INFO("chunk " << chunk);
    o.prefill_chunk = chunk;
    CHECK(record(generate(m, tok, "Once upon a time there was a girl", o)) == record(one));
  }
}

TEST_CASE("batch position and batch-mates' seeds change nothing", "[generate][determinism]") {
  Model m = load("stories260K/stories260K.bin");
  Tokenizer tok = tok512(m);
  const std::string pa = "Once upon a time", pb = "The cat", pc = "";
  GenerationResult solo_a = generate(m, tok, pa, sampled(11, 1));
  GenerationResult solo_c = generate(m, tok, pc, sampled(33, 3, 25));
  std::vector<GenerationResult> batch1 =
      generate_batch(m, tok, {pa, pb, pc}, {sampled(11, 1), sampled(22, 2, 60), sampled(33, 3, 25)});
  std::vector<GenerationResult> batch2 =
      generate_batch(m, tok, {pb, pc, pa}, {sampled(99, 2, 10), sampled(33, 3, 25), sampled(11, 1)});
  CHECK(record(batch1[0]) == record(solo_a));
  CHECK(record(batch2[2]) == record(solo_a));
  CHECK(record(batch1[2]) == record(solo_c));
  CHECK(record(batch2[1]) == record(solo_c));
  CHECK(batch1[1].output_ids != batch2[0].output_ids);  // the mate itself did change
}

// ---- stops, streaming, records --------------------------------------------------------------
TEST_CASE("stop string cuts the text before its first occurrence", "[generate][stop]") {
  Model m = load("stories260K/stories260K.bin");
  std::string full = read_text("stories260K/expected_greedy_empty_prompt_256steps.txt");
  GenerateOptions o = greedy(256);
  o.stop_strings = {"Lily"};
  std::string streamed;
  o.on_text = [&](const std::string& t) { streamed += t; };
  GenerationResult r = generate(m, tok512(m), "", o);
  CHECK(r.text == full.substr(0, full.find("Lily")));
  CHECK(streamed == r.text);
  CHECK(r.finish_reason == "stop");
  CHECK(r.stop_detail == "stop_string");
  CHECK(r.output_ids.size() < 256);
}

TEST_CASE("length stop, stop token ids, streamed text == text", "[generate][stop]") {
  Model m = load("stories260K/stories260K.bin");
  Tokenizer tok = tok512(m);
  GenerateOptions o = sampled(5, 0, 17);
  std::string streamed;
  o.on_text = [&](const std::string& t) { streamed += t; };
  GenerationResult r = generate(m, tok, "Once", o);
  CHECK(streamed == r.text);
  if (r.finish_reason == "length") CHECK(r.output_ids.size() == 17);
  GenerationResult g = generate(m, tok, "", greedy(256));
  GenerateOptions s = greedy(256);
  s.stop_token_ids = {g.output_ids[3]};  // the 4th greedy token stops it (unless it occurs earlier)
  GenerationResult t = generate(m, tok, "", s);
  CHECK(t.stop_detail == "stop_token");
  CHECK(t.output_ids.back() == g.output_ids[3]);
  CHECK(t.output_ids.size() <= 4);
}

TEST_CASE("per-step logits hash matches a direct forward pass", "[generate][record]") {
  Model m = load("stories260K/stories260K.bin");
  Tokenizer tok = tok512(m);
  GenerationResult r = generate(m, tok, "Once upon a time", greedy(3));
  KvCache kv(m.config, KvCacheOptions{});
  std::vector<float> logits = forward(m, kv, 0, r.prompt_ids);
  CHECK(r.steps[0].logits_sha256 == sha256_hex(logits.data(), logits.size() * sizeof(float)));
  CHECK(r.steps[0].logprobs.raw_rank == 1);  // greedy picks rank 1
  CHECK(r.steps[0].logprobs.raw_top.size() == 5);
}

TEST_CASE("GenerationResult JSON round trip", "[generate][record]") {
  Model m = load("stories260K/stories260K.bin");
  GenerationResult a = generate(m, tok512(m), "Once upon a time", sampled(8, 2, 12));
  GenerationResult b = nlohmann::json::parse(record(a)).get<GenerationResult>();
  CHECK(record(b) == record(a));
  CHECK(b.sampler.seed == 8);
  CHECK(b.steps.size() == a.steps.size());
}

TEST_CASE("bad generation input names the field", "[generate][errors]") {
  Model m = load("stories260K/stories260K.bin");
  Tokenizer tok = tok512(m);
  auto field_of = [&](const std::string& prompt, GenerateOptions o) {
    try {
      generate(m, tok, prompt, o);
    } catch (const InputError& e) {
      return e.field();
    }
    return std::string("<no error>");
  };
  CHECK(field_of("hi", greedy(0)) == "max_tokens");
  std::string long_prompt;
  for (int i = 0; i < 200; i++) long_prompt += "Once upon a time ";  // > 512 tokens
  CHECK(field_of(long_prompt, greedy(5)) == "prompt");
  GenerateOptions o = greedy(5);
  o.add_bos = false;
  CHECK(field_of("", o) == "prompt");
  o = greedy(5);
  o.sampler.top_p = -1.0f;
  CHECK(field_of("hi", o) == "top_p");
}

TEST_CASE("invalid bytes from the model are shown as U+FFFD and counted", "[generate][utf8]") {
  // Force the byte-fallback token <0xFF> (never valid UTF-8) for the first
  // steps with a logit bias, then let the model continue.
  Model m = load("stories260K/stories260K.bin");
  Tokenizer t = tok512(m);
  GenerateOptions o = greedy(3);
  int ff = 3 + 0xFF;  // llama2.c vocabularies: <0x00> is id 3
  REQUIRE(t.vocab().tokens[ff] == "<0xFF>");
  o.sampler.logit_bias = {{ff, 1e4f}};
  GenerationResult r = generate(m, t, "Once", o);
  CHECK(r.output_ids == std::vector<int>{ff, ff, ff});
  CHECK(r.invalid_utf8_replaced == 3);
  CHECK(r.text.find("\xEF\xBF\xBD") != std::string::npos);  // U+FFFD visible in the text
  nlohmann::json j = r;
  CHECK(j.at("invalid_utf8_replaced") == 3);
}

TEST_CASE("paged KV with prefix sharing: same records, the shared prefix stored once", "[generate][kv]") {
  Model m = load("stories260K/stories260K.bin");
  Tokenizer t = tok512(m);
  std::string prefix =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her "
      "friends. One day,";
  std::vector<std::string> prompts = {prefix + " she saw a bird.", prefix + " it rained.", prefix + " Tom came."};
  GenerateOptions contiguous = greedy(12);
  GenerateOptions paged = contiguous;
  paged.kv.paged = true;
  paged.kv.block_size = 16;
  std::vector<GenerationResult> batch = generate_batch(m, t, prompts, {paged, paged, paged});
  for (size_t i = 0; i < prompts.size(); i++) {
    GenerationResult solo = generate(m, t, prompts[i], contiguous);
    nlohmann::json a = solo, b = batch[i];
    CHECK(a == b);  // ids, text and every step's logits hash
  }
  size_t n_prefix = t.encode(prefix, true).size();
  const KvMemoryReport& r = batch.back().kv_memory;
  INFO("prefix tokens " << n_prefix << " stored " << r.tokens_stored << " logical " << r.tokens_logical);
  CHECK(batch[0].prefix_tokens_reused == 0);
  CHECK(batch[1].prefix_tokens_reused >= 16);
  CHECK(batch[2].prefix_tokens_reused == batch[1].prefix_tokens_reused);
  CHECK(r.prefix_hits >= 2 * (batch[1].prefix_tokens_reused / 16));
  CHECK(r.tokens_stored + 2 * (uint64_t)batch[1].prefix_tokens_reused == r.tokens_logical);
  CHECK(r.bytes_per_token == 2ull * m.config.n_layers * m.config.n_kv_heads * m.config.head_dim * 4);
}
