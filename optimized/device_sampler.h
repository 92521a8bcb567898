#pragma once
// ============================================================================
// DeviceSampler: the reference sampler chain (reference/sampling/sampler.h)
// run on the device, over logits rows that are already there (Backend's
// logits_device()). Every processor of both presets' orders — logit bias,
// banned ids, penalties, temperature, top-k, top-p, min-p — then the selector
// (greedy argmax, or the Philox inverse-CDF draw), and the raw/processed
// logprob report, each a kernel from kernels/sampler_edit.cuh,
// kernels/sampler_filter.cuh, kernels/sampler.cuh, kernels/softmax.cuh,
// kernels/argmax.cuh and kernels/logprobs.cuh. Only the configuration logic
// (which processor runs, in which order, whether it is off) and the errors
// are host code. Token, processed candidates and logprobs equal sample() +
// logprob_report() bit for bit (test_kernels_emu [sampler_chain]).
// ============================================================================
#include <span>
#include <vector>

#include "optimized/device_buffer.h"
#include "reference/sampling/logprobs.h"
#include "reference/sampling/sampler.h"

namespace oracle::optimized {

struct DeviceSample {
  int token = -1;
  LogprobReport logprobs;
};

class DeviceSampler {
 public:
  // The config is validated by the caller (validate(config, vocab)).
  DeviceSampler(const SamplerConfig& config, int vocab);

  // rows: logits (R, vocab) on the device; ctx[r] the row's history and key
  // (every key's seed must be the config's). InputError as the reference
  // selectors: every candidate removed, every logit NaN, no non-zero probability.
  std::vector<DeviceSample> sample(const float* logits, std::span<const SamplingContext> ctx, int top_n);
  // The processed distributions (reference ProcessedDistribution) of R rows on the
  // device into out (R, vocab) on the device: the config's processors, then the
  // survivors' softmax (0 for every removed id), or for a greedy config the
  // one-hot vector of the greedy choice. ctx[r].history: the row's history (the
  // keys are not used). InputError as ProcessedDistribution.
  void distributions(const float* logits, std::span<const SamplingContext> ctx, float* out);
  // Row r's candidates after the last sample(): ids in id order, processed
  // logits and their probabilities (softmax over the survivors, as the
  // reference selectors' compute_probs).
  Candidates processed(int r) const;
  const SamplerConfig& config() const { return config_; }

 private:
  void reserve(int R);
  void apply(Processor processor, int R);
  void sort(const float* values, int R);  // order_ <- rank order of values over the candidates
  void compact(int R);
  void upload_histories(std::span<const SamplingContext> ctx);
  void process(const float* logits, std::span<const SamplingContext> ctx);
  void require_alive(int R);
  std::vector<int> select(std::span<const SamplingContext> ctx);  // candidate index per row
  std::vector<LogprobReport> report(const float* logits, const std::vector<int>& selected, int top_n);

  SamplerConfig config_;
  std::vector<Processor> processors_;  // config.order, or the preset's
  int vocab_;
  int rows_ = 0;      // capacity
  int last_rows_ = 0;
  DeviceBuffer<int> ids_, counts_, keep_, order_, seen_, target_, rank_;  // (R, vocab) / (R, n_pad) / (R)
  DeviceBuffer<float> x_, probs_, lp_, u_;
  DeviceBuffer<int> bias_ids_, banned_, histories_, offsets_, seq_, pos_, selected_;
  DeviceBuffer<float> bias_;
};

}  // namespace oracle::optimized
