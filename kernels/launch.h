#pragma once
// ============================================================================
// The one place where kernels are launched (docs/cuda.md, "Launching").
//
// Every host wrapper in kernels/*.cu fills a LaunchConfig and calls launch();
// the same source then either emits `kernel<<<grid, block, shared, stream>>>`
// (nvcc) or runs the kernel on the host emulation (ORACLE_CUDA_EMULATION), so
// the emulated and the real launch configurations cannot drift apart.
// `sync` tells the emulation that the kernel uses __syncthreads or warp
// primitives (fibers needed); it is ignored on the GPU. `stream` is where the
// launch goes: while a stream is captured into a CUDA graph, a launch on it is
// recorded, and a launch on any other stream fails (on the GPU and, with the
// same error, in the emulation: kernels/emu/cuda_emu.h "stream capture").
// ============================================================================
#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

#if defined(ORACLE_CUDA_EMULATION)
#include "kernels/emu/cuda_emu.h"
#else
#include <cuda_runtime.h>
#endif

// Dynamic shared memory of the launch (LaunchConfig::shared_bytes) as `type* name`.
#if defined(ORACLE_CUDA_EMULATION)
#define ORACLE_DYNAMIC_SHARED(type, name) type* name = static_cast<type*>(::emu::dynamic_shared())
#else
#define ORACLE_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#endif

namespace oracle::kernels {

struct LaunchConfig {
  dim3 grid;                     // blocks
  dim3 block;                    // threads per block
  size_t shared_bytes = 0;       // dynamic shared memory
  bool sync = false;             // uses __syncthreads / shuffles / votes
  cudaStream_t stream = nullptr;
};

// Blocks of `per_block` threads needed to cover n items (one item per thread).
inline unsigned blocks_for(long long n, long long per_block) {
  long long b = (n + per_block - 1) / per_block;
  return (unsigned)(b > 0 ? b : 1);
}

// One thread per item in blocks of `threads`, no barriers: the elementwise shape.
inline LaunchConfig flat_launch(long long n, int threads, cudaStream_t stream) {
  LaunchConfig cfg;
  cfg.grid = dim3(blocks_for(n, threads));
  cfg.block = dim3(threads);
  cfg.stream = stream;
  return cfg;
}

// Lane groups with barriers/shuffles (sync): `groups` units of work (rows,
// tokens, (row, token) pairs), `groups_per_block` of them per block of `threads`.
inline LaunchConfig group_launch(long long groups, int groups_per_block, int threads, cudaStream_t stream) {
  LaunchConfig cfg;
  cfg.grid = dim3(blocks_for(groups, groups_per_block));
  cfg.block = dim3(threads);
  cfg.sync = true;
  cfg.stream = stream;
  return cfg;
}

inline void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(e));
}

#if defined(__CUDACC__) || defined(ORACLE_CUDA_EMULATION)
template <typename... Params, typename... Args>
void launch(const LaunchConfig& c, void (*kernel)(Params...), Args&&... args) {
#if defined(ORACLE_CUDA_EMULATION)
  check_cuda(emu::launch(kernel, c.grid, c.block, c.shared_bytes, c.sync, c.stream, std::forward<Args>(args)...),
             "kernel launch");
#else
  kernel<<<c.grid, c.block, c.shared_bytes, c.stream>>>(std::forward<Args>(args)...);
  check_cuda(cudaGetLastError(), "kernel launch");
#endif
}
#endif

}  // namespace oracle::kernels
