#pragma once
// ============================================================================
// Generic safetensors files (https://github.com/huggingface/safetensors):
//   u64 N (little endian), N bytes of JSON header
//     {"__metadata__": {"key": "string", ...},
//      "name": {"dtype": "F32"|"I32"|"I64"|..., "shape": [..], "data_offsets": [b, e]}, ...}
//   padded with spaces to a multiple of 8, then the data (offsets relative to 8 + N),
//   tensors back to back without holes, row-major, little endian.
// Used for logit and trace dumps (`oracle run --dump-logits/--dump-trace`) and
// for reading another engine's dumps (`oracle compare`). Checkpoints are read
// by loader_safetensors.cpp.
// ============================================================================
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace oracle {

struct StTensorData {
  std::string name;
  std::string dtype;           // "F32", "F64", "F16", "BF16", "I32", "I64", "U8", ...
  std::vector<int64_t> shape;  // row-major
  std::string bytes;           // element bytes, little endian
  int64_t elements() const;
};

struct SafetensorsFile {
  std::map<std::string, std::string> metadata;  // "__metadata__"
  std::vector<StTensorData> tensors;             // in data order
  const StTensorData* find(const std::string& name) const;  // nullptr if absent
};

// Element size of a dtype name; 0 if unknown.
int st_dtype_bytes(const std::string& dtype);

StTensorData st_f32(const std::string& name, std::vector<int64_t> shape, const std::vector<float>& values);
StTensorData st_i64(const std::string& name, std::vector<int64_t> shape, const std::vector<int64_t>& values);

// Atomic (temp + rename). InputError(path, ...) on bad sizes or I/O failure.
void write_safetensors(const std::string& path, const SafetensorsFile& file);
// Strict: header JSON, dtypes, shapes and offsets must describe the data exactly.
SafetensorsFile read_safetensors(const std::string& path);

// Values of a tensor as float32 (F32, F16, BF16, F64 converted) / as integers
// (I32, I64, U32, ...). InputError(path, "<name> dtype", ...) for other dtypes.
std::vector<float> st_as_f32(const StTensorData& t, const std::string& path);
std::vector<int64_t> st_as_ints(const StTensorData& t, const std::string& path);

}  // namespace oracle
