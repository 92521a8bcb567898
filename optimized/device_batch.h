#pragma once
// ============================================================================
// DeviceBatchEngine: generate_batch's passes and decisions on the device
// (reference/generate/generate.h BatchEngine). One Backend for the batch
// (request i = device KV sequence i, blocks of the batch's KvCacheOptions; its
// prefix cache when paged + prefix_cache), and one DeviceSampler per request
// running its chain on the logits rows where Backend left them. With
// generate_batch_with this is continuous batching on the device: prefill rows
// per request, then one forward_batch per step over the requests still running
// (rows leave as their requests stop). Results equal generate_batch's bit for
// bit (golden_modes verify --backend cuda-emu on golden/modes).
// ============================================================================
#include <memory>
#include <vector>

#include "optimized/backend.h"
#include "optimized/device_sampler.h"
#include "reference/generate/generate.h"

namespace oracle::optimized {

class DeviceBatchEngine : public BatchEngine {
 public:
  // One request per options entry; the KV layout from options[0].kv (contiguous
  // reference caches become device blocks of 16: changes no bit).
  DeviceBatchEngine(const Model& model, const std::vector<GenerateOptions>& options,
                    const BackendOptions& backend = {});
  int attach_prefix(int seq, std::span<const int> prompt) override { return dev_.kv().attach_prefix(seq, prompt); }
  std::vector<float> forward(int seq, std::span<const int> tokens) override { return dev_.forward(seq, tokens); }
  std::vector<float> forward_batch(std::span<const int> seqs, std::span<const int> tokens) override {
    return dev_.forward_batch(seqs, tokens);
  }
  SampledToken sample(int seq, int row, std::span<const float> logits, const SamplingContext& ctx, int top_n) override;
  Backend& backend() { return dev_; }

 private:
  Backend dev_;
  std::vector<std::unique_ptr<DeviceSampler>> samplers_;  // (n requests)
};

DeviceKvOptions device_kv_options(const KvCacheOptions& kv, int max_seqs);

}  // namespace oracle::optimized
