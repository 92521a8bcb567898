// Large buffers on transparent huge pages: see huge_pages.h.
#include "base/huge_pages.h"

#include <sys/mman.h>

#include <cstdlib>
#include <new>

namespace oracle {

void FreeDeleter::operator()(float* p) const noexcept { std::free(p); }

FloatBuffer alloc_floats(size_t n) {
  const size_t bytes = n * sizeof(float);
  if (bytes < kHugePageBytes) {
    void* p = std::malloc(bytes > 0 ? bytes : 1);
    if (p == nullptr) throw std::bad_alloc();
    return FloatBuffer(static_cast<float*>(p));
  }
  const size_t rounded = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  void* p = std::aligned_alloc(kHugePageBytes, rounded);
  if (p == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  ::madvise(p, rounded, MADV_HUGEPAGE);  // a hint: a refusal leaves 4 KiB pages
#endif
  return FloatBuffer(static_cast<float*>(p));
}

}  // namespace oracle
