// Raw and processed log-probabilities, ranks and top-N lists (logprobs.h).
#include "reference/sampling/logprobs.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "base/json_util.h"
#include "numerics/numerics.h"

namespace oracle {

// ---- log-softmax ---------------------------------------------------------------------
std::vector<float> log_softmax_canonical(std::span<const float> logits) {
  const int n = (int)logits.size();
  std::vector<float> out(logits.begin(), logits.end());  // (n)
  float m = num::max_fixed_order(out.data(), n);
  if (!(m > -num::inf_f32())) {  // fully masked: every logprob is -inf
    std::fill(out.begin(), out.end(), -num::inf_f32());
    return out;
  }
  std::vector<float> e(n);  // (n)
  for (int k = 0; k < n; k++) e[k] = num::exp_canonical(num::sub_rn(out[k], m));
  float log_s = num::log_canonical(num::sum_fixed_order(e.data(), n));
  for (int k = 0; k < n; k++) out[k] = num::sub_rn(num::sub_rn(out[k], m), log_s);
  return out;
}

// ---- rank and top-N over one distribution -------------------------------------------------
namespace {

struct Ranked {
  float logprob = 0.0f;
  int rank = 0;
  std::vector<TokenLogprob> top;
};

bool before(const TokenLogprob& a, const TokenLogprob& b) {
  bool na = a.logprob != a.logprob, nb = b.logprob != b.logprob;
  if (na != nb) return nb;
  if (!na && a.logprob != b.logprob) return a.logprob > b.logprob;
  return a.id < b.id;
}

Ranked rank_token(int token, const std::vector<TokenLogprob>& all, int top_n) {
  Ranked r;
  r.logprob = -num::inf_f32();
  const auto hit = std::find_if(all.rbegin(), all.rend(), [&](const TokenLogprob& t) { return t.id == token; });
  if (hit != all.rend()) {  // the last entry with that id
    r.logprob = hit->logprob;
    r.rank = 1;
    for (const TokenLogprob& t : all) r.rank += before(t, *hit) ? 1 : 0;
  }
  std::vector<TokenLogprob> sorted = all;
  size_t n = std::min(sorted.size(), (size_t)std::max(top_n, 0));
  std::partial_sort(sorted.begin(), sorted.begin() + (long)n, sorted.end(), before);
  r.top.assign(sorted.begin(), sorted.begin() + (long)n);
  return r;
}

}  // namespace

LogprobReport logprob_report(int token, std::span<const float> raw_logits, const Candidates& processed,
                             int top_n) {
  std::vector<float> raw_lp = log_softmax_canonical(raw_logits);
  std::vector<TokenLogprob> raw(raw_lp.size());  // (vocab)
  for (size_t i = 0; i < raw.size(); i++) raw[i] = {(int)i, raw_lp[i]};

  std::vector<float> x(processed.items.size());  // (n_candidates), id order
  for (size_t i = 0; i < x.size(); i++) x[i] = processed.items[i].logit;
  std::vector<float> proc_lp = log_softmax_canonical(x);
  std::vector<TokenLogprob> proc(x.size());
  for (size_t i = 0; i < proc.size(); i++) proc[i] = {processed.items[i].id, proc_lp[i]};

  LogprobReport rep;
  rep.token = token;
  Ranked a = rank_token(token, raw, top_n);
  rep.raw_logprob = a.logprob;
  rep.raw_rank = a.rank;
  rep.raw_top = std::move(a.top);
  Ranked b = rank_token(token, proc, top_n);
  rep.processed_logprob = b.logprob;
  rep.processed_rank = b.rank;
  rep.processed_top = std::move(b.top);
  return rep;
}

// ---- JSON ---------------------------------------------------------------------------------
void to_json(nlohmann::json& j, const TokenLogprob& t) { j = {{"id", t.id}, {"logprob", json_float(t.logprob)}}; }

void from_json(const nlohmann::json& j, TokenLogprob& t) {
  t.id = int_from_json<int>(j.at("id"), "id");
  t.logprob = float_from_json(j.at("logprob"), "logprob");
}

void to_json(nlohmann::json& j, const LogprobReport& r) {
  j = {{"token", r.token},
       {"raw", {{"logprob", json_float(r.raw_logprob)}, {"rank", r.raw_rank}, {"top", r.raw_top}}},
       {"processed",
        {{"logprob", json_float(r.processed_logprob)}, {"rank", r.processed_rank}, {"top", r.processed_top}}}};
}

void from_json(const nlohmann::json& j, LogprobReport& r) {
  r.token = int_from_json<int>(j.at("token"), "token");
  const auto& raw = j.at("raw");
  r.raw_logprob = float_from_json(raw.at("logprob"), "raw.logprob");
  r.raw_rank = int_from_json<int>(raw.at("rank"), "raw.rank");
  r.raw_top = raw.at("top").get<std::vector<TokenLogprob>>();
  const auto& pr = j.at("processed");
  r.processed_logprob = float_from_json(pr.at("logprob"), "processed.logprob");
  r.processed_rank = int_from_json<int>(pr.at("rank"), "processed.rank");
  r.processed_top = pr.at("top").get<std::vector<TokenLogprob>>();
}

}  // namespace oracle
