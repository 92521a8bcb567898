#pragma once
namespace oracle {
// Tool version recorded in every log, transcript and certificate.
inline constexpr const char* kOracleVersion = "0.1.0";
}  // namespace oracle
