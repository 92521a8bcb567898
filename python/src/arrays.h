#pragma once
// Array arguments and results of llm_oracle._core (docs/python.md, "Arrays").
// In: any ndarray nanobind takes (numpy, or a DLPack producer on the host:
// torch, jax, cupy's host arrays), used in place when it is float32 (or the
// dtype the op names), C-contiguous and on the CPU; anything else is refused
// with a ValueError naming the argument (never converted: a float64 array
// rounded to float32, or a strided view read as if dense, would be a silently
// different input). Out: numpy arrays over the result's own buffer (no copy).
#include <cstdint>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

namespace llm_oracle::py {

namespace nb = nanobind;
using InArray = nb::ndarray<nb::ro>;
using OutArray = nb::ndarray<>;
using NpF32 = nb::ndarray<nb::numpy, float>;
using NpU8 = nb::ndarray<nb::numpy, uint8_t>;

enum class Kind { F32, U8, Any };  // Any: raw bytes of any dtype (quantized blocks)

// The array's shape; throws InputError(argument, "dtype" / "contiguity" / "device" / "ndim").
std::vector<size_t> check_array(const nb::ndarray<nb::ro>& a, const char* name, Kind kind, int min_ndim,
                                int max_ndim);
const float* f32_data(const InArray& a);
const void* raw_data(const InArray& a);
// `out` (may be None): float32, C-contiguous, writable, exactly `shape`; else a new
// array of `shape` is allocated. Returns the pointer to write and the object to return.
struct OutBuffer {
  float* data = nullptr;
  nb::object array;
};
OutBuffer out_f32(const nb::object& out, const std::vector<size_t>& shape, const char* name);
// A numpy array owning `v` (moved, not copied).
NpF32 to_numpy(std::vector<float>&& v, const std::vector<size_t>& shape);
NpU8 to_numpy(std::vector<uint8_t>&& v, const std::vector<size_t>& shape);
// Token ids: a sequence of ints or an integer ndarray (1-D); InputError(name, "ids").
std::vector<int> to_ids(const nb::handle& h, const char* name);
std::string shape_text(const std::vector<size_t>& s);

}  // namespace llm_oracle::py
