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

#include "llm_oracle/errors.h"

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

}  // namespace llm_oracle
