#include "arrays.h"

#include <nanobind/stl/vector.h>

#include <cstring>

#include "llm_oracle/errors.h"

namespace llm_oracle::py {

namespace {
void need(bool ok, const char* name, const char* field, const std::string& message) {
  if (!ok) throw InputError(name, field, message);
}
std::string dtype_text(nb::dlpack::dtype d) {
  const char* code = d.code == (uint8_t)nb::dlpack::dtype_code::Float   ? "float"
                     : d.code == (uint8_t)nb::dlpack::dtype_code::Int   ? "int"
                     : d.code == (uint8_t)nb::dlpack::dtype_code::UInt  ? "uint"
                     : d.code == (uint8_t)nb::dlpack::dtype_code::Bfloat ? "bfloat"
                                                                         : "other";
  return std::string(code) + std::to_string(d.bits);
}
// Row-major strides in elements: stride[i] = prod(shape[i+1..]); size-1 dims are free.
bool c_contiguous(const nb::ndarray<nb::ro>& a) {
  int64_t expect = 1;
  for (size_t i = a.ndim(); i-- > 0;) {
    if (a.shape(i) != 1 && a.stride(i) != expect) return false;
    expect *= (int64_t)a.shape(i);
  }
  return true;
}
template <class T>
nb::ndarray<nb::numpy, T> owning(std::vector<T>&& v, const std::vector<size_t>& shape) {
  auto* heap = new std::vector<T>(std::move(v));
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T>(heap->data(), shape.size(), shape.data(), owner);
}
}  // namespace

std::string shape_text(const std::vector<size_t>& s) {
  std::string t = "(";
  for (size_t i = 0; i < s.size(); i++) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + (s.size() == 1 ? ",)" : ")");
}

std::vector<size_t> check_array(const nb::ndarray<nb::ro>& a, const char* name, Kind kind, int min_ndim,
                                int max_ndim) {
  need(a.is_valid(), name, "array", "not an array");
  need(a.device_type() == nb::device::cpu::value, name, "device",
       "the array is not in host memory (move it to the CPU first, e.g. tensor.cpu())");
  const nb::dlpack::dtype d = a.dtype();
  if (kind == Kind::F32)
    need(d == nb::dtype<float>(), name, "dtype",
         "expected float32, got " + dtype_text(d) + " (convert explicitly, e.g. x.astype(np.float32), if that is what you mean)");
  if (kind == Kind::U8)
    need(d == nb::dtype<uint8_t>(), name, "dtype", "expected uint8 bytes, got " + dtype_text(d));
  need((int)a.ndim() >= min_ndim && (int)a.ndim() <= max_ndim, name, "ndim",
       "expected " + std::to_string(min_ndim) + (min_ndim == max_ndim ? "" : ".." + std::to_string(max_ndim)) +
           " dimensions, got " + std::to_string(a.ndim()));
  need(c_contiguous(a), name, "contiguity",
       "the array is strided (not C-contiguous); pass np.ascontiguousarray(x) to copy it");
  std::vector<size_t> shape(a.ndim());
  for (size_t i = 0; i < a.ndim(); i++) shape[i] = a.shape(i);
  return shape;
}

const float* f32_data(const InArray& a) { return static_cast<const float*>(a.data()); }
const void* raw_data(const InArray& a) { return a.data(); }

OutBuffer out_f32(const nb::object& out, const std::vector<size_t>& shape, const char* name) {
  if (out.is_none()) {
    size_t n = 1;
    for (size_t s : shape) n *= s;
    NpF32 arr = to_numpy(std::vector<float>(n), shape);
    return {arr.data(), nb::cast(arr)};
  }
  OutArray o;
  need(nb::try_cast(out, o, false), name, "out", "must be a writable float32 array (or None)");
  const std::vector<size_t> got = check_array(nb::ndarray<nb::ro>(o), name, Kind::F32, 0, 8);
  need(got == shape, name, "out", "expected shape " + shape_text(shape) + ", got " + shape_text(got));
  return {static_cast<float*>(o.data()), out};
}

NpF32 to_numpy(std::vector<float>&& v, const std::vector<size_t>& shape) { return owning(std::move(v), shape); }
NpU8 to_numpy(std::vector<uint8_t>&& v, const std::vector<size_t>& shape) { return owning(std::move(v), shape); }

std::vector<int> to_ids(const nb::handle& h, const char* name) {
  nb::ndarray<nb::ro> a;
  if (nb::try_cast(h, a, false)) {
    const nb::dlpack::dtype d = a.dtype();
    need(d.code == (uint8_t)nb::dlpack::dtype_code::Int || d.code == (uint8_t)nb::dlpack::dtype_code::UInt, name,
         "dtype", "token ids must be integers, got " + dtype_text(d));
    need(a.ndim() == 1, name, "ndim", "token ids must be 1-D, got " + std::to_string(a.ndim()) + " dimensions");
    std::vector<int> ids(a.shape(0));
    const char* base = static_cast<const char*>(a.data());
    for (size_t i = 0; i < ids.size(); i++) {
      const char* p = base + (int64_t)i * a.stride(0) * (int64_t)(d.bits / 8);
      int64_t v = 0;
      if (d.bits == 64) { int64_t x; std::memcpy(&x, p, 8); v = x; }
      else if (d.bits == 32) { int32_t x; std::memcpy(&x, p, 4); v = d.code == (uint8_t)nb::dlpack::dtype_code::UInt ? (int64_t)(uint32_t)x : x; }
      else need(false, name, "dtype", "token ids must be 32- or 64-bit integers");
      need(v >= INT32_MIN && v <= INT32_MAX, name, "ids", "id at index " + std::to_string(i) + " does not fit int32");
      ids[i] = (int)v;
    }
    return ids;
  }
  std::vector<int> ids;
  need(nb::try_cast(h, ids, true), name, "ids", "expected a sequence of ints or a 1-D integer array");
  return ids;
}

}  // namespace llm_oracle::py
