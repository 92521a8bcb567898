#pragma once
// ============================================================================
// Numerics profiles: which operation orders a forward pass follows.
//   Canonical — docs/numerics.md §1–§6, the contract of golden/ (the default).
//   Ggml      — docs/numerics.md "Engine-numerics profile ggml": models how
//               llama.cpp's CPU backend runs a file (activations quantized to
//               the weight type's ggml dot partner, integer block dots, F16 KV
//               cache). Deterministic and bit-exact like Canonical.
// Enums inside libraries, strings only at the boundary: numerics_profile_name
// and parse_numerics_profile are the one name table.
// ============================================================================
#include <optional>
#include <string_view>

namespace oracle::num {

enum class NumericsProfile : unsigned char { Canonical, Ggml };

inline constexpr std::string_view numerics_profile_name(NumericsProfile p) {
  return p == NumericsProfile::Ggml ? "ggml" : "canonical";
}

inline std::optional<NumericsProfile> parse_numerics_profile(std::string_view s) {
  if (s == "canonical") return NumericsProfile::Canonical;
  if (s == "ggml") return NumericsProfile::Ggml;
  return std::nullopt;
}

}  // namespace oracle::num
