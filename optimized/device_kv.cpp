// DeviceKv: paged KV pools, block tables, reference counts, copy-on-write and
// the prefix cache — see device_kv.h. Mirrors reference/compute/kv_cache.cpp.
#include "optimized/device_kv.h"

#include <algorithm>
#include <string>

#include "faults/fault.h"
#include "base/errors.h"

namespace oracle::optimized {

DeviceKv::DeviceKv(const Config& config, const DeviceKvOptions& options) : config_(config), opt_(options) {
  require_input(opt_.block_size >= 1, "device_kv", "block_size", "must be >= 1");
  require_input(opt_.max_seqs >= 1, "device_kv", "max_seqs", "must be >= 1");
  max_blocks_per_seq_ = (config.seq_len + opt_.block_size - 1) / opt_.block_size;
  if (opt_.n_blocks <= 0) opt_.n_blocks = opt_.max_seqs * max_blocks_per_seq_;
  kv_dim_ = config.n_kv_heads * config.head_dim;
  const size_t pool = (size_t)opt_.n_blocks * opt_.block_size * kv_dim_;
  k_pool_.resize(config.n_layers);
  v_pool_.resize(config.n_layers);
  for (int l = 0; l < config.n_layers; l++) {
    k_pool_[l].resize(pool);
    v_pool_[l].resize(pool);
  }
  tables_.resize(opt_.max_seqs);
  tokens_.resize(opt_.max_seqs);
  table_host_.assign((size_t)opt_.max_seqs * max_blocks_per_seq_, -1);
  table_dev_.resize(table_host_.size());
  refcount_.assign(opt_.n_blocks, 0);
  cached_.assign(opt_.n_blocks, 0);
  block_key_.resize(opt_.n_blocks);
  for (int b = opt_.n_blocks - 1; b >= 0; b--) free_.push_back(b);
}

void DeviceKv::check_seq(int seq) const {
  require_input(seq >= 0 && seq < opt_.max_seqs, "device_kv", "seq",
                "sequence " + std::to_string(seq) + " outside [0, " + std::to_string(opt_.max_seqs) + ")");
}

int DeviceKv::length(int seq) const {
  check_seq(seq);
  return (int)tokens_[seq].size();
}

// ---- the pool: allocation, reference counts, prefix cache, copy-on-write --------------------
int DeviceKv::alloc_block() {
  int b;
  if (!free_.empty()) {
    b = free_.back();
    free_.pop_back();
  } else if (!evictable_.empty()) {
    b = evictable_.front();  // least recently released cached block
    evictable_.erase(evictable_.begin());
    uncache(b);
  } else {
    throw InputError("device_kv", "n_blocks", "the KV block pool is exhausted");
  }
  refcount_[b] = 1;
  return b;
}

void DeviceKv::ref_drop(int block) {
  if (--refcount_[block] > 0) return;
  if (cached_[block]) evictable_.push_back(block);
  else free_.push_back(block);
}

void DeviceKv::uncache(int block) {
  prefix_map_.erase(block_key_[block]);
  block_key_[block] = {};
  cached_[block] = 0;
}

// Logical block bi of `seq` has just become full: key it by every token up to its end.
void DeviceKv::cache_block(int seq, int bi) {
  const int block = tables_[seq][bi];
  if (!opt_.prefix_cache || cached_[block]) return;
  const int from = fault::active(fault::Fault::DEVICE_KV_PREFIX_OWN_BLOCK_KEY) ? bi * opt_.block_size : 0;  // FAULT
  PrefixKey key{opt_.prefix_key, std::vector<int>(tokens_[seq].begin() + from, tokens_[seq].begin() + (bi + 1) * opt_.block_size)};
  if (prefix_map_.count(key)) return;  // the same prefix is cached in another block
  prefix_map_.emplace(key, block);
  block_key_[block] = std::move(key);
  cached_[block] = 1;
}

// Gives `seq` a private copy of its block bi, of which `filled` slots are used (every layer's K and V).
void DeviceKv::copy_on_write(int seq, int bi, int filled) {
  const int old = tables_[seq][bi];
  if (fault::active(fault::Fault::DEVICE_KV_COW_SHARED_WRITE)) return;  // FAULT: keeps writing into the shared block
  const int b = alloc_block();
  const size_t block_floats = (size_t)opt_.block_size * kv_dim_, bytes = sizeof(float) * filled * kv_dim_;
  for (int l = 0; l < config_.n_layers; l++) {
    kernels::check_cuda(cudaMemcpy(k_pool_[l].get() + b * block_floats, k_pool_[l].get() + old * block_floats, bytes,
                                   cudaMemcpyDeviceToDevice), "kv copy-on-write");
    kernels::check_cuda(cudaMemcpy(v_pool_[l].get() + b * block_floats, v_pool_[l].get() + old * block_floats, bytes,
                                   cudaMemcpyDeviceToDevice), "kv copy-on-write");
  }
  tables_[seq][bi] = b;
  table_dirty_ = true;
  ref_drop(old);
}

// Pool blocks append(seq, n) takes: new blocks, plus one if the partly filled last block must be copied.
int DeviceKv::blocks_needed(int seq, int n) const {
  const int first = length(seq), bs = opt_.block_size;
  int need = (first + n + bs - 1) / bs - (first + bs - 1) / bs;
  if (n > 0 && first % bs != 0) {
    const int b = tables_[seq][first / bs];
    need += refcount_[b] > 1 || cached_[b];
  }
  return need;
}

// ---- the public operations -------------------------------------------------------------------
bool DeviceKv::can_append(std::span<const std::pair<int, int>> seq_counts) const {
  int blocks = 0;
  for (auto [seq, n] : seq_counts) {
    if (length(seq) + n > config_.seq_len) return false;
    blocks += blocks_needed(seq, n);
  }
  return blocks <= blocks_free();
}

int DeviceKv::append(int seq, std::span<const int> tokens) {
  check_seq(seq);
  const int first = length(seq), n = (int)tokens.size(), end = first + n, bs = opt_.block_size;
  require_input(end <= config_.seq_len, "device_kv", "position",
                "position " + std::to_string(end - 1) + " exceeds the context length " + std::to_string(config_.seq_len));
  require_input(blocks_needed(seq, n) <= blocks_free(), "device_kv", "n_blocks", "the KV block pool is exhausted");
  for (int pos = first; pos < end; pos++) {
    if (pos % bs == 0) {
      tables_[seq].push_back(alloc_block());
      table_dirty_ = true;
    } else if (pos == first) {
      const int b = tables_[seq][pos / bs];
      if (refcount_[b] > 1 || cached_[b]) copy_on_write(seq, pos / bs, pos % bs);
    }
    tokens_[seq].push_back(tokens[pos - first]);
    if (pos % bs == bs - 1) cache_block(seq, pos / bs);  // its K/V are written by the launch that follows
  }
  return first;
}

void DeviceKv::truncate(int seq, int n) {
  check_seq(seq);
  require_input(n >= 0 && n <= length(seq), "device_kv", "length", "truncate beyond the stored length");
  tokens_[seq].resize(n);
  const size_t keep = (size_t)((n + opt_.block_size - 1) / opt_.block_size);
  while (tables_[seq].size() > keep) {
    ref_drop(tables_[seq].back());
    tables_[seq].pop_back();
    table_dirty_ = true;
  }
}

void DeviceKv::release(int seq) { truncate(seq, 0); }

void DeviceKv::fork(int src, int dst) {
  check_seq(src);
  check_seq(dst);
  require_input(length(dst) == 0 && src != dst, "device_kv", "dst",
                "fork target " + std::to_string(dst) + " must be an empty, different sequence");
  tokens_[dst] = tokens_[src];
  tables_[dst] = tables_[src];
  for (int b : tables_[dst]) refcount_[b]++;
  table_dirty_ = true;
}

int DeviceKv::attach_prefix(int seq, std::span<const int> prompt) {
  require_input(length(seq) == 0, "device_kv", "seq", "attach_prefix needs an empty sequence (" + std::to_string(seq) + ")");
  if (!opt_.prefix_cache || prompt.empty()) return 0;
  const int bs = opt_.block_size, max_blocks = ((int)prompt.size() - 1) / bs;
  for (int bi = 0; bi < max_blocks; bi++) {
    const int from = fault::active(fault::Fault::DEVICE_KV_PREFIX_OWN_BLOCK_KEY) ? bi * bs : 0;  // FAULT
    auto it = prefix_map_.find(PrefixKey{opt_.prefix_key, std::vector<int>(prompt.begin() + from, prompt.begin() + (bi + 1) * bs)});
    if (it == prefix_map_.end()) break;
    const int b = it->second;
    if (refcount_[b]++ == 0) std::erase(evictable_, b);
    tables_[seq].push_back(b);
    prefix_hits_++;
  }
  const int n = (int)tables_[seq].size() * bs;
  tokens_[seq].assign(prompt.begin(), prompt.begin() + n);
  table_dirty_ = table_dirty_ || n > 0;
  return n;
}

void DeviceKv::sync_table() {
  if (!table_dirty_) return;
  std::fill(table_host_.begin(), table_host_.end(), -1);
  for (int s = 0; s < opt_.max_seqs; s++)
    std::copy(tables_[s].begin(), tables_[s].end(), table_host_.begin() + (size_t)s * max_blocks_per_seq_);
  table_dev_.upload(table_host_.data(), table_host_.size());
  table_dirty_ = false;
}

kernels::PagedKvLayer DeviceKv::layer(int l) const {
  return kernels::PagedKvLayer{k_pool_[l].get(), v_pool_[l].get(), table_dev_.get(), opt_.block_size,
                               max_blocks_per_seq_, kv_dim_};
}

std::span<const int> DeviceKv::block_table(int seq) const {
  check_seq(seq);
  return tables_[seq];
}

int DeviceKv::block_refcount(int block) const {
  require_input(block >= 0 && block < opt_.n_blocks, "device_kv", "block",
                "block " + std::to_string(block) + " outside [0, " + std::to_string(opt_.n_blocks) + ")");
  return refcount_[block];
}

int DeviceKv::blocks_free() const { return (int)(free_.size() + evictable_.size()); }

}  // namespace oracle::optimized
