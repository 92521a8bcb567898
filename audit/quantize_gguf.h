#pragma once
// ============================================================================
// Whole-file quantization: GGUF in, GGUF out (the `oracle quantize` tool).
// Row quantizers live in reference/model/quantize_rows.h.
// ============================================================================
#include <string>

#include "reference/model/model.h"

namespace oracle {

struct QuantizeReport {
  int quantized = 0;  // tensors converted to the target type
  int kept = 0;       // tensors copied unchanged (1-D: norms)
};

// Reads a GGUF (F32/F16/BF16 weights), writes a GGUF with every matrix (2-D
// tensor) quantized to `type` and everything else copied: metadata verbatim
// plus general.file_type (llama.cpp's code for Q8_0/Q4_0/Q4_K; for I8_ROW
// the source's is kept), general.quantization_version = 2 and
// oracle.quantized_type = the type name. A matrix whose rows are not
// whole blocks is an InputError naming the tensor (use I8_ROW for those).
QuantizeReport quantize_gguf(const std::string& in_path, const std::string& out_path, DType type);

}  // namespace oracle
