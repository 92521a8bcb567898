#pragma once
// ============================================================================
// CUDA graphs for the decode step (docs/cuda.md "CUDA graphs").
//
// DeviceStream: an owning non-default (blocking) stream; a graph can only be
// captured from one, and a blocking stream stays ordered with the legacy
// stream the uploads, downloads and the sampler use.
// StepGraphs: one instantiated graph per step shape. The first step of a shape
// is captured (every launch of `body` recorded with its arguments, nothing
// run), instantiated, then launched; later steps of that shape only launch it.
// A graph bakes in every kernel argument (pointers, row counts, grid sizes), so
// the key must hold every host value the body's launches depend on and the
// per-step data must sit in device buffers the body only reads (tokens,
// positions, block tables); clear() when a captured pointer changes.
// On the GPU these are cudaStreamBeginCapture / cudaGraphInstantiate /
// cudaGraphLaunch; in the emulated build the same calls record the launch list
// and replay it (kernels/emu/cuda_emu.h "stream capture").
// ============================================================================
#include <compare>
#include <functional>
#include <map>

#include "kernels/launch.h"

namespace oracle::optimized {

class DeviceStream {
 public:
  DeviceStream();
  ~DeviceStream();
  DeviceStream(const DeviceStream&) = delete;
  DeviceStream& operator=(const DeviceStream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

// What a decode step's launches depend on besides device memory contents.
struct StepShape {
  int rows = 0;         // rows through the layers
  int first = 0;        // first logits row (rows - 1, or 0 when every row's logits are kept)
  int max_pos = 0;      // the attention chunk grid's position bound
  auto operator<=>(const StepShape&) const = default;
};

class StepGraphs {
 public:
  StepGraphs() = default;
  ~StepGraphs();
  StepGraphs(const StepGraphs&) = delete;
  StepGraphs& operator=(const StepGraphs&) = delete;
  // Runs `body` on `stream` through the graph of `shape`, capturing it first if there is none.
  void run(const StepShape& shape, cudaStream_t stream, const std::function<void()>& body);
  void clear();
  int captured() const { return captured_; }  // graphs captured so far (one per shape)
  int replays() const { return replays_; }    // graph launches so far

 private:
  std::map<StepShape, cudaGraphExec_t> execs_;
  int captured_ = 0, replays_ = 0;
};

}  // namespace oracle::optimized
