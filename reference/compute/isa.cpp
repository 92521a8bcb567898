// CPU feature detection and the choice of the kernel table: see isa.h.
#include "reference/compute/isa.h"

#include <cstdlib>
#include <cstring>

#include "base/errors.h"
#include "reference/compute/isa_paths.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>
#endif

namespace oracle::isa {

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Scalar: return "scalar";
    case Isa::Avx2: return "avx2";
    case Isa::Avx512: return "avx512";
  }
  return "?";
}

#if defined(__x86_64__) || defined(_M_X64)
namespace {
// XCR0: which register state the OS saves on a context switch.
uint64_t xgetbv0() {
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return ((uint64_t)edx << 32) | eax;
}
bool bit(uint32_t reg, int b) { return (reg >> b) & 1u; }
}  // namespace

CpuVendor cpu_vendor() {
  uint32_t a, b, c, d;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return CpuVendor::Other;
  return vendor_from_cpuid(b, c, d);
}

CpuFeatures cpu_features() {
  CpuidRegs r;
  uint32_t a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return {};
  r.leaf1_ecx = c, r.leaf1_edx = d;
  r.xcr0 = bit(c, 27) ? xgetbv0() : 0;  // OSXSAVE: XGETBV is available
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) r.has_leaf7 = true, r.leaf7_ebx = b;
  return features_from_cpuid(r);
}
#else
CpuVendor cpu_vendor() { return CpuVendor::Other; }
CpuFeatures cpu_features() { return {}; }
#endif

const char* vendor_name(CpuVendor v) {
  switch (v) {
    case CpuVendor::Intel: return "intel";
    case CpuVendor::Amd: return "amd";
    case CpuVendor::Other: return "other";
  }
  return "?";
}

CpuVendor vendor_from_cpuid(uint32_t ebx, uint32_t ecx, uint32_t edx) {
  char s[13] = {};
  std::memcpy(s, &ebx, 4), std::memcpy(s + 4, &edx, 4), std::memcpy(s + 8, &ecx, 4);
  if (std::strcmp(s, "GenuineIntel") == 0) return CpuVendor::Intel;
  if (std::strcmp(s, "AuthenticAMD") == 0) return CpuVendor::Amd;
  return CpuVendor::Other;
}

const char* prefetch_name(DecodePrefetch p) { return p == DecodePrefetch::Ahead ? "ahead" : "span"; }

DecodePrefetch default_prefetch(CpuVendor v) {
  return v == CpuVendor::Intel ? DecodePrefetch::Ahead : DecodePrefetch::Span;
}

DecodePrefetch choose_prefetch(const char* env, CpuVendor v) {
  if (env == nullptr || *env == '\0' || std::strcmp(env, "auto") == 0) return default_prefetch(v);
  for (DecodePrefetch p : {DecodePrefetch::Span, DecodePrefetch::Ahead})
    if (std::strcmp(env, prefetch_name(p)) == 0) return p;
  throw InputError("ORACLE_PREFETCH", env, "unknown decode prefetch (expected auto, span or ahead)");
}

DecodePrefetch decode_prefetch() {
  static const DecodePrefetch chosen = choose_prefetch(std::getenv("ORACLE_PREFETCH"), cpu_vendor());
  return chosen;
}

CpuFeatures features_from_cpuid(const CpuidRegs& r) {
  const auto bit = [](uint32_t reg, int b) { return ((reg >> b) & 1u) != 0; };
  CpuFeatures f;
  f.sse2 = bit(r.leaf1_edx, 26);
  const uint64_t xcr0 = bit(r.leaf1_ecx, 27) ? r.xcr0 : 0;  // without OSXSAVE no state is enabled
  const bool os_ymm = (xcr0 & 0x6) == 0x6;     // XMM + YMM state
  const bool os_zmm = (xcr0 & 0xE6) == 0xE6;   // + opmask, ZMM_Hi256, Hi16_ZMM
  f.avx = bit(r.leaf1_ecx, 28) && os_ymm;
  f.fma = bit(r.leaf1_ecx, 12) && os_ymm;
  f.f16c = bit(r.leaf1_ecx, 29) && os_ymm;
  if (!r.has_leaf7) return f;
  f.avx2 = bit(r.leaf7_ebx, 5) && os_ymm;
  f.avx512f = bit(r.leaf7_ebx, 16) && os_zmm;
  f.avx512dq = bit(r.leaf7_ebx, 17) && os_zmm;
  f.avx512bw = bit(r.leaf7_ebx, 30) && os_zmm;
  f.avx512vl = bit(r.leaf7_ebx, 31) && os_zmm;
  return f;
}

std::vector<std::string> feature_names(const CpuFeatures& f) {
  const std::pair<bool, const char*> all[] = {
      {f.sse2, "sse2"},         {f.avx, "avx"},           {f.avx2, "avx2"},
      {f.f16c, "f16c"},         {f.fma, "fma"},           {f.avx512f, "avx512f"},
      {f.avx512bw, "avx512bw"}, {f.avx512dq, "avx512dq"}, {f.avx512vl, "avx512vl"}};
  std::vector<std::string> names;
  for (const auto& [has, name] : all)
    if (has) names.push_back(name);
  return names;
}

std::string missing_feature(Isa isa, const CpuFeatures& f) {
#if !defined(ORACLE_ISA_X86)
  if (isa != Isa::Scalar) return "an x86-64 build (this one has the scalar path only)";
#endif
  if (isa == Isa::Scalar) return "";
  if (!f.avx) return "avx";
  if (!f.avx2) return "avx2";
  if (!f.fma) return "fma";  // numerics v2: the lanes are fused multiply-adds (FMA3)
  if (!f.f16c) return "f16c";
  if (isa == Isa::Avx512 && !f.avx512f) return "avx512f";
  if (isa == Isa::Avx512 && !f.avx512bw) return "avx512bw";  // 32-bit opmasks (Q5_0's high bits, kmovd)
  return "";
}

Isa best_isa(const CpuFeatures& f) {
  for (Isa isa : {Isa::Avx512, Isa::Avx2})
    if (missing_feature(isa, f).empty()) return isa;
  return Isa::Scalar;
}

Isa choose_isa(const char* env, const CpuFeatures& f) {
  if (env == nullptr || *env == '\0') return best_isa(f);
  for (Isa isa : kAllIsas) {
    if (std::strcmp(env, isa_name(isa)) != 0) continue;
    const std::string missing = missing_feature(isa, f);
    require_input(missing.empty(), "ORACLE_ISA", env,
                  "this CPU lacks " + missing + ", which the " + env +
                      " path needs (unset ORACLE_ISA to take the best path this CPU has)");
    return isa;
  }
  throw InputError("ORACLE_ISA", env, "unknown instruction-set path (expected scalar, avx2 or avx512)");
}

namespace {
const Kernels& table(Isa isa) {
#if defined(ORACLE_ISA_X86)
  if (isa == Isa::Avx512) return avx512_kernels();
  if (isa == Isa::Avx2) return avx2_kernels();
#endif
  return scalar_kernels();
}

// $ORACLE_PREFETCH is checked with $ORACLE_ISA, so a bad value of either is
// refused on the caller's thread (tools/main.cpp, qmatmul.cpp), not in a worker.
const Kernels& choose_kernels() {
  decode_prefetch();
  return table(choose_isa(std::getenv("ORACLE_ISA"), cpu_features()));
}
}  // namespace

const Kernels& kernels() {
  // Initialised once (a throw leaves it uninitialised: the next call throws
  // again), immutable after: not mutable global state.
  static const Kernels& chosen = choose_kernels();
  return chosen;
}

const Kernels& kernels_for(Isa isa) {
  if (isa == Isa::Scalar) return scalar_kernels();  // every CPU: no CPUID needed
  const std::string missing = missing_feature(isa, cpu_features());
  require_input(missing.empty(), "ORACLE_ISA", isa_name(isa),
                "this CPU lacks " + missing + ", which the " + isa_name(isa) + " path needs");
  return table(isa);
}

std::vector<Isa> available_isas() {
  const CpuFeatures f = cpu_features();
  std::vector<Isa> out;
  for (Isa isa : kAllIsas)
    if (missing_feature(isa, f).empty()) out.push_back(isa);
  return out;
}

}  // namespace oracle::isa
