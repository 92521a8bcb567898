#pragma once
// A monotonic timer: seconds since construction (std::chrono::steady_clock).
// Used by `oracle bench` (tools/bench_support.h) and the device pipeline's bench
// (optimized/device_pipeline.cpp).
#include <chrono>

namespace oracle {

class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace oracle
