#pragma once
// ============================================================================
// Log-probabilities of an emitted token, twice:
//   raw       — the model's distribution: softmax of the logits over the vocab;
//   processed — the distribution the token was drawn from: softmax of the
//               processed logits over the candidates that survived the chain.
// logp_k = (x_k - max) - log(sum_j exp(x_j - max)) with max_fixed_order,
// exp_canonical, sum_fixed_order (id order) and log_canonical.
// Rank is 1-based in (logprob desc, id asc) order; top lists use that order.
// ============================================================================
#include <span>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "reference/sampling/sampler.h"

namespace oracle {

struct TokenLogprob {
  int id = 0;
  float logprob = 0.0f;
};

struct LogprobReport {
  int token = -1;
  float raw_logprob = 0.0f;
  int raw_rank = 0;
  std::vector<TokenLogprob> raw_top;        // (min(top_n, vocab))
  float processed_logprob = 0.0f;           // -inf if the chain removed the token
  int processed_rank = 0;                   // 0 if the chain removed the token
  std::vector<TokenLogprob> processed_top;  // (min(top_n, n_candidates))
};

// Log-softmax of logits in the given (id) order; a fully masked row gives all -inf.
std::vector<float> log_softmax_canonical(std::span<const float> logits);

LogprobReport logprob_report(int token, std::span<const float> raw_logits, const Candidates& processed,
                             int top_n);

void to_json(nlohmann::json& j, const TokenLogprob& t);
void from_json(const nlohmann::json& j, TokenLogprob& t);
void to_json(nlohmann::json& j, const LogprobReport& r);
void from_json(const nlohmann::json& j, LogprobReport& r);

}  // namespace oracle
