#pragma once
// --numerics canonical|ggml (numerics/profile.h; docs/numerics.md "Engine-numerics
// profile ggml"): the option every forward-running subcommand takes. The string
// is parsed here, at the boundary; libraries see only num::NumericsProfile.
#include <CLI/CLI.hpp>
#include <string>

#include "numerics/profile.h"
#include "base/errors.h"

namespace oracle::tools {

inline void add_numerics_option(CLI::App* sub, std::string& value, const char* flag = "--numerics",
                                const char* what = "Operation orders: canonical (default, the golden contract) or ggml "
                                                   "(llama.cpp's CPU backend: quantized activations, F16 KV)") {
  sub->add_option(flag, value, what)->capture_default_str();
}

// InputError(value, flag) for anything but canonical / ggml.
inline num::NumericsProfile numerics_arg(const std::string& value, const char* flag = "--numerics") {
  const std::optional<num::NumericsProfile> p = num::parse_numerics_profile(value);
  require_input(p.has_value(), value, flag, "unknown numerics profile (canonical or ggml)");
  return *p;
}

}  // namespace oracle::tools
