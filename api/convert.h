#pragma once
// api/ only: public llm_oracle structs <-> the reference's (field by field), and
// shared argument checks.
#include <cstddef>

#include "llm_oracle/sampler.h"
#include "reference/sampling/sampler.h"

namespace llm_oracle::detail {

oracle::SamplerConfig to_internal(const SamplerConfig& c);
SamplerConfig from_internal(const oracle::SamplerConfig& c);

// InputError(op, a_name / b_name, ...) unless `a` and `b` both hold rows * vocab values.
void need_rows(const char* op, size_t a, size_t b, int rows, int vocab, const char* a_name, const char* b_name);

}  // namespace llm_oracle::detail
