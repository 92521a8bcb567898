#pragma once
// ============================================================================
// llm_oracle: the certify statistics (docs/certify.md, "Statistics") over rows
// of reference and candidate logits and the tokens that followed: KLD mean ±
// standard error and percentiles, top-1 agreement, Δp, perplexities and their
// ratio — the numbers a certificate and llama-perplexity --kl-divergence print.
// float64, fixed summation order.
// ============================================================================
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include <string>

#include "llm_oracle/errors.h"
#include "llm_oracle/model.h"

namespace llm_oracle {

struct MeanSe {
  double mean = 0.0, se = 0.0;
};

struct CertifyStats {
  int64_t n = 0;                                   // scored rows
  MeanSe kld;                                      // nats
  std::vector<std::pair<double, double>> kld_percentiles;  // (level %, value): max, 99.9 .. 1, min
  MeanSe same_top;                                 // top-1 agreement fraction
  MeanSe dp_top, dp_next, rms_dp_top, rms_dp_next; // probability differences
  MeanSe ppl_ref, ppl_cand, ln_ratio, ratio, difference;
  double correlation = 0.0;                        // of the two NLLs
  std::vector<double> per_row_kld;                 // (n)
};

// ref, cand (rows, vocab); next (rows): the token that followed each row.
// InputError("certify", field, ...) on a size mismatch or an id out of range.
CertifyStats certify_stats(std::span<const float> ref, std::span<const float> cand, int rows, int vocab,
                           std::span<const int> next);

// `oracle certify` on two models and a corpus (docs/certify.md): the corpus is
// tokenized with the reference's vocabulary and cut into chunks of `ctx`
// tokens, every prediction scored, then greedy agreement on prompts from the
// corpus. The statistics equal the certificate's (`oracle certify --json`).
struct CertifyConfig {
  std::string protocol = "full";  // "full" or "llamacpp" (llama-perplexity's chunks)
  int ctx = 128;
  int threads = 1;                // chunks in parallel: changes no bit
  int max_chunks = 0;             // 0: every complete chunk
  int greedy_prompts = 16, greedy_prompt_tokens = 16, greedy_steps = 32;
};
struct CertifyResult {
  CertifyStats stats;
  int chunks = 0, corpus_tokens = 0;
  double greedy_mean_first_divergence = 0.0, greedy_fraction_identical = 0.0;
  std::vector<int> greedy_first_divergence;  // (greedy prompts)
};
CertifyResult certify(const Model& reference, const Model& candidate, const std::string& corpus,
                      const CertifyConfig& config = {});

}  // namespace llm_oracle
