// Self-test of the emulated stream capture and CUDA graphs (kernels/emu/cuda_emu.h,
// "stream capture"): capture records instead of running, kernel arguments are
// copied at capture while buffers are read at replay, the replay is the
// recorded list in order, and what the GPU refuses during a capture (a launch or
// synchronous copy on another stream, allocation, synchronisation) invalidates it.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <vector>

#include "kernels/launch.h"

namespace k = oracle::kernels;

namespace {

__global__ void fill_kernel(int* out, int value, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = value;
}

__global__ void scale_add_kernel(int* out, const int* in, int factor, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = out[i] * factor + in[i];
}

// A warp reduction, so a fiber launch (sync = true) is captured and replayed too.
__global__ void warp_sum_kernel(int* out, const int* in) {
  int v = in[threadIdx.x];
  for (int w = 16; w > 0; w /= 2) v += __shfl_down_sync(0xffffffffu, v, w);
  if (threadIdx.x == 0) out[0] = v;
}

struct Stream {
  cudaStream_t s = nullptr;
  Stream() { k::check_cuda(cudaStreamCreate(&s), "stream"); }
  ~Stream() { cudaStreamDestroy(s); }
};

k::LaunchConfig on(cudaStream_t s, int n, bool sync = false) {
  k::LaunchConfig c = k::flat_launch(n, 32, s);
  c.sync = sync;
  return c;
}

}  // namespace

TEST_CASE("emu graphs: capture records, replay runs the list in order with captured arguments",
          "[emu][graphs]") {
  Stream st;
  const int n = 40;
  std::vector<int> out(n, -1), in(n), sum(1, 0);
  for (int i = 0; i < n; i++) in[i] = i;
  int value = 7;
  const long long before = emu::launches_run();
  REQUIRE(cudaStreamBeginCapture(st.s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  k::launch(on(st.s, n), fill_kernel, out.data(), value, n);
  k::launch(on(st.s, n), scale_add_kernel, out.data(), in.data(), 3, n);
  k::check_cuda(cudaMemcpyAsync(out.data() + 1, out.data(), sizeof(int), cudaMemcpyDeviceToDevice, st.s), "copy");
  k::launch(on(st.s, 32, true), warp_sum_kernel, sum.data(), in.data());
  cudaGraph_t graph = nullptr;
  REQUIRE(cudaStreamEndCapture(st.s, &graph) == cudaSuccess);
  CHECK(emu::launches_run() == before);  // nothing ran during the capture
  CHECK(out[0] == -1);
  cudaGraphExec_t exec = nullptr;
  REQUIRE(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
  cudaGraphDestroy(graph);
  CHECK(emu::graph_node_count(exec) == 4);
  value = 100;      // the kernel argument was copied at capture: the replay still writes 7
  in[5] = 1000;     // buffers are read at replay: the new content is used
  for (int replay = 0; replay < 2; replay++) {
    REQUIRE(cudaGraphLaunch(exec, st.s) == cudaSuccess);
    CHECK(out[0] == 7 * 3 + 0);
    CHECK(out[1] == 7 * 3 + 0);  // the copy ran after the scale_add (list order)
    CHECK(out[5] == 7 * 3 + 1000);
    CHECK(out[n - 1] == 7 * 3 + n - 1);
    CHECK(sum[0] == 1000 + 31 * 32 / 2 - 5);
  }
  CHECK(emu::launches_run() == before + 2 * 3);  // three kernel nodes per replay
  cudaGraphExecDestroy(exec);
}

TEST_CASE("emu graphs: what the GPU refuses during a capture invalidates it", "[emu][graphs]") {
  Stream st;
  std::vector<int> buf(8, 0);
  int* dev = nullptr;
  SECTION("a launch on the legacy stream") {
    REQUIRE(cudaStreamBeginCapture(st.s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    CHECK_THROWS_AS(k::launch(on(nullptr, 8), fill_kernel, buf.data(), 1, 8), std::runtime_error);
    CHECK(buf[0] == 0);
  }
  SECTION("a synchronous copy") {
    REQUIRE(cudaStreamBeginCapture(st.s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    CHECK(cudaMemcpy(buf.data(), buf.data() + 1, 4, cudaMemcpyDeviceToDevice) == cudaErrorStreamCaptureImplicit);
  }
  SECTION("an allocation") {
    REQUIRE(cudaStreamBeginCapture(st.s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    CHECK(cudaMalloc(&dev, 64) == cudaErrorStreamCaptureUnsupported);
  }
  SECTION("a device synchronisation") {
    REQUIRE(cudaStreamBeginCapture(st.s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    CHECK(cudaDeviceSynchronize() == cudaErrorStreamCaptureUnsupported);
  }
  SECTION("an async copy on another stream") {
    Stream other;
    REQUIRE(cudaStreamBeginCapture(st.s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    CHECK(cudaMemcpyAsync(buf.data(), buf.data() + 1, 4, cudaMemcpyDeviceToDevice, other.s) ==
          cudaErrorStreamCaptureImplicit);
  }
  cudaGraph_t graph = nullptr;
  CHECK(cudaStreamEndCapture(st.s, &graph) == cudaErrorStreamCaptureInvalidated);
  CHECK(graph == nullptr);
  // After the failed capture the thread is not capturing: work runs again.
  k::launch(on(st.s, 8), fill_kernel, buf.data(), 5, 8);
  CHECK(buf[7] == 5);
}

TEST_CASE("emu graphs: the legacy stream cannot be captured, captures do not nest", "[emu][graphs]") {
  Stream st;
  CHECK(cudaStreamBeginCapture(nullptr, cudaStreamCaptureModeThreadLocal) == cudaErrorStreamCaptureUnsupported);
  REQUIRE(cudaStreamBeginCapture(st.s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  CHECK(cudaStreamBeginCapture(st.s, cudaStreamCaptureModeThreadLocal) == cudaErrorStreamCaptureUnsupported);
  cudaGraph_t graph = nullptr;
  REQUIRE(cudaStreamEndCapture(st.s, &graph) == cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  REQUIRE(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
  CHECK(emu::graph_node_count(exec) == 0);
  CHECK(cudaGraphLaunch(exec, st.s) == cudaSuccess);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}
