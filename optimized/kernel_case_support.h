#pragma once
// The pieces every kernel case is built from (optimized/kernel_cases.h, and the
// kernel tests through kernels/tests/kernel_test_support.h): seeded inputs,
// device buffers over the CUDA runtime API (host shims in the emulated build)
// and a bitwise compare that describes the first mismatches with both bit
// patterns. Header only; no test framework.
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "kernels/launch.h"
#include "numerics/numerics.h"

namespace oracle::optimized::cases {

using Floats = std::vector<float>;

// Uniform in [-scale, scale) from the raw 32-bit output (portable across STLs).
inline float uniform(std::mt19937& rng, float scale) {
  float u = (float)(rng() >> 8) * (1.0f / 16777216.0f);  // [0, 1)
  return (2.0f * u - 1.0f) * scale;
}
inline Floats random_floats(std::mt19937& rng, size_t n, float scale) {
  Floats v(n);
  for (float& x : v) x = uniform(rng, scale);
  return v;
}

// A device allocation holding a copy of a host vector (or n zero elements).
template <typename T>
class Dev {
 public:
  explicit Dev(const std::vector<T>& host) : n_(host.size()) {
    alloc();
    kernels::check_cuda(cudaMemcpy(p_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice), "H2D");
  }
  explicit Dev(size_t n) : n_(n) {
    alloc();
    kernels::check_cuda(cudaMemset(p_, 0, n_ * sizeof(T)), "memset");
  }
  ~Dev() { cudaFree(p_); }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
  T* get() { return p_; }
  size_t size() const { return n_; }
  std::vector<T> host() const {
    std::vector<T> h(n_);
    kernels::check_cuda(cudaDeviceSynchronize(), "sync");
    kernels::check_cuda(cudaMemcpy(h.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost), "D2H");
    return h;
  }

 private:
  void alloc() { kernels::check_cuda(cudaMalloc((void**)&p_, (n_ > 0 ? n_ : 1) * sizeof(T)), "cudaMalloc"); }
  T* p_ = nullptr;
  size_t n_;
};

// Elements of `got` whose bits differ from `want` (a size difference counts every
// element of both); the first `max_lines` described in `lines` as
// "LABEL: [i] want V (0xBITS) got V (0xBITS)".
inline size_t bit_mismatches(const std::string& label, const Floats& want, const Floats& got,
                             std::vector<std::string>* lines, size_t max_lines = 5) {
  char buf[160];
  if (want.size() != got.size()) {
    std::snprintf(buf, sizeof buf, "%s: size %zu != %zu", label.c_str(), want.size(), got.size());
    if (lines) lines->push_back(buf);
    return want.size() + got.size();
  }
  size_t bad = 0;
  for (size_t i = 0; i < want.size(); i++) {
    const uint32_t a = num::f32_bits(want[i]), b = num::f32_bits(got[i]);
    if (a == b) continue;
    if (lines && bad < max_lines) {
      std::snprintf(buf, sizeof buf, "%s: [%zu] want %.9g (0x%08x) got %.9g (0x%08x)", label.c_str(), i, want[i], a,
                    got[i], b);
      lines->push_back(buf);
    }
    bad++;
  }
  return bad;
}

}  // namespace oracle::optimized::cases
