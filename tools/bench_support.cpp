#include "tools/bench_support.h"

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace oracle::tools {

// ---- /proc/self/status ------------------------------------------------------------
// Lines look like "VmHWM:\t   12345 kB".
ProcessMemory read_process_memory() {
  ProcessMemory m;
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    uint64_t kib = 0;
    if (!(fields >> key >> kib)) continue;
    if (key == "VmHWM:") m.peak_rss = kib * 1024;
    if (key == "VmRSS:") m.rss = kib * 1024;
    if (key == "RssAnon:") m.rss_anon = kib * 1024;
    if (key == "RssFile:") m.rss_file = kib * 1024;
  }
  return m;
}

// ---- bandwidth probe ------------------------------------------------------------------
static uint64_t read_once(const uint8_t* data, size_t n) {
  uint64_t acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};  // 8 independent chains: one cache line
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    uint64_t w[8];
    std::memcpy(w, data + i, 64);
    for (int k = 0; k < 8; k++) acc[k] += w[k];
  }
  for (; i < n; i++) acc[0] += data[i];
  uint64_t sum = 0;
  for (uint64_t a : acc) sum ^= a;
  return sum;
}

ProbeResult sequential_read_probe(const std::vector<ByteRange>& buffers, int repeats) {
  ProbeResult r;
  size_t total = 0;
  for (const ByteRange& b : buffers) total += b.n;
  for (int rep = 0; rep < repeats; rep++) {
    Stopwatch sw;
    for (const ByteRange& b : buffers) r.checksum ^= read_once(b.data, b.n);
    double s = sw.seconds();
    if (s > 0.0 && (double)total / s > r.bytes_per_s) r.bytes_per_s = (double)total / s;
  }
  return r;
}

}  // namespace oracle::tools
