// The sampler chain on the device — see device_sampler.h.
#include "optimized/device_sampler.h"

#include <algorithm>

#include "kernels/argmax.cuh"
#include "kernels/logprobs.cuh"
#include "kernels/sampler.cuh"
#include "kernels/sampler_edit.cuh"
#include "kernels/sampler_filter.cuh"
#include "kernels/softmax.cuh"
#include "numerics/numerics.h"
#include "numerics/philox.h"
#include "base/errors.h"

namespace oracle::optimized {

namespace k = oracle::kernels;

DeviceSampler::DeviceSampler(const SamplerConfig& config, int vocab)
    : config_(config), processors_(config.order.empty() ? preset_order(config.preset) : config.order), vocab_(vocab) {
  std::vector<int> bias_ids;
  std::vector<float> bias;
  for (const auto& [id, b] : config.logit_bias) bias_ids.push_back(id), bias.push_back(b);
  bias_ids_.upload(bias_ids);
  bias_.upload(bias);
  std::vector<int> banned = config.banned_tokens;
  std::sort(banned.begin(), banned.end());
  banned_.upload(banned);
}

void DeviceSampler::reserve(int R) {
  if (R <= rows_) return;
  const size_t n = (size_t)R * vocab_, n_pad = (size_t)R * k::rank_order_stride(vocab_);
  ids_.resize(n), keep_.resize(n), seen_.resize(n), x_.resize(n), probs_.resize(n), lp_.resize(n);
  order_.resize(n_pad);
  counts_.resize(R), target_.resize(R), rank_.resize(R), u_.resize(R), seq_.resize(R), pos_.resize(R);
  selected_.resize(R), offsets_.resize((size_t)R + 1);
  rows_ = R;
}

void DeviceSampler::sort(const float* values, int R) {
  k::rank_sort_rows_counted(order_.get(), values, counts_.get(), R, vocab_);
}

void DeviceSampler::compact(int R) { k::candidates_compact(ids_.get(), x_.get(), counts_.get(), keep_.get(), R, vocab_); }

// One processor of the chain, the reference's off-switches first (sampler_processors.cpp).
void DeviceSampler::apply(Processor processor, int R) {
  const SamplerConfig& c = config_;
  const bool hf = c.preset == Preset::Hf;
  switch (processor.id()) {
  case Processor::LogitBias:
    k::logit_bias_rows(x_.get(), ids_.get(), counts_.get(), bias_ids_.get(), bias_.get(), (int)c.logit_bias.size(),
                       R, vocab_);
    return;
  case Processor::Banned:
    if (c.banned_tokens.empty()) return;
    k::banned_mark_rows(keep_.get(), ids_.get(), counts_.get(), banned_.get(), (int)c.banned_tokens.size(), R, vocab_);
    compact(R);
    return;
  case Processor::Penalties:
    k::penalties_rows(x_.get(), seen_.get(), ids_.get(), counts_.get(), histories_.get(), offsets_.get(),
                      c.penalty_window, c.repetition_penalty, c.frequency_penalty, c.presence_penalty, R, vocab_);
    return;
  case Processor::Temperature:
    k::temperature_rows(x_.get(), counts_.get(), c.temperature, R, vocab_);
    return;
  case Processor::TopK:
    if (c.top_k <= 0) return;
    sort(x_.get(), R);
    k::top_k_mark(keep_.get(), x_.get(), order_.get(), counts_.get(), hf ? std::max(c.top_k, c.min_keep) : c.top_k,
                  hf, R, vocab_);
    compact(R);
    return;
  case Processor::TopP:
    if (c.top_p >= 1.0f) return;
    k::softmax_rows_counted(probs_.get(), x_.get(), counts_.get(), R, vocab_);
    sort(probs_.get(), R);
    k::top_p_mark(keep_.get(), probs_.get(), order_.get(), counts_.get(), c.top_p, c.min_keep, hf, R, vocab_);
    compact(R);
    return;
  case Processor::MinP: {
    if (c.min_p <= 0.0f) return;
    if (hf) k::softmax_rows_counted(probs_.get(), x_.get(), counts_.get(), R, vocab_);
    const float* values = hf ? probs_.get() : x_.get();
    sort(values, R);
    k::min_p_mark(keep_.get(), values, order_.get(), counts_.get(), c.min_p, c.min_keep, hf, R, vocab_);
    compact(R);
    return;
  }
  }
}

void DeviceSampler::upload_histories(std::span<const SamplingContext> ctx) {
  std::vector<int> all, offsets{0}, seq, pos;
  for (const SamplingContext& c : ctx) {
    all.insert(all.end(), c.history.begin(), c.history.end());
    offsets.push_back((int)all.size());
    seq.push_back((int)c.rng.seq), pos.push_back((int)c.rng.position);
    require_input(c.rng.seed == config_.seed, "sampler", "seed", "a row's RNG key has another seed than the config");
  }
  histories_.upload(all);
  offsets_.upload(offsets);
  seq_.upload(seq);
  pos_.upload(pos);
}

// The candidates of every row through the config's processors (ids_, x_, counts_).
void DeviceSampler::process(const float* logits, std::span<const SamplingContext> ctx) {
  const int R = (int)ctx.size();
  reserve(R);
  upload_histories(ctx);
  k::candidates_init(ids_.get(), x_.get(), counts_.get(), logits, R, vocab_);
  for (Processor p : processors_) apply(p, R);
}

// The reference's error when a row has no candidate left.
void DeviceSampler::require_alive(int R) {
  std::vector<int> counts(R);
  counts_.download(counts.data(), R);
  for (int n : counts) require_input(n > 0, "sampler", "banned_tokens", "every candidate was removed");
}

// The selector: the candidate index each row picks (reference GreedySelector / DrawSelector).
std::vector<int> DeviceSampler::select(std::span<const SamplingContext> ctx) {
  const int R = (int)ctx.size();
  std::vector<int> sel(R);
  require_alive(R);
  k::softmax_rows_counted(probs_.get(), x_.get(), counts_.get(), R, vocab_);
  const bool greedy = config_.temperature <= 0.0f;
  if (greedy) {
    k::argmax_rows_counted(selected_.get(), x_.get(), counts_.get(), R, vocab_);
  } else {
    sort(probs_.get(), R);
    k::philox_uniforms(u_.get(), seq_.get(), pos_.get(), R, config_.seed, rng::kPurposeSample);
    k::draw_rows_counted(selected_.get(), probs_.get(), counts_.get(), order_.get(), u_.get(), R, vocab_);
  }
  kernels::check_cuda(cudaDeviceSynchronize(), "sampler");
  selected_.download(sel.data(), R);
  for (int s : sel)
    require_input(s >= 0, "sampler", "logits", greedy ? "every logit is NaN" : "no candidate has a non-zero probability");
  return sel;
}

// Rank and top-n of one log-softmax (lp_ over `counts`, null = the whole vocabulary) for
// row r's target index; ids null = index is the id.
static void rank_and_top(LogprobReport* rep, bool raw, const std::vector<int>& rank, const std::vector<int>& order,
                         const std::vector<float>& lp, const std::vector<int>* ids, int n, int top_n, int target) {
  std::vector<TokenLogprob> top;
  for (int i = 0; i < std::min(n, std::max(top_n, 0)); i++)
    top.push_back({ids ? (*ids)[order[i]] : order[i], lp[order[i]]});
  float logprob = rank[0] > 0 ? lp[target] : -oracle::num::inf_f32();
  if (raw) rep->raw_logprob = logprob, rep->raw_rank = rank[0], rep->raw_top = std::move(top);
  else rep->processed_logprob = logprob, rep->processed_rank = rank[0], rep->processed_top = std::move(top);
}

std::vector<LogprobReport> DeviceSampler::report(const float* logits, const std::vector<int>& selected, int top_n) {
  const int R = (int)selected.size(), n_pad = k::rank_order_stride(vocab_);
  std::vector<LogprobReport> out(R);
  std::vector<int> counts(R), ids((size_t)vocab_), order((size_t)n_pad), rank(1);
  std::vector<float> lp((size_t)vocab_);
  counts_.download(counts.data(), R);
  for (int pass = 0; pass < 2; pass++) {  // 0: raw (whole vocabulary), 1: processed (the candidates)
    const bool raw = pass == 0;
    const int* counts_dev = raw ? nullptr : counts_.get();
    k::log_softmax_rows_counted(lp_.get(), raw ? logits : x_.get(), counts_dev, R, vocab_);
    k::rank_sort_rows_counted(order_.get(), lp_.get(), counts_dev, R, vocab_);
    std::vector<int> target(R);
    for (int r = 0; r < R; r++) {
      ids_.download(&ids[0], 1, (size_t)r * vocab_ + (size_t)selected[r]);
      target[r] = raw ? ids[0] : selected[r];
      out[r].token = ids[0];
    }
    target_.upload(target.data(), R);
    k::rank_position_rows(rank_.get(), order_.get(), counts_dev, target_.get(), R, vocab_);
    kernels::check_cuda(cudaDeviceSynchronize(), "logprobs");
    for (int r = 0; r < R; r++) {
      const int n = raw ? vocab_ : counts[r];
      rank_.download(rank.data(), 1, (size_t)r);
      order_.download(order.data(), (size_t)n, (size_t)r * n_pad);
      lp_.download(lp.data(), (size_t)n, (size_t)r * vocab_);
      if (!raw) ids_.download(ids.data(), (size_t)n, (size_t)r * vocab_);
      rank_and_top(&out[r], raw, rank, order, lp, raw ? nullptr : &ids, n, top_n, target[r]);
    }
  }
  return out;
}

std::vector<DeviceSample> DeviceSampler::sample(const float* logits, std::span<const SamplingContext> ctx, int top_n) {
  const int R = (int)ctx.size();
  if (R == 0) return {};
  process(logits, ctx);
  const std::vector<int> sel = select(ctx);
  last_rows_ = R;
  std::vector<LogprobReport> reps = report(logits, sel, top_n);
  std::vector<DeviceSample> out(R);
  for (int r = 0; r < R; r++) out[r] = {reps[r].token, std::move(reps[r])};
  return out;
}

void DeviceSampler::distributions(const float* logits, std::span<const SamplingContext> ctx, float* out) {
  const int R = (int)ctx.size();
  if (R == 0) return;
  process(logits, ctx);
  require_alive(R);
  const bool greedy = config_.temperature <= 0.0f;
  if (greedy) {
    k::argmax_rows_counted(selected_.get(), x_.get(), counts_.get(), R, vocab_);
    std::vector<int> sel(R);
    selected_.download(sel.data(), R);
    for (int s : sel) require_input(s >= 0, "sampler", "logits", "every logit is NaN");
  } else {
    k::softmax_rows_counted(probs_.get(), x_.get(), counts_.get(), R, vocab_);
  }
  k::candidates_scatter(out, ids_.get(), probs_.get(), counts_.get(), greedy ? selected_.get() : nullptr, R, vocab_,
                        vocab_);
  last_rows_ = 0;  // processed() describes sample() only
}

Candidates DeviceSampler::processed(int r) const {
  require_input(r >= 0 && r < last_rows_, "sampler", "row", "no such row in the last sample()");
  int n = 0;
  counts_.download(&n, 1, (size_t)r);
  std::vector<int> ids((size_t)n);
  std::vector<float> x((size_t)n), p((size_t)n);
  ids_.download(ids.data(), (size_t)n, (size_t)r * vocab_);
  x_.download(x.data(), (size_t)n, (size_t)r * vocab_);
  probs_.download(p.data(), (size_t)n, (size_t)r * vocab_);
  Candidates c;
  for (int i = 0; i < n; i++) c.items.push_back({ids[(size_t)i], x[(size_t)i], p[(size_t)i]});
  return c;
}

}  // namespace oracle::optimized
