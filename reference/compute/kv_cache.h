#pragma once
// ============================================================================
// KV cache: contiguous or paged (fixed-size blocks, per-sequence block tables,
// pool allocator, reference-counted copy-on-write blocks, prefix caching),
// with exact rollback. Attention reads K/V one position at a time through
// key()/value(), so paged and contiguous give the same bits.
//                                     [owner: forward work; contract below]
// ============================================================================
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "reference/model/model.h"

namespace oracle {

struct KvCacheOptions {
  bool paged = false;
  int block_size = 16;      // tokens per block (paged)
  int max_seqs = 1;
  int max_tokens = 0;       // paged: pool capacity in tokens (0: max_seqs * seq_len)
  // Storage is allocated as the request needs it, never the whole context up
  // front: contiguous sequences grow (doubling, capped at seq_len) from an
  // initial `reserve_tokens` (e.g. prompt + max_tokens; 0: 16) and paged
  // blocks are allocated when first used, up to max_tokens.
  int reserve_tokens = 0;
  bool prefix_cache = true; // paged: share blocks of identical token prefixes
  uint64_t prefix_key = 0;  // model/tokenizer hash + anything that changes K/V
  // int8 KV-cache mode (oracle certify --candidate-kv-int8): forward() passes every
  // K and V row it stores through an I8_ROW quantize-dequantize (per-row scale
  // max|x|/127, quantize.h int8_row_roundtrip). Storage stays float32.
  bool int8 = false;
};

struct KvMemoryReport {
  uint64_t bytes_per_token = 0;   // 2 * L * H_kv * D_h * sizeof(float)
  uint64_t bytes_allocated = 0;   // storage allocated now (contiguous capacity, or blocks created)
  uint64_t bytes_formula = 0;     // bytes_per_token * tokens_stored: 2 * L * T * H_kv * D_h * 4
  int blocks_total = 0, blocks_used = 0, blocks_free = 0;
  double internal_fragmentation = 0.0;  // unused slots in used blocks / slots in used blocks
  int prefix_hits = 0;                  // blocks reused from the prefix cache
  int blocks_cached = 0;      // free blocks still holding a cached prefix (evictable)
  uint64_t tokens_logical = 0;  // sum of all sequence lengths
  uint64_t tokens_stored = 0;   // K/V rows physically stored (shared blocks once)
};

class KvCache {
 public:
  KvCache(const Config& config, const KvCacheOptions& options);
  ~KvCache();
  KvCache(KvCache&&) noexcept;
  KvCache& operator=(KvCache&&) noexcept;

  int length(int seq) const;                 // tokens stored for `seq`
  void truncate(int seq, int n);             // rollback to n tokens (n <= length)
  void release(int seq);                     // sequence leaves: frees its blocks
  void fork(int src, int dst);               // dst shares src's blocks (copy-on-write)
  // Reserve position kv.length(seq) for `token` (used for prefix caching) and
  // return its index; K/V rows are then written through key_mut/value_mut.
  int append(int seq, int token);
  float* key_mut(int seq, int layer, int pos);      // (n_kv_heads * head_dim)
  float* value_mut(int seq, int layer, int pos);    // (n_kv_heads * head_dim)
  const float* key(int seq, int layer, int pos) const;
  const float* value(int seq, int layer, int pos) const;
  // Prefix caching (paged, prefix_cache on; `seq` must be empty): shares the
  // cached full blocks whose token ids equal a prefix of `tokens`, appending
  // those tokens to `seq` without recomputing K/V. At most tokens.size() - 1
  // tokens are reused so the caller always runs >= 1 token. Returns how many
  // tokens were attached (a multiple of block_size; 0 when contiguous).
  int attach_prefix(int seq, std::span<const int> tokens);
  std::span<const int> tokens(int seq) const;  // token ids stored for `seq`
  // Paged bookkeeping, for audits and tests (empty / 0 when contiguous): the
  // physical blocks of `seq` in position order, and a block's reference count.
  std::span<const int> block_table(int seq) const;
  int block_refcount(int block) const;
  KvMemoryReport memory_report() const;
  const KvCacheOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace oracle
