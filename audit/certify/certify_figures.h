#pragma once
// ============================================================================
// Certificate figures (docs/certify.md, "Figures"), plain SVG strings,
// deterministic for the same input:
//   * certificate.svg: one page a person can judge at a glance: title with the
//     verdict, both models' names and SHA-256, corpus, protocol, one PASS/FAIL
//     row per threshold, then the four panels below;
//   * kld_cdf.svg: cumulative distribution of per-token KLD on a log x axis,
//     with the mean, median, 99th percentile and every KLD threshold as lines;
//   * delta_p.svg: histogram of Δp = p_cand(next) - p_ref(next) (percent), with
//     the mean and the 1st / 99th percentiles;
//   * same_top_by_position.svg: fraction of positions whose top-1 token agrees,
//     by position in the chunk, with a 95 % Wilson confidence band;
//   * kld_by_position.svg: mean KLD by position in the chunk.
// Axes use 1-2-5 ticks (linear) or decades (log). The Δp histogram has 60 bins
// over a symmetric axis. In the panels, tick labels and legends are set at 11 px, axis names
// at 12, panel titles at 14.
// ============================================================================
#include <cstdint>
#include <string>
#include <vector>

#include "audit/certify/certify.h"
#include "audit/certify/certify_report.h"

namespace oracle {

std::string svg_certificate_summary(const CertifyResult& r, const CertificateInfo& info,
                                    const std::vector<ThresholdCheck>& checks);
std::string svg_kld_cdf(const CertifyResult& r, const std::vector<ThresholdCheck>& checks);
std::string svg_delta_p(const CertifyResult& r);
std::string svg_same_top_by_position(const CertifyResult& r, const std::vector<ThresholdCheck>& checks);
std::string svg_kld_by_position(const CertifyResult& r);

// Helpers (exposed for tests).
// Ticks at multiples of 1, 2 or 5 x 10^k covering [lo, hi], about `target` of them.
std::vector<double> nice_ticks(double lo, double hi, int target);
// 10^k for every integer k with lo <= 10^k <= hi (lo > 0).
std::vector<double> decade_ticks(double lo, double hi);
// The 95 % Wilson score interval of a binomial proportion (z = 1.96).
struct Interval {
  double lo = 0.0, hi = 1.0;
};
Interval wilson_interval(int64_t successes, int64_t n);

}  // namespace oracle
