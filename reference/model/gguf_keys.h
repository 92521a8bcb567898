#pragma once
// ============================================================================
// Honour or refuse, key by key (docs/formats.md "GGUF keys and tensors").
// Every metadata key and tensor of a GGUF of an accepted architecture is
// classified by one table: honoured (read by the loader), checked (must hold
// the value the forward pass implements), informational (cannot change the
// math), delegated (tokenizer.*, see docs/tokenizer.md) — anything else is
// refused with InputError(file, key) so it is never silently skipped.
// ============================================================================
#include <string>
#include <vector>

#include "reference/model/gguf.h"

namespace oracle {

// Architectures the GGUF loader accepts (general.architecture).
const std::vector<std::string>& gguf_accepted_architectures();

// InputError(path, key) for the first key or tensor the table does not accept.
// n_layers bounds the blk.N. tensor names.
void check_gguf_keys(const GgufFile& g, const std::string& arch, int n_layers);

// The key table for documentation/tests: (key with "<arch>." prefix, use).
struct GgufKeyRule {
  std::string key;     // e.g. "llama.rope.scaling.type" or "general.*"
  std::string use;     // "honoured", "checked", "informational", "delegated"
  std::string detail;  // what the loader does with it
};
std::vector<GgufKeyRule> gguf_key_table(const std::string& arch);

}  // namespace oracle
