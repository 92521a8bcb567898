// memory_budget: see memory_budget.h.
#include "base/memory_budget.h"

#include <sys/resource.h>

#include <cstdio>
#include <cstring>

#include "base/errors.h"

namespace oracle {

namespace {

// "<key>  <value> kB" from a /proc file, in bytes; UINT64_MAX when absent.
uint64_t proc_kb(const char* file, const char* key) {
  std::FILE* f = std::fopen(file, "r");
  if (!f) return UINT64_MAX;
  char line[256];
  uint64_t out = UINT64_MAX;
  const size_t n = std::strlen(key);
  while (std::fgets(line, sizeof line, f)) {
    unsigned long long kb = 0;
    if (std::strncmp(line, key, n) == 0 && std::sscanf(line + n, " %llu", &kb) == 1) {
      out = mul_sat(kb, 1024);
      break;
    }
  }
  std::fclose(f);
  return out;
}

std::string gib(uint64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f GiB", (double)bytes / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

}  // namespace

uint64_t mul_sat(uint64_t a, uint64_t b) {
  if (a != 0 && b > UINT64_MAX / a) return UINT64_MAX;
  return a * b;
}

MemoryAvailable memory_available() {
  MemoryAvailable m;
  const uint64_t avail = proc_kb("/proc/meminfo", "MemAvailable:");
  if (avail != UINT64_MAX) m = {avail, "MemAvailable"};
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    const uint64_t used = proc_kb("/proc/self/status", "VmSize:");
    const uint64_t limit = (uint64_t)rl.rlim_cur;
    const uint64_t left = used == UINT64_MAX ? limit : (used < limit ? limit - used : 0);
    if (left < m.bytes) m = {left, "ulimit -v"};
  }
  return m;
}

void admit_allocation(uint64_t bytes, const std::string& file, const std::string& field,
                      const std::string& what, const std::string& hint) {
  admit_allocation(bytes, memory_available(), file, field, what, hint);
}

void admit_allocation(uint64_t bytes, const MemoryAvailable& m, const std::string& file,
                      const std::string& field, const std::string& what, const std::string& hint) {
  if (bytes <= m.bytes) return;
  const std::string needed = bytes == UINT64_MAX ? "more than 2^64 bytes"
                                                 : std::to_string(bytes) + " bytes (" + gib(bytes) + ")";
  throw InputError(file, field,
                   what + " needs " + needed + " but only " + std::to_string(m.bytes) + " bytes (" +
                       gib(m.bytes) + ") are available (" + m.limited_by + ")" + (hint.empty() ? "" : "; " + hint));
}

}  // namespace oracle
