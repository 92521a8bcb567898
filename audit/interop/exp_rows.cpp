// num::exp_d over a row, 8 lanes at a time (exp_rows.h). The lanes are GCC
// vector extensions: the same source compiled for AVX-512 (one zmm) and AVX2
// (two ymm) by target attributes, chosen at run time like the matmul kernels.
#include "audit/interop/exp_rows.h"

#include <cstdint>
#include <cstring>

#include "numerics/numerics.h"
#include "reference/compute/isa.h"

namespace oracle {
namespace {

typedef double v8d __attribute__((vector_size(64)));
typedef int64_t v8l __attribute__((vector_size(64)));

double exp_nonpositive(double v) { return v < -700.0 ? 0.0 : num::exp_d(v); }

// num::exp_d, lane by lane: n = round(x/ln2) by the 1.5·2^52 shift, r = x - n·ln2
// (two parts), Taylor to r^20 with one division per term, times 2^n.
// Lanes below -700 give 0 (exp_nonpositive).
#define ORACLE_EXP_LANES(x)                                                                  \
  ({                                                                                         \
    const v8d magic = v8d{} + 6755399441055744.0;                                            \
    const v8d shifted = (x) * 1.4426950408889634 + magic; /* mul, then add: two roundings */ \
    const v8d n = shifted - magic;                                                           \
    const v8d r = ((x) - n * 0.693147180369123816490) - n * 1.90821492927058770002e-10;      \
    v8d t = v8d{} + 1.0;                                                                     \
    for (int i = 20; i >= 1; i--) t = 1.0 + t * r / (double)i;                               \
    const v8l e = ((v8l)shifted - (int64_t)0x4338000000000000LL + 1023) << 52;               \
    const v8d y = t * (v8d)e;                                                                \
    (v8d)((x) < -700.0 ? (v8l){} : (v8l)y);                                                  \
  })

#define ORACLE_EXP_ROWS_BODY                        \
  int k = 0;                                        \
  for (; k + 8 <= n; k += 8) {                      \
    v8d x;                                          \
    std::memcpy(&x, v + k, sizeof x);               \
    const v8d y = ORACLE_EXP_LANES(x);              \
    std::memcpy(out + k, &y, sizeof y);             \
  }                                                 \
  for (; k < n; k++) out[k] = exp_nonpositive(v[k]);

#if defined(__x86_64__)
__attribute__((target("avx512f"))) void exp_rows_avx512(const double* v, double* out, int n) {
  ORACLE_EXP_ROWS_BODY
}

__attribute__((target("avx2"))) void exp_rows_avx2(const double* v, double* out, int n) { ORACLE_EXP_ROWS_BODY }
#endif

void exp_rows_scalar(const double* v, double* out, int n) {
  for (int k = 0; k < n; k++) out[k] = exp_nonpositive(v[k]);
}

using ExpRows = void (*)(const double*, double*, int);

ExpRows rows_for(isa::Isa path) {
#if defined(__x86_64__)
  if (path == isa::Isa::Avx512) return exp_rows_avx512;
  if (path == isa::Isa::Avx2) return exp_rows_avx2;
#endif
  (void)path;
  return exp_rows_scalar;
}

}  // namespace

void exp_nonpositive_rows(const double* v, double* out, int n) { rows_for(isa::kernels().isa)(v, out, n); }

bool exp_nonpositive_rows_on(const char* name, const double* v, double* out, int n) {
  for (isa::Isa path : isa::available_isas())
    if (std::strcmp(isa::isa_name(path), name) == 0) {
      rows_for(path)(v, out, n);
      return true;
    }
  return false;
}

}  // namespace oracle
