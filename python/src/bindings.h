#pragma once
// The parts of llm_oracle._core, one per file (module.cpp puts them together).
#include <nanobind/nanobind.h>

namespace llm_oracle::py {
void bind_ops(nanobind::module_& ops);
void bind_model(nanobind::module_& m);
void bind_compare(nanobind::module_& m);
}  // namespace llm_oracle::py
