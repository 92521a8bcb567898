// Which device pipeline `--backend` names — see device_backend.h.
#include "tools/device_backend.h"

#include <dlfcn.h>

#include <filesystem>
#include <system_error>

#include "base/errors.h"

namespace oracle::tools {

namespace {

const char* const kEmuHint = "; --backend cuda-emu runs the same kernels emulated on the CPU";

// liboracle_device_cuda.so in the folder of this process's executable.
std::filesystem::path cuda_plugin_path() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (ec ? std::filesystem::path() : exe.parent_path()) / optimized::kDevicePluginFile;
}

// Loads the plugin (once per process: dlopen returns the same handle again; it is
// never closed) and returns its pipeline.
const DevicePipeline& load_cuda_plugin(const std::string& backend) {
  const std::filesystem::path path = cuda_plugin_path();
  std::error_code ec;
  require_input(std::filesystem::exists(path, ec), backend, "--backend",
                "this oracle has no CUDA backend (" + path.string() +
                    " not found: built without CUDA; configure with -DORACLE_ENABLE_CUDA=ON on a machine with nvcc)" +
                    kEmuHint);
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    require_input(false, backend, "--backend", "cannot load " + path.string() + ": " + (why ? why : "dlopen failed") + kEmuHint);
  }
  auto entry = reinterpret_cast<optimized::DevicePluginEntry>(dlsym(handle, optimized::kDevicePluginEntry));
  const DevicePipeline* p = entry ? entry(optimized::device_abi_key()) : nullptr;
  require_input(p != nullptr, backend, "--backend",
                path.string() + " is not this oracle's CUDA backend (another build: rebuild or reinstall both)" + kEmuHint);
  return *p;
}

}  // namespace

bool cuda_backend_installed() {
  std::error_code ec;
  return std::filesystem::exists(cuda_plugin_path(), ec);
}

const DevicePipeline* require_backend(const std::string& backend) {
  if (backend == "reference") return nullptr;
  require_input(backend == "cuda" || backend == "cuda-emu", backend, "--backend",
                "unknown backend (want reference, cuda-emu or cuda)");
  if (backend == "cuda-emu") return &optimized::device_pipeline();
  const DevicePipeline& cuda = load_cuda_plugin(backend);
  const std::string why = cuda.unavailable();
  require_input(why.empty(), backend, "--backend", why + kEmuHint);
  return &cuda;
}

DeviceMode parse_mode(const std::string& mode) {
  if (mode == "deterministic") return DeviceMode::Deterministic;
  if (mode == "fast") return DeviceMode::Fast;
  if (mode == "fast-tf32") return DeviceMode::FastTf32;
  require_input(mode == "fast-bf16", mode, "--mode", "want deterministic, fast, fast-tf32 or fast-bf16");
  return DeviceMode::FastBf16;
}

}  // namespace oracle::tools
