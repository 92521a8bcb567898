#pragma once
// ============================================================================
// GGUF v3 writer: metadata of every GGUF value type and tensors, each tensor's
// data aligned to `alignment` (general.alignment, default 32). Output is read
// back by GgufFile and by the python `gguf` package. Used by `oracle synth`
// and `oracle quantize`.
// ============================================================================
#include <cstdint>
#include <string>
#include <vector>

#include "reference/model/gguf.h"

namespace oracle {

class GgufWriter {
 public:
  // ---- metadata (keys must be unique; a repeated key replaces the value) ----
  void add(const std::string& key, GgufValue value);
  void add_u32(const std::string& key, uint32_t v);
  void add_i32(const std::string& key, int32_t v);
  void add_u64(const std::string& key, uint64_t v);
  void add_f32(const std::string& key, float v);
  void add_bool(const std::string& key, bool v);
  void add_string(const std::string& key, const std::string& v);
  void add_strings(const std::string& key, const std::vector<std::string>& v);
  void add_f32s(const std::string& key, const std::vector<float>& v);
  void add_i32s(const std::string& key, const std::vector<int32_t>& v);
  // Every key of `src` except general.alignment (set_alignment decides that).
  void copy_metadata(const GgufFile& src);
  void set_alignment(uint32_t alignment);  // power of two; written when != 32

  // ---- tensors (written in the order added) ----
  // dims in ggml order (dims[0] = row length); bytes.size() must equal
  // dtype_row_bytes(type, dims[0]) * rows, else InputError(name, "size", ...).
  void add_tensor(const std::string& name, DType type, const std::vector<int64_t>& dims,
                  std::vector<uint8_t> bytes);
  void add_tensor_f32(const std::string& name, const std::vector<int64_t>& dims, const float* data);

  // Writes the file; InputError(path, "file", ...) when it cannot be written.
  void write(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    DType type;
    std::vector<int64_t> dims;
    std::vector<uint8_t> bytes;
  };
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::vector<Tensor> tensors_;
  uint32_t alignment_ = kGgufDefaultAlignment;
};

}  // namespace oracle
