#pragma once
// ============================================================================
// DeviceKv: the paged KV cache on the device. The bookkeeping (block tables,
// reference counts, copy-on-write, prefix cache, allocation order) is the
// shared block manager of the reference KvCache (reference/compute/kv_blocks.h),
// so the same operations give the same block tables on both; this file holds
// only the storage: per layer a K pool and a V pool of fixed-size blocks on
// the device (DeviceKvStorage), and the device copy of the block tables
// (max_seqs, max_blocks_per_seq) that attention reads.
// ============================================================================
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "kernels/attention.cuh"
#include "optimized/device_buffer.h"
#include "reference/compute/kv_blocks.h"
#include "reference/model/model.h"

namespace oracle::optimized {

struct DeviceKvOptions {
  int max_seqs = 1;
  int block_size = 16;        // tokens per block
  int n_blocks = 0;           // pool blocks (0: enough for max_seqs full contexts)
  bool prefix_cache = false;  // share full blocks of identical token prefixes (attach_prefix)
  uint64_t prefix_key = 0;    // model/tokenizer hash + anything that changes K/V
};

// The device pools: all n_blocks blocks allocated up front (create_block is a no-op).
class DeviceKvStorage final : public KvBlockStorage {
 public:
  DeviceKvStorage(int n_layers, int n_blocks, int block_size, int kv_dim);
  void create_block(int) override {}
  void copy_block(int dst, int src, int slots) override;  // device to device, every layer
  void write_row(int block, int layer, int slot, std::span<const float> k, std::span<const float> v) override;
  void read_row(int block, int layer, int slot, std::span<float> k, std::span<float> v) const override;
  float* k_pool(int layer) const { return k_[layer].get(); }
  float* v_pool(int layer) const { return v_[layer].get(); }

 private:
  size_t offset(int block, int slot) const { return ((size_t)block * bs_ + slot) * kv_dim_; }
  int bs_, kv_dim_;
  std::vector<DeviceBuffer<float>> k_;  // (n_layers) x (n_blocks, block_size, kv_dim)
  std::vector<DeviceBuffer<float>> v_;  // (n_layers) x (n_blocks, block_size, kv_dim)
};

class DeviceKv {
 public:
  DeviceKv(const Config& config, const DeviceKvOptions& options);

  int length(int seq) const { return blocks_.length(seq); }
  // Reserves the next tokens.size() positions of `seq` for `tokens` (their ids
  // key the prefix cache), allocating blocks and copying a shared or cached
  // partly filled last block first; returns the first position. Throws
  // InputError when the context or the pool is exhausted (nothing changed).
  int append(int seq, std::span<const int> tokens) { return blocks_.append(seq, tokens); }
  // Throws append()'s InputError unless appending n_i tokens to each distinct seq_i of (seq_i, n_i)
  // fits the context and the pool (a batch checks this first, so no append of it fails half way and
  // nothing needs undoing: a block that becomes full enters the prefix cache at once, before the
  // launch writes its K/V).
  void require_append(std::span<const std::pair<int, int>> seq_counts) const { blocks_.require_append(seq_counts); }
  void truncate(int seq, int n) { blocks_.truncate(seq, n); }  // keep the first n positions
  void release(int seq) { blocks_.truncate(seq, 0); }
  void fork(int src, int dst) { blocks_.fork(src, dst); }      // dst (empty) shares every block of src
  // Prefix cache (`seq` empty): shares the cached full blocks whose token ids
  // are a prefix of `prompt`, at most prompt.size() - 1 tokens; returns how many
  // positions were attached (a multiple of block_size; 0 when the cache is off).
  int attach_prefix(int seq, std::span<const int> prompt) { return blocks_.attach_prefix(seq, prompt); }
  // Uploads the block tables if they changed; call before launching attention.
  void sync_table();
  kernels::PagedKvLayer layer(int l) const;

  // Bookkeeping, for audits and tests.
  std::span<const int> block_table(int seq) const { return blocks_.block_table(seq); }
  int block_refcount(int block) const { return blocks_.block_refcount(block); }
  int blocks_free() const { return blocks_.blocks_free(); }  // never used, released or evictable
  int prefix_hits() const { return blocks_.prefix_hits(); }
  int block_size() const { return blocks_.options().block_size; }
  const DeviceKvStorage& storage() const { return *storage_; }

 private:
  int max_blocks_per_seq_ = 0;
  int kv_dim_ = 0;
  std::unique_ptr<DeviceKvStorage> storage_;  // on the heap: blocks_ points at it across moves
  KvBlocks blocks_;
  std::vector<int> table_host_;  // (max_seqs, max_blocks_per_seq), -1 = none: what is uploaded
  DeviceBuffer<int> table_dev_;  // device copy of table_host_
  uint64_t table_uploaded_ = ~0ull;  // blocks_.table_version() of the upload
};

}  // namespace oracle::optimized
