#pragma once
// ============================================================================
// GGUF v3 writer: metadata of every GGUF value type and tensors, each tensor's
// data aligned to `alignment` (general.alignment, default 32). Output is read
// back by GgufFile and by the python `gguf` package. Used by `oracle synth`
// and `oracle quantize` (the project's one GGUF writer). The layout is the one ggml's gguf writer produces
// (header, key/values in order, tensor infos, zero padding to `alignment`,
// every tensor's data zero-padded to `alignment`), so a file with the same
// keys and tensors is byte-identical to llama-quantize's.
// ============================================================================
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "reference/model/gguf.h"

namespace oracle {

// Receives a file's bytes in order (write_to, streamed tensors).
using ByteSink = std::function<void(const void* data, size_t n)>;

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
  // A tensor whose bytes `make` produces while write() streams the file (one
  // tensor in memory at a time); same size rule as add_tensor, checked then.
  using TensorMaker = std::function<std::vector<uint8_t>()>;
  void add_tensor_deferred(const std::string& name, DType type, const std::vector<int64_t>& dims,
                           TensorMaker make);
  // A tensor that `stream` writes into the sink in pieces while the file is
  // written (an 8B-parameter synthetic model never has to fit in memory);
  // same size rule, checked when its last byte has been written.
  using TensorStreamer = std::function<void(const ByteSink&)>;
  void add_tensor_streamed(const std::string& name, DType type, const std::vector<int64_t>& dims,
                           TensorStreamer stream);
  void remove(const std::string& key);  // drops a metadata key (no-op when absent)

  // Writes the file atomically: to a temporary beside `path`, renamed over it
  // when complete (removed on any error, so no half-written file is left).
  // InputError(path, "file", ...) when it cannot be written; an exception of
  // a TensorMaker propagates after the temporary is removed.
  void write(const std::string& path) const;
  // The same bytes streamed into `sink` (e.g. a file in memory); returns the
  // byte count. Exceptions as write().
  uint64_t write_to(const ByteSink& sink) const;

 private:
  struct Tensor {
    std::string name;
    DType type;
    std::vector<int64_t> dims;
    std::vector<uint8_t> bytes;
    TensorMaker make;  // set for deferred tensors (bytes empty until written)
    uint64_t size = 0;
    TensorStreamer stream;  // set for streamed tensors
  };
  uint64_t write_tensor_bytes(const Tensor& t, const ByteSink& sink) const;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::vector<Tensor> tensors_;
  uint32_t alignment_ = kGgufDefaultAlignment;
};

}  // namespace oracle
