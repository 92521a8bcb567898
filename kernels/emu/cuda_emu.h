#pragma once
// ============================================================================
// Host emulation of the CUDA execution model (docs/cuda.md, "Emulation").
//
// The kernel sources in kernels/*.cu compile unchanged with the host C++
// compiler when ORACLE_CUDA_EMULATION is defined; this header supplies what
// nvcc would: __global__/__device__/__shared__, dim3, threadIdx/blockIdx/
// blockDim/gridDim, __syncthreads, warp shuffles and votes, atomics, and
// cudaMalloc/cudaMemcpy shims over host memory.
//
// Execution model:
//   * blocks run one after another, in increasing linear block index;
//   * launch with `sync = true`: every thread of a block is a fiber (its own
//     stack) on the calling OS thread; __syncthreads is a barrier over the
//     live threads of the block, every warp primitive a barrier over the live
//     lanes of the warp (32 consecutive linear thread ids). A fiber that waits
//     yields to a round-robin scheduler; a pass that can resume nobody is a
//     deadlock (divergent barrier) and aborts with a message;
//   * launch with `sync = false` (fast path): threads run as plain calls in
//     increasing linear thread id; a barrier or warp primitive there aborts.
//   * `__shared__` is a function-local `static thread_local`: one copy per OS
//     thread, shared by all fibers of the running block. Blocks run one at a
//     time, so this is exactly per-block shared memory (uninitialised between
//     blocks as on the GPU: never rely on its contents at block start).
//   * atomics are plain read-modify-writes: fibers never preempt each other.
// Emulation is per OS thread: separate threads may launch concurrently.
// ============================================================================
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <tuple>
#include <utility>

#ifndef ORACLE_CUDA_EMULATION
#error "kernels/emu/cuda_emu.h is only for the emulated (host) build"
#endif

// ---- CUDA keywords -----------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static thread_local

// ---- dim3 / uint3 --------------------------------------------------------------
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct uint3 {
  unsigned x = 0, y = 0, z = 0;
};

// The runtime's error codes the emulation returns (values as in driver_types.h).
enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorStreamCaptureUnsupported = 900,
  cudaErrorStreamCaptureInvalidated = 901,
  cudaErrorStreamCaptureImplicit = 906,
};
using cudaStream_t = struct emu_stream*;
using cudaGraph_t = struct emu_graph*;
using cudaGraphExec_t = struct emu_graph_exec*;
enum cudaStreamCaptureMode {
  cudaStreamCaptureModeGlobal = 0,
  cudaStreamCaptureModeThreadLocal = 1,
  cudaStreamCaptureModeRelaxed = 2
};

namespace emu {

// Per-OS-thread state of the running emulated thread (set before every resume).
struct ThreadIndex {
  uint3 thread_idx;
  uint3 block_idx;
  dim3 block_dim;
  dim3 grid_dim;
};
extern thread_local ThreadIndex g_index;

using KernelThunk = void (*)(void* closure);
// Runs thunk(closure) once per thread of every block (see execution model above).
void launch_raw(KernelThunk thunk, void* closure, dim3 grid, dim3 block, size_t shared_bytes,
                bool sync);
// Kernel launches run so far on this OS thread (eager launches and graph replays).
long long launches_run();

// ---- stream capture (CUDA graphs; kernels/emu/cuda_emu_runtime.cpp) ---------------
// While this OS thread captures a stream, a launch, cudaMemcpyAsync or
// cudaMemsetAsync on that stream is recorded as a graph node (kernel arguments
// copied by value, as the GPU does) instead of running; a launch on any other
// stream, or a synchronous copy, cudaMalloc/cudaFree or a device/stream
// synchronisation, is what the GPU refuses during a capture: it returns the
// GPU's error and invalidates the capture (cudaStreamEndCapture then fails).
enum class CaptureRole { None, Record, Illegal };
CaptureRole capture_role(cudaStream_t stream);
void record_kernel(KernelThunk thunk, std::shared_ptr<void> closure, dim3 grid, dim3 block, size_t shared_bytes,
                   bool sync);
cudaError_t capture_violation(cudaError_t error);  // invalidates the capture, returns error

// Kernel launch: emu::launch(kernel, grid, block, shared_bytes, sync, stream, args...).
template <typename... Params, typename... Args>
cudaError_t launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes, bool sync,
                   cudaStream_t stream, Args&&... args) {
  struct Closure {
    void (*kernel)(Params...);
    std::tuple<Params...> args;
  };
  constexpr KernelThunk thunk = [](void* c) {
    auto* cl = static_cast<Closure*>(c);
    std::apply(cl->kernel, cl->args);  // each thread gets its own copy of the arguments
  };
  switch (capture_role(stream)) {
    case CaptureRole::None: {
      Closure closure{kernel, std::tuple<Params...>(std::forward<Args>(args)...)};
      launch_raw(thunk, &closure, grid, block, shared_bytes, sync);
      return cudaSuccess;
    }
    case CaptureRole::Record:
      record_kernel(thunk, std::make_shared<Closure>(Closure{kernel, std::tuple<Params...>(std::forward<Args>(args)...)}),
                    grid, block, shared_bytes, sync);
      return cudaSuccess;
    case CaptureRole::Illegal: break;
  }
  return capture_violation(cudaErrorStreamCaptureImplicit);
}

// ---- warp / block synchronisation (fiber mode only) ---------------------------
void syncthreads();
void syncwarp();
// All live lanes of the warp deposit `bits`; returns every lane's deposit and
// the mask of the lanes that deposited (lanes that exit later stay readable).
struct Exchange {
  const uint64_t* slots;  // (32)
  unsigned mask;
};
Exchange warp_exchange(uint64_t bits);
unsigned warp_live_mask();
int lane_id();
void* dynamic_shared();  // the launch's dynamic shared memory (shared_bytes)

template <typename T>
uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8, "warp shuffle of a type wider than 8 bytes");
  uint64_t u = 0;
  std::memcpy(&u, &v, sizeof v);
  return u;
}
template <typename T>
T from_bits(uint64_t u) {
  T v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}
// Generic shuffle: lane reads lane `src(lane)`'s value; out-of-range -> own value.
template <typename T, typename SrcFn>
T shuffle(T v, SrcFn src) {
  Exchange ex = warp_exchange(to_bits(v));
  int s = src(lane_id());
  if (s < 0 || s >= 32 || !((ex.mask >> s) & 1u)) return v;
  return from_bits<T>(ex.slots[s]);
}

}  // namespace emu

#define threadIdx (::emu::g_index.thread_idx)
#define blockIdx (::emu::g_index.block_idx)
#define blockDim (::emu::g_index.block_dim)
#define gridDim (::emu::g_index.grid_dim)
constexpr int warpSize = 32;

inline void __syncthreads() { emu::syncthreads(); }
inline void __syncwarp(unsigned = 0xffffffffu) { emu::syncwarp(); }

// Shuffles: the mask is not interpreted; every live lane of the warp must take
// part (all our kernels use full warps and full masks).
template <typename T>
T __shfl_sync(unsigned, T v, int src_lane, int width = 32) {
  return emu::shuffle(v, [&](int lane) { return (lane / width) * width + (src_lane % width); });
}
template <typename T>
T __shfl_down_sync(unsigned, T v, unsigned delta, int width = 32) {
  return emu::shuffle(v, [&](int lane) {
    return (lane % width) + (int)delta < width ? lane + (int)delta : lane;
  });
}
template <typename T>
T __shfl_up_sync(unsigned, T v, unsigned delta, int width = 32) {
  return emu::shuffle(v, [&](int lane) { return (lane % width) >= (int)delta ? lane - (int)delta : lane; });
}
template <typename T>
T __shfl_xor_sync(unsigned, T v, int lane_mask, int width = 32) {
  return emu::shuffle(v, [&](int lane) {
    int s = lane ^ lane_mask;
    return s < (lane / width + 1) * width ? s : lane;  // later groups: own value
  });
}
inline unsigned __ballot_sync(unsigned, int pred) {
  emu::Exchange ex = emu::warp_exchange(pred != 0 ? 1u : 0u);
  unsigned out = 0;
  for (int l = 0; l < 32; l++)
    if (((ex.mask >> l) & 1u) && ex.slots[l] != 0) out |= 1u << l;
  return out;
}
inline int __any_sync(unsigned m, int pred) { return __ballot_sync(m, pred) != 0; }
inline int __all_sync(unsigned m, int pred) {
  emu::Exchange ex = emu::warp_exchange(pred != 0 ? 1u : 0u);
  for (int l = 0; l < 32; l++)
    if (((ex.mask >> l) & 1u) && ex.slots[l] == 0) return 0;
  return 1;
}
inline unsigned __activemask() { return emu::warp_live_mask(); }
inline int __popc(unsigned x) { return std::popcount(x); }

// ---- atomics (no preemption between fibers: plain read-modify-write) ------------
template <typename T>
T atomicAdd(T* p, T v) {
  T old = *p;
  *p = old + v;
  return old;
}
template <typename T>
T atomicMax(T* p, T v) {
  T old = *p;
  if (v > old) *p = v;
  return old;
}
template <typename T>
T atomicMin(T* p, T v) {
  T old = *p;
  if (v < old) *p = v;
  return old;
}
template <typename T>
T atomicExch(T* p, T v) {
  T old = *p;
  *p = v;
  return old;
}
template <typename T>
T atomicCAS(T* p, T compare, T v) {
  T old = *p;
  if (old == compare) *p = v;
  return old;
}

// ---- runtime API shims over host memory -----------------------------------------
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4
};
cudaError_t cudaMalloc(void** p, size_t bytes);
template <typename T>
cudaError_t cudaMalloc(T** p, size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(p), bytes);
}
cudaError_t cudaFree(void* p);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream = nullptr);
cudaError_t cudaMemset(void* p, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t stream = nullptr);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaGetLastError();
// Streams and graphs: capture records (see emu::capture_role), a graph launch
// replays the recorded nodes in order on the calling thread.
cudaError_t cudaStreamCreate(cudaStream_t* stream);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags = 0);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);
namespace emu {
size_t graph_node_count(cudaGraphExec_t exec);  // the recorded launch list's length
}  // namespace emu
const char* cudaGetErrorString(cudaError_t e);
