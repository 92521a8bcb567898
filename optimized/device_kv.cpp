// DeviceKv: paged KV pools and block tables — see device_kv.h.
#include "optimized/device_kv.h"

#include <string>

#include "reference/base/errors.h"

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
  table_.assign((size_t)opt_.max_seqs * max_blocks_per_seq_, -1);
  table_dev_.resize(table_.size());
  lengths_.assign(opt_.max_seqs, 0);
  for (int b = opt_.n_blocks - 1; b >= 0; b--) free_.push_back(b);
}

void DeviceKv::check_seq(int seq) const {
  require_input(seq >= 0 && seq < opt_.max_seqs, "device_kv", "seq",
                "sequence " + std::to_string(seq) + " outside [0, " + std::to_string(opt_.max_seqs) + ")");
}

int DeviceKv::length(int seq) const {
  check_seq(seq);
  return lengths_[seq];
}

int DeviceKv::append(int seq, int n) {
  check_seq(seq);
  const int first = lengths_[seq], end = first + n;
  require_input(end <= config_.seq_len, "device_kv", "position",
                "position " + std::to_string(end - 1) + " exceeds the context length " +
                    std::to_string(config_.seq_len));
  for (int b = (first + opt_.block_size - 1) / opt_.block_size; b * opt_.block_size < end; b++) {
    int& slot = table_[(size_t)seq * max_blocks_per_seq_ + b];
    if (slot >= 0) continue;
    require_input(!free_.empty(), "device_kv", "n_blocks", "the KV block pool is exhausted");
    slot = free_.back();
    free_.pop_back();
    table_dirty_ = true;
  }
  lengths_[seq] = end;
  return first;
}

void DeviceKv::truncate(int seq, int n) {
  check_seq(seq);
  require_input(n >= 0 && n <= lengths_[seq], "device_kv", "length", "truncate beyond the stored length");
  const int keep = (n + opt_.block_size - 1) / opt_.block_size;
  for (int b = keep; b < max_blocks_per_seq_; b++) {
    int& slot = table_[(size_t)seq * max_blocks_per_seq_ + b];
    if (slot < 0) continue;
    free_.push_back(slot);
    slot = -1;
    table_dirty_ = true;
  }
  lengths_[seq] = n;
}

void DeviceKv::release(int seq) { truncate(seq, 0); }

void DeviceKv::sync_table() {
  if (!table_dirty_) return;
  table_dev_.upload(table_.data(), table_.size());
  table_dirty_ = false;
}

kernels::PagedKvLayer DeviceKv::layer(int l) const {
  return kernels::PagedKvLayer{k_pool_[l].get(), v_pool_[l].get(), table_dev_.get(), opt_.block_size,
                               max_blocks_per_seq_, kv_dim_};
}

}  // namespace oracle::optimized
