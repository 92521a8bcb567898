#pragma once
// Public llm_oracle structs <-> the reference's (api/ only): field by field.
#include "llm_oracle/sampler.h"
#include "reference/sampling/sampler.h"

namespace llm_oracle::detail {

oracle::SamplerConfig to_internal(const SamplerConfig& c);
SamplerConfig from_internal(const oracle::SamplerConfig& c);

}  // namespace llm_oracle::detail
