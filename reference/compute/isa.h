#pragma once
// ============================================================================
// Instruction-set dispatch: one binary for every x86-64 CPU.
//
// The SIMD kernels (the F32 dot and matmul tiles of ops.cpp, the stored-type
// matmul of qmatmul.cpp) exist three times, each in its own translation unit
// compiled with its own flags: isa_scalar.cpp (baseline x86-64, like the rest
// of the project), isa_avx2.cpp (-mavx2 -mfma -mf16c) and isa_avx512.cpp
// (-mavx512f -mavx512bw -mavx2 -mfma -mf16c: every AVX-512 CPU but the Xeon
// Phi has BW; its 32-bit opmask moves made Q5_0 decode 8 % faster on Zen 4,
// docs/performance.md). Numerics v2: each lane step is one fused
// multiply-add, so both SIMD paths need the FMA CPUID bit; the scalar path
// calls num::fma_rn (libm fmaf: exact on any CPU, slower).
// A table of function pointers per path (Kernels) is chosen once, at the
// first use, from CPUID (the best path the CPU and OS support) or from
// $ORACLE_ISA=scalar|avx2|avx512; it is immutable after that.
//
// All three paths give identical bits (docs/numerics.md "ISA paths"): the 16
// canonical lanes (element k in lane k mod 16, increasing k, one fma each)
// are one zmm register on AVX-512, two ymm halves (lanes 0..7, 8..15) on AVX2
// and 16 floats the scalar loops walk; the lane tree is the same adds.
// ============================================================================
#include <cstdint>
#include <string>
#include <vector>

#include "reference/model/quant.h"

namespace oracle::isa {

enum class Isa { Scalar, Avx2, Avx512 };
inline constexpr Isa kAllIsas[] = {Isa::Scalar, Isa::Avx2, Isa::Avx512};
const char* isa_name(Isa isa);  // "scalar", "avx2", "avx512" (the ORACLE_ISA spellings)

// What CPUID reports, with the AVX / AVX-512 register state the OS enables
// (XGETBV): a feature the OS does not save counts as absent.
struct CpuFeatures {
  bool sse2 = false, avx = false, avx2 = false, f16c = false, fma = false;
  bool avx512f = false, avx512bw = false, avx512dq = false, avx512vl = false;
};
CpuFeatures cpu_features();  // this CPU (all false off x86-64): features_from_cpuid of its registers
// The CPUID registers the features are read from: leaf 1 ECX / EDX, leaf 7 (sub-leaf 0) EBX
// when the CPU has leaf 7, and XCR0 (XGETBV 0; read only when leaf 1 ECX has OSXSAVE, bit 27).
struct CpuidRegs {
  uint32_t leaf1_ecx = 0, leaf1_edx = 0;
  bool has_leaf7 = false;
  uint32_t leaf7_ebx = 0;
  uint64_t xcr0 = 0;
};
// sse2 EDX 26; avx ECX 28, fma ECX 12, f16c ECX 29, avx2 leaf-7 EBX 5 (with XMM + YMM state,
// XCR0 bits 1-2, enabled through OSXSAVE); avx512f EBX 16, dq 17, bw 30, vl 31 (with XCR0
// 0xE6: + opmask, ZMM_Hi256, Hi16_ZMM). A pure function of `r` (tests give it registers).
CpuFeatures features_from_cpuid(const CpuidRegs& r);
// The names of the features present ("sse2", "avx2", ...), in a fixed order.
std::vector<std::string> feature_names(const CpuFeatures& f);
// The first feature `isa` needs that `f` lacks ("" when it can run).
std::string missing_feature(Isa isa, const CpuFeatures& f);
// The widest path `f` supports.
Isa best_isa(const CpuFeatures& f);
// The path for $ORACLE_ISA's value `env` (null or empty: best_isa). Throws
// InputError naming ORACLE_ISA for an unknown name or a path `f` cannot run.
Isa choose_isa(const char* env, const CpuFeatures& f);

// ---- decode prefetch (a hint: changes no value, only where loads start) ----------
// Decode streams every matrix once, R rows per tile (isa_simd.h row_block). Every
// CPU gets the span (each tile's cache lines asked for at its start), and Q8_0's
// 34-byte blocks each prefetch their twin one tile on as they are decoded. Ahead
// extends that per-block prefetch to the smaller 32-element blocks (Q4_0, Q4_1,
// Q5_0, Q5_1). Measured (docs/performance.md "Decode prefetch by CPU vendor"):
// faster on an Intel Xeon (Emerald Rapids class: SmolLM2 Q4_1 decode, 1 thread,
// +15 %), mixed or slower on AMD Zen 4; so Intel gets Ahead, every other CPU Span.
enum class DecodePrefetch { Span, Ahead };
const char* prefetch_name(DecodePrefetch p);  // "span", "ahead" (the ORACLE_PREFETCH spellings)
enum class CpuVendor { Intel, Amd, Other };
const char* vendor_name(CpuVendor v);  // "intel", "amd", "other"
// CPUID leaf 0's vendor string, EBX EDX ECX in that order ("GenuineIntel",
// "AuthenticAMD"); a pure function (tests give it registers).
CpuVendor vendor_from_cpuid(uint32_t ebx, uint32_t ecx, uint32_t edx);
CpuVendor cpu_vendor();  // this CPU's (Other off x86-64)
DecodePrefetch default_prefetch(CpuVendor v);  // Intel: Ahead; others: Span
// $ORACLE_PREFETCH's value `env`: null, empty or "auto": default_prefetch(v); "span" or
// "ahead" force one. Anything else throws InputError naming ORACLE_PREFETCH.
DecodePrefetch choose_prefetch(const char* env, CpuVendor v);
// This process's choice (the first call decides, like kernels(); immutable after).
DecodePrefetch decode_prefetch();

// ---- the dispatch table ------------------------------------------------------
// Every kernel gives the bits of its scalar definition (numerics.h
// dot_canonical; dequantize_row then dot_canonical for stored types).
struct Kernels {
  Isa isa;
  // dot_canonical(a, b, n)                                       a, b: (n)
  float (*dot)(const float* a, const float* b, int n);
  // out[t*N + i] = dot_canonical(&w[i*K], &x[t*K], K) for rows [r0, r1)
  //   out (T, N), x (T, K), w (N, K) row-major
  void (*matmul_rows_f32)(float* out, const float* x, const float* w, int T, int K, int N, int r0,
                          int r1);
  // The same over rows stored as `type` (row_bytes apart; not I8_ROW, which
  // qmatmul.cpp dequantizes per row). False: no kernel for `type` here (the
  // caller takes the scalar table's, which has every type).
  bool (*stored_rows)(float* out, const float* x, DType type, const uint8_t* w, int64_t row_bytes,
                      int T, int K, int N, int r0, int r1);
  // True when stored_rows decodes `type` in registers (not through a buffer).
  bool (*register_decoder)(DType type);
  // y[d] = fma_rn(x[d], s, mul_rn(y[d], a)) for d < n (a == 1: fma_rn(x[d], s, y[d]), no
  // mul) — attention's p·v and chunk merge; every element on its own, so every width
  // gives the same bits.
  void (*scale_fma)(float* y, float a, const float* x, float s, int n);
  // out[k] = v[k] < -700 ? 0 : num::exp_d(v[k]) for k < n (certify's float64 statistics,
  // audit/interop/exp_rows.h): each element by exp_d's own operations, 8 doubles per
  // step on the SIMD paths; v and out may alias. v[k] <= 700 expected.
  void (*exp_nonpositive_f64)(const double* v, double* out, int n);
  // h[k] = mul_rn(num::silu_canonical(gate[k]), up[k]) for k < n (SwiGLU): each element by
  // exp_canonical's and silu's own operations, 16 floats per step on the SIMD paths; h may
  // alias gate or up.
  void (*swiglu)(float* h, const float* gate, const float* up, int n);
  // Attention (ops.cpp attention_queries), nq queries sharing one kv head's rows.
  // out[i * ld + j] = dot(q[i], rows[j] + offset, n) for i < nq, j < m (q·k).
  void (*dot_rows)(float* out, int ld, const float* const* q, int nq, const float* const* rows, int64_t offset,
                   int m, int n);
  // o[i][d] = fma_rn(rows[j][offset + d], e[i * ld + j], o[i][d]) for j = 0 .. m[i]-1 in
  // turn, d < n, i < nq (p·v: scale_fma with a == 1 once per j, in j order).
  void (*pv_rows)(float* const* o, const float* e, int ld, const int* m, int nq, const float* const* rows,
                  int64_t offset, int n);
  // out[k] = num::exp_canonical(v[k]) for k < n (softmax weights); v and out may alias.
  void (*exp_f32)(const float* v, float* out, int n);
};

// The table chosen for this process (the first call decides; throws what
// choose_isa throws, and again on every later call).
const Kernels& kernels();
// The table of one path, for tests and benchmarks; throws InputError (naming
// ORACLE_ISA and the missing feature) when this CPU cannot run it.
const Kernels& kernels_for(Isa isa);
// The paths this CPU can run, narrowest first (scalar always).
std::vector<Isa> available_isas();

}  // namespace oracle::isa
