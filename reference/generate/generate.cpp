// The generation loop (generate.h): one request alone, or many decoded together.
#include "reference/generate/generate.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include <nlohmann/json.hpp>

#include "base/errors.h"
#include "reference/compute/forward.h"
#include "base/json_util.h"
#include "reference/compute/kv_cache.h"
#include "base/sha256.h"
#include "reference/generate/stop.h"

namespace oracle {

namespace {

// SHA-256 of the logits' bytes, little-endian float32 (the host order here).
std::string logits_sha256(std::span<const float> logits) {
  return sha256_hex(logits.data(), logits.size() * sizeof(float));
}

StopConditions stop_conditions(const Model& model, const Tokenizer& tok, const GenerateOptions& o) {
  StopConditions c;
  c.stop_on_eos = o.stop_on_eos;
  c.stop_token_ids = o.stop_token_ids;
  if (model.config.stop_on_bos) c.stop_token_ids.push_back(tok.bos_id());
  c.stop_strings = o.stop_strings;
  c.max_tokens = o.max_tokens;
  return c;
}

// Validates the options and encodes the prompt (BOS first when add_bos).
std::vector<int> encode_prompt(const Model& model, const Tokenizer& tok, const std::string& prompt,
                               const GenerateOptions& o) {
  require_input(o.max_tokens >= 1, "options", "max_tokens", "must be >= 1");
  validate(o.sampler, model.config.vocab_size);
  for (int id : o.stop_token_ids)
    require_input(id >= 0 && id < model.config.vocab_size, "options", "stop_token_ids",
                  "token id " + std::to_string(id) + " outside the vocabulary [0, " +
                      std::to_string(model.config.vocab_size) + ")");
  std::vector<int> ids = tok.encode(prompt, EncodeOptions{o.add_bos, o.add_eos, o.parse_special});
  require_input(!ids.empty(), "<text>", "prompt", "empty prompt and no BOS");
  require_input((int)ids.size() < model.config.seq_len, "<text>", "prompt",
                "prompt of " + std::to_string(ids.size()) + " tokens does not fit the context length " +
                    std::to_string(model.config.seq_len));
  return ids;
}

// ---- one request's state: sampler chain, history, text stream, result --------
class Request {
 public:
  Request(const Model& model, const Tokenizer& tok, const std::string& prompt, const GenerateOptions& o)
      : options_(o), seq_len_(model.config.seq_len), history_(encode_prompt(model, tok, prompt, o)),
        chain_(build_chain(o.sampler)),
        stream_(tok, stop_conditions(model, tok, o), history_.back()) {
    result_.prompt_ids = history_;
    result_.sampler = o.sampler;
    result_.seq_id = o.seq_id;
  }

  const std::vector<int>& prompt() const { return result_.prompt_ids; }

  // Samples from `logits` (the last position's row). Returns the token to decode
  // next, or nothing when the request is finished.
  std::optional<int> accept(std::span<const float> logits) {
    SampleResult r = sample(chain_, logits, context());
    return accept_sampled(logits, {r.token, logprob_report(r.token, logits, r.processed, options_.logprobs_top_n)});
  }

  // What the sampler of this step looks at: the history and the key (seed, seq id, position).
  SamplingContext context() const {
    return {history_, {options_.sampler.seed, options_.seq_id, (uint32_t)history_.size()}};
  }
  int top_n() const { return options_.logprobs_top_n; }

  // accept() with the decision already taken (generate_with's engine).
  std::optional<int> accept_sampled(std::span<const float> logits, SampledToken sampled) {
    const int token = sampled.token;
    GenerationStep step;
    step.token = token;
    step.logits_sha256 = logits_sha256(logits);
    step.logprobs = std::move(sampled.logprobs);
    result_.steps.push_back(std::move(step));
    result_.output_ids.push_back(token);
    history_.push_back(token);
    StreamStep s = stream_.push(token);
    if (!s.done && (int)history_.size() >= seq_len_) s = stream_.finish();  // context full
    emit(s.text);
    if (s.done) {
      finish(s.reason);
      return std::nullopt;
    }
    return token;
  }

  GenerationResult take() { return std::move(result_); }

 private:
  void emit(const std::string& text) {
    if (text.empty()) return;
    result_.text += text;
    if (options_.on_text) options_.on_text(text);
  }
  void finish(FinishReason reason) {
    result_.stop_detail = finish_reason_name(reason);
    result_.invalid_utf8_replaced = stream_.n_replaced();
    result_.finish_reason = reason == FinishReason::Length ? "length" : "stop";
  }

  GenerateOptions options_;
  int seq_len_;
  std::vector<int> history_;  // (n_prompt + n_generated) what penalties look at
  SamplerChain chain_;
  TextStream stream_;
  GenerationResult result_;
};

// The prompt in one forward call, or in chunks of `chunk` tokens: the same bits
// (oracle run --prefill-chunk, scripts/determinism_matrix.sh).
std::vector<float> prefill(const Model& model, KvCache& kv, std::span<const int> prompt, int chunk,
                           const ForwardOptions& fo) {
  if (chunk <= 0) return forward(model, kv, 0, prompt, fo);
  std::vector<float> logits;  // (vocab) last position of the last chunk
  for (size_t i = 0; i < prompt.size(); i += (size_t)chunk)
    logits = forward(model, kv, 0, prompt.subspan(i, std::min((size_t)chunk, prompt.size() - i)), fo);
  return logits;
}

std::span<const float> row(const std::vector<float>& logits, int i, int vocab) {
  return std::span<const float>(logits.data() + (size_t)i * (size_t)vocab, (size_t)vocab);
}

}  // namespace

// ============================================================================
// generate / generate_batch
// ============================================================================
GenerationResult generate(const Model& model, const Tokenizer& tokenizer, const std::string& prompt,
                          const GenerateOptions& options) {
  Request req(model, tokenizer, prompt, options);
  KvCacheOptions ko = options.kv;
  ko.max_seqs = 1;
  if (ko.reserve_tokens <= 0)  // size the cache by the request, not the context
    ko.reserve_tokens = (int)std::min<long>(model.config.seq_len, (long)req.prompt().size() + options.max_tokens);
  KvCache kv(kv_slice_config(model.config, options.split), ko);  // this rank's kv heads (all with one rank)
  ThreadPool pool(std::max(1, options.threads));  // one pool for every step of the request
  ForwardOptions fo;
  fo.threads = options.threads;
  fo.pool = &pool;
  fo.split = options.split;
  fo.numerics = options.numerics;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<float> logits = prefill(model, kv, req.prompt(), options.prefill_chunk, fo);  // (vocab)
  const auto t1 = std::chrono::steady_clock::now();
  while (const std::optional<int> next = req.accept(logits))
    logits = forward(model, kv, 0, std::span<const int>(&*next, 1), fo);
  GenerationResult result = req.take();
  result.prefill_seconds = std::chrono::duration<double>(t1 - t0).count();
  result.decode_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  result.kv_memory = kv.memory_report();
  return result;
}

GenerationResult generate_with(StepEngine& engine, const Model& model, const Tokenizer& tokenizer,
                               const std::string& prompt, const GenerateOptions& options) {
  Request req(model, tokenizer, prompt, options);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<float> logits = engine.forward(req.prompt());  // (vocab)
  const auto t1 = std::chrono::steady_clock::now();
  while (const std::optional<int> next =
             req.accept_sampled(logits, engine.sample(logits, req.context(), req.top_n())))
    logits = engine.forward(std::span<const int>(&*next, 1));
  GenerationResult result = req.take();
  result.prefill_seconds = std::chrono::duration<double>(t1 - t0).count();
  result.decode_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  return result;
}

namespace {

// generate_batch's engine: one KvCache for the batch (options[0].kv; with paged +
// prefix_cache, prompts sharing full blocks of a prefix store them once) and
// each request's own sampler chain.
class ReferenceBatchEngine : public BatchEngine {
 public:
  ReferenceBatchEngine(const Model& model, const std::vector<GenerateOptions>& options)
      : model_(model), kv_(model.config, batch_kv(options)), pool_(std::max(1, options.empty() ? 1 : options[0].threads)) {
    fo_.threads = pool_.size();
    fo_.pool = &pool_;
    if (!options.empty()) fo_.numerics = options[0].numerics;
    for (const GenerateOptions& o : options) chains_.push_back(build_chain(o.sampler));
  }
  int attach_prefix(int seq, std::span<const int> prompt) override { return kv_.attach_prefix(seq, prompt); }
  std::vector<float> forward(int seq, std::span<const int> tokens) override {
    return oracle::forward(model_, kv_, seq, tokens, fo_);
  }
  std::vector<float> forward_batch(std::span<const int> seqs, std::span<const int> tokens) override {
    return oracle::forward_batch(model_, kv_, seqs, tokens, fo_);
  }
  SampledToken sample(int seq, int, std::span<const float> logits, const SamplingContext& ctx, int top_n) override {
    SampleResult r = oracle::sample(chains_[(size_t)seq], logits, ctx);
    return {r.token, logprob_report(r.token, logits, r.processed, top_n)};
  }
  KvMemoryReport memory_report() const { return kv_.memory_report(); }

 private:
  static KvCacheOptions batch_kv(const std::vector<GenerateOptions>& options) {
    KvCacheOptions ko = options.empty() ? KvCacheOptions{} : options[0].kv;
    ko.max_seqs = std::max<int>(1, (int)options.size());
    return ko;
  }
  const Model& model_;
  KvCache kv_;
  ThreadPool pool_;
  ForwardOptions fo_;
  std::vector<SamplerChain> chains_;  // (n requests)
};

}  // namespace

std::vector<GenerationResult> generate_batch_with(BatchEngine& engine, const Model& model, const Tokenizer& tokenizer,
                                                  const std::vector<std::string>& prompts,
                                                  const std::vector<GenerateOptions>& options) {
  require_input(prompts.size() == options.size(), "options", "options", "one GenerateOptions per prompt");
  for (const GenerateOptions& o : options)
    require_input(o.split == nullptr, "options", "split", "tensor parallelism is generate()'s only (one request)");
  const int n = (int)prompts.size(), vocab = model.config.vocab_size;
  std::vector<Request> reqs;
  for (int i = 0; i < n; i++) reqs.emplace_back(model, tokenizer, prompts[i], options[i]);
  // One step of request i on row r of `logits`: its next token, or nothing when it finished.
  auto step = [&](int i, int r, std::span<const float> logits) {
    return reqs[i].accept_sampled(logits, engine.sample(i, r, logits, reqs[i].context(), reqs[i].top_n()));
  };
  std::vector<int> seqs, tokens, reused(n, 0);  // (n_running) KV slot and next token; (n) prefix hits
  for (int i = 0; i < n; i++) {
    std::span<const int> prompt = reqs[i].prompt();
    reused[i] = engine.attach_prefix(i, prompt);
    if (const std::optional<int> next = step(i, 0, engine.forward(i, prompt.subspan((size_t)reused[i])))) {
      seqs.push_back(i);
      tokens.push_back(*next);
    }
  }
  while (!seqs.empty()) {
    std::vector<float> logits = engine.forward_batch(seqs, tokens);  // (n_running, vocab)
    std::vector<int> still, next_tokens;
    for (size_t k = 0; k < seqs.size(); k++) {
      if (const std::optional<int> next = step(seqs[k], (int)k, row(logits, (int)k, vocab))) {
        still.push_back(seqs[k]);
        next_tokens.push_back(*next);
      }
    }
    seqs.swap(still);
    tokens.swap(next_tokens);
  }
  std::vector<GenerationResult> out;
  for (int i = 0; i < n; i++) {
    out.push_back(reqs[i].take());
    out.back().prefix_tokens_reused = reused[i];
  }
  return out;
}

std::vector<GenerationResult> generate_batch(const Model& model, const Tokenizer& tokenizer,
                                             const std::vector<std::string>& prompts,
                                             const std::vector<GenerateOptions>& options) {
  require_input(prompts.size() == options.size(), "options", "options", "one GenerateOptions per prompt");
  ReferenceBatchEngine engine(model, options);
  std::vector<GenerationResult> out = generate_batch_with(engine, model, tokenizer, prompts, options);
  for (GenerationResult& r : out) r.kv_memory = engine.memory_report();
  return out;
}

// ============================================================================
// JSON (the replay log)
// ============================================================================
void to_json(nlohmann::json& j, const GenerationStep& s) {
  j = {{"token", s.token}, {"logits_sha256", s.logits_sha256}, {"logprobs", s.logprobs}};
}

void from_json(const nlohmann::json& j, GenerationStep& s) {
  s.token = int_from_json<int>(j.at("token"), "token");
  s.logits_sha256 = j.at("logits_sha256").get<std::string>();
  s.logprobs = j.at("logprobs").get<LogprobReport>();
}

void to_json(nlohmann::json& j, const GenerationResult& r) {
  j = {{"prompt_ids", r.prompt_ids},       {"output_ids", r.output_ids}, {"text", r.text},
       {"finish_reason", r.finish_reason}, {"stop_detail", r.stop_detail}, {"sampler", r.sampler},
       {"invalid_utf8_replaced", r.invalid_utf8_replaced}, {"seq_id", r.seq_id},               {"steps", r.steps}};
}

void from_json(const nlohmann::json& j, GenerationResult& r) {
  r.prompt_ids = ints_from_json(j.at("prompt_ids"), "prompt_ids");
  r.output_ids = ints_from_json(j.at("output_ids"), "output_ids");
  r.text = j.at("text").get<std::string>();
  r.finish_reason = j.at("finish_reason").get<std::string>();
  r.stop_detail = j.at("stop_detail").get<std::string>();
  r.sampler = j.at("sampler").get<SamplerConfig>();
  r.invalid_utf8_replaced = j.contains("invalid_utf8_replaced") ? int_from_json<int>(j.at("invalid_utf8_replaced"), "invalid_utf8_replaced") : 0;
  r.seq_id = int_from_json<uint32_t>(j.at("seq_id"), "seq_id");
  r.steps = j.at("steps").get<std::vector<GenerationStep>>();
}

}  // namespace oracle
