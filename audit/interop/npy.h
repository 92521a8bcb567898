#pragma once
// ============================================================================
// NumPy .npy arrays (format versions 1-3): magic "\x93NUMPY", major, minor,
// header length (u16 for 1.x, u32 for 2.x/3.x), a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (s0, s1, ...), } padded,
// then the C-order data. Little-endian <f2 <f4 <f8 <i4 <i8 <u4 are read;
// anything else is an InputError naming the field.
// ============================================================================
#include <cstdint>
#include <string>
#include <vector>

namespace oracle {

struct NpyArray {
  std::string descr;           // e.g. "<f4"
  std::vector<int64_t> shape;
  std::vector<double> values;  // converted, C order
};

NpyArray read_npy(const std::string& path);
// The same from bytes already in memory (fuzzing); `path` names errors.
NpyArray parse_npy(const std::string& bytes, const std::string& path);

}  // namespace oracle
