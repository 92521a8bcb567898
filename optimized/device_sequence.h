#pragma once
// ============================================================================
// DeviceSequence: one KV sequence of one model on the device
// (reference/generate/speculative.h SequenceRunner): Backend's forward over a
// paged DeviceKv, rollback by DeviceKv::truncate. What the speculative loop
// (generate_speculative_with) runs its target on and ModelDrafter its draft
// model on, so draft passes, verify passes and rollbacks all run on the device.
// verify_round() keeps the round on the device too: the verify pass's logits
// rows stay there, DeviceSampler::distributions turns them into the target's
// processed distributions p, the draft's q (computed by the drafter) and the
// drafts are uploaded, and kernels::speculative_verify applies the accept /
// resample rule; only the accepted count and the emitted tokens come back.
// Bit-identical to ReferenceSequence (logits for any block size; the round's
// tokens to speculative_step).
// ============================================================================
#include <memory>

#include "faults/fault.h"
#include "optimized/backend.h"
#include "optimized/device_sampler.h"
#include "reference/generate/speculative.h"

namespace oracle::optimized {

class DeviceSequence : public SequenceRunner {
 public:
  DeviceSequence(const Model& model, int block_size, const BackendOptions& options = {})
      : model_(model), dev_(model, DeviceKvOptions{1, block_size, 0, false, 0}, options) {}
  const Model& model() const override { return model_; }
  int length() const override { return dev_.kv().length(0); }
  void truncate(int n) override {
    if (fault::active(fault::Fault::DEVICE_SEQUENCE_TRUNCATE_KEEPS_ONE) && n < length()) n++;  // FAULT: one too many
    dev_.kv().truncate(0, n);
  }
  std::vector<float> forward(std::span<const int> tokens, bool all_logits) override {
    return dev_.forward(0, tokens, all_logits);
  }
  SpecStep verify_round(std::span<const int> ext, size_t t, const Draft& d, const rng::RngKey& first,
                        const ProcessedDistribution& dist) override;

 private:
  const Model& model_;
  Backend dev_;
  // verify_round's device buffers, grown as needed and kept across rounds.
  DeviceBuffer<float> p_, q_, ws_f_;  // (m + 1, vocab), (m, vocab), speculative_workspace_floats
  DeviceBuffer<int> drafts_, ws_i_, out_;  // (m), speculative_workspace_ints, (m + 2)
  // The DeviceSampler of the last round, rebuilt only when a round brings another config.
  std::unique_ptr<DeviceSampler> sampler_;
  DeviceSampler& sampler_for(const SamplerConfig& config);
};

}  // namespace oracle::optimized
