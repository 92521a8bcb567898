#pragma once
// Helpers for the kernel op tests: seeded inputs, device buffers over the
// CUDA runtime API (host shims in the emulated build), and a bitwise compare
// that prints the first mismatches with both bit patterns.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/launch.h"
#include "numerics/numerics.h"

namespace oracle::kernels::test {

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
    check_cuda(cudaMemcpy(p_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice), "H2D");
  }
  explicit Dev(size_t n) : n_(n) {
    alloc();
    check_cuda(cudaMemset(p_, 0, n_ * sizeof(T)), "memset");
  }
  ~Dev() { cudaFree(p_); }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
  T* get() { return p_; }
  std::vector<T> host() const {
    std::vector<T> h(n_);
    check_cuda(cudaDeviceSynchronize(), "sync");
    check_cuda(cudaMemcpy(h.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost), "D2H");
    return h;
  }

 private:
  void alloc() { check_cuda(cudaMalloc((void**)&p_, (n_ > 0 ? n_ : 1) * sizeof(T)), "cudaMalloc"); }
  T* p_ = nullptr;
  size_t n_;
};

// Number of elements whose bits differ; prints the first few with both patterns.
inline size_t count_bit_mismatches(const std::string& label, const Floats& want, const Floats& got) {
  if (want.size() != got.size()) {
    std::printf("%s: size %zu != %zu\n", label.c_str(), want.size(), got.size());
    return want.size() + got.size();
  }
  size_t bad = 0;
  for (size_t i = 0; i < want.size(); i++) {
    uint32_t a = num::f32_bits(want[i]), b = num::f32_bits(got[i]);
    if (a == b) continue;
    if (bad < 5)
      std::printf("%s: [%zu] want %.9g (0x%08x) got %.9g (0x%08x)\n", label.c_str(), i, want[i], a,
                  got[i], b);
    bad++;
  }
  if (bad) std::printf("%s: %zu of %zu elements differ\n", label.c_str(), bad, want.size());
  return bad;
}

// One op test: builds its inputs from `seed`, computes the output three ways.
struct OpOutputs {
  Floats spec;       // loops written from docs/numerics.md §4 over numerics.h
  Floats reference;  // reference/compute/ops.h (the contract); empty if no reference function
  Floats kernel;     // the kernel on the (emulated) device
};
struct OpCase {
  std::string label;  // op and shape, printed on failure
  uint32_t seed;
  std::function<OpOutputs(uint32_t seed)> run;
};

// Tolerance 0: the kernel must equal the spec loops and the reference bit for bit.
inline void check_cases(const std::vector<OpCase>& cases) {
  for (const OpCase& c : cases) {
    OpOutputs out = c.run(c.seed);
    INFO(c.label << " seed " << c.seed);
    CHECK(count_bit_mismatches(c.label + " kernel vs spec", out.spec, out.kernel) == 0);
    if (!out.reference.empty())
      CHECK(count_bit_mismatches(c.label + " kernel vs reference", out.reference, out.kernel) == 0);
  }
}

inline std::string shape_label(const std::string& op, std::initializer_list<std::pair<const char*, long>> dims) {
  std::ostringstream s;
  s << op;
  for (auto& [name, v] : dims) s << ' ' << name << '=' << v;
  return s.str();
}

}  // namespace oracle::kernels::test
