#pragma once
// ============================================================================
// Kernel cases in one registry (docs/cuda.md "Kernel cases"): the test_case of
// ggml's test-backend-ops, llm.c's dev/cuda habit. A case is one kernel call at
// one shape: its parameters (op, shape, stored type, version, precision) in its
// label, seeded inputs, the expectations it must match — the reference/
// function and, where the kernel tests always had one, the loops written from
// docs/numerics.md §4 ("spec") — its tolerance, and the bytes and flops one
// call moves and does (the formula is written beside each case).
//
// The one registry drives
//   - the kernel tests (kernels/tests: test_kernels_emu on the emulation,
//     test_kernels_cuda on a GPU), one TEST_CASE per op;
//   - `oracle kernels --check` (every check case; exit 1 on a mismatch);
//   - `oracle kernels --bench [--op OP]`: time per call, GB/s and GFLOP/s,
//     timed with CUDA events on a GPU and std::chrono::steady_clock under the
//     emulation — where the numbers only prove the path runs (the host CPU
//     interpreting the kernels says nothing about a GPU).
// Tolerance: Exact (0: every bit of every expectation) for the deterministic
// kernels; FastGemmBound for kernels::FastGemm, the per-op bound fast mode is
// held to (optimized/fast_audit.h, docs/cuda.md "Fast mode": no new constant).
// ============================================================================
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "optimized/fast_audit.h"
#include "optimized/kernel_case_support.h"

namespace oracle::optimized::cases {

enum class Tolerance { Exact, FastGemmBound };

// One expected output: where it comes from ("reference", "spec") and its values.
struct Expected {
  std::string source;
  Floats values;
};

// What one call of a case produced. Exact: `got` vs every `want`, bit for bit
// (integer outputs as exact floats). FastGemmBound: `fast` holds the audit.
struct CaseResult {
  std::vector<Expected> want;
  Floats got;
  FastOpStats fast;
};

// A prepared case: its inputs on the device. launch() is one kernel call
// (repeatable, for timing: in-place kernels run again on their own output);
// result() is what the first launch() produced and what it must match.
struct CaseRun {
  std::function<void()> launch;
  std::function<CaseResult()> result;
};

struct KernelCase {
  std::string op;     // the --op filter: matmul_f32, matmul_stored, attention, compact, ...
  std::string label;  // op and parameters, printed on failure and in the benchmark
  uint32_t seed = 0;
  Tolerance tolerance = Tolerance::Exact;
  double bytes = 0;  // device memory one call reads + writes (formula in the case)
  double flops = 0;  // floating-point operations of one call (formula in the case)
  std::function<CaseRun(uint32_t seed)> prepare;
};

// Check: the many small shapes the kernel tests always ran. BenchTiny: one case
// per op and version at a small shape (CI runs them on the emulation). BenchModel:
// the same cases at llama-3-8B shapes (dim 4096, 32 heads of 128, 8 KV heads,
// hidden 14336, vocabulary 128256) for a GPU.
enum class CaseSet { Check, BenchTiny, BenchModel };

// The registry (op "" = every op; else only cases of that op).
std::vector<KernelCase> kernel_cases(CaseSet set, const std::string& op = "");
// Every op name the registry knows, in registry order.
std::vector<std::string> kernel_case_ops();

struct CaseVerdict {
  size_t elements = 0;             // outputs compared, summed over the expectations
  size_t mismatches = 0;           // Exact: differing elements over all expectations; Fast: outputs over the bound
  double worst_ratio = 0;          // FastGemmBound: max |error| / allowance
  std::vector<std::string> first;  // the first mismatches, both bit patterns
  bool pass() const { return mismatches == 0 && elements > 0; }
};
// Judges a result by the case's tolerance.
CaseVerdict judge(const KernelCase& c, const CaseResult& r);
// prepare + one launch + judge.
CaseVerdict check_case(const KernelCase& c);

struct CaseTiming {
  int reps = 0;
  double seconds_per_call = 0;
  double gb_s = 0;      // bytes / seconds_per_call / 1e9
  double gflop_s = 0;   // flops / seconds_per_call / 1e9
  CaseVerdict verdict;  // of the first (untimed) call
};
// prepare, one untimed call (judged), then `reps` calls timed together.
CaseTiming time_case(const KernelCase& c, int reps);
// "cuda-events" on a GPU build, "steady-clock" on the emulation.
const char* timing_clock();
bool timing_is_emulated();

}  // namespace oracle::optimized::cases
