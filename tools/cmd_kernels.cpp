// oracle kernels: the kernel case registry (optimized/kernel_cases.h,
// docs/cli.md#kernels, docs/cuda.md "Kernel cases") on a device backend.
//   oracle kernels --check [--op OP] [--backend cuda-emu|cuda] [--json]
//   oracle kernels --bench [--op OP] [--shapes tiny|model] [--reps N] [--backend ...] [--json]
//   oracle kernels --list [--json]
// --check runs every check case (the kernel tests' cases) once and exits 1 if any
// output differs from its expectation (bit for bit; fast mode's GEMM: beyond its
// derived bound), printing the first mismatches with both bit patterns. --bench
// runs one case per op and version, judged once and then timed: time per call,
// GB/s and GFLOP/s from the case's byte and flop counts (CUDA events on a GPU;
// steady_clock on the emulation, where the numbers only prove the path runs).
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "base/errors.h"
#include "tools/commands.h"
#include "tools/device_backend.h"

namespace oracle::tools {

struct KernelsOptions {
  bool check = false;
  bool bench = false;
  bool list = false;
  std::string op;                    // "" = every op
  std::string backend = "cuda-emu";  // or cuda
  std::string shapes = "tiny";       // --bench: tiny (CI, the emulation) or model (llama-3-8B's, a GPU)
  int reps = 20;                     // --bench: timed calls per case
  bool json = false;
};

static const char* kKernelsEmulatedNote =
    "host emulation: the CPU interprets the kernels, so these times only prove the path runs "
    "and say nothing about a GPU (--backend cuda times it there)";

static void validate_kernels_options(const KernelsOptions& o, const DevicePipeline& dev) {
  require_input(o.check + o.bench + o.list == 1, "command line", "--check",
                "give exactly one of --check, --bench or --list");
  require_input(o.shapes == "tiny" || o.shapes == "model", o.shapes, "--shapes", "want tiny or model");
  require_input(o.reps >= 1, std::to_string(o.reps), "--reps", "want at least 1 timed call");
  if (o.op.empty()) return;
  std::string known;
  for (const std::string& op : dev.kernel_case_ops()) {
    if (op == o.op) return;
    known += (known.empty() ? "" : ", ") + op;
  }
  require_input(false, o.op, "--op", "unknown op (want one of " + known + ")");
}

static void print_kernel_check(const nlohmann::json& r, const std::string& backend, int failed) {
  for (const auto& c : r["cases"]) {
    if (c["pass"].get<bool>()) continue;
    std::printf("MISMATCH %s (seed %u): %zu of %zu compared outputs\n", c["label"].get<std::string>().c_str(),
                c["seed"].get<unsigned>(), c["mismatches"].get<size_t>(), c["elements"].get<size_t>());
    for (const auto& line : c["first_mismatches"]) std::printf("  %s\n", line.get<std::string>().c_str());
  }
  std::printf("kernels --check (%s): %zu cases, %d mismatched\n", backend.c_str(), r["cases"].size(), failed);
}

static void print_kernel_bench(const nlohmann::json& r, const KernelsOptions& o) {
  std::printf("kernels --bench (%s, %s shapes, %d reps, clock %s)\n", o.backend.c_str(), o.shapes.c_str(), o.reps,
              r["clock"].get<std::string>().c_str());
  if (r["emulated"].get<bool>()) std::printf("note: %s\n", kKernelsEmulatedNote);
  std::printf("%-60s %12s %10s %10s %s\n", "case", "us/call", "GB/s", "GFLOP/s", "match");
  for (const auto& c : r["cases"])
    std::printf("%-60s %12.3f %10.3f %10.3f %s\n", c["label"].get<std::string>().c_str(), c["us_per_call"].get<double>(),
                c["gb_s"].get<double>(), c["gflop_s"].get<double>(), c["pass"].get<bool>() ? "yes" : "NO");
}

static int failed_kernel_cases(const nlohmann::json& r) {
  int failed = 0;
  for (const auto& c : r["cases"]) failed += !c["pass"].get<bool>();
  return failed;
}

static int run_kernels(const KernelsOptions& o) {
  const DevicePipeline* dev = require_backend(o.backend);
  require_input(dev != nullptr, o.backend, "--backend", "kernels run on a device backend (cuda-emu or cuda)");
  validate_kernels_options(o, *dev);
  if (o.list) {
    const std::vector<std::string> ops = dev->kernel_case_ops();
    if (o.json) std::printf("%s\n", nlohmann::json{{"ops", ops}}.dump().c_str());
    else for (const std::string& op : ops) std::printf("%s\n", op.c_str());
    return kExitOk;
  }
  const std::string set = o.check ? "check" : o.shapes == "model" ? "bench-model" : "bench-tiny";
  nlohmann::json r = dev->kernel_cases(set, o.op, o.check ? 0 : o.reps);
  const int failed = failed_kernel_cases(r);
  r.update({{"backend", o.backend}, {"mode", o.check ? "check" : "bench"}, {"op", o.op}, {"failed", failed}});
  if (o.bench) r.update({{"shapes", o.shapes}, {"reps", o.reps}});
  if (o.bench && r["emulated"].get<bool>()) r["note"] = kKernelsEmulatedNote;
  if (o.json) std::printf("%s\n", r.dump().c_str());
  else if (o.check) print_kernel_check(r, o.backend, failed);
  else print_kernel_bench(r, o);
  return failed == 0 ? kExitOk : kExitCheckFailed;
}

Command setup_kernels(CLI::App& app) {
  auto o = std::make_shared<KernelsOptions>();
  auto* sub = app.add_subcommand("kernels", "Check or benchmark the device kernels, case by case (the kernel case registry)");
  sub->add_flag("--check", o->check, "Run every check case; exit 1 on any mismatch (the first ones printed with their bits)");
  sub->add_flag("--bench", o->bench, "Time one case per op and version: us per call, GB/s, GFLOP/s");
  sub->add_flag("--list", o->list, "List the op names --op takes");
  sub->add_option("--op", o->op, "Only the cases of this op (e.g. matmul_stored, attention, compact)");
  sub->add_option("--backend", o->backend, "cuda-emu (host emulation of the kernels) or cuda (GPU)")->capture_default_str();
  sub->add_option("--shapes", o->shapes, "--bench shapes: tiny or model (llama-3-8B's)")->capture_default_str();
  sub->add_option("--reps", o->reps, "--bench: timed calls per case (after one judged call)")->capture_default_str();
  sub->add_flag("--json", o->json, "One JSON object: every case with its verdict (and timing)");
  return {sub, [o] { return run_kernels(*o); }};
}

}  // namespace oracle::tools
