// Which device pipeline `--backend` names — see device_backend.h.
#include "tools/device_backend.h"

#include "reference/base/errors.h"

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
  require_input(mode == "deterministic" || mode == "fast", mode, "--mode", "want deterministic or fast");
  return mode == "fast" ? DeviceMode::Fast : DeviceMode::Deterministic;
}

const char* mode_name(DeviceMode mode) { return mode == DeviceMode::Fast ? "fast" : "deterministic"; }

}  // namespace oracle::tools
