#pragma once
// JSON helpers for bit-exact float round trips: finite floats are written as
// numbers (nlohmann prints doubles with 17 significant digits, so float ->
// double -> text -> double -> float is exact); inf/NaN as "inf", "-inf", "nan".
#include <limits>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reference/base/errors.h"

namespace oracle {

inline nlohmann::json json_float(float f) {
  if (f != f) return "nan";
  if (f == std::numeric_limits<float>::infinity()) return "inf";
  if (f == -std::numeric_limits<float>::infinity()) return "-inf";
  return (double)f;
}

inline float float_from_json(const nlohmann::json& j, const std::string& field) {
  if (j.is_number()) {
    double d = j.get<double>();  // beyond float's range: rejected (the cast would be undefined)
    if (!(d >= -(double)std::numeric_limits<float>::max() && d <= (double)std::numeric_limits<float>::max()))
      throw InputError("json", field, "number outside the float32 range");
    return (float)d;
  }
  if (j.is_string()) {
    std::string s = j.get<std::string>();
    if (s == "inf") return std::numeric_limits<float>::infinity();
    if (s == "-inf") return -std::numeric_limits<float>::infinity();
    if (s == "nan") return std::numeric_limits<float>::quiet_NaN();
  }
  throw InputError("json", field, "expected a number, \"inf\", \"-inf\" or \"nan\"");
}

// An integer JSON number that fits T; InputError otherwise (nlohmann's get<int>()
// on 1e46 is undefined behaviour — found by fuzz/fuzz_replay_log).
template <typename T>
T int_from_json(const nlohmann::json& j, const std::string& field) {
  constexpr uint64_t max = (uint64_t)std::numeric_limits<T>::max();
  if (j.is_number_unsigned()) {
    if (j.get<uint64_t>() <= max) return (T)j.get<uint64_t>();
  } else if (j.is_number_integer()) {
    int64_t v = j.get<int64_t>();
    if (v >= 0 ? (uint64_t)v <= max : std::numeric_limits<T>::is_signed && v >= (int64_t)std::numeric_limits<T>::min())
      return (T)v;
  }
  throw InputError("json", field, "expected an integer in range");
}

inline std::vector<int> ints_from_json(const nlohmann::json& j, const std::string& field) {
  if (!j.is_array()) throw InputError("json", field, "expected an array of integers");
  std::vector<int> out;
  for (const auto& e : j) out.push_back(int_from_json<int>(e, field));
  return out;
}

}  // namespace oracle
