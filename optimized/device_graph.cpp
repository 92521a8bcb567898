// CUDA graphs for the decode step — see device_graph.h.
#include "optimized/device_graph.h"

namespace oracle::optimized {

namespace k = oracle::kernels;

DeviceStream::DeviceStream() { k::check_cuda(cudaStreamCreate(&s_), "cudaStreamCreate"); }
DeviceStream::~DeviceStream() {
  if (s_) cudaStreamDestroy(s_);
}

StepGraphs::~StepGraphs() { clear(); }

void StepGraphs::clear() {
  for (auto& [shape, exec] : execs_) cudaGraphExecDestroy(exec);
  execs_.clear();
}

namespace {
// Records `body` on `stream` into an instantiated graph; a failed capture throws
// (the GPU's error) and leaves the stream out of capture mode.
cudaGraphExec_t capture(cudaStream_t stream, const std::function<void()>& body) {
  k::check_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  cudaGraph_t graph = nullptr;
  try {
    body();
  } catch (...) {
    cudaStreamEndCapture(stream, &graph);
    if (graph) cudaGraphDestroy(graph);
    throw;
  }
  k::check_cuda(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
  cudaGraphExec_t exec = nullptr;
  const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  k::check_cuda(e, "cudaGraphInstantiate");
  return exec;
}
}  // namespace

void StepGraphs::run(const StepShape& shape, cudaStream_t stream, const std::function<void()>& body) {
  auto it = execs_.find(shape);
  if (it == execs_.end()) {
    it = execs_.emplace(shape, capture(stream, body)).first;
    captured_++;
  }
  k::check_cuda(cudaGraphLaunch(it->second, stream), "cudaGraphLaunch");
  replays_++;
}

}  // namespace oracle::optimized
