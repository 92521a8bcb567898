// Which device pipeline `--backend` names — see device_backend.h.
#include "tools/device_backend.h"

#include "base/errors.h"

namespace oracle::tools {

#if !defined(ORACLE_TOOLS_HAVE_CUDA)
const DevicePipeline* device_pipeline_cuda() { return nullptr; }
#endif

const DevicePipeline* require_backend(const std::string& backend) {
  if (backend == "reference") return nullptr;
  require_input(backend == "cuda" || backend == "cuda-emu", backend, "--backend",
                "unknown backend (want reference, cuda-emu or cuda)");
  if (backend == "cuda-emu") return &device_pipeline_emu();
  const DevicePipeline* cuda = device_pipeline_cuda();
  require_input(cuda != nullptr, backend, "--backend",
                "this oracle is built without CUDA (configure with -DORACLE_ENABLE_CUDA=ON on a GPU machine); "
                "--backend cuda-emu runs the same kernels emulated on the CPU");
  const std::string why = cuda->unavailable();
  require_input(why.empty(), backend, "--backend", why + "; --backend cuda-emu runs the same kernels emulated on the CPU");
  return cuda;
}

DeviceMode parse_mode(const std::string& mode) {
  if (mode == "deterministic") return DeviceMode::Deterministic;
  if (mode == "fast") return DeviceMode::Fast;
  if (mode == "fast-tf32") return DeviceMode::FastTf32;
  require_input(mode == "fast-bf16", mode, "--mode", "want deterministic, fast, fast-tf32 or fast-bf16");
  return DeviceMode::FastBf16;
}

const char* mode_name(DeviceMode mode) {
  switch (mode) {
    case DeviceMode::Deterministic: return "deterministic";
    case DeviceMode::Fast: return "fast";
    case DeviceMode::FastTf32: return "fast-tf32";
    case DeviceMode::FastBf16: return "fast-bf16";
  }
  return "deterministic";
}

}  // namespace oracle::tools
