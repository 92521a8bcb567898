// Hugging Face checkpoint: config.json + one or more *.safetensors shards.
// A safetensors file is u64 N (little endian), N bytes of JSON
//   {"name": {"dtype": "F32"|"F16"|"BF16", "shape": [..], "data_offsets": [b, e]}, ...}
// then the data; offsets are relative to byte 8 + N. Tensors are torch-ordered
// (shape[0] = rows). HF q_proj/k_proj rows are in rotate-half order (the
// permutation convert_llama_weights_to_hf applies); we undo it at load so the
// in-memory model is the interleaved-pairs model llama2.c and GGUF give.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/errors.h"
#include "reference/model/loaders.h"
#include "reference/model/quant.h"
#include "reference/model/rope_factors.h"
#include "base/file_io.h"
#include "base/json_util.h"

namespace oracle {

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

struct StTensor {
  DType type = DType::F32;
  std::vector<int64_t> shape;  // torch order: shape[0] is the outermost (rows)
  const uint8_t* data = nullptr;
  uint64_t n_bytes = 0;
  std::string file;
};
using StTable = std::map<std::string, StTensor>;

// ---- files -----------------------------------------------------------------------------------
struct StFiles {
  std::string dir;
  std::string config;
  std::vector<std::string> shards;  // sorted
};

StFiles resolve_files(const std::string& path) {
  StFiles f;
  const bool is_dir = fs::is_directory(path);
  f.dir = is_dir ? path : fs::path(path).parent_path().string();
  if (f.dir.empty()) f.dir = ".";
  f.config = f.dir + "/config.json";
  if (!is_dir && path.size() > 12 && path.substr(path.size() - 12) == ".safetensors") {
    f.shards.push_back(path);
    return f;
  }
  for (const auto& entry : fs::directory_iterator(f.dir))
    if (entry.path().extension() == ".safetensors") f.shards.push_back(entry.path().string());
  std::sort(f.shards.begin(), f.shards.end());
  require_input(!f.shards.empty(), f.dir, "*.safetensors", "no safetensors file in the directory");
  return f;
}

json parse_json_text(const char* begin, const char* end, const std::string& file, const std::string& field) {
  return oracle::parse_json_text(std::string_view(begin, (size_t)(end - begin)), file, field);
}

// ---- safetensors header ------------------------------------------------------------------------
DType st_dtype(const json& v, const std::string& file, const std::string& field) {
  require_input(v.is_string(), file, field, "dtype must be a string");
  const std::string s = v.get<std::string>();
  if (s == "F32") return DType::F32;
  if (s == "F16") return DType::F16;
  if (s == "BF16") return DType::BF16;
  throw InputError(file, field, "unsupported dtype '" + s + "' (need F32, F16 or BF16)");
}

std::vector<int64_t> st_shape(const json& v, const std::string& file, const std::string& field) {
  require_input(v.is_array() && v.size() <= 4, file, field, "shape must be an array of at most 4 sizes");
  std::vector<int64_t> shape;
  for (const json& d : v) {
    require_input(d.is_number_unsigned() && d.get<uint64_t>() <= (uint64_t(1) << 40), file, field,
                  "bad dimension " + d.dump());
    shape.push_back(d.get<int64_t>());
  }
  return shape;
}

StTensor st_entry(const json& e, const MappedFile& f, uint64_t data_start, const std::string& name) {
  const std::string field = "tensor '" + name + "'";
  require_input(e.is_object(), f.path(), field, "entry must be an object");
  StTensor t;
  t.file = f.path();
  t.type = st_dtype(e.value("dtype", json()), f.path(), field + " dtype");
  t.shape = st_shape(e.value("shape", json()), f.path(), field + " shape");
  const json offs = e.value("data_offsets", json());
  require_input(offs.is_array() && offs.size() == 2 && offs[0].is_number_unsigned() &&
                    offs[1].is_number_unsigned(),
                f.path(), field + " data_offsets", "must be [begin, end]");
  const uint64_t b = offs[0].get<uint64_t>(), end = offs[1].get<uint64_t>();
  uint64_t n = 1;
  for (int64_t d : t.shape) {
    require_input(d == 0 || n <= f.size() / uint64_t(d), f.path(), field + " shape",
                  "tensor larger than the file");
    n *= uint64_t(d);
  }
  require_input(b <= end && end - b == n * uint64_t(dtype_row_bytes(t.type, 1)), f.path(),
                field + " data_offsets", "byte range does not match dtype and shape");
  // data_start + b must not wrap past 2^64 (it would point back into the header).
  require_input(data_start <= f.size() && b <= f.size() - data_start, f.path(), field + " data_offsets",
                "begin " + std::to_string(b) + " lies beyond the end of the file (" +
                    std::to_string(f.size() - std::min<uint64_t>(data_start, f.size())) + " data bytes)");
  t.data = f.at(data_start + b, end - b, field + " data_offsets");
  t.n_bytes = end - b;
  return t;
}

// The format forbids tensors sharing bytes (the Rust safetensors loader refuses them): one
// tensor's weights would be another's. Sorted by begin, each must start at or after the
// previous end (empty tensors share nothing).
void check_no_overlap(const MappedFile& f, const StTable& table, std::vector<std::pair<uint64_t, std::string>> starts) {
  std::sort(starts.begin(), starts.end());
  uint64_t prev_end = 0;
  std::string prev;
  for (const auto& [begin, name] : starts) {
    const uint64_t size = table.at(name).n_bytes;
    if (size == 0) continue;
    require_input(prev.empty() || begin >= prev_end, f.path(), "tensor '" + name + "' data_offsets",
                  "overlaps tensor '" + prev + "' (the format forbids tensors sharing bytes)");
    prev_end = begin + size;
    prev = name;
  }
}

void read_shard(const std::shared_ptr<MappedFile>& f, StTable& table) {
  uint64_t n = 0;
  std::memcpy(&n, f->at(0, 8, "header length"), 8);
  require_input(n <= f->size() - 8, f->path(), "header length",
                std::to_string(n) + " bytes but the file holds only " + std::to_string(f->size() - 8));
  const char* text = reinterpret_cast<const char*>(f->at(8, n, "header"));
  json header = parse_json_text(text, text + n, f->path(), "header");
  require_input(header.is_object(), f->path(), "header", "must be a JSON object");
  std::vector<std::pair<uint64_t, std::string>> starts;  // (begin in the data, name)
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    require_input(!table.count(name), f->path(), "tensor '" + name + "'", "defined twice");
    table[name] = st_entry(entry, *f, 8 + n, name);
    starts.emplace_back(uint64_t(table[name].data - f->at(0, 8, "header length")), name);
  }
  check_no_overlap(*f, table, starts);
}

// ---- config.json -> Config ------------------------------------------------------------------------
int cfg_int(const json& j, const std::string& key, const std::string& file, int fallback = -1) {
  if (!j.contains(key) && fallback >= 0) return fallback;
  require_input(j.contains(key), file, key, "missing");
  return int_from_json<int>(j[key], file, key, 1, 1 << 24);  // the checked-integer reader
}

// Typed optional fields: a wrong JSON type names the key (never nlohmann's text).
std::string cfg_string(const json& j, const std::string& key, const std::string& file, const std::string& fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  require_input(j[key].is_string(), file, key, std::string("expected a string, got ") + j[key].type_name());
  return j[key].get<std::string>();
}

bool cfg_bool(const json& j, const std::string& key, const std::string& file, bool fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  require_input(j[key].is_boolean(), file, key, std::string("expected true or false, got ") + j[key].type_name());
  return j[key].get<bool>();
}

float cfg_float(const json& j, const std::string& key, const std::string& file, float fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  require_input(j[key].is_number(), file, key, std::string("expected a number, got ") + j[key].type_name());
  const double v = j[key].get<double>();
  require_input(std::isfinite(v) && std::fabs(v) <= 3.0e38, file, key, "outside the float32 range");
  return static_cast<float>(v);
}

json read_config_json(const std::string& file) {
  const std::string text = read_regular_file(file, "file", uint64_t(1) << 26);
  json j = parse_json_text(text.data(), text.data() + text.size(), file, "config.json");
  require_input(j.is_object(), file, "config.json", "must be a JSON object");
  return j;
}

// ---- config.json keys: honoured, checked, informational; anything else refused ----------------
// (docs/formats.md "config.json fields"). Informational keys cannot change the logits.
const char* const kHfInformational[] = {
    "architectures", "model_type", "torch_dtype", "dtype", "transformers_version", "bos_token_id",
    "eos_token_id", "pad_token_id", "initializer_range", "use_cache", "pretraining_tp", "_name_or_path",
    "attention_dropout", "hidden_dropout", "tokenizer_class", "max_window_layers", "use_sliding_window",
    "sliding_window", "attention_bias", "mlp_bias", "rope_scaling", "hidden_act", "head_dim",
    "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
    "num_key_value_heads", "vocab_size", "max_position_embeddings", "rope_theta", "rms_norm_eps",
    "tie_word_embeddings", "is_llama_config", "rope_interleaved", "unk_token_id",
};

// hidden_act: absent means silu (HF LlamaConfig's default); null or any other value is
// refused, never taken as silu (HF's ACT2FN has no entry for null either).
void check_hidden_act(const json& j, const std::string& file) {
  if (!j.contains("hidden_act")) return;
  const json& v = j["hidden_act"];
  require_input(v.is_string(), file, "hidden_act", std::string("need \"silu\", got ") + v.dump());
  require_input(v.get<std::string>() == "silu", file, "hidden_act", "need silu, got " + v.dump());
}

void check_hf_keys(const json& j, const std::string& file) {
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (const char* k : kHfInformational) known = known || key == k;
    require_input(known, file, key, "config.json field not implemented (it may change the math; refused "
                                    "rather than ignored)");
  }
  const std::string type = cfg_string(j, "model_type", file, "llama");
  require_input(type == "llama" || type == "mistral" || type == "qwen2", file, "model_type",
                "need llama, mistral or qwen2");
  check_hidden_act(j, file);
  require_input(!cfg_bool(j, "mlp_bias", file, false), file, "mlp_bias", "MLP biases are not implemented");
  // HF llama's attention_bias adds o_proj.bias too, which the forward pass does not have.
  require_input(!cfg_bool(j, "attention_bias", file, false), file, "attention_bias",
                "attention biases (incl. o_proj) are not implemented; qwen2's q/k/v biases are");
  require_input(!cfg_bool(j, "rope_interleaved", file, false), file, "rope_interleaved", "must be false");
  require_input(cfg_int(j, "pretraining_tp", file, 1) == 1, file, "pretraining_tp", "must be 1");
}

// A sliding window that never hides a position of the context is a no-op.
void check_sliding_window(const json& j, const std::string& file, int context) {
  const bool used = cfg_string(j, "model_type", file, "") != "qwen2" || cfg_bool(j, "use_sliding_window", file, false);
  if (!used || !j.contains("sliding_window") || j["sliding_window"].is_null()) return;
  require_input(j["sliding_window"].is_number_integer() && j["sliding_window"].get<int64_t>() >= context,
                file, "sliding_window", "sliding-window attention is not implemented (window below the context)");
}

// rope_scaling: linear, yarn (ggml's YaRN, llama.cpp defaults), llama3 (frequency factors).
void check_rope_extra(const json& r, const std::string& file, const char* key, double expected) {
  require_input(!r.contains(key) || (r[key].is_number() && r[key].get<double>() == expected), file,
                std::string("rope_scaling.") + key, "only " + std::to_string(expected) + " is implemented");
}

std::vector<float> llama3_freq_factors(const json& r, const std::string& file, float theta, int head_dim);

RopeConfig read_hf_rope(const json& j, const std::string& file, Config& c) {
  RopeConfig rope;
  if (!j.contains("rope_scaling") || j["rope_scaling"].is_null()) return rope;
  const json& r = j["rope_scaling"];
  require_input(r.is_object(), file, "rope_scaling", "must be an object or null");
  const std::string type = cfg_string(r, "rope_type", file, cfg_string(r, "type", file, ""));
  const float factor = cfg_float(r, "factor", file, 1.0f);
  require_input(factor > 0.0f, file, "rope_scaling.factor", "must be positive");
  if (type == "linear") {
    rope.scaling = factor == 1.0f ? RopeScaling::None : RopeScaling::Linear;
  } else if (type == "yarn") {
    rope.scaling = RopeScaling::Yarn;
    rope.original_context = cfg_int(r, "original_max_position_embeddings", file, c.seq_len);
    check_rope_extra(r, file, "beta_fast", 32.0);
    check_rope_extra(r, file, "beta_slow", 1.0);
    check_rope_extra(r, file, "extrapolation_factor", 1.0);
    require_input(!r.contains("attention_factor") && !r.contains("mscale") && !r.contains("mscale_all_dim"),
                  file, "rope_scaling.attention_factor", "not implemented (llama.cpp's mscale is 1 + 0.1 ln factor)");
  } else if (type == "llama3") {
    rope.freq_factors = llama3_freq_factors(r, file, c.rope_theta, c.head_dim);
    return rope;
  } else {
    throw InputError(file, "rope_scaling", "RoPE scaling '" + type + "' is not implemented (linear, yarn, llama3)");
  }
  rope.factor = factor;
  return rope;
}

// convert_hf_to_gguf's rope_freqs for rope_type llama3 (rope_table.h).
std::vector<float> llama3_freq_factors(const json& r, const std::string& file, float theta, int head_dim) {
  const double factor = cfg_float(r, "factor", file, 8.0f), lo = cfg_float(r, "low_freq_factor", file, 1.0f);
  const double hi = cfg_float(r, "high_freq_factor", file, 4.0f);
  require_input(hi > lo && lo > 0.0, file, "rope_scaling.high_freq_factor", "must exceed low_freq_factor > 0");
  return llama3_rope_factors(theta, head_dim, factor, lo, hi, cfg_int(r, "original_max_position_embeddings", file, 8192));
}

Config read_hf_config(const std::string& file) {
  const json j = read_config_json(file);
  check_hf_keys(j, file);
  Config c;
  c.dim = cfg_int(j, "hidden_size", file);
  c.hidden_dim = cfg_int(j, "intermediate_size", file);
  c.n_layers = cfg_int(j, "num_hidden_layers", file);
  c.n_heads = cfg_int(j, "num_attention_heads", file);
  c.n_kv_heads = cfg_int(j, "num_key_value_heads", file, c.n_heads);
  c.vocab_size = cfg_int(j, "vocab_size", file);
  c.seq_len = cfg_int(j, "max_position_embeddings", file);
  c.rope_theta = cfg_float(j, "rope_theta", file, 10000.0f);
  c.norm_eps = cfg_float(j, "rms_norm_eps", file, 1e-6f);  // HF LlamaConfig default
  for (const auto& [key, v] : {std::pair<const char*, float>{"rope_theta", c.rope_theta}, {"rms_norm_eps", c.norm_eps}})
    require_input(v > 0.0f, file, key, "must be a finite number > 0, got " + std::to_string(v));
  c.head_dim = c.dim % c.n_heads == 0 ? c.dim / c.n_heads : 0;
  require_input(cfg_int(j, "head_dim", file, c.head_dim) == c.head_dim, file, "head_dim",
                "must equal hidden_size / num_attention_heads");
  c.tied_classifier = cfg_bool(j, "tie_word_embeddings", file, false);
  c.architecture = cfg_string(j, "model_type", file, "llama") == "qwen2" ? "qwen2" : "llama";
  c.qkv_bias = c.architecture == "qwen2";
  check_sliding_window(j, file, c.seq_len);
  c.rope = read_hf_rope(j, file, c);
  return c;
}

// ---- tensors -> Weights (matrices in their stored type) ----------------------------------------------------------------------
struct StModel {
  Model& m;
  StTable table;
  std::set<std::string> used;  // names need() handed out; every other tensor is refused
};

// A tensor nothing reads would be silently skipped: refuse it (HF's rotary
// inv_freq buffer is derived from rope_theta; a tied model may repeat lm_head).
void check_all_used(const StModel& s) {
  for (const auto& [name, t] : s.table) {
    const std::string inv = "rotary_emb.inv_freq";
    const bool derived = name.size() > inv.size() && name.compare(name.size() - inv.size(), inv.size(), inv) == 0;
    const bool tied_copy = name == "lm_head.weight" && s.m.config.tied_classifier;
    require_input(s.used.count(name) || derived || tied_copy, t.file, name,
                  "tensor not implemented for " + s.m.config.architecture + " (refused rather than ignored)");
  }
}

const StTensor& need(StModel& s, const std::string& name, const std::vector<int64_t>& shape) {
  auto it = s.table.find(name);
  require_input(it != s.table.end(), s.m.path, name, "missing tensor");
  s.used.insert(name);
  auto text = [](const std::vector<int64_t>& v) {
    std::string r;
    for (int64_t d : v) r += (r.empty() ? "" : ", ") + std::to_string(d);
    return "[" + r + "]";
  };
  require_input(it->second.shape == shape, it->second.file, name,
                "shape " + text(it->second.shape) + " but config.json needs " + text(shape));
  return it->second;
}

// Norm vectors: F32 stays mapped; F16/BF16 are dequantized into weights.owned.
const float* load_vector(StModel& s, const std::string& name, const std::vector<int64_t>& shape) {
  const StTensor& t = need(s, name, shape);
  if (t.type == DType::F32 && reinterpret_cast<uintptr_t>(t.data) % alignof(float) == 0)
    return reinterpret_cast<const float*>(t.data);
  std::vector<float> out(t.n_bytes / uint64_t(dtype_row_bytes(t.type, 1)));  // shape, row-major
  dequantize_row(t.type, t.data, static_cast<int64_t>(out.size()), out.data());
  return keep_owned(s.m.weights, std::move(out));
}

// Matrices stay mapped in their stored type.
WeightMatrix load_matrix(StModel& s, const std::string& name, const std::vector<int64_t>& shape) {
  const StTensor& t = need(s, name, shape);
  return WeightMatrix(t.type, t.data);
}

// q_proj / k_proj: rotate-half rows -> interleaved pairs, copied in their stored type.
WeightMatrix load_rope_rows(StModel& s, const std::string& name, int n_heads) {
  const Config& c = s.m.config;
  const StTensor& t = need(s, name, {int64_t(n_heads) * c.head_dim, c.dim});
  auto& raw = s.m.weights.owned_raw.emplace_back(
      unpermute_rotate_half_rows(t.data, n_heads, c.head_dim, size_t(dtype_row_bytes(t.type, c.dim))));
  return WeightMatrix(t.type, raw.data());
}

void load_layer(StModel& s, int l) {
  const Config& c = s.m.config;
  const int64_t dim = c.dim, hid = c.hidden_dim, q = int64_t(c.n_heads) * c.head_dim;
  const int64_t kv = int64_t(c.n_kv_heads) * c.head_dim;
  const std::string p = "model.layers." + std::to_string(l) + ".";
  LayerWeights& lw = s.m.weights.layers[l];
  lw.attn_norm = load_vector(s, p + "input_layernorm.weight", {dim});
  lw.wq = load_rope_rows(s, p + "self_attn.q_proj.weight", c.n_heads);
  lw.wk = load_rope_rows(s, p + "self_attn.k_proj.weight", c.n_kv_heads);
  if (c.qkv_bias) {  // qwen2: q/k biases permuted like their rows
    lw.bq = keep_owned(s.m.weights, unpermute_rotate_half(load_vector(s, p + "self_attn.q_proj.bias", {q}),
                                                          c.n_heads, c.head_dim, 1));
    lw.bk = keep_owned(s.m.weights, unpermute_rotate_half(load_vector(s, p + "self_attn.k_proj.bias", {kv}),
                                                          c.n_kv_heads, c.head_dim, 1));
    lw.bv = load_vector(s, p + "self_attn.v_proj.bias", {kv});
  }
  lw.wv = load_matrix(s, p + "self_attn.v_proj.weight", {kv, dim});
  lw.wo = load_matrix(s, p + "self_attn.o_proj.weight", {dim, q});
  lw.ffn_norm = load_vector(s, p + "post_attention_layernorm.weight", {dim});
  lw.w_gate = load_matrix(s, p + "mlp.gate_proj.weight", {hid, dim});
  lw.w_down = load_matrix(s, p + "mlp.down_proj.weight", {dim, hid});
  lw.w_up = load_matrix(s, p + "mlp.up_proj.weight", {hid, dim});
}

void load_weights(StModel& s) {
  Config& c = s.m.config;
  const int64_t dim = c.dim, vocab = c.vocab_size;
  s.m.weights.token_embedding = load_matrix(s, "model.embed_tokens.weight", {vocab, dim});
  s.m.weights.layers.resize(c.n_layers);
  for (int l = 0; l < c.n_layers; l++) load_layer(s, l);
  s.m.weights.final_norm = load_vector(s, "model.norm.weight", {dim});
  if (!s.table.count("lm_head.weight")) c.tied_classifier = true;
  s.m.weights.classifier = c.tied_classifier ? s.m.weights.token_embedding
                                             : load_matrix(s, "lm_head.weight", {vocab, dim});
}

// num_hidden_layers must cover every model.layers.N tensor (fewer would run a
// prefix), and the tensors must reach its last layer — checked before a slot
// per layer is allocated, so a damaged count costs nothing.
void check_layer_count(const StTable& table, int n_layers, const std::string& config) {
  const std::string prefix = "model.layers.";
  int top = -1;  // highest model.layers.N seen
  for (const auto& [name, t] : table) {
    if (name.rfind(prefix, 0) != 0) continue;
    const size_t dot = name.find('.', prefix.size());
    const std::string index = name.substr(prefix.size(), dot == std::string::npos ? std::string::npos : dot - prefix.size());
    const bool digits = !index.empty() && index.size() < 9 && index.find_first_not_of("0123456789") == std::string::npos;
    if (!digits) continue;
    require_input(std::stoi(index) < n_layers, config, "num_hidden_layers",
                  std::to_string(n_layers) + " layers, but " + t.file + " holds tensor '" + name + "'");
    top = std::max(top, std::stoi(index));
  }
  require_input(top == n_layers - 1, config, "num_hidden_layers",
                std::to_string(n_layers) + " layers, but the shards' last layer tensor is " +
                    (top < 0 ? std::string("absent") : "in model.layers." + std::to_string(top)));
}

// Raw table in ggml dimension order (reversed torch shape), like GGUF's.
void fill_tensor_table(const StTable& table, Model& m) {
  for (const auto& [name, t] : table)
    m.tensors.push_back(TensorInfo{name, t.type, {t.shape.rbegin(), t.shape.rend()}, t.data, t.n_bytes});
}

}  // namespace

// ---- load_safetensors ------------------------------------------------------------------------------------
Model load_safetensors(const std::string& path, const LoadOptions& options) {
  const StFiles files = resolve_files(path);
  Model m;
  m.path = files.dir;
  m.format = "safetensors";
  m.config = read_hf_config(files.config);
  validate_config(m.config, files.config);
  StModel s{m, {}};
  for (const std::string& shard : files.shards) {
    m.extra_files.push_back(std::make_shared<MappedFile>(shard, options.residency));
    read_shard(m.extra_files.back(), s.table);
  }
  m.file = m.extra_files.front();
  check_layer_count(s.table, m.config.n_layers, files.config);
  load_weights(s);
  check_all_used(s);
  fill_tensor_table(s.table, m);
  apply_context_override(m.config, options, path);
  return m;
}

}  // namespace oracle
