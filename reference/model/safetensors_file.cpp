// Generic safetensors files: writer and strict reader (safetensors_file.h).
#include "reference/model/safetensors_file.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "base/errors.h"
#include "numerics/numerics.h"

namespace oracle {

using nlohmann::json;

int64_t StTensorData::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

const StTensorData* SafetensorsFile::find(const std::string& name) const {
  for (const StTensorData& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

int st_dtype_bytes(const std::string& d) {
  if (d == "F64" || d == "I64" || d == "U64") return 8;
  if (d == "F32" || d == "I32" || d == "U32") return 4;
  if (d == "F16" || d == "BF16" || d == "I16" || d == "U16") return 2;
  if (d == "I8" || d == "U8" || d == "BOOL") return 1;
  return 0;
}

StTensorData st_f32(const std::string& name, std::vector<int64_t> shape, const std::vector<float>& v) {
  return {name, "F32", std::move(shape), std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4)};
}

StTensorData st_i64(const std::string& name, std::vector<int64_t> shape, const std::vector<int64_t>& v) {
  return {name, "I64", std::move(shape), std::string(reinterpret_cast<const char*>(v.data()), v.size() * 8)};
}

// ============================================================================
// Writing
// ============================================================================
void write_safetensors(const std::string& path, const SafetensorsFile& f) {
  json header = json::object();
  if (!f.metadata.empty()) header["__metadata__"] = f.metadata;
  uint64_t offset = 0;
  for (const StTensorData& t : f.tensors) {
    require_input(st_dtype_bytes(t.dtype) > 0 && (int64_t)t.bytes.size() == t.elements() * st_dtype_bytes(t.dtype),
                  path, t.name, "byte count does not match dtype and shape");
    require_input(!header.contains(t.name) && t.name != "__metadata__", path, t.name, "duplicate tensor name");
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  const uint64_t n = text.size();
  write_file_atomic(path, [&](std::ostream& out) {
    out.write(reinterpret_cast<const char*>(&n), 8);
    out.write(text.data(), (std::streamsize)text.size());
    for (const StTensorData& t : f.tensors) out.write(t.bytes.data(), (std::streamsize)t.bytes.size());
  });
}

// ============================================================================
// Reading
// ============================================================================
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  require_input(in.good(), path, "file", "cannot open");
  std::string b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  require_input(!in.bad(), path, "file", "read failed");
  return b;
}

std::vector<int64_t> read_shape(const json& v, const std::string& path, const std::string& field) {
  require_input(v.is_array() && v.size() <= 8, path, field, "shape must be an array of at most 8 sizes");
  std::vector<int64_t> shape;
  for (const json& d : v) {
    require_input(d.is_number_unsigned() && d.get<uint64_t>() <= (uint64_t(1) << 40), path, field,
                  "bad dimension " + d.dump());
    shape.push_back(d.get<int64_t>());
  }
  return shape;
}

StTensorData read_entry(const std::string& name, const json& e, const std::string& data, const std::string& path) {
  require_input(e.is_object(), path, name, "entry must be an object");
  StTensorData t;
  t.name = name;
  require_input(e.contains("dtype") && e["dtype"].is_string(), path, name + " dtype", "missing dtype");
  t.dtype = e["dtype"].get<std::string>();
  const int eb = st_dtype_bytes(t.dtype);
  require_input(eb > 0, path, name + " dtype", "unknown dtype '" + t.dtype + "'");
  t.shape = read_shape(e.value("shape", json()), path, name + " shape");
  const json offs = e.value("data_offsets", json());
  require_input(offs.is_array() && offs.size() == 2 && offs[0].is_number_unsigned() && offs[1].is_number_unsigned(),
                path, name + " data_offsets", "must be [begin, end]");
  const uint64_t b = offs[0].get<uint64_t>(), end = offs[1].get<uint64_t>();
  uint64_t n = 1;
  for (int64_t d : t.shape) {
    require_input(d == 0 || n <= data.size() / (uint64_t)d + 1, path, name + " shape", "larger than the file");
    n *= (uint64_t)d;
  }
  require_input(b <= end && end <= data.size() && end - b == n * (uint64_t)eb, path, name + " data_offsets",
                "byte range does not match dtype, shape and file size");
  t.bytes = data.substr(b, end - b);
  return t;
}

}  // namespace

SafetensorsFile read_safetensors(const std::string& path) {
  const std::string bytes = slurp(path);
  require_input(bytes.size() >= 8, path, "header length", "file shorter than 8 bytes");
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  require_input(n <= bytes.size() - 8, path, "header length", "header larger than the file");
  json h;
  try {
    h = json::parse(bytes.begin() + 8, bytes.begin() + 8 + (long)n);
  } catch (const json::exception& e) {
    throw InputError(path, "header", std::string("invalid JSON: ") + e.what());
  }
  require_input(h.is_object(), path, "header", "must be a JSON object");
  const std::string data = bytes.substr(8 + n);
  SafetensorsFile f;
  uint64_t covered = 0;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // (begin, index)
  for (const auto& [name, e] : h.items()) {
    if (name == "__metadata__") {
      require_input(e.is_object(), path, "__metadata__", "must be an object of strings");
      for (const auto& [k, v] : e.items()) {
        require_input(v.is_string(), path, "__metadata__." + k, "metadata values must be strings");
        f.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    f.tensors.push_back(read_entry(name, e, data, path));
    covered += f.tensors.back().bytes.size();
    ranges.emplace_back(e["data_offsets"][0].get<uint64_t>(), f.tensors.size() - 1);
  }
  // Tensors sharing bytes are forbidden (the Rust loader refuses them); sorted by begin, each
  // non-empty tensor starts at or after the previous one's end.
  std::sort(ranges.begin(), ranges.end());
  uint64_t prev_end = 0;
  const StTensorData* prev = nullptr;
  for (const auto& [begin, i] : ranges) {
    const StTensorData& t = f.tensors[i];
    if (t.bytes.empty()) continue;
    require_input(!prev || begin >= prev_end, path, t.name + " data_offsets",
                  "overlaps tensor '" + (prev ? prev->name : std::string()) + "' (the format forbids tensors sharing bytes)");
    prev_end = begin + t.bytes.size();
    prev = &t;
  }
  require_input(covered == data.size(), path, "data_offsets", "tensors do not cover the data exactly");
  return f;
}

std::vector<float> st_as_f32(const StTensorData& t, const std::string& path) {
  const size_t n = (size_t)t.elements();
  std::vector<float> out(n);
  const char* p = t.bytes.data();
  for (size_t i = 0; i < n; i++) {
    if (t.dtype == "F32") std::memcpy(&out[i], p + 4 * i, 4);
    else if (t.dtype == "F64") {
      double d;
      std::memcpy(&d, p + 8 * i, 8);
      out[i] = (float)d;
    } else if (t.dtype == "F16" || t.dtype == "BF16") {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      out[i] = t.dtype == "F16" ? num::fp16_to_f32(h) : num::f32_from_bits((uint32_t)h << 16);
    } else {
      throw InputError(path, t.name + " dtype", "expected a float tensor, got " + t.dtype);
    }
  }
  return out;
}

std::vector<int64_t> st_as_ints(const StTensorData& t, const std::string& path) {
  const size_t n = (size_t)t.elements();
  std::vector<int64_t> out(n);
  const char* p = t.bytes.data();
  for (size_t i = 0; i < n; i++) {
    if (t.dtype == "I64" || t.dtype == "U64") std::memcpy(&out[i], p + 8 * i, 8);
    else if (t.dtype == "I32") {
      int32_t v;
      std::memcpy(&v, p + 4 * i, 4);
      out[i] = v;
    } else if (t.dtype == "U32") {
      uint32_t v;
      std::memcpy(&v, p + 4 * i, 4);
      out[i] = v;
    } else {
      throw InputError(path, t.name + " dtype", "expected an integer tensor, got " + t.dtype);
    }
  }
  return out;
}

}  // namespace oracle
