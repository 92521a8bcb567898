// GGUF v2/v3 parser. See gguf.h for the layout; every read goes through
// MappedFile::at, every count is bounded by the bytes left before allocating.
#include <algorithm>
#include <cstring>

#include "base/errors.h"
#include "reference/model/gguf.h"
#include "reference/model/quant.h"

namespace oracle {

// ---- value helpers -------------------------------------------------------------------
const char* gguf_type_name(GgufType t) {
  static const char* names[] = {"uint8", "int8",  "uint16", "int16", "uint32", "int32", "float32",
                                "bool",  "string", "array", "uint64", "int64", "float64"};
  uint32_t i = static_cast<uint32_t>(t);
  return i < 13 ? names[i] : "unknown";
}

bool GgufValue::is_integer() const {
  switch (type) {
    case GgufType::FLOAT32: case GgufType::FLOAT64: case GgufType::STRING: case GgufType::ARRAY:
      return false;
    default:
      return true;
  }
}

bool GgufValue::is_float() const { return type == GgufType::FLOAT32 || type == GgufType::FLOAT64; }

int64_t GgufTensorInfo::n_elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

namespace {

// Smallest encoded size of one value of type t (strings: the u64 length).
uint64_t min_value_bytes(GgufType t) {
  switch (t) {
    case GgufType::UINT8: case GgufType::INT8: case GgufType::BOOL: return 1;
    case GgufType::UINT16: case GgufType::INT16: return 2;
    case GgufType::UINT32: case GgufType::INT32: case GgufType::FLOAT32: return 4;
    case GgufType::ARRAY: return 12;  // u32 element type + u64 count
    default: return 8;                // u64, i64, f64, string length
  }
}

bool valid_type(uint32_t t) { return t <= 12; }

// ---- cursor over the mapped bytes ---------------------------------------------------------
struct Cursor {
  const MappedFile& f;
  uint64_t pos = 0;

  uint64_t remaining() const { return pos <= f.size() ? f.size() - pos : 0; }
  template <class T>
  T read(const std::string& field) {
    T v;
    std::memcpy(&v, f.at(pos, sizeof(T), field), sizeof(T));
    pos += sizeof(T);
    return v;
  }
  std::string read_string(const std::string& field) {
    uint64_t n = read<uint64_t>(field);
    require_input(n <= remaining(), f.path(), field,
                  "string length " + std::to_string(n) + " runs past the end of the file (" +
                      std::to_string(remaining()) + " bytes left)");
    const uint8_t* p = f.at(pos, n, field);
    pos += n;
    return std::string(reinterpret_cast<const char*>(p), n);
  }
  // A count of n items of at least `each` bytes must fit in what is left.
  void require_count(uint64_t n, uint64_t each, const std::string& field) const {
    require_input(n <= remaining() / each, f.path(), field,
                  "count " + std::to_string(n) + " needs at least " + std::to_string(each) +
                      " bytes each but only " + std::to_string(remaining()) + " bytes are left");
  }
};

int64_t read_integer(Cursor& c, GgufType t, const std::string& field) {
  switch (t) {
    case GgufType::UINT8: return c.read<uint8_t>(field);
    case GgufType::INT8: return c.read<int8_t>(field);
    case GgufType::BOOL: return c.read<uint8_t>(field) != 0;
    case GgufType::UINT16: return c.read<uint16_t>(field);
    case GgufType::INT16: return c.read<int16_t>(field);
    case GgufType::UINT32: return c.read<uint32_t>(field);
    case GgufType::INT32: return c.read<int32_t>(field);
    case GgufType::UINT64: return static_cast<int64_t>(c.read<uint64_t>(field));
    default: return c.read<int64_t>(field);
  }
}

double read_float(Cursor& c, GgufType t, const std::string& field) {
  if (t == GgufType::FLOAT32) return c.read<float>(field);
  return c.read<double>(field);
}

void read_array(Cursor& c, GgufValue& v, const std::string& field) {
  uint32_t elem = c.read<uint32_t>(field + " (array element type)");
  require_input(valid_type(elem) && elem != static_cast<uint32_t>(GgufType::ARRAY), c.f.path(),
                field, "unsupported array element type " + std::to_string(elem));
  v.elem = static_cast<GgufType>(elem);
  uint64_t n = c.read<uint64_t>(field + " (array length)");
  c.require_count(n, min_value_bytes(v.elem), field);
  GgufValue tmp;
  tmp.type = v.elem;
  if (v.elem == GgufType::STRING) {
    v.strings.reserve(n);
    for (uint64_t k = 0; k < n; k++) v.strings.push_back(c.read_string(field));
  } else if (tmp.is_float()) {
    v.floats.reserve(n);
    for (uint64_t k = 0; k < n; k++) v.floats.push_back(read_float(c, v.elem, field));
  } else {
    v.ints.reserve(n);
    for (uint64_t k = 0; k < n; k++) v.ints.push_back(read_integer(c, v.elem, field));
  }
}

GgufValue read_value(Cursor& c, const std::string& key) {
  uint32_t t = c.read<uint32_t>(key + " (type)");
  require_input(valid_type(t), c.f.path(), key, "unknown value type " + std::to_string(t));
  GgufValue v;
  v.type = static_cast<GgufType>(t);
  if (v.type == GgufType::STRING) v.str = c.read_string(key);
  else if (v.type == GgufType::ARRAY) read_array(c, v, key);
  else if (v.is_float()) v.f = read_float(c, v.type, key);
  else v.i = read_integer(c, v.type, key);
  return v;
}

}  // namespace

// ---- GgufFile: parsing --------------------------------------------------------------------
GgufFile::GgufFile(const std::string& path, FileResidency residency)
    : file_(std::make_shared<MappedFile>(path, residency)) {
  parse();
}

namespace {

uint32_t read_alignment(const GgufValue* v, const std::string& path) {
  if (!v) return kGgufDefaultAlignment;
  require_input(v->type == GgufType::UINT32, path, "general.alignment", "must be uint32");
  require_input(v->i > 0 && (v->i & (v->i - 1)) == 0, path, "general.alignment",
                "must be a power of two, got " + std::to_string(v->i));
  return static_cast<uint32_t>(v->i);
}

// Reads one tensor info entry; sizes are validated in check_tensor_data.
GgufTensorInfo read_tensor_info(Cursor& c, uint64_t index) {
  std::string field = "tensor_info[" + std::to_string(index) + "]";
  GgufTensorInfo t;
  t.name = c.read_string(field + ".name");
  field += " '" + t.name + "'";
  uint32_t n_dims = c.read<uint32_t>(field + " n_dims");
  require_input(n_dims >= 1 && n_dims <= 4, c.f.path(), field + " n_dims",
                "must be 1..4, got " + std::to_string(n_dims));
  for (uint32_t d = 0; d < n_dims; d++) {
    uint64_t ne = c.read<uint64_t>(field + " dims");
    require_input(ne >= 1 && ne <= (uint64_t(1) << 40), c.f.path(), field + " dims",
                  "dimension " + std::to_string(ne) + " out of range");
    t.dims.push_back(static_cast<int64_t>(ne));
  }
  t.ggml_type = c.read<uint32_t>(field + " type");
  t.offset = c.read<uint64_t>(field + " offset");
  return t;
}

// Computes n_bytes and the data pointer, checking everything against the file.
void check_tensor_data(const MappedFile& f, GgufTensorInfo& t, uint64_t data_offset,
                       uint32_t alignment) {
  const std::string field = "tensor '" + t.name + "'";
  require_input(dtype_supported(static_cast<int>(t.ggml_type)), f.path(), field + " type",
                "unsupported ggml type " + std::to_string(t.ggml_type));
  DType type = static_cast<DType>(t.ggml_type);
  int64_t row = dtype_row_bytes(type, t.dims[0]);
  require_input(row >= 0, f.path(), field + " dims",
                "row length " + std::to_string(t.dims[0]) + " is not a multiple of the " +
                    dtype_name(type) + " block size");
  uint64_t n_bytes = static_cast<uint64_t>(row);
  for (size_t d = 1; d < t.dims.size(); d++) {
    uint64_t ne = static_cast<uint64_t>(t.dims[d]);
    require_input(n_bytes <= f.size() / ne, f.path(), field + " dims",
                  "tensor size exceeds the file size " + std::to_string(f.size()));
    n_bytes *= ne;
  }
  require_input(t.offset % alignment == 0, f.path(), field + " offset",
                "offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                    std::to_string(alignment));
  require_input(t.offset <= f.size(), f.path(), field + " offset",
                "offset " + std::to_string(t.offset) + " lies beyond the file size " +
                    std::to_string(f.size()));
  t.n_bytes = n_bytes;
  t.data = f.at(data_offset + t.offset, n_bytes, field + " data");
}

// No two tensors may share bytes: an overlap makes one tensor's weights another's.
void check_no_overlap(const MappedFile& f, const std::vector<GgufTensorInfo>& tensors) {
  std::vector<const GgufTensorInfo*> order;
  for (const GgufTensorInfo& t : tensors)
    if (t.n_bytes > 0) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](const GgufTensorInfo* a, const GgufTensorInfo* b) {
    return a->offset != b->offset ? a->offset < b->offset : a->name < b->name;
  });
  for (size_t i = 1; i < order.size(); i++) {
    const GgufTensorInfo& a = *order[i - 1];
    const GgufTensorInfo& b = *order[i];
    require_input(a.offset + a.n_bytes <= b.offset, f.path(), "tensor '" + b.name + "' offset",
                  "bytes [" + std::to_string(b.offset) + ", " + std::to_string(b.offset + b.n_bytes) +
                      ") overlap tensor '" + a.name + "' at [" + std::to_string(a.offset) + ", " +
                      std::to_string(a.offset + a.n_bytes) + ")");
  }
}

}  // namespace

void GgufFile::parse() {
  const MappedFile& f = *file_;
  Cursor c{f};
  uint32_t magic = c.read<uint32_t>("magic");
  require_input(magic == kGgufMagic, f.path(), "magic", "not a GGUF file (expected \"GGUF\")");
  version_ = c.read<uint32_t>("version");
  require_input(version_ == 2 || version_ == 3, f.path(), "version",
                "unsupported GGUF version " + std::to_string(version_) + " (need 2 or 3)");
  uint64_t n_tensors = c.read<uint64_t>("n_tensors");
  uint64_t n_kv = c.read<uint64_t>("n_kv");
  c.require_count(n_kv, 8 + 4 + 1, "n_kv");
  for (uint64_t k = 0; k < n_kv; k++) {
    std::string key = c.read_string("kv[" + std::to_string(k) + "].key");
    require_input(!kv_index_.count(key), f.path(), key, "duplicate metadata key");
    kv_index_[key] = kv_.size();
    kv_.emplace_back(key, read_value(c, key));
  }
  alignment_ = read_alignment(find("general.alignment"), f.path());
  c.require_count(n_tensors, 8 + 4 + 8 + 4 + 8, "n_tensors");
  tensors_.reserve(n_tensors);
  for (uint64_t k = 0; k < n_tensors; k++) {
    GgufTensorInfo t = read_tensor_info(c, k);
    require_input(!tensor_index_.count(t.name), f.path(), "tensor '" + t.name + "'",
                  "duplicate tensor name");
    tensor_index_[t.name] = tensors_.size();
    tensors_.push_back(std::move(t));
  }
  data_offset_ = (c.pos + alignment_ - 1) / alignment_ * alignment_;
  for (GgufTensorInfo& t : tensors_) check_tensor_data(f, t, data_offset_, alignment_);
  check_no_overlap(f, tensors_);
}

// ---- GgufFile: lookups ---------------------------------------------------------------------
const GgufValue* GgufFile::find(const std::string& key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const GgufTensorInfo* GgufFile::find_tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {
const GgufValue& need(const GgufFile& g, const std::string& key, bool ok_type(const GgufValue&),
                      const char* what) {
  const GgufValue* v = g.find(key);
  require_input(v != nullptr, g.path(), key, "missing metadata key");
  require_input(ok_type(*v), g.path(), key,
                std::string("expected ") + what + ", found " + gguf_type_name(v->type));
  return *v;
}
bool is_int(const GgufValue& v) { return v.is_integer(); }
bool is_num(const GgufValue& v) { return v.is_integer() || v.is_float(); }
bool is_str(const GgufValue& v) { return v.type == GgufType::STRING; }
bool is_str_arr(const GgufValue& v) { return v.type == GgufType::ARRAY && v.elem == GgufType::STRING; }
bool is_flt_arr(const GgufValue& v) {
  return v.type == GgufType::ARRAY && (v.elem == GgufType::FLOAT32 || v.elem == GgufType::FLOAT64);
}
bool is_int_arr(const GgufValue& v) {
  GgufValue e;
  e.type = v.elem;
  return v.type == GgufType::ARRAY && e.is_integer() && v.elem != GgufType::ARRAY;
}
}  // namespace

int64_t GgufFile::get_int(const std::string& key) const { return need(*this, key, is_int, "an integer").i; }
int64_t GgufFile::get_int(const std::string& key, int64_t fallback) const {
  return has(key) ? get_int(key) : fallback;
}
double GgufFile::get_float(const std::string& key) const {
  const GgufValue& v = need(*this, key, is_num, "a number");
  return v.is_float() ? v.f : static_cast<double>(v.i);
}
double GgufFile::get_float(const std::string& key, double fallback) const {
  return has(key) ? get_float(key) : fallback;
}
bool GgufFile::get_bool(const std::string& key, bool fallback) const {
  return has(key) ? need(*this, key, is_int, "a bool").i != 0 : fallback;
}
std::string GgufFile::get_string(const std::string& key) const { return need(*this, key, is_str, "a string").str; }
std::string GgufFile::get_string(const std::string& key, const std::string& fallback) const {
  return has(key) ? get_string(key) : fallback;
}
const std::vector<std::string>& GgufFile::get_strings(const std::string& key) const {
  return need(*this, key, is_str_arr, "an array of strings").strings;
}
const std::vector<double>& GgufFile::get_floats(const std::string& key) const {
  return need(*this, key, is_flt_arr, "an array of floats").floats;
}
const std::vector<int64_t>& GgufFile::get_ints(const std::string& key) const {
  return need(*this, key, is_int_arr, "an array of integers").ints;
}

}  // namespace oracle
