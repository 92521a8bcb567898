// llm_oracle: versions and the stored-type table, over reference/model/quant.h.
#include <cctype>

#include "llm_oracle/types.h"
#include "llm_oracle/version.h"
#include "numerics/contract_version.h"
#include "base/errors.h"
#include "reference/model/quant.h"
#include "reference/model/quantize_rows.h"

#ifndef LLM_ORACLE_VERSION
#error "LLM_ORACLE_VERSION is defined by api/CMakeLists.txt (the project version)"
#endif

namespace llm_oracle {

const char* version() { return LLM_ORACLE_VERSION; }
int numerics_version() { return oracle::num::kNumericsContractVersion; }

namespace {
// The public enum is a copy of numerics/dtype.h's at the library boundary: the same ids,
// so a type converts by value. A type added to one and not the other fails here.
constexpr bool same_id(DType pub, oracle::DType in) { return static_cast<int>(pub) == static_cast<int>(in); }
static_assert(same_id(DType::F32, oracle::DType::F32) && same_id(DType::F16, oracle::DType::F16) &&
              same_id(DType::BF16, oracle::DType::BF16) && same_id(DType::Q4_0, oracle::DType::Q4_0) &&
              same_id(DType::Q4_1, oracle::DType::Q4_1) && same_id(DType::Q5_0, oracle::DType::Q5_0) &&
              same_id(DType::Q5_1, oracle::DType::Q5_1) && same_id(DType::Q8_0, oracle::DType::Q8_0) &&
              same_id(DType::Q8_1, oracle::DType::Q8_1) && same_id(DType::Q2_K, oracle::DType::Q2_K) &&
              same_id(DType::Q3_K, oracle::DType::Q3_K) && same_id(DType::Q4_K, oracle::DType::Q4_K) &&
              same_id(DType::Q5_K, oracle::DType::Q5_K) && same_id(DType::Q6_K, oracle::DType::Q6_K) &&
              same_id(DType::Q8_K, oracle::DType::Q8_K) && same_id(DType::I8_ROW, oracle::DType::I8_ROW));
oracle::DType internal(DType t) { return static_cast<oracle::DType>(static_cast<int>(t)); }
std::string upper(std::string s) {
  for (char& ch : s) ch = (char)std::toupper((unsigned char)ch);
  return s;
}
}  // namespace

std::vector<DType> dtypes() {
  return {DType::F32,  DType::F16,  DType::BF16, DType::Q4_0, DType::Q4_1, DType::Q5_0,
          DType::Q5_1, DType::Q8_0, DType::Q8_1, DType::Q2_K, DType::Q3_K, DType::Q4_K,
          DType::Q5_K, DType::Q6_K, DType::Q8_K, DType::I8_ROW};
}

std::string dtype_name(DType t) { return oracle::dtype_name(internal(t)); }

DType parse_dtype(const std::string& name, const std::string& field) {
  std::string names;
  for (DType t : dtypes()) {
    if (upper(name) == dtype_name(t)) return t;
    names += (names.empty() ? "" : ", ") + dtype_name(t);
  }
  throw oracle::InputError("dtype", field, "unknown type '" + name + "' (one of " + names + ")");
}

bool quantize_supported(DType t) { return oracle::quantize_supported(internal(t)); }

int64_t block_elems(DType t) { return oracle::dtype_block_elems(internal(t)); }

int64_t row_bytes(DType t, int64_t n) {
  const int64_t b = oracle::dtype_row_bytes(internal(t), n);
  oracle::require_input(b >= 0, "dtype", "n",
                        "a " + dtype_name(t) + " row needs a multiple of " + std::to_string(block_elems(t)) +
                            " values, got " + std::to_string(n));
  return b;
}

}  // namespace llm_oracle
