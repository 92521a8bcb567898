#pragma once
// JSON helpers for bit-exact float round trips: finite floats are written as
// numbers (nlohmann prints doubles with 17 significant digits, so float ->
// double -> text -> double -> float is exact); inf/NaN as "inf", "-inf", "nan".
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "reference/errors.h"

namespace oracle {

inline nlohmann::json json_float(float f) {
  if (f != f) return "nan";
  if (f == std::numeric_limits<float>::infinity()) return "inf";
  if (f == -std::numeric_limits<float>::infinity()) return "-inf";
  return (double)f;
}

inline float float_from_json(const nlohmann::json& j, const std::string& field) {
  if (j.is_number()) return (float)j.get<double>();
  if (j.is_string()) {
    std::string s = j.get<std::string>();
    if (s == "inf") return std::numeric_limits<float>::infinity();
    if (s == "-inf") return -std::numeric_limits<float>::infinity();
    if (s == "nan") return std::numeric_limits<float>::quiet_NaN();
  }
  throw InputError("json", field, "expected a number, \"inf\", \"-inf\" or \"nan\"");
}

}  // namespace oracle
