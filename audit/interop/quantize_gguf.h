#pragma once
// ============================================================================
// Whole-file quantization: GGUF in, GGUF out (the `oracle quantize` tool),
// as llama-quantize does it (docs/quantize.md). Row quantizers live in
// reference/model/quantize_rows.h, the per-tensor type choices in
// audit/interop/quantize_policy.h.
// ============================================================================
#include <cstdint>
#include <string>
#include <vector>

#include "reference/model/model.h"

namespace oracle {

struct QuantizeOptions {
  std::string type = "Q8_0";      // a llama-quantize file type (quantize_policy.h), case-insensitive
  bool pure = false;              // llama-quantize --pure: no per-tensor mix rules
  bool allow_requantize = false;  // llama-quantize --allow-requantize: quantized inputs may be converted
  int threads = 1;                // rows in parallel; the output does not depend on it
};

struct QuantizedTensor {
  std::string name;
  std::vector<int64_t> dims;  // ggml order
  DType from, to;
  uint64_t bytes_in = 0, bytes_out = 0;
  bool converted = false;  // to != from (else copied byte for byte)
  bool fallback = false;   // the row length forced another type than the mix's
};

struct QuantizeReport {
  std::string type;  // canonical mix name
  int ftype = -1;    // general.file_type written (-1: the source's kept, I8_ROW)
  std::vector<QuantizedTensor> tensors;  // in file order
  int quantized = 0, kept = 0, fallbacks = 0;
  uint64_t bytes_in = 0, bytes_out = 0;  // tensor data (as llama-quantize's "model size" / "quant size")
  uint64_t file_bytes = 0;               // the written file
  int64_t n_elements = 0;
  double bpw_in() const { return n_elements ? 8.0 * (double)bytes_in / (double)n_elements : 0.0; }
  double bpw_out() const { return n_elements ? 8.0 * (double)bytes_out / (double)n_elements : 0.0; }
};

// Reads a GGUF and writes what `llama-quantize [--pure] [--allow-requantize]
// IN OUT TYPE` writes (docs/quantize.md): the same tensor order, per-tensor
// types (quantize_policy.h) and data, metadata copied with
// general.quantization_version = 2 and general.file_type = the mix's
// llama_ftype appended, split.* keys dropped. Atomic (temp + rename).
// InputError naming file and tensor for: an unknown type, a quantized input
// that would be converted without allow_requantize, NaN/Inf in a tensor it
// converts, an input type it cannot read.
QuantizeReport quantize_gguf(const std::string& in_path, const std::string& out_path, const QuantizeOptions& opt);
// Shorthand: every quantizable tensor to `type` (opt.pure), as before.
QuantizeReport quantize_gguf(const std::string& in_path, const std::string& out_path, DType type);

}  // namespace oracle
