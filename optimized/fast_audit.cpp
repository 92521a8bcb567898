// Fast mode's per-op bound — see fast_audit.h for the derivation.
#include "optimized/fast_audit.h"

#include <cmath>

namespace oracle::optimized {

namespace {
constexpr double kU32 = 0x1p-24, kU64 = 0x1p-53, kTf32 = 0x1p-10, kBf16 = 0x1p-7, kUnderflow = 0x1p-149;

double gamma(double n, double u) { return n * u / (1.0 - n * u); }

std::vector<float> download(const float* p, size_t n) {
  std::vector<float> h(n);
  kernels::check_cuda(cudaDeviceSynchronize(), "fast audit");
  kernels::check_cuda(cudaMemcpy(h.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost), "fast audit download");
  return h;
}
}  // namespace

double fast_gemm_rel_bound(int K, kernels::FastPrecision precision) {
  if (precision == kernels::FastPrecision::F32) return gamma(K, kU32);
  const double ut = precision == kernels::FastPrecision::TF32 ? kTf32 : kBf16;  // input conversion (truncation)
  return (1 + ut) * (1 + ut) * (1 + gamma(K, 2 * kU32)) - 1;
}

void FastAudit::check(const std::string& op, const float* x_dev, const float* W_dev, const float* out_dev, int T,
                      int K, int N) {
  auto w = weights_.find(W_dev);
  if (w == weights_.end()) w = weights_.emplace(W_dev, download(W_dev, (size_t)N * K)).first;
  const std::vector<float>& W = w->second;              // (N, K)
  const std::vector<float> x = download(x_dev, (size_t)T * K);      // (T, K)
  const std::vector<float> out = download(out_dev, (size_t)T * N);  // (T, N)
  FastOpStats& s = ops_[op];
  s.K = K;
  s.rel_bound = fast_gemm_rel_bound(K, precision_);
  const double b = s.rel_bound + gamma(K, kU64);
  for (int t = 0; t < T; t++)
    for (int i = 0; i < N; i++) {
      double sum = 0, mag = 0;
      for (int k = 0; k < K; k++) {
        const double p = (double)W[(size_t)i * K + k] * (double)x[(size_t)t * K + k];  // exact
        sum += p, mag += std::fabs(p);
      }
      const double err = std::fabs((double)out[(size_t)t * N + i] - sum), allow = b * mag + K * kUnderflow;
      const double ratio = std::isnan(err) ? INFINITY : err / allow;
      s.elements++;
      s.over += !(ratio <= 1.0);
      if (!(ratio <= s.worst_ratio)) s.worst_ratio = ratio;
    }
}

bool FastAudit::within() const {
  for (const auto& [op, s] : ops_)
    if (s.over > 0) return false;
  return true;
}

}  // namespace oracle::optimized
