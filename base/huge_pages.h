#pragma once
// Large uninitialized float buffers, on transparent huge pages where the kernel
// grants them: from kHugePageBytes on, the buffer is 2 MiB-aligned, rounded up
// to whole 2 MiB pages and advised MADV_HUGEPAGE (Linux; a hint the kernel may
// decline, and elsewhere none is given). Pages are still touched only when
// written, so resident memory follows use, to the 2 MiB page.
//
// Why: a decode step reads each layer's K/V rows (SmolLM2 at depth 128-192:
// 7.4 MB a token, ~1 800 4 KiB pages); on 4 KiB pages the page walks left
// attention 0.98-1.00 ms a token, on 2 MiB pages 0.72 (1 thread, Zen 4,
// docs/performance.md).
#include <cstddef>
#include <cstdint>
#include <memory>

namespace oracle {

constexpr size_t kHugePageBytes = size_t{2} << 20;

struct FreeDeleter {
  void operator()(float* p) const noexcept;
};
using FloatBuffer = std::unique_ptr<float[], FreeDeleter>;

// n floats, uninitialized. Throws std::bad_alloc when memory is refused.
FloatBuffer alloc_floats(size_t n);

// An anonymous private mapping of `bytes` rounded up to whole 2 MiB pages,
// 2 MiB-aligned, advised MADV_HUGEPAGE and already faulted in, zeroed (the
// read-only weight copies of base/mmap_file.h). nullptr when refused.
// Release with unmap_huge_region(p, bytes) (the same `bytes`).
uint8_t* map_huge_region(size_t bytes);
void unmap_huge_region(uint8_t* p, size_t bytes) noexcept;
// Bytes of [p, p + bytes) the kernel holds on anonymous huge pages now
// (AnonHugePages of /proc/self/smaps over the mappings it overlaps; 0 where
// there is no /proc). Reports whether the MADV_HUGEPAGE hint was granted.
uint64_t anon_huge_bytes(const void* p, size_t bytes);

}  // namespace oracle
