// oracle quantize IN OUT --type T [--pure] [--allow-requantize] [--threads N] [--json]:
// writes what `llama-quantize [--pure] [--allow-requantize] IN OUT T` writes —
// the same per-tensor types and bytes (docs/quantize.md) — or the project's
// per-row int8 I8_ROW (docs/formats.md). Reports size and bits per weight.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/errors.h"
#include "reference/model/quant.h"
#include "audit/interop/quantize_gguf.h"
#include "reference/model/quantize_rows.h"
#include "audit/interop/quantize_policy.h"
#include "tools/commands.h"

namespace oracle::tools {

struct QuantizeOptions {
  std::string in, out;
  oracle::QuantizeOptions opt;
  bool json = false;
  bool verbose = false;  // one line per tensor
};

static nlohmann::json tensor_json(const QuantizedTensor& t) {
  return {{"name", t.name},          {"dims", t.dims},          {"from", dtype_name(t.from)},
          {"to", dtype_name(t.to)},  {"bytes", t.bytes_out},    {"converted", t.converted},
          {"fallback", t.fallback}};
}

static void print_human(const QuantizeOptions& a, const QuantizeReport& r) {
  if (a.verbose)
    for (const QuantizedTensor& t : r.tensors)
      std::printf("  %-36s %6s -> %-6s%s\n", t.name.c_str(), dtype_name(t.from), dtype_name(t.to),
                  t.fallback ? " (row-length fallback)" : "");
  std::printf("%s: %s, %d tensors converted, %d copied, %d fallbacks\n", a.out.c_str(), r.type.c_str(),
              r.quantized, r.kept, r.fallbacks);
  std::printf("model size = %8.2f MiB (%.2f BPW)\n", (double)r.bytes_in / 1048576.0, r.bpw_in());
  std::printf("quant size = %8.2f MiB (%.2f BPW), file %llu bytes\n", (double)r.bytes_out / 1048576.0,
              r.bpw_out(), (unsigned long long)r.file_bytes);
}

static int run_quantize(const QuantizeOptions& a) {
  QuantizeReport r = quantize_gguf(a.in, a.out, a.opt);
  if (!a.json) {
    print_human(a, r);
    return kExitOk;
  }
  nlohmann::json tensors = nlohmann::json::array();
  for (const QuantizedTensor& t : r.tensors) tensors.push_back(tensor_json(t));
  nlohmann::json out = {{"input", a.in},           {"output", a.out},          {"type", r.type},
                        {"pure", a.opt.pure},      {"file_type", r.ftype},     {"converted", r.quantized},
                        {"copied", r.kept},        {"fallbacks", r.fallbacks}, {"n_elements", r.n_elements},
                        {"bytes_in", r.bytes_in},  {"bytes_out", r.bytes_out}, {"file_bytes", r.file_bytes},
                        {"bpw_in", r.bpw_in()},    {"bpw_out", r.bpw_out()},   {"tensors", tensors}};
  std::printf("%s\n", out.dump().c_str());
  return kExitOk;
}

Command setup_quantize(CLI::App& app) {
  auto args = std::make_shared<QuantizeOptions>();
  args->opt.threads = (int)std::max(1u, std::thread::hardware_concurrency());
  auto* sub = app.add_subcommand("quantize", "Quantize a GGUF model exactly as llama-quantize does");
  sub->add_option("IN", args->in, "Input GGUF")->required();
  sub->add_option("OUT", args->out, "Output GGUF (written atomically)")->required();
  sub->add_option("--type", args->opt.type, "llama-quantize type, case-insensitive: " + quant_mix_names())
      ->required();
  sub->add_flag("--pure", args->opt.pure, "Every quantizable tensor gets the type's default (llama-quantize --pure)");
  sub->add_flag("--allow-requantize", args->opt.allow_requantize,
                "Allow converting tensors that are already quantized (llama-quantize --allow-requantize)");
  sub->add_option("--threads", args->opt.threads, "Threads (the output does not depend on it)")
      ->check(int_in<int>(1, 1024));
  sub->add_flag("--verbose", args->verbose, "One line per tensor");
  sub->add_flag("--json", args->json, "Machine-readable report");
  return {sub, [args] { return run_quantize(*args); }};
}

}  // namespace oracle::tools
