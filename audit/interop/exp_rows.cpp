// num::exp_d over a row, 8 lanes at a time (exp_rows.h). The lanes live in the
// ISA dispatch table (reference/compute/isa.h Kernels::exp_nonpositive_f64,
// isa_simd.h): the same source compiled per path in its own translation unit, so
// everything here stays baseline x86-64 (scripts/isa_check.py).
#include "audit/interop/exp_rows.h"

#include <cstring>

#include "reference/compute/isa.h"

namespace oracle {

void exp_nonpositive_rows(const double* v, double* out, int n) { isa::kernels().exp_nonpositive_f64(v, out, n); }

bool exp_nonpositive_rows_on(const char* name, const double* v, double* out, int n) {
  for (isa::Isa path : isa::available_isas())
    if (std::strcmp(isa::isa_name(path), name) == 0) {
      isa::kernels_for(path).exp_nonpositive_f64(v, out, n);
      return true;
    }
  return false;
}

}  // namespace oracle
