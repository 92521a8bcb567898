#pragma once
// ============================================================================
// The one checked-integer reader. Every integer that comes from outside —
// a command-line option, a JSON field of a replay log / golden record /
// config.json, a header field — is narrowed here: a value outside [lo, hi]
// of the destination type (or a tighter caller range) is an InputError naming
// the file and field, never a silent wrap, saturation or truncation.
//   checked_int<T>(text, file, field [, lo, hi])   decimal text (CLI options)
//   checked_int<T>(int64 or uint64 value, ...)      an already-decoded number
// json_util.h's int_from_json<T> is the JSON front end of the same checks.
// ============================================================================
#include <charconv>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "base/errors.h"

namespace oracle {

// "[lo, hi]" as text, for messages.
template <typename T>
std::string int_range_text(T lo, T hi) {
  return "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

// True when the signed/unsigned value v lies in [lo, hi] (compared as integers,
// never converted first).
template <typename T, typename V>
constexpr bool int_in_range(V v, T lo, T hi) {
  return std::cmp_greater_equal(v, lo) && std::cmp_less_equal(v, hi);
}

// A decoded integer narrowed to T within [lo, hi]; InputError otherwise.
template <typename T, typename V>
  requires std::is_integral_v<V>
T checked_int(V v, const std::string& file, const std::string& field,
              T lo = std::numeric_limits<T>::min(), T hi = std::numeric_limits<T>::max()) {
  require_input(int_in_range<T>(v, lo, hi), file, field,
                std::to_string(v) + " is outside " + int_range_text(lo, hi));
  return (T)v;
}

// Decimal text (optional '-' for signed T, no '+', no spaces, no fraction, no
// exponent) narrowed to T within [lo, hi]. Overflow is an error, not saturation.
template <typename T>
T checked_int(std::string_view text, const std::string& file, const std::string& field,
              T lo = std::numeric_limits<T>::min(), T hi = std::numeric_limits<T>::max()) {
  const std::string shown = "'" + std::string(text.substr(0, 40)) + (text.size() > 40 ? "...'" : "'");
  const bool negative = !text.empty() && text[0] == '-';
  require_input(!text.empty(), file, field, "expected an integer, got an empty value");
  // Parse into the widest type of the right signedness, then range-check.
  using Wide = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
  Wide v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec == std::errc::result_out_of_range)
    throw InputError(file, field, shown + " is outside " + int_range_text(lo, hi));
  if (negative && !std::is_signed_v<T>)
    throw InputError(file, field, shown + " is negative; expected an integer in " + int_range_text(lo, hi));
  require_input(ec == std::errc() && ptr == end, file, field,
                "expected an integer in " + int_range_text(lo, hi) + ", got " + shown);
  require_input(int_in_range<T>(v, lo, hi), file, field, shown + " is outside " + int_range_text(lo, hi));
  return (T)v;
}

}  // namespace oracle
