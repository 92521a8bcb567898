#pragma once
// llm_oracle: versions. The package version is the oracle's (`oracle version`);
// the numerics version is the version of the bit-level contract of
// docs/numerics.md (it changes only when some golden bit of the canonical
// profile changes). CMake: LLMOracle_VERSION and LLMOracle_NUMERICS_VERSION.
namespace llm_oracle {
const char* version();   // "0.1.0"
int numerics_version();  // the contract version (docs/numerics.md "Versioning")
}  // namespace llm_oracle
