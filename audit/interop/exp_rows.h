#pragma once
// ============================================================================
// num::exp_d over a row, bit for bit, several elements at a time (certify's
// float64 log-softmax and KLD: three exps per vocabulary entry per scored token,
// ~95 % of the statistics' time when one at a time; docs/performance.md
// "Certify (2026-12-04)").
//
// Every element is computed on its own by exactly exp_d's operations (a
// rounded multiply, add, subtract and divide each, in exp_d's order, no fma:
// -ffp-contract=off), so a lane of an 8-wide register gives the bits the
// scalar function gives; only the 2^n scale is formed differently — from the
// bits of n + 1.5·2^52, which are 0x4338000000000000 + n for |n| < 2^51 —
// and that is an integer identity, not a rounding. No sum is formed here:
// callers add the results in their own fixed order (increasing k).
// The path follows the process's ISA choice (reference/compute/isa.h Kernels::exp_nonpositive_f64,
// $ORACLE_ISA): avx512 and avx2 run 8 lanes, scalar calls num::exp_d.
// ============================================================================

namespace oracle {

// out[k] = v[k] < -700 ? 0 : num::exp_d(v[k]) for k < n (exp_nonpositive of
// logit_stats.cpp); v and out may be the same array. v[k] <= 700 expected.
void exp_nonpositive_rows(const double* v, double* out, int n);

// The same on one named path ("scalar", "avx2", "avx512"), for tests; false
// when this CPU cannot run it.
bool exp_nonpositive_rows_on(const char* isa, const double* v, double* out, int n);

}  // namespace oracle
