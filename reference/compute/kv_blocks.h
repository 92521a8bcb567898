#pragma once
// ============================================================================
// KvBlocks: the one paged-KV block manager, shared by the reference KvCache
// (paged mode, host vectors) and the device cache (optimized/device_kv.h,
// device buffers). It owns the bookkeeping; where the K/V rows live is the
// cache's KvBlockStorage.
//   * per sequence the token ids and the block table (logical block
//     pos / block_size -> pool block); positions are contiguous from 0;
//   * reference counts: fork() shares every block of a sequence; a write into
//     a block with refcount > 1, or into a block held by the prefix cache, first
//     copies its filled slots to a fresh block (copy-on-write);
//   * prefix cache: a block that becomes full is keyed by (prefix_key, every
//     token id of the sequence from position 0 to the block's end) — the whole
//     prefix, because K/V at a position depend on every earlier token;
//     attach_prefix() shares the cached blocks that match a prompt; released
//     cached blocks stay cached (evictable, least recently released first)
//     until the pool needs them;
//   * allocation order: released blocks first (last released first), then
//     never-used blocks in increasing id, then evictable ones;
//   * append() checks the context and the pool first: a refused append changes
//     nothing.
// Errors are InputErrors "<owner>: <field>: ..." with the owner's name and the
// option that sizes its pool (KvCache: "kv_cache", "max_tokens"; DeviceKv:
// "device_kv", "n_blocks"); fields and texts are otherwise the same for both.
//                                     [owner: forward work; contract above]
// ============================================================================
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace oracle {

// Where a cache keeps the K/V rows of its pool blocks. A block holds, per
// layer, block_size slots of one K row and one V row (kv_dim floats each).
class KvBlockStorage {
 public:
  virtual ~KvBlockStorage() = default;
  // Block `block` is handed out for the first time (ids come in increasing
  // order, 0, 1, 2, ...): storage that grows on demand allocates it here.
  virtual void create_block(int block) = 0;
  // Copies slots [0, slots) of every layer's K and V rows from block src to dst.
  virtual void copy_block(int dst, int src, int slots) = 0;
  // One slot's K and V rows of one layer (kv_dim floats each), for tests of the
  // storage itself; forward passes write rows through the cache's own views.
  virtual void write_row(int block, int layer, int slot, std::span<const float> k, std::span<const float> v) = 0;
  virtual void read_row(int block, int layer, int slot, std::span<float> k, std::span<float> v) const = 0;
};

// The reference cache's storage: host blocks created on first use, each
// (n_layers, block_size, kv_dim) floats of K and as many of V.
class HostKvStorage final : public KvBlockStorage {
 public:
  HostKvStorage(int n_layers, int block_size, int kv_dim);
  void create_block(int block) override;
  void copy_block(int dst, int src, int slots) override;
  void write_row(int block, int layer, int slot, std::span<const float> k, std::span<const float> v) override;
  void read_row(int block, int layer, int slot, std::span<float> k, std::span<float> v) const override;
  float* k_row(int block, int layer, int slot) { return &k_[block][offset(layer, slot)]; }  // (kv_dim)
  float* v_row(int block, int layer, int slot) { return &v_[block][offset(layer, slot)]; }  // (kv_dim)
  const float* k_row(int block, int layer, int slot) const { return &k_[block][offset(layer, slot)]; }
  const float* v_row(int block, int layer, int slot) const { return &v_[block][offset(layer, slot)]; }

 private:
  size_t offset(int layer, int slot) const { return ((size_t)layer * bs_ + slot) * kv_dim_; }
  int n_layers_, bs_, kv_dim_;
  std::vector<std::vector<float>> k_, v_;  // (blocks created) x (n_layers, block_size, kv_dim)
};

struct KvBlocksOptions {
  int max_seqs = 1;
  int block_size = 16;        // tokens per block
  int n_blocks = 0;           // pool blocks
  int seq_len = 0;            // context length: positions per sequence
  bool prefix_cache = false;  // share full blocks of identical token prefixes
  uint64_t prefix_key = 0;    // model/tokenizer hash + anything that changes K/V
  std::string owner = "kv_cache";         // file of the InputErrors
  std::string pool_field = "max_tokens";  // field of "pool exhausted"
};

class KvBlocks {
 public:
  // `storage` must outlive the manager (the caches keep it on the heap, so a
  // moved cache keeps a valid pointer).
  KvBlocks(const KvBlocksOptions& options, KvBlockStorage* storage);

  int length(int seq) const;
  std::span<const int> tokens(int seq) const;       // token ids of `seq`
  std::span<const int> block_table(int seq) const;  // pool blocks of `seq` in position order
  int block_refcount(int block) const;
  // Reserves positions length(seq) .. + tokens.size() - 1 for `tokens`,
  // allocating blocks and copying a shared or cached partly filled last block
  // first; returns the first position. A block that becomes full enters the
  // prefix cache at once (its K/V are written by the caller next). Throws
  // InputError (fields "position", pool_field) with nothing changed.
  int append(int seq, std::span<const int> tokens);
  // Pool blocks append(seq, tokens of length n) would take (new blocks, plus one
  // for a copy-on-write of the partly filled last block).
  int blocks_needed(int seq, int n) const;
  // Throws append()'s InputError unless appending n_i tokens to each distinct
  // seq_i of (seq_i, n_i) fits the context and the pool together (a batch
  // checks this first, so no append of it fails half way).
  void require_append(std::span<const std::pair<int, int>> seq_counts) const;
  void truncate(int seq, int n);  // keep the first n positions (field "n")
  void fork(int src, int dst);    // dst (empty) shares every block of src (field "dst")
  // `seq` empty (field "seq"): shares the cached full blocks whose keys match
  // prefixes of `prompt`, at most prompt.size() - 1 tokens, and returns how many
  // positions were attached (a multiple of block_size; 0 when the cache is off).
  int attach_prefix(int seq, std::span<const int> prompt);

  const KvBlocksOptions& options() const { return opt_; }
  int blocks_free() const;     // unreferenced blocks: never used, released or evictable
  int blocks_created() const { return created_; }  // blocks ever handed out (storage created)
  int blocks_cached() const { return (int)evictable_.size(); }  // evictable cached blocks
  int prefix_hits() const { return prefix_hits_; }
  int filled_slots(int block) const;  // slots some user of `block` can read (max over users)
  // Changes whenever a block table changes (a device copy is re-uploaded then).
  uint64_t table_version() const { return table_version_; }

 private:
  using PrefixKey = std::pair<uint64_t, std::vector<int>>;  // (prefix_key, token ids 0 .. end of block)
  void check_seq(int seq) const;
  PrefixKey prefix_key(std::span<const int> tokens, int bi) const;
  bool must_copy(int block) const;
  int alloc_block();
  void ref_drop(int block);
  void uncache(int block);
  void cache_block(int seq, int bi);
  void copy_on_write(int seq, int bi, int filled);

  KvBlocksOptions opt_;
  KvBlockStorage* storage_;
  std::vector<std::vector<int>> tokens_;  // (max_seqs, length) token ids
  std::vector<std::vector<int>> tables_;  // (max_seqs, blocks of seq) pool block ids
  std::vector<int> refcount_;             // (n_blocks)
  int created_ = 0;                       // blocks [0, created_) have storage
  std::vector<int> free_;                 // released, uncached blocks; back() is handed out next
  std::vector<int> evictable_;            // cached blocks with refcount 0, oldest first
  std::map<PrefixKey, int> prefix_map_;   // full-block prefixes -> block
  std::vector<PrefixKey> block_key_;      // (n_blocks) key of a cached block
  std::vector<char> cached_;              // (n_blocks) block is in prefix_map_
  int prefix_hits_ = 0;
  uint64_t table_version_ = 0;
};

}  // namespace oracle
