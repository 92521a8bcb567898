// DeviceBatchEngine — see device_batch.h.
#include "optimized/device_batch.h"

#include "faults/fault.h"

namespace oracle::optimized {

DeviceKvOptions device_kv_options(const KvCacheOptions& kv, int max_seqs) {
  DeviceKvOptions o;
  o.max_seqs = max_seqs;
  o.block_size = kv.paged ? kv.block_size : 16;
  o.prefix_cache = kv.paged && kv.prefix_cache;
  o.prefix_key = kv.prefix_key;
  return o;
}

DeviceBatchEngine::DeviceBatchEngine(const Model& model, const std::vector<GenerateOptions>& options,
                                     const BackendOptions& backend)
    : dev_(model, device_kv_options(options.empty() ? KvCacheOptions{} : options[0].kv,
                                    std::max<int>(1, (int)options.size())),
           backend) {
  for (const GenerateOptions& o : options) {
    validate(o.sampler, model.config.vocab_size);  // before anything reaches the device
    samplers_.push_back(std::make_unique<DeviceSampler>(o.sampler, model.config.vocab_size));
  }
}

SampledToken DeviceBatchEngine::sample(int seq, int row, std::span<const float>, const SamplingContext& ctx, int top_n) {
  if (fault::active(fault::Fault::DEVICE_BATCH_SAMPLES_ROW0)) row = 0;  // FAULT: every request samples row 0
  const float* rows = dev_.logits_device() + (size_t)row * (size_t)dev_.config().vocab_size;
  DeviceSample d = samplers_[(size_t)seq]->sample(rows, std::span<const SamplingContext>(&ctx, 1), top_n)[0];
  return {d.token, std::move(d.logprobs)};
}

}  // namespace oracle::optimized
