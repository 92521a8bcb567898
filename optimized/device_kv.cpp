// DeviceKv: device KV pools and the device copy of the block tables — see device_kv.h.
// The bookkeeping is reference/compute/kv_blocks.cpp's.
#include "optimized/device_kv.h"

#include <algorithm>
#include <string>

#include "base/errors.h"

namespace oracle::optimized {

// ---- storage -------------------------------------------------------------------------------
DeviceKvStorage::DeviceKvStorage(int n_layers, int n_blocks, int block_size, int kv_dim)
    : bs_(block_size), kv_dim_(kv_dim), k_(n_layers), v_(n_layers) {
  const size_t pool = (size_t)n_blocks * block_size * kv_dim;
  for (int l = 0; l < n_layers; l++) {
    k_[l].resize(pool);
    v_[l].resize(pool);
  }
}

void DeviceKvStorage::copy_block(int dst, int src, int slots) {
  const size_t bytes = sizeof(float) * slots * kv_dim_;
  for (size_t l = 0; l < k_.size(); l++) {
    kernels::check_cuda(cudaMemcpy(k_[l].get() + offset(dst, 0), k_[l].get() + offset(src, 0), bytes,
                                   cudaMemcpyDeviceToDevice), "kv copy-on-write");
    kernels::check_cuda(cudaMemcpy(v_[l].get() + offset(dst, 0), v_[l].get() + offset(src, 0), bytes,
                                   cudaMemcpyDeviceToDevice), "kv copy-on-write");
  }
}

void DeviceKvStorage::write_row(int block, int layer, int slot, std::span<const float> k, std::span<const float> v) {
  k_[layer].upload(k.data(), (size_t)kv_dim_, offset(block, slot));
  v_[layer].upload(v.data(), (size_t)kv_dim_, offset(block, slot));
}

void DeviceKvStorage::read_row(int block, int layer, int slot, std::span<float> k, std::span<float> v) const {
  k_[layer].download(k.data(), (size_t)kv_dim_, offset(block, slot));
  v_[layer].download(v.data(), (size_t)kv_dim_, offset(block, slot));
}

// ---- the cache -----------------------------------------------------------------------------
namespace {

KvBlocksOptions block_options(const Config& config, const DeviceKvOptions& o, int max_blocks_per_seq) {
  KvBlocksOptions b;
  b.max_seqs = o.max_seqs, b.block_size = o.block_size, b.seq_len = config.seq_len;
  b.n_blocks = o.n_blocks > 0 ? o.n_blocks : o.max_seqs * max_blocks_per_seq;
  b.prefix_cache = o.prefix_cache, b.prefix_key = o.prefix_key;
  b.owner = "device_kv", b.pool_field = "n_blocks";
  return b;
}

int blocks_per_seq(const Config& config, const DeviceKvOptions& o) {
  require_input(o.block_size >= 1, "device_kv", "block_size", "must be >= 1");
  require_input(o.max_seqs >= 1, "device_kv", "max_seqs", "must be >= 1");
  return (config.seq_len + o.block_size - 1) / o.block_size;
}

}  // namespace

DeviceKv::DeviceKv(const Config& config, const DeviceKvOptions& options)
    : max_blocks_per_seq_(blocks_per_seq(config, options)),
      kv_dim_(config.n_kv_heads * config.head_dim),
      storage_(std::make_unique<DeviceKvStorage>(config.n_layers,
                                                 block_options(config, options, max_blocks_per_seq_).n_blocks,
                                                 options.block_size, kv_dim_)),
      blocks_(block_options(config, options, max_blocks_per_seq_), storage_.get()) {
  table_host_.assign((size_t)options.max_seqs * max_blocks_per_seq_, -1);
  table_dev_.resize(table_host_.size());
}

void DeviceKv::sync_table() {
  if (table_uploaded_ == blocks_.table_version()) return;
  std::fill(table_host_.begin(), table_host_.end(), -1);
  for (int s = 0; s < blocks_.options().max_seqs; s++) {
    const auto t = blocks_.block_table(s);
    std::copy(t.begin(), t.end(), table_host_.begin() + (size_t)s * max_blocks_per_seq_);
  }
  table_dev_.upload(table_host_.data(), table_host_.size());
  table_uploaded_ = blocks_.table_version();
}

kernels::PagedKvLayer DeviceKv::layer(int l) const {
  return kernels::PagedKvLayer{storage_->k_pool(l), storage_->v_pool(l), table_dev_.get(), block_size(),
                               max_blocks_per_seq_, kv_dim_};
}

}  // namespace oracle::optimized
