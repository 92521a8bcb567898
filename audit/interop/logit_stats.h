#pragma once
// ============================================================================
// Statistics of a candidate model's next-token distributions against a
// reference's (docs/certify.md, "Statistics"). Everything is float64 and
// every sum runs in one fixed order (vocabulary order within a token, corpus
// order across tokens), so the numbers do not depend on how the per-token
// records were produced (one thread or many chunks in parallel).
// exp/log are numerics.h's exp_d/log_d (no libm transcendentals).
// ============================================================================
#include <cstdint>
#include <utility>
#include <vector>

namespace oracle {

// ---- one scored prediction ----------------------------------------------------------
struct TokenRecord {
  int chunk = 0;          // context chunk it came from
  int pos = 0;            // position (within the chunk) of the token whose logits are scored
  int next = 0;           // the corpus token that follows (the one predicted)
  int top_ref = 0;        // argmax of the reference logits (ties: lowest id)
  int top_cand = 0;       // argmax of the candidate logits
  double kld = 0.0;       // KL(P_ref || P_cand) = sum_k p_ref(k) (ln p_ref(k) - ln p_cand(k)), nats
  double nll_ref = 0.0;   // -ln p_ref(next)
  double nll_cand = 0.0;  // -ln p_cand(next)
  double dp_top = 0.0;    // p_cand(top_ref) - p_ref(top_ref)
  double dp_next = 0.0;   // p_cand(next) - p_ref(next)   (llama-perplexity's "Δp")
  bool same_top() const { return top_ref == top_cand; }
};

// log-softmax of n float32 logits in float64: logp[k] = x[k] - (m + ln sum_j e^(x[j]-m)).
std::vector<double> log_softmax_f64(const float* logits, int n);
// Its shift alone: m + ln sum_j e^(x[j]-m) (logp[k] = (double)x[k] - that, bit for bit).
double log_sum_exp_f64(const float* logits, int n);

// Compares one position's logits: (n_vocab) reference and candidate rows.
TokenRecord compare_logits(const float* ref, const float* cand, int n_vocab, int next);
// The same with the reference's log_sum_exp_f64 already computed (certify computes it on
// the reference's thread); the same bits as compare_logits.
TokenRecord compare_logits_lse(const float* ref, double lse_ref, const float* cand, int n_vocab, int next);

// ---- summaries --------------------------------------------------------------------------
struct MeanSe {
  double mean = 0.0;
  double se = 0.0;  // standard error of the mean: sqrt(sample variance / n)
};

// (level in percent, value); level 100 = maximum, 0 = minimum.
using Percentiles = std::vector<std::pair<double, double>>;

struct PerplexityStats {
  MeanSe ppl_ref, ppl_cand;       // exp(mean nll) ± ppl * se(nll)
  MeanSe ln_ratio;                // mean(nll_cand - nll_ref) ± se of the paired differences
  MeanSe ratio;                   // exp(ln_ratio) ± ratio * se
  MeanSe difference;              // ppl_cand - ppl_ref, delta method with the covariance
  double correlation = 0.0;       // Pearson correlation of nll_ref and nll_cand
};

struct Summary {
  int64_t n = 0;                  // scored tokens
  MeanSe kld;
  Percentiles kld_percentiles;    // max, 99.9, 99, 95, 90, 50, 10, 5, 1, min
  MeanSe dp_top, dp_next;
  Percentiles dp_top_percentiles, dp_next_percentiles;  // max, 99.9 .. 0.1, min
  MeanSe rms_dp_top, rms_dp_next; // sqrt(mean dp^2) ± delta-method se
  MeanSe same_top;                // fraction ± sqrt(p (1-p) / (n-1))
  PerplexityStats perplexity;
  std::vector<double> kld_by_position;  // (max pos + 1) mean KLD at each position
  std::vector<int64_t> count_by_position;
};

// Sums in record order; records must be in corpus order for reproducibility.
Summary summarize(const std::vector<TokenRecord>& records);

// Helpers (exposed for tests).
double sum_in_order(const std::vector<double>& x);
MeanSe mean_se(const std::vector<double>& x);
// Linear interpolation at fraction*(n-1) of the sorted values (llama-perplexity's rule).
double percentile_sorted(const std::vector<double>& sorted, double fraction);
Percentiles percentiles(std::vector<double> x, const std::vector<double>& levels_percent);
double pearson(const std::vector<double>& a, const std::vector<double>& b);

// ---- greedy agreement ---------------------------------------------------------------------
// first_divergence[i]: index of the first generated token where the two greedy
// continuations of prompt i differ; == steps when they never do.
struct GreedySummary {
  int prompts = 0;
  int steps = 0;
  double mean_first_divergence = 0.0;
  double median_first_divergence = 0.0;
  double fraction_identical = 0.0;           // prompts whose continuations agree throughout
  std::vector<int> histogram;                // (steps + 1) prompts per first-divergence index
};
GreedySummary summarize_greedy(const std::vector<int>& first_divergence, int steps);

}  // namespace oracle
