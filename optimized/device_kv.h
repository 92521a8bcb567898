#pragma once
// ============================================================================
// DeviceKv: the paged KV cache on the device, with the reference KvCache's
// bookkeeping (reference/compute/kv_cache.h, paged mode) so the two can be
// compared block for block. Per layer a K pool and a V pool of fixed-size
// blocks; per sequence a block table (host copy + device copy) mapping
// logical block pos / block_size to a pool block.
//   * reference counts: fork() shares every block of a sequence; a write into
//     a block with refcount > 1, or into a block held by the prefix cache, first
//     copies its filled slots to a fresh block (copy-on-write, on the device);
//   * prefix cache: a block that becomes full is keyed by (prefix_key, every
//     token id of the sequence up to its end); attach_prefix() shares the
//     cached blocks that match a prompt; released cached blocks stay cached
//     (evictable, least recently released first) until the pool needs them;
//   * allocation order: released blocks first (last released first), then
//     never-used blocks in increasing id, then evictable ones — the reference's
//     order, so the same operations give the same block tables.
// Positions of a sequence are contiguous from 0.
// ============================================================================
#include <cstdint>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "kernels/attention.cuh"
#include "optimized/device_buffer.h"
#include "reference/model/model.h"

namespace oracle::optimized {

struct DeviceKvOptions {
  int max_seqs = 1;
  int block_size = 16;        // tokens per block
  int n_blocks = 0;           // pool blocks (0: enough for max_seqs full contexts)
  bool prefix_cache = false;  // share full blocks of identical token prefixes (attach_prefix)
  uint64_t prefix_key = 0;    // model/tokenizer hash + anything that changes K/V
};

class DeviceKv {
 public:
  DeviceKv(const Config& config, const DeviceKvOptions& options);

  int length(int seq) const;
  // Reserves the next tokens.size() positions of `seq` for `tokens` (their ids
  // key the prefix cache), allocating blocks and copying a shared or cached
  // partly filled last block first; returns the first position. Throws
  // InputError when the context or the pool is exhausted (nothing changed).
  int append(int seq, std::span<const int> tokens);
  // Whether appending n_i tokens to each distinct seq_i of (seq_i, n_i) fits the context and the
  // pool (a batch checks this first, so no append of it fails half way and nothing needs undoing:
  // a block that becomes full enters the prefix cache at once, before the launch writes its K/V).
  bool can_append(std::span<const std::pair<int, int>> seq_counts) const;
  void truncate(int seq, int n);  // keep the first n positions (n <= length)
  void release(int seq);          // truncate to 0
  void fork(int src, int dst);    // dst (empty) shares every block of src
  // Prefix cache (`seq` empty): shares the cached full blocks whose token ids
  // are a prefix of `prompt`, at most prompt.size() - 1 tokens; returns how many
  // positions were attached (a multiple of block_size; 0 when the cache is off).
  int attach_prefix(int seq, std::span<const int> prompt);
  // Uploads the block tables if they changed; call before launching attention.
  void sync_table();
  kernels::PagedKvLayer layer(int l) const;

  // Bookkeeping, for audits and tests.
  std::span<const int> block_table(int seq) const;  // pool blocks of `seq` in position order
  int block_refcount(int block) const;
  int blocks_free() const;  // unreferenced blocks (never used, released or evictable)
  int prefix_hits() const { return prefix_hits_; }
  int block_size() const { return opt_.block_size; }

 private:
  using PrefixKey = std::pair<uint64_t, std::vector<int>>;  // (prefix_key, all token ids)
  void check_seq(int seq) const;
  int alloc_block();
  void ref_drop(int block);
  void uncache(int block);
  void cache_block(int seq, int block);
  void copy_on_write(int seq, int bi, int filled);
  int blocks_needed(int seq, int n) const;

  Config config_;
  DeviceKvOptions opt_;
  int max_blocks_per_seq_ = 0;
  int kv_dim_ = 0;
  std::vector<DeviceBuffer<float>> k_pool_;  // (n_layers) x (n_blocks, block_size, kv_dim)
  std::vector<DeviceBuffer<float>> v_pool_;  // (n_layers) x (n_blocks, block_size, kv_dim)
  std::vector<std::vector<int>> tables_;     // (max_seqs, blocks of seq) pool block ids
  std::vector<std::vector<int>> tokens_;     // (max_seqs, length) token ids
  std::vector<int> table_host_;              // (max_seqs, max_blocks_per_seq), -1 = none: what is uploaded
  DeviceBuffer<int> table_dev_;              // device copy of table_host_
  bool table_dirty_ = true;
  std::vector<int> refcount_;                // (n_blocks)
  std::vector<int> free_;                    // unreferenced, uncached blocks; back() is handed out next
  std::vector<int> evictable_;               // cached blocks with refcount 0, oldest first
  std::map<PrefixKey, int> prefix_map_;      // full-block prefixes -> block
  std::vector<PrefixKey> block_key_;         // (n_blocks) key of a cached block
  std::vector<char> cached_;                 // (n_blocks) block is in prefix_map_
  int prefix_hits_ = 0;
};

}  // namespace oracle::optimized
