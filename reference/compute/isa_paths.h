#pragma once
// Internal to the ISA dispatch (isa.h): the tables each path's translation
// unit defines, and the baseline helpers the SIMD paths call for the k % 16
// tails. Only isa*.cpp include this.
//
// The SIMD TUs are compiled with -mavx2 / -mavx512f -mavx512bw: every function they
// define, except the one table getter each, has internal linkage (anonymous
// namespace), so the linker can never pick an AVX copy of an inline or
// template function for the baseline code (scripts/isa_check.py proves it on
// the objects and the binary). Hence these helpers live in isa_scalar.cpp
// (baseline) rather than in a header the SIMD TUs would instantiate.
#include <cstdint>

#include "reference/compute/isa.h"

namespace oracle::isa {

const Kernels& scalar_kernels();
const Kernels& avx2_kernels();    // defined only where ORACLE_ISA_X86 (isa_avx2.cpp)
const Kernels& avx512_kernels();  // defined only where ORACLE_ISA_X86 (isa_avx512.cpp)

// acc (16 lanes) after the whole 16-element chunks: adds elements k16..k-1 of
// w·x (lane = k mod 16) and returns num::lane_tree_reduce(acc).
float finish_lanes_f32(float* acc, const float* w, const float* x, int k16, int k);
// The same for a plain stored type (F32/F16/BF16) row: elements k16..k-1 are
// dequantize_row'd first.
float finish_lanes_stored(float* acc, DType type, const uint8_t* row, const float* x, int k16, int k);
// Kernels::scale_fma on elements [d0, n) (the SIMD paths' tails).
void scale_fma_tail(float* y, float a, const float* x, float s, int d0, int n);
// Kernels::exp_nonpositive_f64 on elements [k0, n) (the SIMD paths' tails).
void exp_nonpositive_tail(const double* v, double* out, int k0, int n);
// Kernels::swiglu on elements [k0, n) (the SIMD paths' tails).
void swiglu_tail(float* h, const float* gate, const float* up, int k0, int n);
// Kernels::exp_f32 on elements [k0, n) (the SIMD paths' tails).
void exp_f32_tail(const float* v, float* out, int k0, int n);

}  // namespace oracle::isa
