// oracle quantize IN OUT --type T: GGUF (F32/F16/BF16) -> GGUF with every
// matrix quantized to Q8_0, Q4_0, Q4_K (byte-identical to llama-quantize's
// reference quantizers) or the project's per-row int8 I8_ROW (docs/formats.md).
#include <cstdio>

#include "reference/base/errors.h"
#include "reference/model/quant.h"
#include "audit/quantize_gguf.h"
#include "reference/model/quantize_rows.h"
#include "tools/commands.h"

namespace oracle::tools {

struct QuantizeOptions {
  std::string in, out, type;
};

static DType parse_type(const std::string& name) {
  for (DType t : {DType::Q8_0, DType::Q4_0, DType::Q4_K, DType::I8_ROW})
    if (name == dtype_name(t)) return t;
  throw InputError("--type", "type", "unknown type '" + name + "' (Q8_0, Q4_0, Q4_K, I8_ROW)");
}

static int run_quantize(const QuantizeOptions& a) {
  DType t = parse_type(a.type);
  QuantizeReport r = quantize_gguf(a.in, a.out, t);
  std::printf("%s: %d matrices quantized to %s, %d tensors copied\n", a.out.c_str(), r.quantized,
              dtype_name(t), r.kept);
  return kExitOk;
}

Command setup_quantize(CLI::App& app) {
  auto args = std::make_shared<QuantizeOptions>();
  auto* sub = app.add_subcommand("quantize", "Quantize a GGUF model (Q8_0, Q4_0, Q4_K, I8_ROW)");
  sub->add_option("IN", args->in, "Input GGUF (F32, F16 or BF16 weights)")->required();
  sub->add_option("OUT", args->out, "Output GGUF")->required();
  sub->add_option("--type", args->type, "Q8_0, Q4_0, Q4_K or I8_ROW")->required();
  return {sub, [args] { return guarded("quantize", [args] { return run_quantize(*args); }); }};
}

}  // namespace oracle::tools
