// The GGUF key/tensor table — see gguf_keys.h and docs/formats.md.
#include "reference/model/gguf_keys.h"

#include <cstring>

#include "base/errors.h"

namespace oracle {

namespace {

struct ArchKey {
  const char* suffix;  // after "<arch>."
  const char* use;
  const char* detail;
};

// Keys under "<arch>." that the loader reads (loader_gguf.cpp). Anything else
// under the architecture's prefix may change the math and is refused.
const ArchKey kArchKeys[] = {
    {"context_length", "honoured", "Config::seq_len / trained_context"},
    {"embedding_length", "honoured", "dim"},
    {"block_count", "honoured", "n_layers"},
    {"feed_forward_length", "honoured", "hidden_dim"},
    {"vocab_size", "checked", "must equal the rows of token_embd.weight"},
    {"attention.head_count", "honoured", "n_heads"},
    {"attention.head_count_kv", "honoured", "n_kv_heads (default n_heads)"},
    {"attention.layer_norm_rms_epsilon", "honoured", "norm_eps (required)"},
    {"attention.key_length", "checked", "must equal embedding_length / head_count"},
    {"attention.value_length", "checked", "must equal embedding_length / head_count"},
    {"rope.dimension_count", "checked", "must equal the head dimension (no partial rotary)"},
    {"rope.freq_base", "honoured", "rope_theta (default 10000)"},
    {"rope.scaling.type", "honoured", "none, linear, yarn (others refused)"},
    {"rope.scaling.factor", "honoured", "freq_scale = 1/factor (linear, yarn)"},
    {"rope.scale_linear", "honoured", "old name of rope.scaling.factor"},
    {"rope.scaling.original_context_length", "honoured", "YaRN correction dims (default context_length)"},
    {"rope.scaling.attn_factor", "honoured", "multiplies every RoPE cos/sin"},
    {"rope.scaling.finetuned", "informational", "llama.cpp reads it for display only"},
    {"rope.scaling.yarn_ext_factor", "checked", "llama.cpp ignores it here: must be 1 (yarn) / 0"},
    {"rope.scaling.yarn_attn_factor", "checked", "llama.cpp ignores it here: must be 1 + 0.1 ln factor"},
    {"rope.scaling.yarn_beta_fast", "checked", "llama.cpp ignores it here: must be 32"},
    {"rope.scaling.yarn_beta_slow", "checked", "llama.cpp ignores it here: must be 1"},
    {"rope.scaling.yarn_log_multiplier", "checked", "must be 0 (no mscale_all_dim)"},
    {"expert_count", "checked", "must be 0 (no mixture of experts)"},
    {"expert_used_count", "checked", "must be 0 (no mixture of experts)"},
};

bool starts_with(const std::string& s, const char* prefix) {
  return s.compare(0, std::strlen(prefix), prefix) == 0;
}

bool known_arch_key(const std::string& suffix) {
  for (const ArchKey& k : kArchKeys)
    if (suffix == k.suffix) return true;
  return false;
}

// Top-level prefixes that cannot change the forward pass.
bool informational_key(const std::string& key) {
  return starts_with(key, "general.") || starts_with(key, "quantize.") || key == "oracle.stop_on_bos" ||
         key == "oracle.quantized_type";  // written by `oracle quantize`: the tensors' types say the same
}

// blk.N.<name> tensors of a layer, and the global ones.
const char* const kLayerTensors[] = {
    "attn_norm.weight", "attn_q.weight",  "attn_k.weight",   "attn_v.weight",
    "attn_output.weight", "ffn_norm.weight", "ffn_gate.weight", "ffn_down.weight",
    "ffn_up.weight",    "attn_q.bias",    "attn_k.bias",     "attn_v.bias",
};

bool known_layer_tensor(const std::string& name, int n_layers) {
  if (!starts_with(name, "blk.")) return false;
  size_t dot = name.find('.', 4);
  if (dot == std::string::npos || dot == 4 || dot - 4 > 6) return false;
  int layer = 0;
  for (size_t k = 4; k < dot; k++) {
    if (name[k] < '0' || name[k] > '9') return false;
    layer = layer * 10 + (name[k] - '0');
  }
  if (layer >= n_layers || (dot > 5 && name[4] == '0')) return false;
  const std::string rest = name.substr(dot + 1);
  for (const char* t : kLayerTensors)
    if (rest == t) return true;
  return false;
}

bool known_tensor(const std::string& name, const std::string& arch, int n_layers) {
  if (name == "token_embd.weight" || name == "output_norm.weight" || name == "output.weight") return true;
  if (name == "rope_freqs.weight") return arch == "llama";  // llama.cpp applies it for llama only
  return known_layer_tensor(name, n_layers);
}

}  // namespace

const std::vector<std::string>& gguf_accepted_architectures() {
  static const std::vector<std::string> archs = {"llama", "qwen2"};
  return archs;
}

void check_gguf_keys(const GgufFile& g, const std::string& arch, int n_layers) {
  const std::string prefix = arch + ".";
  for (const auto& [key, value] : g.metadata()) {
    if (informational_key(key) || starts_with(key, "tokenizer.")) continue;  // tokenizer: docs/tokenizer.md
    if (starts_with(key, prefix.c_str()) && known_arch_key(key.substr(prefix.size()))) continue;
    throw InputError(g.path(), key,
                     "metadata key not implemented for architecture " + arch +
                         " (it may change the math; refused rather than ignored)");
  }
  for (const GgufTensorInfo& t : g.tensors())
    require_input(known_tensor(t.name, arch, n_layers), g.path(), t.name,
                  "tensor not implemented for architecture " + arch + " (refused rather than ignored)");
}

std::vector<GgufKeyRule> gguf_key_table(const std::string& arch) {
  std::vector<GgufKeyRule> rules = {
      {"general.*", "informational", "names, licence, file type; general.alignment is the container's"},
      {"quantize.*", "informational", "llama-quantize's imatrix notes"},
      {"tokenizer.*", "delegated", "see docs/tokenizer.md"},
      {"oracle.stop_on_bos", "honoured", "project key: greedy generation stops on BOS"},
      {"oracle.quantized_type", "informational", "written by `oracle quantize` (the tensor types are read)"},
  };
  for (const ArchKey& k : kArchKeys) rules.push_back({arch + "." + k.suffix, k.use, k.detail});
  return rules;
}

}  // namespace oracle
