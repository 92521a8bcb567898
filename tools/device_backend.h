#pragma once
// The device pipelines behind the CLI's `--backend` option (docs/diff.md).
// The interface is optimized/device_pipeline.h. Every `oracle` binary carries the
// host emulation of the kernels ("cuda-emu", linked in); a build with CUDA puts
// the real kernels ("cuda") in the plugin liboracle_device_cuda.so beside the
// binary, loaded only when `--backend cuda` is asked (docs/design.md "Backends").
#include <string>

#include "optimized/device_pipeline.h"

namespace oracle::tools {

using optimized::DeviceMode;
using optimized::DevicePipeline;
using optimized::FastOpCheck;
using optimized::is_fast;
using optimized::mode_name;

// "reference" -> null; "cuda-emu" -> the emulated pipeline; "cuda" -> the plugin's
// pipeline if it loads and can run here. Else InputError(backend, "--backend", ...):
// unknown name, no plugin beside the binary (built without CUDA), a plugin that does
// not load or is from another build, no GPU.
const DevicePipeline* require_backend(const std::string& backend);
// Whether the CUDA plugin is installed beside this binary (oracle version lists "cuda"
// then); it is not loaded.
bool cuda_backend_installed();
// "deterministic" | "fast" | "fast-tf32" | "fast-bf16" -> DeviceMode; InputError(mode, "--mode") otherwise.
DeviceMode parse_mode(const std::string& mode);

}  // namespace oracle::tools
