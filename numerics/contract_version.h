#pragma once
// The version of the numerics contract (docs/numerics.md): the bit-level
// promise of the canonical profile. It changes only when some golden bit of
// the canonical profile changes (golden/ regenerated on purpose); the
// installed package carries it (LLMOracle_NUMERICS_VERSION, llm_oracle::numerics_version()).
namespace oracle::num {
inline constexpr int kNumericsContractVersion = 2;
}  // namespace oracle::num
