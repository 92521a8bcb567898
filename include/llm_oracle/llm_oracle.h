#pragma once
// llm_oracle: the public C++ API of LLM Oracle (docs/library.md).
//   find_package(LLMOracle CONFIG REQUIRED)
//   target_link_libraries(app PRIVATE LLMOracle::oracle)
#include "llm_oracle/certify.h"
#include "llm_oracle/compare.h"
#include "llm_oracle/errors.h"
#include "llm_oracle/model.h"
#include "llm_oracle/ops.h"
#include "llm_oracle/sampler.h"
#include "llm_oracle/types.h"
#include "llm_oracle/version.h"
