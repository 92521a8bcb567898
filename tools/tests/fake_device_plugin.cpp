// A CUDA plugin "of another build" for cli_diff.sh cuda_plugin_stale: the entry point
// exists but, as a plugin whose device_abi_key (optimized/device_pipeline.h) differs
// from the loader's would, answers null for every key.
#include <cstdint>

extern "C" __attribute__((visibility("default"))) const void* oracle_device_pipeline(std::uint64_t) {
  return nullptr;
}
