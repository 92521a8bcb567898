#pragma once
// JSON helpers for bit-exact float round trips: finite floats are written as
// numbers (nlohmann prints doubles with 17 significant digits, so float ->
// double -> text -> double -> float is exact); inf/NaN as "inf", "-inf", "nan".
#include <limits>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/errors.h"
#include "base/checked_int.h"

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

// An integer JSON number that fits T (and [lo, hi]); InputError(file, field)
// otherwise — never a narrowing get<int>() (4294967302 is not 6, and 1e46 is
// undefined behaviour: found by fuzz/fuzz_replay_log). The checks are
// base/checked_int.h's, shared with the command line.
template <typename T>
T int_from_json(const nlohmann::json& j, const std::string& file, const std::string& field,
                T lo = std::numeric_limits<T>::min(), T hi = std::numeric_limits<T>::max()) {
  if (j.is_number_unsigned()) return checked_int<T>(j.get<uint64_t>(), file, field, lo, hi);
  if (j.is_number_integer()) return checked_int<T>(j.get<int64_t>(), file, field, lo, hi);
  throw InputError(file, field, "expected an integer in " + int_range_text(lo, hi) + ", got " +
                                    (j.is_number_float() ? j.dump() : std::string(j.type_name())));
}
template <typename T>
T int_from_json(const nlohmann::json& j, const std::string& field) {
  return int_from_json<T>(j, "json", field);
}

inline std::vector<int> ints_from_json(const nlohmann::json& j, const std::string& file, const std::string& field) {
  if (!j.is_array()) throw InputError(file, field, "expected an array of integers");
  std::vector<int> out;
  for (size_t i = 0; i < j.size(); i++)
    out.push_back(int_from_json<int>(j[i], file, field + "[" + std::to_string(i) + "]"));
  return out;
}
inline std::vector<int> ints_from_json(const nlohmann::json& j, const std::string& field) {
  return ints_from_json(j, "json", field);
}

// JSON text -> value; a syntax error is InputError(file, field, "not valid JSON:
// syntax error at byte N"), a number nlohmann cannot hold (1e999) "... out of
// range" — one line in our format, never nlohmann's exception text.
inline nlohmann::json parse_json_text(std::string_view text, const std::string& file, const std::string& field) {
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(file, field, "not valid JSON: syntax error at byte " + std::to_string(e.byte));
  } catch (const nlohmann::json::out_of_range&) {  // e.g. a number past the double range (1e999)
    throw InputError(file, field, "not valid JSON: a number is out of range");
  } catch (const nlohmann::json::exception&) {
    throw InputError(file, field, "not valid JSON");
  }
}

}  // namespace oracle
