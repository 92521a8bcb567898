#pragma once
// Test helper: byte offsets of the fp16 scale fields (d, m / dmin) inside one
// stored block, as reference/model/quant_bits.h lays the blocks out; tests put
// chosen fp16 values there (test_qmatmul, test_isa).
#include <vector>

#include "reference/model/quant.h"

namespace oracle::test {

inline std::vector<int> half_fields(DType t) {
  switch (t) {
    case DType::Q4_0: case DType::Q5_0: case DType::Q8_0: return {0};
    case DType::Q4_1: case DType::Q5_1: case DType::Q8_1: case DType::Q4_K: case DType::Q5_K: return {0, 2};
    case DType::Q2_K: return {80, 82};
    case DType::Q3_K: return {108};
    case DType::Q6_K: return {208};
    default: return {};
  }
}

}  // namespace oracle::test
