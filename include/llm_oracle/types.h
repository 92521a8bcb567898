#pragma once
// llm_oracle: stored weight types (ggml's type ids; I8_ROW is the project's
// per-row int8, docs/formats.md) and their names ("f32", "q4_k", ...).
#include <cstdint>
#include <string>
#include <vector>

namespace llm_oracle {

enum class DType : int {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15, BF16 = 30,
  I8_ROW = 1000,
};

std::string dtype_name(DType t);  // "F32", "Q4_K", "I8_ROW"
// Case-insensitive name -> type; InputError("dtype", field, ...) for an unknown name.
DType parse_dtype(const std::string& name, const std::string& field = "dtype");
std::vector<DType> dtypes();              // every type the library reads
bool quantize_supported(DType t);         // the types quantize_rows writes
int64_t block_elems(DType t);             // 1 (F32/F16/BF16/I8_ROW), 32 or 256
// Bytes of one row of n values; InputError("dtype", "n", ...) when n is not a
// whole number of blocks.
int64_t row_bytes(DType t, int64_t n);

}  // namespace llm_oracle
