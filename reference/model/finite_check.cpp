// finite_check: see finite_check.h.
#include "reference/model/finite_check.h"

#include <cmath>
#include <cstring>

#include "base/errors.h"
#include "reference/model/quant.h"

namespace oracle {

namespace {

uint16_t u16_at(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

float f32_at(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, 4);
  return v;
}

bool f16_finite(uint16_t h) { return (h & 0x7c00u) != 0x7c00u; }
bool bf16_finite(uint16_t b) { return (b & 0x7f80u) != 0x7f80u; }

std::string hex16(uint16_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%04x", v);
  return buf;
}

const char* kind(bool nan) { return nan ? "NaN" : "infinite"; }

// Offsets of the fp16 scales inside one block of a ggml quantization, with names.
struct ScaleSlot {
  int offset;
  const char* name;
};

std::vector<ScaleSlot> fp16_scales(DType t) {
  switch (t) {
    case DType::Q4_0: case DType::Q5_0: case DType::Q8_0: return {{0, "d"}};
    case DType::Q4_1: case DType::Q5_1: return {{0, "d"}, {2, "m"}};
    case DType::Q8_1: return {{0, "d"}, {2, "s"}};
    case DType::Q2_K: return {{80, "d"}, {82, "dmin"}};
    case DType::Q3_K: return {{108, "d"}};
    case DType::Q4_K: case DType::Q5_K: return {{0, "d"}, {2, "dmin"}};
    case DType::Q6_K: return {{208, "d"}};
    default: return {};
  }
}

// Element e of a tensor with row length n: "row R, column C".
std::string where_elem(uint64_t e, int64_t row_len) {
  return "element " + std::to_string(e) + " (row " + std::to_string(e / (uint64_t)row_len) + ", column " +
         std::to_string(e % (uint64_t)row_len) + ")";
}

void check_plain(const TensorInfo& t, const std::string& file, const std::string& field) {
  const int64_t row_len = t.shape.empty() ? 1 : t.shape[0];
  const uint64_t size = t.type == DType::F32 ? 4 : 2;
  for (uint64_t e = 0; e < t.n_bytes / size; e++) {
    const uint8_t* p = t.data + e * size;
    if (t.type == DType::F32) {
      const float v = f32_at(p);
      if (!std::isfinite(v)) throw InputError(file, field, where_elem(e, row_len) + " is " + kind(v != v));
    } else {
      const uint16_t h = u16_at(p);
      const bool ok = t.type == DType::F16 ? f16_finite(h) : bf16_finite(h);
      const bool nan = t.type == DType::F16 ? (h & 0x3ffu) != 0 : (h & 0x7fu) != 0;
      if (!ok)
        throw InputError(file, field, where_elem(e, row_len) + " is " + kind(nan) + " (" +
                                          dtype_name(t.type) + " bits " + hex16(h) + ")");
    }
  }
}

void check_blocks(const TensorInfo& t, const std::string& file, const std::string& field) {
  const int64_t block_bytes = dtype_block_bytes(t.type), block_elems = dtype_block_elems(t.type);
  const int64_t row_len = t.shape.empty() ? block_elems : t.shape[0];
  const int64_t blocks_per_row = row_len / block_elems;
  const std::vector<ScaleSlot> slots = fp16_scales(t.type);
  for (uint64_t b = 0; b < t.n_bytes / (uint64_t)block_bytes; b++) {
    const uint8_t* p = t.data + b * (uint64_t)block_bytes;
    auto at = [&] {  // built only when refusing (a string per block cost ~2 % of a short run)
      return "block " + std::to_string(b) + " (row " + std::to_string(b / (uint64_t)blocks_per_row) +
             ", elements " + std::to_string(b % (uint64_t)blocks_per_row * block_elems) + ".." +
             std::to_string((b % (uint64_t)blocks_per_row + 1) * block_elems - 1) + ")";
    };
    if (t.type == DType::Q8_K) {
      const float d = f32_at(p);
      if (!std::isfinite(d)) throw InputError(file, field, at() + ": Q8_K scale d is " + kind(d != d));
      continue;
    }
    for (const ScaleSlot& s : slots) {
      const uint16_t h = u16_at(p + s.offset);
      if (!f16_finite(h))
        throw InputError(file, field, at() + ": " + dtype_name(t.type) + " scale " + s.name + " is " +
                                          kind((h & 0x3ffu) != 0) + " (fp16 bits " + hex16(h) + ")");
    }
  }
}

// I8_ROW: each row is a float32 scale then row_len int8 values.
void check_i8_rows(const TensorInfo& t, const std::string& file, const std::string& field) {
  const int64_t row_len = t.shape.empty() ? 1 : t.shape[0];
  const uint64_t row_bytes = (uint64_t)dtype_row_bytes(DType::I8_ROW, row_len);
  for (uint64_t r = 0; r < t.n_bytes / row_bytes; r++) {
    const float s = f32_at(t.data + r * row_bytes);
    if (!std::isfinite(s))
      throw InputError(file, field, "row " + std::to_string(r) + ": I8_ROW scale is " + kind(s != s));
  }
}

}  // namespace

void check_tensor_finite(const TensorInfo& t, const std::string& file) {
  if (!t.data || t.n_bytes == 0) return;
  const std::string field = "tensor '" + t.name + "'";
  switch (t.type) {
    case DType::F32: case DType::F16: case DType::BF16: return check_plain(t, file, field);
    case DType::I8_ROW: return check_i8_rows(t, file, field);
    default: return check_blocks(t, file, field);
  }
}

void check_weights_finite(const Model& model, const std::string& file) {
  for (const TensorInfo& t : model.tensors) check_tensor_finite(t, file);
}

}  // namespace oracle
