#pragma once
// ============================================================================
// DeviceKv: the paged KV cache on the device. Per layer a K pool and a V pool
// of fixed-size blocks; per sequence a block table (host mirror + device
// copy) mapping logical block j / block_size to a pool block. Blocks are
// handed out from a free list in increasing id order and returned on
// release/truncate. Positions of a sequence are contiguous from 0.
// ============================================================================
#include <vector>

#include "kernels/attention.cuh"
#include "optimized/device_buffer.h"
#include "reference/model/model.h"

namespace oracle::optimized {

struct DeviceKvOptions {
  int max_seqs = 1;
  int block_size = 16;  // tokens per block
  int n_blocks = 0;     // pool blocks (0: enough for max_seqs full contexts)
};

class DeviceKv {
 public:
  DeviceKv(const Config& config, const DeviceKvOptions& options);

  int length(int seq) const;
  // Reserves the next n positions of `seq`, allocating blocks; returns the first.
  // Throws InputError when the context or the pool is exhausted.
  int append(int seq, int n);
  void truncate(int seq, int n);  // keep the first n positions (n <= length)
  void release(int seq);          // truncate to 0
  // Uploads the block table if it changed; call before launching attention.
  void sync_table();
  kernels::PagedKvLayer layer(int l) const;
  int blocks_free() const { return (int)free_.size(); }

 private:
  void check_seq(int seq) const;
  Config config_;
  DeviceKvOptions opt_;
  int max_blocks_per_seq_ = 0;
  int kv_dim_ = 0;
  std::vector<DeviceBuffer<float>> k_pool_;  // (n_layers) x (n_blocks, block_size, kv_dim)
  std::vector<DeviceBuffer<float>> v_pool_;  // (n_layers) x (n_blocks, block_size, kv_dim)
  std::vector<int> table_;                   // (max_seqs, max_blocks_per_seq), -1 = none
  DeviceBuffer<int> table_dev_;              // device copy of table_
  bool table_dirty_ = true;
  std::vector<int> lengths_;                 // (max_seqs)
  std::vector<int> free_;                    // free pool blocks; back() is handed out next
};

}  // namespace oracle::optimized
