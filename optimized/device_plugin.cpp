// The CUDA backend plugin's one exported symbol (optimized/device_pipeline.h,
// docs/design.md "Backends"): liboracle_device_cuda.so is oracle_optimized_cuda
// and everything below it, all hidden but this function.
#include <cstdint>

#include "optimized/device_pipeline.h"

extern "C" __attribute__((visibility("default"))) const oracle::optimized::DevicePipeline* oracle_device_pipeline(
    std::uint64_t abi_key) {
  namespace opt = oracle::optimized;
  return abi_key == opt::device_abi_key() ? &opt::device_pipeline() : nullptr;
}
