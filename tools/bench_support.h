#pragma once
// Measurement helpers for `oracle bench`: a monotonic timer (base/stopwatch.h), the process's
// memory as the kernel reports it (/proc/self/status), and a memory-bandwidth
// probe (one plain sequential read of a buffer) used as the same-run baseline.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/stopwatch.h"

namespace oracle::tools {

// Fields of /proc/self/status, in bytes (0 where the kernel does not report them).
struct ProcessMemory {
  uint64_t peak_rss = 0;   // VmHWM
  uint64_t rss = 0;        // VmRSS
  uint64_t rss_anon = 0;   // RssAnon: heap, stacks (KV cache, activations, owned weights)
  uint64_t rss_file = 0;   // RssFile: resident pages of mapped files (the weights)
};
ProcessMemory read_process_memory();

// One pass reads every buffer once, in order, front to back, 64 bytes at a
// time; returns bytes per second of the fastest of `repeats` passes. The
// checksum keeps the reads from being optimised away.
struct ByteRange {
  const uint8_t* data = nullptr;
  size_t n = 0;
};
struct ProbeResult {
  double bytes_per_s = 0.0;
  uint64_t checksum = 0;
};
ProbeResult sequential_read_probe(const std::vector<ByteRange>& buffers, int repeats);

}  // namespace oracle::tools
