// Self-test of the CUDA execution-model emulation (kernels/emu/cuda_emu.h):
// indices, __syncthreads ordering, __shared__ per block, shuffles with widths,
// votes, partial warps, atomics, and the fast path.
#include <catch2/catch.hpp>

#include <vector>

#include "kernels/launch.h"

namespace k = oracle::kernels;

namespace {

// Each thread writes its id to shared memory; after the barrier it reads the
// value of its mirror thread. Without a real barrier the mirror is unwritten.
__global__ void mirror_kernel(int* out) {
  __shared__ int buf[256];
  const int t = threadIdx.x;
  buf[t] = 1000 * blockIdx.x + t;
  __syncthreads();
  int v = buf[blockDim.x - 1 - t];
  __syncthreads();  // everyone has read before anyone overwrites
  buf[t] = -v;
  __syncthreads();
  out[blockIdx.x * blockDim.x + t] = buf[(t + 1) % blockDim.x];
}

// Shuffle variants over the warp; width 16 and 32.
__global__ void shuffle_kernel(int* out) {
  const int lane = threadIdx.x % 32;
  const int base = (blockIdx.x * blockDim.x + threadIdx.x) * 6;
  out[base + 0] = __shfl_down_sync(0xffffffffu, lane, 3);
  out[base + 1] = __shfl_down_sync(0xffffffffu, lane, 3, 16);
  out[base + 2] = __shfl_xor_sync(0xffffffffu, lane, 5);
  out[base + 3] = __shfl_sync(0xffffffffu, lane * 10, 7, 16);
  out[base + 4] = __shfl_up_sync(0xffffffffu, lane, 2);
  float f = __shfl_down_sync(0xffffffffu, 0.5f * (float)lane, 1);
  out[base + 5] = (int)(f * 2.0f);
}

__global__ void vote_kernel(unsigned* out) {
  const int t = threadIdx.x;
  const int warp = t / 32;
  unsigned b = __ballot_sync(0xffffffffu, t % 3 == 0);
  int any = __any_sync(0xffffffffu, t == 40);
  int all = __all_sync(0xffffffffu, t < 1000);
  if (t % 32 == 0) {
    out[warp * 3 + 0] = b;
    out[warp * 3 + 1] = (unsigned)any;
    out[warp * 3 + 2] = (unsigned)all;
  }
}

__global__ void atomic_kernel(int* counter, int* maxv) {
  atomicAdd(counter, 1);
  atomicMax(maxv, (int)(blockIdx.x * blockDim.x + threadIdx.x));
}

__global__ void index_kernel(int* out) {
  const int b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  out[b * blockDim.x * blockDim.y * blockDim.z + t] = b * 1000 + t;
}

k::LaunchConfig config(dim3 grid, dim3 block, bool sync) {
  k::LaunchConfig c;
  c.grid = grid;
  c.block = block;
  c.sync = sync;
  return c;
}

}  // namespace

TEST_CASE("emu: __syncthreads orders shared-memory writes and reads per block", "[emu][selftest]") {
  for (unsigned threads : {1u, 7u, 32u, 33u, 256u}) {
    const unsigned blocks = 3;
    std::vector<int> out(blocks * threads);
    k::launch(config(dim3(blocks), dim3(threads), true), mirror_kernel, out.data());
    for (unsigned b = 0; b < blocks; b++)
      for (unsigned t = 0; t < threads; t++) {
        unsigned reader = (t + 1) % threads;  // value buf[reader] = -(mirror of reader)
        int want = -(int)(1000 * b + (threads - 1 - reader));
        INFO("threads " << threads << " block " << b << " thread " << t);
        REQUIRE(out[b * threads + t] == want);
      }
  }
}

TEST_CASE("emu: warp shuffles follow CUDA semantics (widths, out-of-range lanes)", "[emu][selftest]") {
  const unsigned threads = 64;
  std::vector<int> out(threads * 6);
  k::launch(config(dim3(1), dim3(threads), true), shuffle_kernel, out.data());
  for (unsigned t = 0; t < threads; t++) {
    const int lane = (int)(t % 32);
    const int* o = &out[t * 6];
    INFO("thread " << t);
    CHECK(o[0] == (lane + 3 < 32 ? lane + 3 : lane));
    CHECK(o[1] == (lane % 16 + 3 < 16 ? lane + 3 : lane));
    CHECK(o[2] == (lane ^ 5));
    CHECK(o[3] == ((lane / 16) * 16 + 7) * 10);
    CHECK(o[4] == (lane >= 2 ? lane - 2 : lane));
    CHECK(o[5] == (lane + 1 < 32 ? lane + 1 : lane));
  }
}

TEST_CASE("emu: ballot/any/all over full and partial warps", "[emu][selftest]") {
  const unsigned threads = 48;  // warp 1 has 16 live lanes
  std::vector<unsigned> out(6);
  k::launch(config(dim3(1), dim3(threads), true), vote_kernel, out.data());
  unsigned want0 = 0, want1 = 0;
  for (int l = 0; l < 32; l++) {
    if (l % 3 == 0) want0 |= 1u << l;
    if (l < 16 && (32 + l) % 3 == 0) want1 |= 1u << l;
  }
  CHECK(out[0] == want0);
  CHECK(out[1] == 0u);  // thread 40 is in warp 1
  CHECK(out[2] == 1u);
  CHECK(out[3] == want1);
  CHECK(out[4] == 1u);
  CHECK(out[5] == 1u);
}

TEST_CASE("emu: atomics, 3-D indices and the fast path", "[emu][selftest]") {
  int counter = 0, maxv = -1;
  k::launch(config(dim3(5), dim3(100), false), atomic_kernel, &counter, &maxv);
  CHECK(counter == 500);
  CHECK(maxv == 499);
  for (bool sync : {false, true}) {
    dim3 grid(2, 3, 2), block(4, 2, 3);
    std::vector<int> out(12 * 24, -1);
    k::launch(config(grid, block, sync), index_kernel, out.data());
    for (int b = 0; b < 12; b++)
      for (int t = 0; t < 24; t++) REQUIRE(out[b * 24 + t] == b * 1000 + t);
  }
}
