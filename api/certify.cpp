// llm_oracle: the certify statistics (audit/interop/logit_stats.h) on caller-supplied
// logit rows, and certify() on two models and a corpus (audit/certify/certify.h).
#include "llm_oracle/certify.h"

#include "api/convert.h"
#include "api/model_access.h"
#include "audit/certify/certify.h"
#include "audit/interop/logit_stats.h"
#include "base/errors.h"

namespace llm_oracle {

namespace {

MeanSe ms(const oracle::MeanSe& m) { return {m.mean, m.se}; }

CertifyStats stats_from(const oracle::Summary& s, const std::vector<oracle::TokenRecord>& records) {
  CertifyStats c;
  c.n = s.n, c.kld = ms(s.kld), c.kld_percentiles = s.kld_percentiles, c.same_top = ms(s.same_top);
  c.dp_top = ms(s.dp_top), c.dp_next = ms(s.dp_next), c.rms_dp_top = ms(s.rms_dp_top), c.rms_dp_next = ms(s.rms_dp_next);
  const oracle::PerplexityStats& p = s.perplexity;
  c.ppl_ref = ms(p.ppl_ref), c.ppl_cand = ms(p.ppl_cand), c.ln_ratio = ms(p.ln_ratio), c.ratio = ms(p.ratio);
  c.difference = ms(p.difference), c.correlation = p.correlation;
  for (const oracle::TokenRecord& rec : records) c.per_row_kld.push_back(rec.kld);
  return c;
}

}  // namespace

CertifyStats certify_stats(std::span<const float> ref, std::span<const float> cand, int rows, int vocab,
                           std::span<const int> next) {
  detail::need_rows("certify", ref.size(), cand.size(), rows, vocab, "reference", "candidate");
  oracle::require_input((int)next.size() == rows, "certify", "next",
                        "needs one next-token id per row (" + std::to_string(rows) + "), got " + std::to_string(next.size()));
  std::vector<oracle::TokenRecord> records;
  for (int r = 0; r < rows; r++) {
    oracle::require_input(next[r] >= 0 && next[r] < vocab, "certify", "next",
                          "id " + std::to_string(next[r]) + " at row " + std::to_string(r) + " is outside the vocabulary");
    oracle::TokenRecord rec = oracle::compare_logits(&ref[(size_t)r * vocab], &cand[(size_t)r * vocab], vocab, next[r]);
    rec.pos = r;
    records.push_back(rec);
  }
  return stats_from(oracle::summarize(records), records);
}

CertifyResult certify(const Model& reference, const Model& candidate, const std::string& corpus,
                      const CertifyConfig& config) {
  oracle::CertifyOptions o;
  o.protocol = oracle::parse_protocol(config.protocol);
  o.ctx = config.ctx, o.threads = config.threads, o.max_chunks = config.max_chunks;
  o.greedy_prompts = config.greedy_prompts, o.greedy_prompt_tokens = config.greedy_prompt_tokens;
  o.greedy_steps = config.greedy_steps;
  const oracle::CertifyResult r =
      oracle::certify(detail::ModelAccess::model(reference), detail::ModelAccess::model(candidate), corpus, o);
  CertifyResult out;
  out.stats = stats_from(r.summary, r.records);
  out.chunks = r.chunks, out.corpus_tokens = r.corpus_tokens;
  out.greedy_mean_first_divergence = r.greedy.mean_first_divergence;
  out.greedy_fraction_identical = r.greedy.fraction_identical;
  out.greedy_first_divergence = r.first_divergence;
  return out;
}

}  // namespace llm_oracle
