#pragma once
// api/ only: the internal model and tokenizer behind a llm_oracle::Model.
#include "llm_oracle/model.h"
#include "reference/model/model.h"
#include "reference/tokenizer/tokenizer.h"

namespace llm_oracle {

struct Model::Impl {
  oracle::Model model;
  oracle::Tokenizer tokenizer;
};

namespace detail {
struct ModelAccess {
  static const oracle::Model& model(const Model& m) { return m.impl_->model; }
};
}  // namespace detail

}  // namespace llm_oracle
