#pragma once
// ============================================================================
// GGUF v2/v3 container: a read-only parser over a memory-mapped file.
// Layout (little endian): magic "GGUF", u32 version, u64 n_tensors, u64 n_kv,
// n_kv x (string key, u32 type, value), n_tensors x (string name, u32 n_dims,
// u64 dims[n_dims], u32 ggml_type, u64 offset), padding to `alignment`, data.
// Every count, length and offset is checked against the file size before it
// is used or allocated: a corrupt header gives InputError, never bad_alloc.
// ============================================================================
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/mmap_file.h"
#include "reference/model/model.h"

namespace oracle {

constexpr uint32_t kGgufMagic = 0x46554747u;  // "GGUF" read as little-endian u32
constexpr uint32_t kGgufDefaultAlignment = 32;

// ---- metadata values ------------------------------------------------------------
enum class GgufType : uint32_t {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6,
  BOOL = 7, STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};
const char* gguf_type_name(GgufType t);

// One metadata value. Scalars: integer types and BOOL in `i` (UINT64 values
// above INT64_MAX are stored as their two's-complement bit pattern), FLOAT32/64
// in `f`, STRING in `str`. ARRAY: `elem` is the element type and exactly one of
// `ints` / `floats` / `strings` holds the elements.
struct GgufValue {
  GgufType type = GgufType::UINT32;
  GgufType elem = GgufType::UINT32;  // ARRAY only
  int64_t i = 0;
  double f = 0.0;
  std::string str;
  std::vector<int64_t> ints;         // (n) integer/bool arrays
  std::vector<double> floats;        // (n) FLOAT32/FLOAT64 arrays
  std::vector<std::string> strings;  // (n) STRING arrays
  bool is_integer() const;
  bool is_float() const;
};

// ---- tensor table -----------------------------------------------------------------
struct GgufTensorInfo {
  std::string name;
  uint32_t ggml_type = 0;
  std::vector<int64_t> dims;  // ggml order: dims[0] is the contiguous row length
  uint64_t offset = 0;        // relative to the data section
  uint64_t n_bytes = 0;       // validated: data_offset + offset + n_bytes <= file size
  const uint8_t* data = nullptr;
  int64_t n_elements() const;
};

// ---- the file ----------------------------------------------------------------------
class GgufFile {
 public:
  // Throws InputError. The bytes are mapped unless `residency` says otherwise.
  explicit GgufFile(const std::string& path, FileResidency residency = FileResidency::mapped);
  const std::string& path() const { return file_->path(); }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  std::shared_ptr<MappedFile> file() const { return file_; }

  // Metadata in file order (keys are unique; duplicates are an InputError).
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }
  const GgufValue* find(const std::string& key) const;
  bool has(const std::string& key) const { return find(key) != nullptr; }
  // Typed getters: InputError(path, key, ...) when missing or of the wrong type.
  int64_t get_int(const std::string& key) const;
  int64_t get_int(const std::string& key, int64_t fallback) const;
  double get_float(const std::string& key) const;  // accepts integers too
  double get_float(const std::string& key, double fallback) const;
  bool get_bool(const std::string& key, bool fallback) const;
  std::string get_string(const std::string& key) const;
  std::string get_string(const std::string& key, const std::string& fallback) const;
  const std::vector<std::string>& get_strings(const std::string& key) const;
  const std::vector<double>& get_floats(const std::string& key) const;
  const std::vector<int64_t>& get_ints(const std::string& key) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(const std::string& name) const;

 private:
  void parse();
  std::shared_ptr<MappedFile> file_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kGgufDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::map<std::string, size_t> kv_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t> tensor_index_;
};

// The tokenizer a GGUF embeds (tokenizer.ggml.*) -> Vocab. Works for
// vocabulary-only files. InputError when tokens/scores/types lengths disagree.
Vocab vocab_from_gguf(const GgufFile& gguf);
Vocab load_gguf_vocab(const std::string& path);

}  // namespace oracle
