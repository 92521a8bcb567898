#pragma once
// ============================================================================
// Forward pass of a Llama-family transformer over a KV cache.
// Every op follows docs/numerics.md, so the logits at position t are the same
// bits whether t is computed in a prefill, alone, in chunks, with any thread
// count, or next to other sequences in a batch.
//                                     [owner: forward work; contract below]
// ============================================================================
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "reference/compute/kv_cache.h"
#include "reference/compute/tensor_split.h"
#include "reference/model/model.h"
#include "base/memory_budget.h"
#include "base/thread_pool.h"
#include "numerics/profile.h"

namespace oracle {

// Optional observer of named intermediate tensors at each absolute position,
// for `oracle diff`: per layer L "blk.L.attn_norm", "blk.L.q", "blk.L.k" (both
// after RoPE), "blk.L.v", "blk.L.attn_out", "blk.L.attn_proj", "blk.L.ffn_norm",
// "blk.L.ffn_gate", "blk.L.ffn_up", "blk.L.ffn_act", "blk.L.ffn_out",
// "blk.L.resid"; then "output_norm" and "logits" for the rows that return
// logits (docs/numerics.md §4.2). Null trace: nothing is formatted or copied.
struct Trace {
  std::function<void(const std::string& name, int pos, std::span<const float> values)> emit;
};

struct ForwardOptions {
  int threads = 1;          // splits work over rows/heads only: changes no bit
  bool all_logits = false;  // logits for every position instead of only the last
  int first_logit = 0;      // with all_logits: only rows [first_logit, n) of this call return logits
  // With all_logits, one rank and no trace: those logits are handed to the sink in
  // consecutive blocks of at most logits_block rows — (row - first_logit, (rows, vocab)) —
  // instead of being returned (forward returns an empty vector); each row's bits are
  // the returned ones, and only one block is live at a time (oracle certify).
  std::function<void(int row, std::span<const float> logits)> logits_sink;
  int logits_block = 8;
  Trace* trace = nullptr;
  // Persistent pool owned by the caller (e.g. a serving context); when null and
  // threads > 1, forward() makes a pool of `threads` threads for the call.
  ThreadPool* pool = nullptr;
  // Tensor parallelism (tensor_split.h): this rank's slices, all-gathered
  // through split->all_gather; the KV cache must be built with
  // kv_slice_config(). Null: one rank. Changes no bit of the logits.
  const TensorSplit* split = nullptr;
  // Operation orders (numerics/profile.h). Canonical is the golden/ contract;
  // Ggml models llama.cpp's CPU backend (refused with InputError field
  // "numerics" where a path does not implement it).
  num::NumericsProfile numerics = num::NumericsProfile::Canonical;
};

// Runs `tokens` at positions kv.length() .. kv.length()+n-1 of sequence `seq`,
// appending their K/V. Returns logits: (n - first_logit with all_logits, else 1;
// vocab_size) row-major.
// Throws InputError (fields "token", "position", "tokens", kv_cache "max_tokens")
// before or while appending; a failed call leaves the cache unchanged.
// Prefix caching: n = kv.attach_prefix(seq, prompt), then run prompt[n..].
std::vector<float> forward(const Model& model, KvCache& kv, int seq, std::span<const int> tokens,
                           const ForwardOptions& options = {});

// One decode step for many sequences at once (continuous batching): entry i
// appends tokens[i] to sequence seqs[i]. Returns (n_seqs, vocab_size) logits,
// each row bit-identical to decoding that sequence alone.
std::vector<float> forward_batch(const Model& model, KvCache& kv, std::span<const int> seqs,
                                 std::span<const int> tokens, const ForwardOptions& options = {});

// Admission control (base/memory_budget.h): the bytes of scratch one call allocates,
// computed before anything is: per row (one entry of `positions`, its position) the
// RunState buffers on this rank's slices `s` — x, xb, proj (dim); att (n_heads * head_dim);
// act (hidden_dim); q, att_local (s.q_rows); k, v (s.kv_rows); proj_local (s.dim_rows);
// gate, up (s.hidden_rows); the RoPE cos/sin rows (head_dim / 2 each) — as float32, its
// K/V row pointers (2 * (pos + 1)) and their offset (a long); then for `logit_rows` rows
// the head's normed input (dim) and this rank's logits (s.vocab_rows), plus the gathered
// logits (vocab_size) when ranks > 1. A pure function of its arguments (saturating).
uint64_t activation_bytes(const Config& c, const SliceLayout& s, int ranks, std::span<const int> positions,
                          uint64_t logit_rows);

// InputError (file "forward", field "tokens") when activation_bytes(...) exceeds
// `available` (forward passes memory_available(); tests inject it).
void admit_activations(const Config& c, const SliceLayout& s, int ranks, std::span<const int> positions,
                       uint64_t logit_rows, const MemoryAvailable& available);

}  // namespace oracle
