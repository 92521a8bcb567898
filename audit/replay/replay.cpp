// Replay of our own log: generate() under the logged tuple, and, when it does
// not come back bit for bit, a teacher-forced re-run along the logged ids with
// a verdict per token (replay.h, docs/replay.md).
#include "audit/replay/replay.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include <nlohmann/json.hpp>

#include "faults/fault.h"
#include "base/errors.h"
#include "reference/compute/forward.h"
#include "reference/compute/kv_cache.h"
#include "numerics/numerics.h"
#include "base/sha256.h"
#include "reference/generate/stop.h"

namespace oracle {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

int index_of(const Candidates& c, int id) {
  for (size_t i = 0; i < c.items.size(); i++)
    if (c.items[i].id == id) return (int)i;
  return -1;
}

// ============================================================================
// Support: which processor removed a token, and how far past its boundary
// ============================================================================
// The selector's support: greedy = the argmax only; draw = non-zero probability.
void selector_support(Candidates c, int at, const SamplerConfig& cfg, ForcedStep& s) {
  if (cfg.temperature <= 0.0f) {
    double m = -kInf;
    for (const Candidate& k : c.items) m = std::max(m, (double)k.logit);
    if (s.reproduced != c.items[at].id) {
      s.removed_by = "greedy";
      s.margin = m - (double)c.items[at].logit;
    }
    return;
  }
  compute_probs(c);
  if (!(c.items[at].prob > 0.0f)) {
    s.removed_by = "zero_probability";
    s.margin = kInf;
  }
}

// Runs the processors one by one and records the first that removed `token`.
void find_support(int token, std::span<const float> logits, const SamplerConfig& cfg,
                  const SamplingContext& ctx, ForcedStep& s) {
  Candidates c = candidates_from_logits(logits);
  for (Processor p : cfg.order.empty() ? preset_order(cfg.preset) : cfg.order) {
    Candidates before = c;
    const std::unique_ptr<Sampler> proc = make_processor(p, cfg);
    proc->apply(c, ctx);
    if (index_of(c, token) < 0) {
      const RemovalMargin m = proc->removal_margin(before, index_of(before, token));
      s.removed_by = p.name();
      s.margin = m.distance;
      s.margin_in_probability = m.in_probability;
      return;
    }
  }
  selector_support(c, index_of(c, token), cfg, s);
}

// ============================================================================
// Teacher forcing
// ============================================================================
StopConditions stop_conditions(const ReplayModel& rm, const GenerateOptions& o) {
  StopConditions c;
  c.stop_on_eos = o.stop_on_eos;
  c.stop_token_ids = o.stop_token_ids;
  if (rm.model.config.stop_on_bos) c.stop_token_ids.push_back(rm.tokenizer.bos_id());
  c.stop_strings = o.stop_strings;
  c.max_tokens = o.max_tokens;
  return c;
}

ForcedStep forced_step(std::span<const float> logits, const SamplerChain& chain, const GenerateOptions& o,
                       const std::vector<int>& history, int token) {
  SamplingContext ctx{history, {o.sampler.seed, o.seq_id, (uint32_t)history.size()}};
  SampleResult r = sample(chain, logits, ctx);
  ForcedStep s;
  s.reproduced = r.token;
  s.logged_lp = logprob_report(token, logits, r.processed, o.logprobs_top_n);
  s.logits_sha256 = sha256_hex(logits.data(), logits.size() * sizeof(float));
  find_support(token, logits, o.sampler, ctx, s);
  return s;
}

}  // namespace

ForcedRun teacher_force(const ReplayModel& rm, const std::vector<int>& prompt_ids, const GenerateOptions& o,
                        const std::vector<int>& logged, num::NumericsProfile numerics) {
  const Config& cfg = rm.model.config;
  validate(o.sampler, cfg.vocab_size);
  for (size_t i = 0; i < logged.size(); i++)
    require_input(logged[i] >= 0 && logged[i] < cfg.vocab_size, "record", "output_ids[" + std::to_string(i) + "]",
                  "token id outside the vocabulary of " + std::to_string(cfg.vocab_size));
  require_input(!prompt_ids.empty() && (int)prompt_ids.size() < cfg.seq_len, "record", "prompt_ids",
                "empty or does not fit the context");
  for (size_t i = 0; i < prompt_ids.size(); i++)
    require_input(prompt_ids[i] >= 0 && prompt_ids[i] < cfg.vocab_size, "record", "prompt_ids[" + std::to_string(i) + "]",
                  "token id outside the vocabulary of " + std::to_string(cfg.vocab_size));
  KvCache kv(cfg, KvCacheOptions{});
  SamplerChain chain = build_chain(o.sampler);
  TextStream stream(rm.tokenizer, stop_conditions(rm, o), prompt_ids.back());
  std::vector<int> history = prompt_ids;  // (n_prompt + i)
  ForwardOptions fo;
  fo.numerics = numerics;  // Ggml: InputError "numerics" where forward() does not implement it
  std::vector<float> logits = forward(rm.model, kv, 0, prompt_ids, fo);  // (vocab)
  ForcedRun run;
  for (size_t i = 0; i < logged.size(); i++) {
    if (stream.done()) {
      ForcedStep s;
      s.after_stop = true;
      run.steps.push_back(s);
      return run;
    }
    run.steps.push_back(forced_step(logits, chain, o, history, logged[i]));
    history.push_back(logged[i]);
    StreamStep st = stream.push(logged[i]);
    if (!st.done && (int)history.size() >= cfg.seq_len) stream.finish();
    if (!stream.done() && i + 1 < logged.size())
      logits = forward(rm.model, kv, 0, std::span<const int>(&logged[i], 1), fo);
  }
  run.still_running = !stream.done();
  return run;
}

// ============================================================================
// Verdicts
// ============================================================================
namespace {

std::string fmt(double x) {
  char b[64];
  std::snprintf(b, sizeof b, "%.6g", x);
  return b;
}

// Verdict for a token outside the support: borderline within tolerance.
void support_verdict(const ForcedStep& s, const ReplayOptions& o, TokenFinding& f) {
  f.reason = s.removed_by;
  f.margin = s.margin;
  const bool prob = s.margin_in_probability;
  const double tol = prob ? o.prob_tolerance : o.logit_tolerance;
  const bool near = std::isfinite(s.margin) &&
                    (s.margin <= tol || fault::active(fault::Fault::REPLAY_IGNORES_TOLERANCE));  // FAULT
  f.verdict = near ? Verdict::Borderline : Verdict::Impossible;
  if (!std::isfinite(s.margin)) {
    f.detail = s.removed_by == "banned" ? "the token is banned" : "the token has probability 0";
    return;
  }
  f.detail = "outside the " + s.removed_by + " support by " + fmt(s.margin) + (prob ? " in probability" : " in logits") +
             (near ? " (within the tolerance " + fmt(tol) + ")" : "");
}

TokenFinding base_finding(int index, int logged, const ForcedStep& s) {
  TokenFinding f;
  f.index = index;
  f.logged = logged;
  f.reproduced = s.after_stop ? -1 : s.reproduced;
  f.raw_logprob = s.logged_lp.raw_logprob;
  f.raw_rank = s.logged_lp.raw_rank;
  f.processed_logprob = s.logged_lp.processed_logprob;
  f.processed_rank = s.logged_lp.processed_rank;
  return f;
}

}  // namespace

bool classify_token(int index, int logged, const ForcedStep& s, const SamplerConfig& cfg, bool own,
                    const ReplayOptions& o, TokenFinding& f) {
  f = base_finding(index, logged, s);
  if (s.after_stop) {
    f.verdict = Verdict::Impossible;
    f.reason = "after_stop";
    f.detail = "the generation had already stopped";
    return true;
  }
  if (!s.removed_by.empty()) {
    support_verdict(s, o, f);
    return true;
  }
  if (s.reproduced == logged) return false;
  f.verdict = own ? Verdict::NotReproducible : Verdict::DifferentDraw;
  f.reason = "draw";
  f.detail = "inside the support (processed p=" + fmt(std::exp((double)s.logged_lp.processed_logprob)) +
             ", rank " + std::to_string(s.logged_lp.processed_rank) + ") but the reference drew " +
             std::to_string(s.reproduced);
  return true;
}

// ============================================================================
// Own records
// ============================================================================
namespace {

void check_identity(const LogRecord& rec, const ReplayModel& rm) {
  const ModelIdentity& id = rec.identity;
  require_input(id.model_sha256 == rm.model_sha256, "record", "model.sha256",
                "logged " + id.model_sha256 + " but the replay model has " + rm.model_sha256);
  require_input(id.tokenizer_sha256 == rm.tokenizer_sha256, "record", "tokenizer.sha256",
                "logged " + id.tokenizer_sha256 + " but the replay tokenizer has " + rm.tokenizer_sha256);
  require_input(id.context == rm.model.config.seq_len, "record", "model.context",
                "logged " + std::to_string(id.context) + " but the replay model has " +
                    std::to_string(rm.model.config.seq_len));
  require_input(rm.tokenizer.encode(rec.prompt, EncodeOptions{rec.add_bos, rec.add_eos, rec.parse_special}) ==
                    rec.prompt_ids,
                "record", "prompt_ids",
                "not the tokenization of the logged prompt");
}

// Record-level differences between the log and generate(); empty = MATCH.
std::vector<std::string> compare_result(const LogRecord& rec, const GenerationResult& g) {
  std::vector<std::string> notes;
  const size_t n = std::min(rec.output_ids.size(), g.output_ids.size());
  size_t i = 0;
  while (i < n && rec.output_ids[i] == g.output_ids[i]) i++;
  if (i < n || rec.output_ids.size() != g.output_ids.size())
    notes.push_back("output_ids: logged " + std::to_string(rec.output_ids.size()) + " tokens, reproduced " +
                    std::to_string(g.output_ids.size()) + ", first difference at token " + std::to_string(i));
  for (size_t k = 0; k < n && k < i; k++) {
    if (nlohmann::json(rec.steps[k]) != nlohmann::json(g.steps[k])) {
      notes.push_back("steps[" + std::to_string(k) + "]: logprobs or logits hash differ");
      break;
    }
  }
  if (rec.text != g.text) notes.push_back("text differs");
  if (rec.finish_reason != g.finish_reason || rec.stop_detail != g.stop_detail)
    notes.push_back("finish: logged " + rec.finish_reason + "/" + rec.stop_detail + ", reproduced " +
                    g.finish_reason + "/" + g.stop_detail);
  return notes;
}

// A matching token whose logprobs or logits hash differ is still not reproduced.
bool numeric_finding(int index, const LogRecord& rec, const ForcedStep& s, TokenFinding& f) {
  const GenerationStep& logged = rec.steps[(size_t)index];
  const bool same_lp = nlohmann::json(logged.logprobs) == nlohmann::json(s.logged_lp);
  if (same_lp && logged.logits_sha256 == s.logits_sha256) return false;
  f = base_finding(index, rec.output_ids[(size_t)index], s);
  f.verdict = Verdict::NotReproducible;
  f.reason = same_lp ? "logits" : "logprobs";
  f.detail = same_lp ? "same token, but the logits hash differs" : "same token, but the logprobs differ";
  return true;
}

}  // namespace

RecordReport replay_own(const LogRecord& rec, const ReplayModel& rm, const ReplayOptions& o) {
  check_identity(rec, rm);
  RecordReport rep;
  rep.mode = "own";
  rep.n_tokens = (int)rec.output_ids.size();
  const GenerateOptions go = generate_options(rec);
  rep.notes = compare_result(rec, o.generate ? o.generate(rm.model, rm.tokenizer, rec.prompt, go)
                                            : generate(rm.model, rm.tokenizer, rec.prompt, go));
  if (rep.notes.empty()) {
    rep.status = RecordStatus::Match;
    return rep;
  }
  rep.status = RecordStatus::Diverged;
  const ForcedRun run = teacher_force(rm, rec.prompt_ids, go, rec.output_ids);
  for (size_t i = 0; i < run.steps.size(); i++) {
    TokenFinding f;
    const int id = rec.output_ids[i];
    if (classify_token((int)i, id, run.steps[i], rec.sampler, true, o, f) ||
        numeric_finding((int)i, rec, run.steps[i], f))
      rep.findings.push_back(f);
  }
  if (run.still_running)
    rep.notes.push_back("the log ends after " + std::to_string(rep.n_tokens) + " tokens but the tuple does not stop there");
  if (!rep.findings.empty()) rep.diverged_at = rep.findings.front().index;
  return rep;
}

}  // namespace oracle
