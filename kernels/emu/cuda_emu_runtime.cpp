// Host emulation of the CUDA runtime API: memory over host memory, streams, and
// stream capture into graphs whose launch is a replay of the recorded nodes.
// See kernels/emu/cuda_emu.h ("stream capture") for the rules it enforces.
//
// Streams: the emulation runs every operation when it is issued, in issue
// order, so a stream is only an identity (which stream a capture records).
// Capture is per OS thread (cudaStreamCaptureModeThreadLocal semantics for
// every mode): only operations issued by the capturing thread are checked.
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/emu/cuda_emu.h"

// One recorded operation: a kernel (thunk + its owned argument closure) or a copy / set.
struct GraphNode {
  enum class Kind { Kernel, Copy, Set } kind = Kind::Kernel;
  emu::KernelThunk thunk = nullptr;
  std::shared_ptr<void> closure;  // the kernel's arguments, copied at capture
  dim3 grid, block;
  size_t shared_bytes = 0;
  bool sync = false;
  void* dst = nullptr;  // Copy / Set
  const void* src = nullptr;
  size_t bytes = 0;
  int value = 0;
};

struct emu_stream {
  int unused = 0;
};
struct emu_graph {
  std::vector<GraphNode> nodes;
};
struct emu_graph_exec {
  std::vector<GraphNode> nodes;
};

namespace {

struct CaptureState {
  cudaStream_t stream = nullptr;  // the stream being captured (valid while active)
  bool active = false;
  bool invalidated = false;
  std::vector<GraphNode> nodes;
};
thread_local CaptureState t_capture;

// A call the GPU prohibits while this thread captures (sync copies, allocation, synchronisation).
bool prohibited_now() { return t_capture.active; }

void run_node(const GraphNode& n) {
  switch (n.kind) {
    case GraphNode::Kind::Kernel:
      emu::launch_raw(n.thunk, n.closure.get(), n.grid, n.block, n.shared_bytes, n.sync);
      break;
    case GraphNode::Kind::Copy:
      if (n.bytes) std::memmove(n.dst, n.src, n.bytes);
      break;
    case GraphNode::Kind::Set:
      if (n.bytes) std::memset(n.dst, n.value, n.bytes);
      break;
  }
}

}  // namespace

namespace emu {

// The role of an operation issued on `stream` while this thread may be capturing.
CaptureRole capture_role(cudaStream_t stream) {
  if (!t_capture.active) return CaptureRole::None;
  return stream == t_capture.stream ? CaptureRole::Record : CaptureRole::Illegal;
}

void record_kernel(KernelThunk thunk, std::shared_ptr<void> closure, dim3 grid, dim3 block, size_t shared_bytes,
                   bool sync) {
  GraphNode n;
  n.thunk = thunk, n.closure = std::move(closure), n.grid = grid, n.block = block;
  n.shared_bytes = shared_bytes, n.sync = sync;
  t_capture.nodes.push_back(std::move(n));
}

cudaError_t capture_violation(cudaError_t error) {
  t_capture.invalidated = true;
  return error;
}

size_t graph_node_count(cudaGraphExec_t exec) { return exec ? exec->nodes.size() : 0; }

}  // namespace emu

// ---- memory ----------------------------------------------------------------------
cudaError_t cudaMalloc(void** p, size_t bytes) {
  if (prohibited_now()) return emu::capture_violation(cudaErrorStreamCaptureUnsupported);
  *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFree(void* p) {
  if (prohibited_now()) return emu::capture_violation(cudaErrorStreamCaptureUnsupported);
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind) {
  if (prohibited_now()) return emu::capture_violation(cudaErrorStreamCaptureImplicit);  // the legacy stream
  if (bytes) std::memmove(dst, src, bytes);
  return cudaSuccess;
}
// An async copy or set on `stream`: run now, recorded (the stream is captured) or refused
// (another stream is captured: the GPU's implicit-dependency error).
static cudaError_t issue_async(cudaStream_t stream, const GraphNode& node) {
  switch (emu::capture_role(stream)) {
    case emu::CaptureRole::None: run_node(node); return cudaSuccess;
    case emu::CaptureRole::Record: t_capture.nodes.push_back(node); return cudaSuccess;
    case emu::CaptureRole::Illegal: break;
  }
  return emu::capture_violation(cudaErrorStreamCaptureImplicit);
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind, cudaStream_t stream) {
  GraphNode n;
  n.kind = GraphNode::Kind::Copy, n.dst = dst, n.src = src, n.bytes = bytes;
  return issue_async(stream, n);
}
cudaError_t cudaMemset(void* p, int value, size_t bytes) {
  if (prohibited_now()) return emu::capture_violation(cudaErrorStreamCaptureImplicit);
  if (bytes) std::memset(p, value, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t stream) {
  GraphNode n;
  n.kind = GraphNode::Kind::Set, n.dst = p, n.bytes = bytes, n.value = value;
  return issue_async(stream, n);
}

// ---- synchronisation and errors ----------------------------------------------------
cudaError_t cudaDeviceSynchronize() {
  return prohibited_now() ? emu::capture_violation(cudaErrorStreamCaptureUnsupported) : cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) {
  return prohibited_now() ? emu::capture_violation(cudaErrorStreamCaptureUnsupported) : cudaSuccess;
}
cudaError_t cudaGetLastError() { return cudaSuccess; }
const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument (emulated)";
    case cudaErrorMemoryAllocation: return "out of memory (emulated)";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing (emulated)";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture (emulated)";
    case cudaErrorStreamCaptureImplicit: return "operation would make the legacy stream depend on a capturing blocking stream (emulated)";
  }
  return "unknown error (emulated)";
}

// ---- streams and graphs --------------------------------------------------------------
cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  if (prohibited_now()) return emu::capture_violation(cudaErrorStreamCaptureUnsupported);
  *stream = new emu_stream;
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (t_capture.active && stream == t_capture.stream) return cudaErrorStreamCaptureUnsupported;
  delete stream;
  return cudaSuccess;
}
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode) {
  if (stream == nullptr || t_capture.active) return cudaErrorStreamCaptureUnsupported;  // legacy stream / nested
  t_capture = CaptureState{stream, true, false, {}};
  return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  *graph = nullptr;
  if (!t_capture.active || stream != t_capture.stream) return cudaErrorInvalidValue;
  CaptureState done = std::move(t_capture);
  t_capture = CaptureState{};
  if (done.invalidated) return cudaErrorStreamCaptureInvalidated;
  *graph = new emu_graph{std::move(done.nodes)};
  return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  if (!graph) return cudaErrorInvalidValue;
  *exec = new emu_graph_exec{graph->nodes};
  return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  if (!exec) return cudaErrorInvalidValue;
  if (emu::capture_role(stream) != emu::CaptureRole::None) return emu::capture_violation(cudaErrorStreamCaptureUnsupported);
  for (const GraphNode& n : exec->nodes) run_node(n);
  return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec;
  return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete graph;
  return cudaSuccess;
}
