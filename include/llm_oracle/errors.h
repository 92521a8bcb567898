#pragma once
// llm_oracle: the one error type. Bad input (a file, a field, an argument) is
// reported by throwing InputError, whose what() reads "<file>: <field>: <message>"
// and whose file() / field() name the culprit. The library never exits.
// It is the project's own oracle::InputError (base/errors.h, installed
// beside this header: a self-contained header of the standard library only).
#include "base/errors.h"

namespace llm_oracle {
using InputError = oracle::InputError;
}  // namespace llm_oracle
