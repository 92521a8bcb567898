// Certification statistics: per-token comparison and float64 summaries in a
// fixed order (see logit_stats.h and docs/certify.md).
#include "audit/interop/logit_stats.h"

#include <algorithm>
#include <cmath>

#include "audit/interop/exp_rows.h"
#include "numerics/numerics.h"

namespace oracle {

// ---- per token -----------------------------------------------------------------------
// e^v for v <= 0 in float64; below -700 the term is < 1e-304 and counts as 0.
static double exp_nonpositive(double v) { return v < -700.0 ? 0.0 : num::exp_d(v); }

// The exps run 8 lanes wide (exp_rows.h: each element exactly exp_d's bits);
// every sum stays one accumulator in increasing k.
// out (n): the shifted logits' exps on the way, then the log-probs.
static double log_sum_exp_into(const float* logits, int n, std::vector<double>& out) {
  float m = num::max_fixed_order(logits, n);
  out.resize(n);
  for (int k = 0; k < n; k++) out[k] = (double)logits[k] - (double)m;
  exp_nonpositive_rows(out.data(), out.data(), n);
  double sum = 0.0;  // increasing k, one accumulator
  for (int k = 0; k < n; k++) sum += out[k];
  return (double)m + num::log_d(sum);
}

static void log_probs(const float* logits, int n, double lse, std::vector<double>& out) {
  out.resize(n);
  for (int k = 0; k < n; k++) out[k] = (double)logits[k] - lse;
}

double log_sum_exp_f64(const float* logits, int n) {
  std::vector<double> scratch;  // (n)
  return log_sum_exp_into(logits, n, scratch);
}

std::vector<double> log_softmax_f64(const float* logits, int n) {
  std::vector<double> out;  // (n)
  log_probs(logits, n, log_sum_exp_into(logits, n, out), out);
  return out;
}

TokenRecord compare_logits(const float* ref, const float* cand, int n_vocab, int next) {
  return compare_logits_lse(ref, log_sum_exp_f64(ref, n_vocab), cand, n_vocab, next);
}

TokenRecord compare_logits_lse(const float* ref, double lse_ref, const float* cand, int n_vocab, int next) {
  std::vector<double> lr;  // (n_vocab)
  log_probs(ref, n_vocab, lse_ref, lr);
  std::vector<double> lc = log_softmax_f64(cand, n_vocab);
  std::vector<double> p(n_vocab);  // (n_vocab) p_ref(k)
  exp_nonpositive_rows(lr.data(), p.data(), n_vocab);
  TokenRecord r;
  r.next = next;
  r.top_ref = num::argmax_lowest(ref, n_vocab);
  r.top_cand = num::argmax_lowest(cand, n_vocab);
  double kld = 0.0;  // increasing k
  for (int k = 0; k < n_vocab; k++)
    if (p[k] > 0.0) kld += p[k] * (lr[k] - lc[k]);
  r.kld = kld;
  r.nll_ref = -lr[next];
  r.nll_cand = -lc[next];
  r.dp_top = exp_nonpositive(lc[r.top_ref]) - exp_nonpositive(lr[r.top_ref]);
  r.dp_next = exp_nonpositive(lc[next]) - exp_nonpositive(lr[next]);
  return r;
}

// ---- elementary statistics -------------------------------------------------------------
double sum_in_order(const std::vector<double>& x) {
  double s = 0.0;
  for (double v : x) s += v;
  return s;
}

MeanSe mean_se(const std::vector<double>& x) {
  MeanSe r;
  if (x.empty()) return r;
  double n = (double)x.size();
  r.mean = sum_in_order(x) / n;
  if (x.size() < 2) return r;
  double ss = 0.0;
  for (double v : x) ss += (v - r.mean) * (v - r.mean);
  r.se = std::sqrt(ss / (n - 1.0) / n);
  return r;
}

double percentile_sorted(const std::vector<double>& s, double fraction) {
  if (s.empty()) return 0.0;
  if (fraction <= 0.0) return s.front();
  if (fraction >= 1.0) return s.back();
  double p = fraction * (double)(s.size() - 1);
  size_t i = (size_t)p;
  double t = p - (double)i;
  size_t j = std::min(i + 1, s.size() - 1);
  return (1.0 - t) * s[i] + t * s[j];
}

Percentiles percentiles(std::vector<double> x, const std::vector<double>& levels_percent) {
  std::sort(x.begin(), x.end());
  Percentiles out;
  for (double level : levels_percent) out.push_back({level, percentile_sorted(x, level / 100.0)});
  return out;
}

double pearson(const std::vector<double>& a, const std::vector<double>& b) {
  MeanSe ma = mean_se(a), mb = mean_se(b);
  double sab = 0.0, saa = 0.0, sbb = 0.0;
  for (size_t i = 0; i < a.size(); i++) {
    double da = a[i] - ma.mean, db = b[i] - mb.mean;
    sab += da * db;
    saa += da * da;
    sbb += db * db;
  }
  return (saa > 0.0 && sbb > 0.0) ? sab / std::sqrt(saa * sbb) : 0.0;
}

// sqrt(mean x^2) with the delta-method se: se(mean x^2) / (2 rms).
static MeanSe rms(const std::vector<double>& x) {
  std::vector<double> sq(x.size());
  for (size_t i = 0; i < x.size(); i++) sq[i] = x[i] * x[i];
  MeanSe m2 = mean_se(sq);
  MeanSe r;
  r.mean = std::sqrt(m2.mean);
  r.se = r.mean > 0.0 ? m2.se / (2.0 * r.mean) : 0.0;
  return r;
}

// ---- perplexity --------------------------------------------------------------------------
// ppl = exp(mean nll); var(ppl_c - ppl_r) = ppl_c^2 se_c^2 + ppl_r^2 se_r^2
//   - 2 ppl_c ppl_r cov(mean nll_c, mean nll_r), cov = sample covariance / n.
static PerplexityStats perplexity_stats(const std::vector<double>& nr, const std::vector<double>& nc) {
  PerplexityStats p;
  MeanSe mr = mean_se(nr), mc = mean_se(nc);
  p.ppl_ref = {num::exp_d(mr.mean), num::exp_d(mr.mean) * mr.se};
  p.ppl_cand = {num::exp_d(mc.mean), num::exp_d(mc.mean) * mc.se};
  std::vector<double> diff(nr.size());
  for (size_t i = 0; i < nr.size(); i++) diff[i] = nc[i] - nr[i];
  p.ln_ratio = mean_se(diff);
  double ratio = num::exp_d(p.ln_ratio.mean);
  p.ratio = {ratio, ratio * p.ln_ratio.se};
  double n = (double)nr.size(), cov = 0.0;
  for (size_t i = 0; i < nr.size(); i++) cov += (nr[i] - mr.mean) * (nc[i] - mc.mean);
  cov = n > 1.0 ? cov / (n - 1.0) / n : 0.0;
  double a = p.ppl_cand.mean, b = p.ppl_ref.mean;
  double var = a * a * mc.se * mc.se + b * b * mr.se * mr.se - 2.0 * a * b * cov;
  p.difference = {a - b, var > 0.0 ? std::sqrt(var) : 0.0};
  p.correlation = pearson(nr, nc);
  return p;
}

// ---- summary --------------------------------------------------------------------------------
static const std::vector<double> kKldLevels = {100, 99.9, 99, 95, 90, 50, 10, 5, 1, 0};
static const std::vector<double> kDpLevels = {100, 99.9, 99, 95, 90, 75, 50, 25, 10, 5, 1, 0.1, 0};

static void by_position(const std::vector<TokenRecord>& recs, Summary& s) {
  int max_pos = 0;
  for (const TokenRecord& r : recs) max_pos = std::max(max_pos, r.pos);
  std::vector<double> sum(max_pos + 1, 0.0);
  s.count_by_position.assign(max_pos + 1, 0);
  for (const TokenRecord& r : recs) {
    sum[r.pos] += r.kld;
    s.count_by_position[r.pos]++;
  }
  s.kld_by_position.assign(max_pos + 1, 0.0);
  for (int p = 0; p <= max_pos; p++)
    if (s.count_by_position[p] > 0) s.kld_by_position[p] = sum[p] / (double)s.count_by_position[p];
}

Summary summarize(const std::vector<TokenRecord>& recs) {
  Summary s;
  s.n = (int64_t)recs.size();
  if (recs.empty()) return s;
  std::vector<double> kld, dpt, dpn, nr, nc, same;
  for (const TokenRecord& r : recs) {
    kld.push_back(r.kld);
    dpt.push_back(r.dp_top);
    dpn.push_back(r.dp_next);
    nr.push_back(r.nll_ref);
    nc.push_back(r.nll_cand);
    same.push_back(r.same_top() ? 1.0 : 0.0);
  }
  s.kld = mean_se(kld);
  s.kld_percentiles = percentiles(kld, kKldLevels);
  s.dp_top = mean_se(dpt);
  s.dp_next = mean_se(dpn);
  s.dp_top_percentiles = percentiles(dpt, kDpLevels);
  s.dp_next_percentiles = percentiles(dpn, kDpLevels);
  s.rms_dp_top = rms(dpt);
  s.rms_dp_next = rms(dpn);
  double p = sum_in_order(same) / (double)s.n;
  s.same_top = {p, s.n > 1 ? std::sqrt(p * (1.0 - p) / (double)(s.n - 1)) : 0.0};
  s.perplexity = perplexity_stats(nr, nc);
  by_position(recs, s);
  return s;
}

// ---- greedy agreement -------------------------------------------------------------------------
GreedySummary summarize_greedy(const std::vector<int>& first, int steps) {
  GreedySummary g;
  g.prompts = (int)first.size();
  g.steps = steps;
  g.histogram.assign(steps + 1, 0);
  if (first.empty()) return g;
  std::vector<double> v;
  int identical = 0;
  for (int f : first) {
    g.histogram[std::clamp(f, 0, steps)]++;
    v.push_back((double)f);
    if (f >= steps) identical++;
  }
  g.mean_first_divergence = mean_se(v).mean;
  std::sort(v.begin(), v.end());
  g.median_first_divergence = percentile_sorted(v, 0.5);
  g.fraction_identical = (double)identical / (double)g.prompts;
  return g;
}

}  // namespace oracle
