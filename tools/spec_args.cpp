#include "tools/spec_args.h"

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "base/errors.h"
#include "numerics/numerics.h"
#include "tools/cli_common.h"

namespace oracle::tools {

void add_speculative_options(CLI::App* sub, DraftOptions& a) {
  sub->add_option("--draft-model", a.draft_model,
                  "Speculative decoding: draft checkpoint sharing the target's vocabulary");
  sub->add_option("--draft-tokenizer", a.draft_tokenizer,
                  "Tokenizer of the draft model (checked equal to the target's)");
  sub->add_option("--spec-k", a.k, "Drafted tokens per target pass")->check(int_in<int>(1, 64));
  sub->add_option("--spec-ngram", a.ngram, "Speculative decoding with prompt-lookup drafts of this n-gram size")
      ->check(int_in<int>(1, 16));
  sub->add_flag("--spec-adaptive", a.adaptive, "Adapt k per round (1 .. 2 * spec-k)");
}

bool speculative_enabled(const DraftOptions& a) { return !a.draft_model.empty() || a.ngram > 0; }

// The draft's pieces must be the target's: from --draft-tokenizer, else the
// vocabulary the draft file embeds; the sizes must agree in any case.
// Equal sizes are not enough (two 512-token vocabularies can differ piece by
// piece): the draft's tokenizer is resolved like the target's — --draft-tokenizer,
// the embedded vocabulary, or tok<vocab>.bin / tokenizer.bin beside the file.
// A llama2.c draft with tok<vocab>.bin or tokenizer.bin beside it (model_args.cpp's
// lookup): its pieces are known and compared. With no tokenizer anywhere only the
// sizes can be compared (docs/speculative.md).
static bool tokenizer_file_beside(const Model& m) {
  if (m.format != "llama2c") return false;
  const std::filesystem::path dir = std::filesystem::path(m.path).parent_path();
  std::error_code ec;
  return std::filesystem::exists(dir / ("tok" + std::to_string(m.config.vocab_size) + ".bin"), ec) ||
         std::filesystem::exists(dir / "tokenizer.bin", ec);
}

static void check_draft_vocab(const DraftOptions& a, const Model& draft, const Model& target, const Vocab* target_vocab) {
  require_input(draft.config.vocab_size == target.config.vocab_size, draft.path, "vocab_size",
                std::to_string(draft.config.vocab_size) + " differs from the target's " +
                    std::to_string(target.config.vocab_size));
  require_input(target_vocab != nullptr, target.path, "tokens", "the target's vocabulary is needed to check the draft's");
  if (a.draft_tokenizer.empty() && draft.vocab.tokens.empty() && !tokenizer_file_beside(draft)) return;  // sizes only
  const LoadedModel d = load_model_and_tokenizer(ModelOptions{a.draft_model, a.draft_tokenizer});
  const std::string source = d.tokenizer_source == "embedded" ? draft.path : d.tokenizer_source;
  const std::vector<std::string>& pieces = d.tokenizer.vocab().tokens;
  require_input(pieces == target_vocab->tokens, source, "tokens",
                "the draft's vocabulary differs from the target tokenizer's");
}

std::unique_ptr<DraftSource> make_draft_source(const DraftOptions& a, const Model& target, const Vocab* target_vocab,
                                               const SamplerConfig& sampler, int threads) {
  require_input(a.draft_model.empty() || a.ngram == 0, "--spec-ngram", "spec",
                "use either --draft-model or --spec-ngram");
  auto src = std::make_unique<DraftSource>();
  if (a.ngram > 0) {
    src->drafter = std::make_unique<NgramDrafter>(a.ngram, target.config.vocab_size);
    return src;
  }
  src->model = load_model_arg(ModelOptions{a.draft_model, "", 0, threads});
  check_draft_vocab(a, src->model, target, target_vocab);
  ForwardOptions fo;
  fo.threads = threads;
  src->drafter = std::make_unique<ModelDrafter>(src->model, sampler, KvCacheOptions{}, fo);
  return src;
}

nlohmann::json spec_metrics_json(const SpecMetrics& m, int k) {
  const double alpha = m.acceptance_rate();
  return {{"k", k},
          {"rounds", m.rounds},
          {"target_passes", m.rounds},
          {"draft_passes", m.draft_passes},
          {"drafted", m.drafted},
          {"evaluated", m.evaluated},
          {"accepted", m.accepted},
          {"emitted", m.emitted},
          {"acceptance_rate", alpha},
          {"tokens_per_target_pass", m.tokens_per_pass()},
          {"expected_tokens_per_target_pass", SpecMetrics::expected_tokens_per_pass(alpha, k)},
          {"target_passes_per_token", m.emitted ? (double)m.rounds / (double)m.emitted : 0.0},
          {"accepted_histogram", m.accepted_histogram}};
}

static SpecOptions spec_options(const DraftOptions& a, const SamplerConfig& sampler,
                                int max_tokens, int threads) {
  SpecOptions o;
  o.k = a.k;
  o.adaptive_k = a.adaptive;
  o.k_max = std::max(16, 2 * a.k);
  o.max_tokens = max_tokens;
  o.sampler = sampler;
  o.forward.threads = threads;
  return o;
}

int print_speculative_run(const LoadedModel& lm, const DraftOptions& a, const std::string& prompt,
                          const SamplerConfig& sampler, int max_tokens, bool ignore_eos,
                          const std::vector<std::string>& stop_strings, int threads, bool json) {
  require_input(stop_strings.empty(), "--stop", "stop", "stop strings are not supported with speculative decoding");
  const std::unique_ptr<DraftSource> src = make_draft_source(a, lm.model, &lm.tokenizer.vocab(), sampler, threads);
  const std::vector<int> ids = lm.tokenizer.encode(prompt, lm.tokenizer.vocab().add_bos);
  SpecOptions o = spec_options(a, sampler, max_tokens, threads);
  if (!ignore_eos) o.stop_token_ids.push_back(lm.tokenizer.eos_id());
  if (lm.model.config.stop_on_bos) o.stop_token_ids.push_back(lm.tokenizer.bos_id());
  const SpecResult r = generate_speculative(lm.model, *src->drafter, ids, o);
  std::vector<int> shown = r.output_ids;
  if (r.finish_reason == "stop" && !shown.empty()) shown.pop_back();
  const std::string text = lm.tokenizer.decode(shown);
  if (!json) {
    std::printf("%s\n", text.c_str());
    return kExitOk;
  }
  const nlohmann::json j = {{"model", lm.model.path}, {"model_sha256", lm.model.sha256},
                            {"tokenizer", lm.tokenizer_source}, {"prompt", prompt},
                            {"prompt_ids", ids}, {"output_ids", r.output_ids}, {"text", text},
                            {"finish_reason", r.finish_reason}, {"sampler", sampler},
                            {"drafter", src->drafter->name()},
                            {"speculative", spec_metrics_json(r.metrics, a.k)}};
  std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  return kExitOk;
}

// ---- bench ----------------------------------------------------------------------------------
static double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

static std::vector<int> plain_greedy(const Model& m, std::span<const int> prompt, int n, int threads) {
  KvCache kv(m.config, {});
  ForwardOptions fo;
  fo.threads = threads;
  std::vector<float> logits = forward(m, kv, 0, prompt, fo);
  std::vector<int> out;
  for (int i = 0; i < n; i++) {
    out.push_back(num::argmax_lowest(logits.data(), (int)logits.size()));
    if (i + 1 < n) logits = forward(m, kv, 0, std::span<const int>(&out.back(), 1), fo);
  }
  return out;
}

nlohmann::json bench_speculative(const Model& target, const DraftOptions& a, const Vocab& target_vocab,
                                 std::span<const int> prompt, int n_tokens, int threads) {
  SamplerConfig greedy;
  greedy.temperature = 0.0f;
  const std::unique_ptr<DraftSource> src = make_draft_source(a, target, &target_vocab, greedy, threads);
  auto t0 = std::chrono::steady_clock::now();
  const std::vector<int> plain = plain_greedy(target, prompt, n_tokens, threads);
  const double plain_s = seconds_since(t0);
  const SpecOptions o = spec_options(a, greedy, n_tokens, threads);  // no stop token: n tokens
  t0 = std::chrono::steady_clock::now();
  const SpecResult r = generate_speculative(target, *src->drafter, prompt, o);
  const double spec_s = seconds_since(t0);
  return {{"drafter", src->drafter->name()},
          {"spec_tokens", n_tokens},
          {"plain_decode_s", plain_s},
          {"spec_decode_s", spec_s},
          {"spec_speedup", spec_s > 0 ? plain_s / spec_s : 0.0},
          {"plain_target_passes_per_token", 1.0},
          {"spec_same_output", r.output_ids == plain},
          {"speculative", spec_metrics_json(r.metrics, a.k)}};
}

void print_speculative_bench(const nlohmann::json& j) {
  const nlohmann::json& m = j["speculative"];
  std::printf("speculative (%s, k %d): %.3f target passes per token, acceptance %.3f, %.2f tokens per pass "
              "(iid expectation %.2f); greedy decode %.3f s plain vs %.3f s speculative: speedup %.2fx%s\n",
              j["drafter"].get<std::string>().c_str(), m["k"].get<int>(), m["target_passes_per_token"].get<double>(),
              m["acceptance_rate"].get<double>(), m["tokens_per_target_pass"].get<double>(),
              m["expected_tokens_per_target_pass"].get<double>(), j["plain_decode_s"].get<double>(),
              j["spec_decode_s"].get<double>(), j["spec_speedup"].get<double>(),
              j["spec_same_output"].get<bool>() ? "" : " (OUTPUT DIFFERS FROM PLAIN GREEDY)");
}

}  // namespace oracle::tools
