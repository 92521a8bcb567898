#pragma once
// ============================================================================
// Admission control for large allocations (KV cache, activations): the bytes
// are computed first and compared with what the process can still get —
// the smaller of MemAvailable (/proc/meminfo) and the address-space limit
// (RLIMIT_AS, `ulimit -v`) minus the current VmSize. A request that does not
// fit is an InputError naming the field, the bytes needed and available,
// instead of a bare std::bad_alloc (or the OOM killer) later.
// ============================================================================
#include <cstdint>
#include <string>

namespace oracle {

struct MemoryAvailable {
  uint64_t bytes = UINT64_MAX;  // UINT64_MAX: unknown (no /proc) and unlimited
  std::string limited_by;       // "MemAvailable", "ulimit -v", or "" when unknown
};

MemoryAvailable memory_available();

// Saturating product of sizes (a result past 2^64 reads as UINT64_MAX).
uint64_t mul_sat(uint64_t a, uint64_t b);

// InputError(file, field, "<what> needs N bytes but only M are available (...)
// <hint>") when `bytes` does not fit.
void admit_allocation(uint64_t bytes, const std::string& file, const std::string& field,
                      const std::string& what, const std::string& hint);
// The same against a given `available` (the one above passes memory_available()).
void admit_allocation(uint64_t bytes, const MemoryAvailable& available, const std::string& file,
                      const std::string& field, const std::string& what, const std::string& hint);

}  // namespace oracle
