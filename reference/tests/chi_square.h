#pragma once
// Goodness-of-fit helpers for the statistical tests (float64, test-only; libm
// is fine here — this is not the pipeline): chi-square survival function and
// critical values via the regularised incomplete gamma (Numerical Recipes
// gser/gcf), the noncentral chi-square survival function (Poisson mixture) for
// power, and binning to expected counts >= 5.
#include <algorithm>
#include <cmath>
#include <vector>

namespace oracle::test {

// Q(a, x) = Gamma(a, x) / Gamma(a), the regularised upper incomplete gamma.
inline double gamma_q(double a, double x) {
  if (x <= 0.0) return 1.0;
  const double log_front = -x + a * std::log(x) - std::lgamma(a);
  if (x < a + 1.0) {  // series for P(a, x)
    double ap = a, del = 1.0 / a, sum = del;
    for (int i = 0; i < 100000 && std::fabs(del) > std::fabs(sum) * 1e-16; i++) {
      ap += 1.0;
      del *= x / ap;
      sum += del;
    }
    return 1.0 - sum * std::exp(log_front);
  }
  const double tiny = 1e-300;  // continued fraction for Q(a, x), modified Lentz
  double b = x + 1.0 - a, c = 1.0 / tiny, d = 1.0 / b, h = d;
  for (int i = 1; i < 100000; i++) {
    const double an = -i * (i - a);
    b += 2.0;
    d = an * d + b;
    if (std::fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1.0 / d;
    h *= d * c;
    if (std::fabs(d * c - 1.0) < 1e-16) break;
  }
  return std::exp(log_front) * h;
}

// P(X > x) for X ~ chi-square(df).
inline double chi2_sf(double x, double df) { return gamma_q(df / 2.0, x / 2.0); }

// The x with chi2_sf(x, df) = alpha (bisection).
inline double chi2_critical(double alpha, double df) {
  double lo = 0.0, hi = df + 100.0 * std::sqrt(2.0 * df) + 100.0;
  for (int i = 0; i < 200; i++) {
    const double mid = 0.5 * (lo + hi);
    (chi2_sf(mid, df) > alpha ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

// P(X > x) for X ~ noncentral chi-square(df, lambda): sum over j of
// Poisson(j; lambda / 2) * chi2_sf(x, df + 2j).
inline double noncentral_chi2_sf(double x, double df, double lambda) {
  const double half = lambda / 2.0;
  const int j_max = (int)(half + 12.0 * std::sqrt(half + 1.0) + 60.0);
  double total = 0.0;
  for (int j = 0; j <= j_max; j++) {
    const double log_w = -half + (j ? j * std::log(half) : 0.0) - std::lgamma(j + 1.0);
    total += std::exp(log_w) * chi2_sf(x, df + 2.0 * j);
  }
  return total;
}

// Bins over outcomes 0..n-1 with expected probability e: every outcome with
// n_samples * e >= 5 alone (decreasing e), the others pooled into one bin,
// which joins the smallest single bin if its own expectation is < 5.
inline std::vector<int> merge_bins(const std::vector<double>& e, long n_samples, int* n_bins) {
  std::vector<int> order(e.size());
  for (size_t i = 0; i < e.size(); i++) order[i] = (int)i;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return e[a] > e[b]; });
  std::vector<int> bin(e.size(), -1);
  int singles = 0;
  double pooled = 0.0;
  for (int i : order) {
    if ((double)n_samples * e[(size_t)i] >= 5.0) bin[(size_t)i] = singles++;
    else pooled += e[(size_t)i];
  }
  const bool own_bin = (double)n_samples * pooled >= 5.0 || singles == 0;
  for (int& b : bin)
    if (b < 0) b = own_bin ? singles : singles - 1;
  *n_bins = own_bin ? singles + 1 : singles;
  return bin;
}

struct ChiSquare {
  double statistic = 0.0, df = 0.0, p_value = 1.0;
  std::vector<double> expected_bins;  // (n_bins) probabilities
};

// Pearson's statistic of counts[o] (outcome o) against probabilities e[o].
inline ChiSquare chi_square(const std::vector<long>& counts, const std::vector<double>& e) {
  long n = 0;
  for (long c : counts) n += c;
  int n_bins = 0;
  const std::vector<int> bin = merge_bins(e, n, &n_bins);
  std::vector<double> exp_b((size_t)n_bins, 0.0), obs_b((size_t)n_bins, 0.0);
  for (size_t i = 0; i < e.size(); i++) {
    exp_b[(size_t)bin[i]] += e[i];
    obs_b[(size_t)bin[i]] += (double)counts[i];
  }
  ChiSquare r;
  for (int b = 0; b < n_bins; b++) {
    const double ex = (double)n * exp_b[(size_t)b];
    r.statistic += (obs_b[(size_t)b] - ex) * (obs_b[(size_t)b] - ex) / ex;
  }
  r.df = n_bins - 1;
  r.p_value = chi2_sf(r.statistic, r.df);
  r.expected_bins = exp_b;
  return r;
}

// Noncentrality of the binned test when the true distribution is `alt`
// instead of `e`: n * sum_b (alt_b - e_b)^2 / e_b.
inline double noncentrality(const std::vector<double>& e, const std::vector<double>& alt, long n) {
  int n_bins = 0;
  const std::vector<int> bin = merge_bins(e, n, &n_bins);
  std::vector<double> eb((size_t)n_bins, 0.0), ab((size_t)n_bins, 0.0);
  for (size_t i = 0; i < e.size(); i++) {
    eb[(size_t)bin[i]] += e[i];
    ab[(size_t)bin[i]] += alt[i];
  }
  double lambda = 0.0;
  for (int b = 0; b < n_bins; b++) lambda += (ab[(size_t)b] - eb[(size_t)b]) * (ab[(size_t)b] - eb[(size_t)b]) / eb[(size_t)b];
  return (double)n * lambda;
}

}  // namespace oracle::test
