// GGUF v3 writer: header, metadata, tensor infos, padding, aligned data.
#include "reference/model/gguf_writer.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "base/errors.h"
#include "reference/model/quant.h"
#include "base/file_io.h"

namespace oracle {

// ---- metadata ---------------------------------------------------------------------------------
void GgufWriter::add(const std::string& key, GgufValue value) {
  for (auto& kv : kv_)
    if (kv.first == key) {
      kv.second = std::move(value);
      return;
    }
  kv_.emplace_back(key, std::move(value));
}

namespace {
GgufValue scalar(GgufType t, int64_t i) {
  GgufValue v;
  v.type = t;
  v.i = i;
  return v;
}
GgufValue array_of(GgufType elem) {
  GgufValue v;
  v.type = GgufType::ARRAY;
  v.elem = elem;
  return v;
}
}  // namespace

void GgufWriter::add_u32(const std::string& key, uint32_t v) { add(key, scalar(GgufType::UINT32, v)); }
void GgufWriter::add_i32(const std::string& key, int32_t v) { add(key, scalar(GgufType::INT32, v)); }
void GgufWriter::add_u64(const std::string& key, uint64_t v) {
  add(key, scalar(GgufType::UINT64, static_cast<int64_t>(v)));
}
void GgufWriter::add_bool(const std::string& key, bool v) { add(key, scalar(GgufType::BOOL, v)); }
void GgufWriter::add_f32(const std::string& key, float v) {
  GgufValue g;
  g.type = GgufType::FLOAT32;
  g.f = v;
  add(key, g);
}
void GgufWriter::add_string(const std::string& key, const std::string& v) {
  GgufValue g;
  g.type = GgufType::STRING;
  g.str = v;
  add(key, g);
}
void GgufWriter::add_strings(const std::string& key, const std::vector<std::string>& v) {
  GgufValue g = array_of(GgufType::STRING);
  g.strings = v;
  add(key, g);
}
void GgufWriter::add_f32s(const std::string& key, const std::vector<float>& v) {
  GgufValue g = array_of(GgufType::FLOAT32);
  g.floats.assign(v.begin(), v.end());
  add(key, g);
}
void GgufWriter::add_i32s(const std::string& key, const std::vector<int32_t>& v) {
  GgufValue g = array_of(GgufType::INT32);
  g.ints.assign(v.begin(), v.end());
  add(key, g);
}

void GgufWriter::remove(const std::string& key) {
  for (size_t i = 0; i < kv_.size(); i++)
    if (kv_[i].first == key) {
      kv_.erase(kv_.begin() + (long)i);
      return;
    }
}

void GgufWriter::copy_metadata(const GgufFile& src) {
  for (const auto& [key, value] : src.metadata())
    if (key != "general.alignment") add(key, value);
}

void GgufWriter::set_alignment(uint32_t alignment) {
  require_input(alignment > 0 && (alignment & (alignment - 1)) == 0, "<gguf writer>",
                "general.alignment", "must be a power of two");
  alignment_ = alignment;
}

// ---- tensors ------------------------------------------------------------------------------------
namespace {
uint64_t expected_bytes(const std::string& name, DType type, const std::vector<int64_t>& dims) {
  require_input(!dims.empty() && dims.size() <= 4, name, "dims", "need 1..4 dimensions");
  int64_t row = dtype_row_bytes(type, dims[0]);
  require_input(row >= 0, name, "dims", "row length is not a multiple of the block size");
  uint64_t expected = static_cast<uint64_t>(row);
  for (size_t d = 1; d < dims.size(); d++) expected *= static_cast<uint64_t>(dims[d]);
  return expected;
}

void require_size(const std::string& name, size_t got, uint64_t expected) {
  require_input(got == expected, name, "size",
                std::to_string(got) + " bytes given, " + std::to_string(expected) + " expected");
}
}  // namespace

void GgufWriter::add_tensor(const std::string& name, DType type, const std::vector<int64_t>& dims,
                            std::vector<uint8_t> bytes) {
  uint64_t expected = expected_bytes(name, type, dims);
  require_size(name, bytes.size(), expected);
  tensors_.push_back(Tensor{name, type, dims, std::move(bytes), nullptr, expected});
}

void GgufWriter::add_tensor_deferred(const std::string& name, DType type, const std::vector<int64_t>& dims,
                                     TensorMaker make) {
  uint64_t expected = expected_bytes(name, type, dims);
  tensors_.push_back(Tensor{name, type, dims, {}, std::move(make), expected});
}

void GgufWriter::add_tensor_streamed(const std::string& name, DType type, const std::vector<int64_t>& dims,
                                     TensorStreamer stream) {
  uint64_t expected = expected_bytes(name, type, dims);
  tensors_.push_back(Tensor{name, type, dims, {}, nullptr, expected, std::move(stream)});
}

void GgufWriter::add_tensor_f32(const std::string& name, const std::vector<int64_t>& dims,
                                const float* data) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<uint8_t> bytes(static_cast<size_t>(n) * 4);
  std::memcpy(bytes.data(), data, bytes.size());
  add_tensor(name, DType::F32, dims, std::move(bytes));
}

// ---- encoding -------------------------------------------------------------------------------------
namespace {

struct Out {
  std::vector<uint8_t> bytes;
  template <class T>
  void put(T v) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    bytes.insert(bytes.end(), b, b + sizeof(T));
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
  void pad_to(uint64_t alignment) {
    while (bytes.size() % alignment != 0) bytes.push_back(0);
  }
};

void put_integer(Out& o, GgufType t, int64_t i) {
  switch (t) {
    case GgufType::UINT8: case GgufType::BOOL: o.put<uint8_t>(static_cast<uint8_t>(i)); break;
    case GgufType::INT8: o.put<int8_t>(static_cast<int8_t>(i)); break;
    case GgufType::UINT16: o.put<uint16_t>(static_cast<uint16_t>(i)); break;
    case GgufType::INT16: o.put<int16_t>(static_cast<int16_t>(i)); break;
    case GgufType::UINT32: o.put<uint32_t>(static_cast<uint32_t>(i)); break;
    case GgufType::INT32: o.put<int32_t>(static_cast<int32_t>(i)); break;
    case GgufType::UINT64: o.put<uint64_t>(static_cast<uint64_t>(i)); break;
    default: o.put<int64_t>(i); break;
  }
}

void put_float(Out& o, GgufType t, double f) {
  if (t == GgufType::FLOAT32) o.put<float>(static_cast<float>(f));
  else o.put<double>(f);
}

void put_value(Out& o, const GgufValue& v) {
  o.put<uint32_t>(static_cast<uint32_t>(v.type));
  if (v.type == GgufType::STRING) return o.put_string(v.str);
  if (v.is_float()) return put_float(o, v.type, v.f);
  if (v.type != GgufType::ARRAY) return put_integer(o, v.type, v.i);
  o.put<uint32_t>(static_cast<uint32_t>(v.elem));
  if (v.elem == GgufType::STRING) {
    o.put<uint64_t>(v.strings.size());
    for (const std::string& s : v.strings) o.put_string(s);
  } else if (v.elem == GgufType::FLOAT32 || v.elem == GgufType::FLOAT64) {
    o.put<uint64_t>(v.floats.size());
    for (double f : v.floats) put_float(o, v.elem, f);
  } else {
    o.put<uint64_t>(v.ints.size());
    for (int64_t i : v.ints) put_integer(o, v.elem, i);
  }
}

}  // namespace

uint64_t GgufWriter::write_tensor_bytes(const Tensor& t, const ByteSink& sink) const {
  if (t.stream) {
    uint64_t n = 0;
    t.stream([&](const void* p, size_t k) { sink(p, k); n += k; });
    return n;
  }
  std::vector<uint8_t> made;
  if (t.make) made = t.make();
  const std::vector<uint8_t>& bytes = t.make ? made : t.bytes;
  sink(bytes.data(), bytes.size());
  return bytes.size();
}

uint64_t GgufWriter::write_to(const ByteSink& sink) const {
  Out o;
  const bool explicit_alignment = alignment_ != kGgufDefaultAlignment;
  o.put<uint32_t>(kGgufMagic);
  o.put<uint32_t>(3);
  o.put<uint64_t>(tensors_.size());
  o.put<uint64_t>(kv_.size() + (explicit_alignment ? 1 : 0));
  for (const auto& [key, value] : kv_) {
    o.put_string(key);
    put_value(o, value);
  }
  if (explicit_alignment) {
    o.put_string("general.alignment");
    put_value(o, scalar(GgufType::UINT32, alignment_));
  }
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    o.put_string(t.name);
    o.put<uint32_t>(static_cast<uint32_t>(t.dims.size()));
    for (int64_t d : t.dims) o.put<uint64_t>(static_cast<uint64_t>(d));
    o.put<uint32_t>(static_cast<uint32_t>(t.type));
    o.put<uint64_t>(offset);
    offset += (t.size + alignment_ - 1) / alignment_ * alignment_;
  }
  o.pad_to(alignment_);
  uint64_t written = 0;
  const ByteSink counted = [&](const void* p, size_t n) { sink(p, n); written += n; };
  counted(o.bytes.data(), o.bytes.size());
  const std::vector<uint8_t> zeros(alignment_, 0);
  for (const Tensor& t : tensors_) {
    uint64_t n = write_tensor_bytes(t, counted);
    require_size(t.name, n, t.size);
    counted(zeros.data(), (alignment_ - n % alignment_) % alignment_);
  }
  return written;
}

// Written to a temporary file in the target's directory, renamed on success
// (AtomicWriter, base/file_io.h): a failed write leaves any
// previous file intact and no half-written one.
void GgufWriter::write(const std::string& path) const {
  AtomicWriter out(path, "file");
  write_to([&](const void* p, size_t n) { out.write(p, n); });
  out.commit();
}

}  // namespace oracle
