// One speculative round's verify pass and rule on the device — see device_sequence.h.
#include "optimized/device_sequence.h"

#include "kernels/speculative.cuh"
#include "optimized/device_sampler.h"
#include "reference/base/errors.h"

namespace oracle::optimized {

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
  DeviceSampler sampler(dist.config(), vocab);
  DeviceBuffer<float> p((size_t)(m + 1) * vocab), q, wf(kernels::speculative_workspace_floats(m, vocab));
  DeviceBuffer<int> drafts, wi(kernels::speculative_workspace_ints(m, vocab)), out((size_t)m + 2);
  sampler.distributions(rows, ctx, p.get());  // (m + 1, vocab)
  q.upload(d.q);                              // (m, vocab)
  drafts.upload(d.tokens);                    // (m)
  kernels::speculative_verify(out.get(), p.get(), q.get(), drafts.get(), m, vocab, first.seed, (int)first.seq,
                              (int)first.position, wf.get(), wi.get());
  std::vector<int> host((size_t)m + 2);
  kernels::check_cuda(cudaDeviceSynchronize(), "speculative verify");
  out.download(host.data(), host.size());
  SpecStep s;
  s.accepted = host[0];
  s.tokens.assign(host.begin() + 1, host.begin() + 2 + s.accepted);
  return s;
}

}  // namespace oracle::optimized
