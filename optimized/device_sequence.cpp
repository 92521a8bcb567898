// One speculative round's verify pass and rule on the device — see device_sequence.h.
#include "optimized/device_sequence.h"

#include "kernels/speculative.cuh"
#include "optimized/device_sampler.h"
#include "base/errors.h"

namespace oracle::optimized {

// A runner may serve several speculative loops, each with its own config: the
// sampler (and its device buffers) is kept while the config stays the same.
DeviceSampler& DeviceSequence::sampler_for(const SamplerConfig& config) {
  const bool stale = fault::active(fault::Fault::DEVICE_SEQUENCE_SAMPLER_KEPT_ON_NEW_CONFIG)  // FAULT
                         ? !sampler_
                         : !sampler_ || !(sampler_->config() == config);
  if (stale) sampler_ = std::make_unique<DeviceSampler>(config, model_.config.vocab_size);
  return *sampler_;
}

// p row i (position t + i) is predicted by the verify pass's row t + i - 1 - start, so
// the m + 1 rows are contiguous from row t - 1 - start of the logits Backend left on the device.
SpecStep DeviceSequence::verify_round(std::span<const int> ext, size_t t, const Draft& d, const rng::RngKey& first,
                                      const ProcessedDistribution& dist) {
  const int vocab = model_.config.vocab_size, m = (int)d.tokens.size(), start = length();
  require_input(start < (int)t && d.q.size() == (size_t)m * vocab, "speculative", "verify",
                "the target cache must lack the history's last token and q must be (drafts, vocab)");
  dev_.forward(0, ext.subspan((size_t)start), true);
  const size_t first_row = fault::active(fault::Fault::DEVICE_VERIFY_ROWS_FROM_ZERO) ? 0 : t - 1 - (size_t)start;  // FAULT
  const float* rows = dev_.logits_device() + first_row * (size_t)vocab;
  std::vector<SamplingContext> ctx;  // (m + 1) row i conditioned on ext[0 .. t + i)
  for (int i = 0; i <= m; i++) ctx.push_back({ext.first(t + (size_t)i), {dist.config().seed, 0, 0}});
  DeviceSampler& sampler = sampler_for(dist.config());
  p_.reserve((size_t)(m + 1) * vocab), out_.reserve((size_t)m + 2);
  ws_f_.reserve(kernels::speculative_workspace_floats(m, vocab));
  ws_i_.reserve(kernels::speculative_workspace_ints(m, vocab));
  sampler.distributions(rows, ctx, p_.get());  // (m + 1, vocab)
  q_.upload(d.q);                              // (m, vocab)
  drafts_.upload(d.tokens);                    // (m)
  kernels::speculative_verify(out_.get(), p_.get(), q_.get(), drafts_.get(), m, vocab, first.seed, (int)first.seq,
                              (int)first.position, ws_f_.get(), ws_i_.get());
  std::vector<int> host((size_t)m + 2);
  kernels::check_cuda(cudaDeviceSynchronize(), "speculative verify");
  out_.download(host.data(), host.size());
  SpecStep s;
  s.accepted = host[0];
  s.tokens.assign(host.begin() + 1, host.begin() + 2 + s.accepted);
  return s;
}

}  // namespace oracle::optimized
