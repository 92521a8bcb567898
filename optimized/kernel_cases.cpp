// The kernel case registry, its judge and its clock — see kernel_cases.h.
#include "optimized/kernel_cases.h"

#include <chrono>

namespace oracle::optimized::cases {

// One line per family; each is defined in optimized/kernel_cases_<family>.cpp.
void add_matmul_cases(std::vector<KernelCase>& out, CaseSet set);
void add_op_cases(std::vector<KernelCase>& out, CaseSet set);
void add_attention_cases(std::vector<KernelCase>& out, CaseSet set);
void add_sampler_cases(std::vector<KernelCase>& out, CaseSet set);

namespace {
std::vector<KernelCase> all_cases(CaseSet set) {
  std::vector<KernelCase> out;
  add_matmul_cases(out, set);
  add_op_cases(out, set);
  add_attention_cases(out, set);
  add_sampler_cases(out, set);
  return out;
}
}  // namespace

std::vector<KernelCase> kernel_cases(CaseSet set, const std::string& op) {
  std::vector<KernelCase> out;
  for (KernelCase& c : all_cases(set))
    if (op.empty() || c.op == op) out.push_back(std::move(c));
  return out;
}

std::vector<std::string> kernel_case_ops() {
  std::vector<std::string> ops;
  for (const KernelCase& c : all_cases(CaseSet::BenchTiny))
    if (ops.empty() || ops.back() != c.op) ops.push_back(c.op);
  return ops;
}

CaseVerdict judge(const KernelCase& c, const CaseResult& r) {
  CaseVerdict v;
  if (c.tolerance == Tolerance::FastGemmBound) {
    v.elements = (size_t)r.fast.elements;
    v.mismatches = (size_t)r.fast.over;
    v.worst_ratio = r.fast.worst_ratio;
    if (r.fast.over > 0)
      v.first.push_back(c.label + ": " + std::to_string(r.fast.over) + " of " + std::to_string(r.fast.elements) +
                        " outputs beyond b(K) = " + std::to_string(r.fast.rel_bound) + " (worst |error| / allowance " +
                        std::to_string(r.fast.worst_ratio) + ")");
    return v;
  }
  for (const Expected& e : r.want) {
    v.elements += r.got.size();
    v.mismatches += bit_mismatches(c.label + " kernel vs " + e.source, e.values, r.got, &v.first);
  }
  if (r.want.empty()) v.first.push_back(c.label + ": no expectation"), v.elements = 0;
  return v;
}

CaseVerdict check_case(const KernelCase& c) {
  CaseRun run = c.prepare(c.seed);
  run.launch();
  return judge(c, run.result());
}

#if defined(ORACLE_CUDA_EMULATION)
const char* timing_clock() { return "steady-clock"; }
bool timing_is_emulated() { return true; }
namespace {
// The emulated launches run to completion on the host, one after the other.
double seconds_for(const std::function<void()>& launch, int reps) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; i++) launch();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace
#else
const char* timing_clock() { return "cuda-events"; }
bool timing_is_emulated() { return false; }
namespace {
// Two events on the default stream around the launches (cudaEventElapsedTime: ms,
// about 0.5 us resolution); the launches go back to back, so the time is the GPU's.
double seconds_for(const std::function<void()>& launch, int reps) {
  cudaEvent_t start, stop;
  kernels::check_cuda(cudaEventCreate(&start), "cudaEventCreate");
  kernels::check_cuda(cudaEventCreate(&stop), "cudaEventCreate");
  kernels::check_cuda(cudaEventRecord(start, nullptr), "cudaEventRecord");
  for (int i = 0; i < reps; i++) launch();
  kernels::check_cuda(cudaEventRecord(stop, nullptr), "cudaEventRecord");
  kernels::check_cuda(cudaEventSynchronize(stop), "cudaEventSynchronize");
  float ms = 0;
  kernels::check_cuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms * 1e-3;
}
}  // namespace
#endif

CaseTiming time_case(const KernelCase& c, int reps) {
  CaseRun run = c.prepare(c.seed);
  run.launch();  // judged, and warms the path (first-use set-up such as cuBLAS's handle)
  CaseTiming t;
  t.verdict = judge(c, run.result());
  t.reps = reps;
  if (reps <= 0) return t;
  t.seconds_per_call = seconds_for(run.launch, reps) / reps;
  if (t.seconds_per_call > 0) {
    t.gb_s = c.bytes / t.seconds_per_call / 1e9;
    t.gflop_s = c.flops / t.seconds_per_call / 1e9;
  }
  return t;
}

}  // namespace oracle::optimized::cases
