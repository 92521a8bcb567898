// GGUF -> quantized GGUF (see audit/quantize_gguf.h). Matrices are
// quantized row by row with quantize_row; vectors (norms) stay as stored.
#include <string>
#include <vector>

#include "reference/base/errors.h"
#include "reference/model/gguf.h"
#include "reference/model/gguf_writer.h"
#include "reference/model/quant.h"
#include "audit/quantize_gguf.h"
#include "reference/model/quantize_rows.h"

namespace oracle {
namespace {

// llama.cpp's llama_ftype for a file whose matrices are all of one type.
int llama_file_type(DType t) {
  switch (t) {
    case DType::Q4_0: return 2;
    case DType::Q8_0: return 7;
    case DType::Q4_K: return 14;  // LLAMA_FTYPE_MOSTLY_Q4_K_S
    default: return -1;
  }
}

// One source tensor as float32 rows: (rows, row_len).
std::vector<float> tensor_f32(const GgufFile& g, const GgufTensorInfo& t) {
  DType src = static_cast<DType>(t.ggml_type);
  require_input(src == DType::F32 || src == DType::F16 || src == DType::BF16, g.path(), t.name,
                std::string("source tensor is ") + dtype_name(src) + "; quantize needs F32, F16 or BF16");
  int64_t row = t.dims[0], rows = t.n_elements() / row;
  std::vector<float> out((size_t)t.n_elements());
  for (int64_t r = 0; r < rows; r++)
    dequantize_row(src, t.data + r * dtype_row_bytes(src, row), row, out.data() + r * row);
  return out;
}

std::vector<uint8_t> quantize_tensor(const GgufFile& g, const GgufTensorInfo& t, DType type) {
  int64_t row = t.dims[0], rows = t.n_elements() / row;
  int64_t row_bytes = dtype_row_bytes(type, row);
  require_input(row_bytes > 0, g.path(), t.name,
                "row length " + std::to_string(row) + " is not a multiple of the " + dtype_name(type) +
                    " block (" + std::to_string(dtype_block_elems(type)) + "); use --type I8_ROW");
  std::vector<float> x = tensor_f32(g, t);
  std::vector<uint8_t> out((size_t)(row_bytes * rows));
  for (int64_t r = 0; r < rows; r++) quantize_row(type, x.data() + r * row, row, out.data() + r * row_bytes);
  return out;
}

}  // namespace

QuantizeReport quantize_gguf(const std::string& in_path, const std::string& out_path, DType type) {
  require_input(quantize_supported(type), out_path, "type",
                std::string("cannot quantize to ") + dtype_name(type) + " (Q8_0, Q4_0, Q4_K, I8_ROW)");
  GgufFile g(in_path);
  GgufWriter w;
  w.copy_metadata(g);
  if (llama_file_type(type) >= 0) w.add_u32("general.file_type", (uint32_t)llama_file_type(type));
  w.add_u32("general.quantization_version", 2);
  w.add_string("oracle.quantized_type", dtype_name(type));
  QuantizeReport rep;
  for (const GgufTensorInfo& t : g.tensors()) {
    if (t.dims.size() >= 2) {
      w.add_tensor(t.name, type, t.dims, quantize_tensor(g, t, type));
      rep.quantized++;
    } else {
      w.add_tensor(t.name, static_cast<DType>(t.ggml_type), t.dims,
                   std::vector<uint8_t>(t.data, t.data + t.n_bytes));
      rep.kept++;
    }
  }
  w.write(out_path);
  return rep;
}

}  // namespace oracle
