// KvBlocks: block tables, reference counts, prefix cache, copy-on-write — see kv_blocks.h.
#include "reference/compute/kv_blocks.h"

#include <algorithm>
#include <cstring>

#include "base/errors.h"
#include "faults/fault.h"

namespace oracle {

// ---- host storage ----------------------------------------------------------------------------
HostKvStorage::HostKvStorage(int n_layers, int block_size, int kv_dim)
    : n_layers_(n_layers), bs_(block_size), kv_dim_(kv_dim) {}

void HostKvStorage::create_block(int block) {
  k_.resize((size_t)block + 1);
  v_.resize((size_t)block + 1);
  k_[block].assign((size_t)n_layers_ * bs_ * kv_dim_, 0.0f);
  v_[block].assign(k_[block].size(), 0.0f);
}

void HostKvStorage::copy_block(int dst, int src, int slots) {
  for (int l = 0; l < n_layers_; l++) {
    std::memcpy(k_row(dst, l, 0), k_row(src, l, 0), sizeof(float) * slots * kv_dim_);
    std::memcpy(v_row(dst, l, 0), v_row(src, l, 0), sizeof(float) * slots * kv_dim_);
  }
}

void HostKvStorage::write_row(int block, int layer, int slot, std::span<const float> k, std::span<const float> v) {
  std::memcpy(k_row(block, layer, slot), k.data(), sizeof(float) * kv_dim_);
  std::memcpy(v_row(block, layer, slot), v.data(), sizeof(float) * kv_dim_);
}

void HostKvStorage::read_row(int block, int layer, int slot, std::span<float> k, std::span<float> v) const {
  std::memcpy(k.data(), k_row(block, layer, slot), sizeof(float) * kv_dim_);
  std::memcpy(v.data(), v_row(block, layer, slot), sizeof(float) * kv_dim_);
}

// ---- the manager -----------------------------------------------------------------------------

KvBlocks::KvBlocks(const KvBlocksOptions& options, KvBlockStorage* storage) : opt_(options), storage_(storage) {
  require_input(opt_.max_seqs >= 1, opt_.owner, "max_seqs", "must be >= 1");
  require_input(opt_.block_size >= 1, opt_.owner, "block_size", "must be >= 1");
  require_input(opt_.n_blocks >= 0, opt_.owner, opt_.pool_field, "must be >= 0");
  tokens_.resize(opt_.max_seqs);
  tables_.resize(opt_.max_seqs);
  refcount_.assign(opt_.n_blocks, 0);
  cached_.assign(opt_.n_blocks, 0);
  block_key_.resize(opt_.n_blocks);
}

void KvBlocks::check_seq(int seq) const {
  if (seq >= 0 && seq < opt_.max_seqs) return;  // hot (every K/V row pointer): no message built
  throw InputError(opt_.owner, "seq",
                   "sequence id " + std::to_string(seq) + " outside [0, " + std::to_string(opt_.max_seqs) + ")");
}

// ---- the pool: allocation, reference counts, prefix cache, copy-on-write --------------------
int KvBlocks::alloc_block() {
  int b;
  if (!free_.empty()) {
    b = free_.back();
    free_.pop_back();
  } else if (created_ < opt_.n_blocks) {  // a never-used block
    b = created_++;
    storage_->create_block(b);
  } else if (!evictable_.empty()) {
    b = evictable_.front();  // least recently released cached block
    evictable_.erase(evictable_.begin());
    uncache(b);
  } else {  // append() checked the pool first: unreachable through the public operations
    throw InputError(opt_.owner, opt_.pool_field, "KV block pool exhausted");
  }
  refcount_[b] = 1;
  return b;
}

void KvBlocks::ref_drop(int block) {
  if (--refcount_[block] > 0) return;
  if (cached_[block]) evictable_.push_back(block);
  else free_.push_back(block);
}

void KvBlocks::uncache(int block) {
  prefix_map_.erase(block_key_[block]);
  block_key_[block] = {};
  cached_[block] = 0;
}

// The key of logical block bi of a sequence holding `tokens`: every token id from position 0 to the block's end.
KvBlocks::PrefixKey KvBlocks::prefix_key(std::span<const int> tokens, int bi) const {
  const int bs = opt_.block_size;
  const int from = fault::active(fault::Fault::KV_PREFIX_OWN_BLOCK_KEY) ? bi * bs : 0;  // FAULT: own tokens only
  return {opt_.prefix_key, std::vector<int>(tokens.begin() + from, tokens.begin() + (bi + 1) * bs)};
}

// Logical block bi of `seq` has just become full.
void KvBlocks::cache_block(int seq, int bi) {
  const int block = tables_[seq][bi];
  if (!opt_.prefix_cache || cached_[block]) return;
  PrefixKey key = prefix_key(tokens_[seq], bi);
  if (prefix_map_.count(key)) return;  // the same prefix is cached in another block
  prefix_map_.emplace(key, block);
  block_key_[block] = std::move(key);
  cached_[block] = 1;
}

// A write into `block` must go to a copy: another sequence reads it, or the prefix cache holds it.
bool KvBlocks::must_copy(int block) const {
  const bool cached = cached_[block] && !fault::active(fault::Fault::PREFIX_COW_SKIPS_CACHED);  // FAULT: in place
  return refcount_[block] > 1 || cached;
}

// Gives `seq` a private copy of its block bi, of which `filled` slots are used.
void KvBlocks::copy_on_write(int seq, int bi, int filled) {
  const int old = tables_[seq][bi];
  if (fault::active(fault::Fault::KV_COW_SHARED_WRITE)) return;  // FAULT: keeps writing into the shared block
  const int b = alloc_block();
  storage_->copy_block(b, old, filled);
  tables_[seq][bi] = b;
  table_version_++;
  ref_drop(old);
}

// ---- the public operations -------------------------------------------------------------------
int KvBlocks::length(int seq) const {
  check_seq(seq);
  return (int)tokens_[seq].size();
}

std::span<const int> KvBlocks::tokens(int seq) const {
  check_seq(seq);
  return tokens_[seq];
}

std::span<const int> KvBlocks::block_table(int seq) const {
  check_seq(seq);
  return tables_[seq];
}

int KvBlocks::block_refcount(int block) const {
  require_input(block >= 0 && block < opt_.n_blocks, opt_.owner, "block",
                "block " + std::to_string(block) + " outside [0, " + std::to_string(opt_.n_blocks) + ")");
  return refcount_[block];
}

int KvBlocks::blocks_free() const { return (int)(free_.size() + evictable_.size()) + (opt_.n_blocks - created_); }

int KvBlocks::blocks_needed(int seq, int n) const {
  const int first = length(seq), bs = opt_.block_size;
  int need = (first + n + bs - 1) / bs - (first + bs - 1) / bs;
  if (n > 0 && first % bs != 0) need += must_copy(tables_[seq][first / bs]);
  return need;
}

void KvBlocks::require_append(std::span<const std::pair<int, int>> seq_counts) const {
  int blocks = 0;
  for (auto [seq, n] : seq_counts) {
    const int end = length(seq) + n;
    require_input(end <= opt_.seq_len, opt_.owner, "position",
                  "position " + std::to_string(end - 1) + " of sequence " + std::to_string(seq) +
                      " exceeds the context length " + std::to_string(opt_.seq_len));
    blocks += blocks_needed(seq, n);
  }
  require_input(blocks <= blocks_free(), opt_.owner, opt_.pool_field,
                "KV block pool exhausted (" + std::to_string(opt_.n_blocks) + " blocks of " +
                    std::to_string(opt_.block_size) + " tokens)");
}

int KvBlocks::append(int seq, std::span<const int> tokens) {
  const int first = length(seq), n = (int)tokens.size(), end = first + n, bs = opt_.block_size;
  const std::pair<int, int> count{seq, n};
  require_append(std::span(&count, 1));
  for (int pos = first; pos < end; pos++) {
    if (pos % bs == 0) {
      tables_[seq].push_back(alloc_block());
      table_version_++;
    } else if (pos == first && must_copy(tables_[seq][pos / bs])) {  // later positions: a block of this call
      copy_on_write(seq, pos / bs, pos % bs);
    }
    tokens_[seq].push_back(tokens[pos - first]);
    if (pos % bs == bs - 1) cache_block(seq, pos / bs);
  }
  return first;
}

void KvBlocks::truncate(int seq, int n) {
  const int len = length(seq), bs = opt_.block_size;
  require_input(n >= 0 && n <= len, opt_.owner, "n",
                "truncate to " + std::to_string(n) + " outside [0, " + std::to_string(len) + "]");
  tokens_[seq].resize(n);
  size_t keep = (size_t)((n + bs - 1) / bs);
  if (fault::active(fault::Fault::PAGED_TRUNCATE_KEEPS_EXTRA_BLOCK)) keep = (size_t)(n / bs + 1);  // FAULT
  while (tables_[seq].size() > keep) {
    ref_drop(tables_[seq].back());
    tables_[seq].pop_back();
    table_version_++;
  }
}

void KvBlocks::fork(int src, int dst) {
  check_seq(src);
  require_input(length(dst) == 0 && src != dst, opt_.owner, "dst",
                "fork target " + std::to_string(dst) + " must be an empty, different sequence");
  tokens_[dst] = tokens_[src];
  tables_[dst] = tables_[src];
  for (int b : tables_[dst]) refcount_[b]++;
  table_version_++;
}

int KvBlocks::attach_prefix(int seq, std::span<const int> prompt) {
  require_input(length(seq) == 0, opt_.owner, "seq",
                "attach_prefix needs an empty sequence (" + std::to_string(seq) + ")");
  if (!opt_.prefix_cache || prompt.empty()) return 0;
  const int bs = opt_.block_size, max_blocks = ((int)prompt.size() - 1) / bs;
  for (int bi = 0; bi < max_blocks; bi++) {
    auto it = prefix_map_.find(prefix_key(prompt, bi));
    if (it == prefix_map_.end()) break;
    const int b = it->second;
    if (refcount_[b]++ == 0) std::erase(evictable_, b);
    tables_[seq].push_back(b);
    table_version_++;
    prefix_hits_++;
  }
  const int n = (int)tables_[seq].size() * bs;
  tokens_[seq].assign(prompt.begin(), prompt.begin() + n);
  return n;
}

int KvBlocks::filled_slots(int block) const {
  int filled = 0;
  for (size_t s = 0; s < tables_.size(); s++)
    for (size_t bi = 0; bi < tables_[s].size(); bi++)
      if (tables_[s][bi] == block)
        filled = std::max(filled, std::min(opt_.block_size, (int)tokens_[s].size() - (int)bi * opt_.block_size));
  return filled;
}

}  // namespace oracle
