// Logit and trace dumps (dumps.h).
#include "audit/interop/dumps.h"

#include <algorithm>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "audit/interop/npy.h"
#include "base/errors.h"
#include "base/numerics_version.h"
#include "reference/compute/forward.h"
#include "reference/compute/kv_cache.h"

namespace oracle {

using nlohmann::json;

std::vector<float> teacher_forced_logits(const Model& m, const std::vector<int>& prompt,
                                         const std::vector<int>& tokens, std::vector<TraceEntry>* trace,
                                         num::NumericsProfile numerics) {
  require_input(!prompt.empty(), "dump", "prompt_ids", "empty prompt");
  std::vector<int> seq = prompt;  // (n_prompt + steps - 1): the last token is never fed back
  if (!tokens.empty()) seq.insert(seq.end(), tokens.begin(), tokens.end() - 1);
  require_input((int)seq.size() <= m.config.seq_len, "dump", "token_ids",
                std::to_string(seq.size()) + " positions exceed the context of " + std::to_string(m.config.seq_len));
  KvCacheOptions ko;
  ko.max_seqs = 1;
  ko.max_tokens = (int)seq.size();
  KvCache kv(m.config, ko);
  ForwardOptions fo;
  fo.all_logits = true;
  fo.numerics = numerics;
  Trace t;
  if (trace) t = trace_recorder(*trace), fo.trace = &t;
  const std::vector<float> all = forward(m, kv, 0, seq, fo);  // (n_prompt + steps - 1, vocab)
  const size_t v = (size_t)m.config.vocab_size, first = prompt.size() - 1;
  return std::vector<float>(all.begin() + first * v, all.begin() + (first + tokens.size()) * v);
}

// ============================================================================
// Writing
// ============================================================================
namespace {

std::vector<int64_t> wide(const std::vector<int>& v) { return std::vector<int64_t>(v.begin(), v.end()); }

SafetensorsFile with_ids(const DumpInfo& info, const std::vector<int>& tokens, const std::string& format) {
  SafetensorsFile f;
  f.metadata = {{"format", format},
                {"version", "1"},
                {"model", info.model},
                {"model_sha256", info.model_sha256},
                {"tokenizer_sha256", info.tokenizer_sha256},
                {"prompt_ids", json(info.prompt_ids).dump()},
                {"sampler", info.sampler_json},
                {"oracle_version", info.oracle_version},
                {kNumericsVersionField, std::to_string(num::kNumericsContractVersion)},
                {"steps", std::to_string(tokens.size())}};
  f.tensors.push_back(st_i64("token_ids", {(int64_t)tokens.size()}, wide(tokens)));
  f.tensors.push_back(st_i64("prompt_ids", {(int64_t)info.prompt_ids.size()}, wide(info.prompt_ids)));
  return f;
}

}  // namespace

SafetensorsFile logits_dump(const DumpInfo& info, const std::vector<int>& tokens, const std::vector<float>& logits,
                            int vocab) {
  SafetensorsFile f = with_ids(info, tokens, "oracle-logits");
  f.metadata["vocab"] = std::to_string(vocab);
  f.tensors.insert(f.tensors.begin(), st_f32("logits", {(int64_t)tokens.size(), vocab}, logits));
  return f;
}

SafetensorsFile trace_dump(const DumpInfo& info, const std::vector<int>& tokens, const std::vector<TraceEntry>& trace) {
  SafetensorsFile f = with_ids(info, tokens, "oracle-trace");
  std::vector<std::string> names;
  for (const TraceEntry& e : trace)
    if (std::find(names.begin(), names.end(), e.name) == names.end()) names.push_back(e.name);
  for (const std::string& name : names) {
    std::vector<float> rows;  // (positions, width)
    int64_t n = 0, width = -1, expect_pos = 0;
    for (const TraceEntry& e : canonical_trace_order(trace)) {
      if (e.name != name) continue;
      require_input(width < 0 || width == (int64_t)e.values.size(), "trace", name, "rows of different widths");
      require_input(e.pos == expect_pos++, "trace", name, "positions are not 0, 1, 2, ...");
      width = (int64_t)e.values.size();
      rows.insert(rows.end(), e.values.begin(), e.values.end());
      n++;
    }
    f.tensors.push_back(st_f32(name, {n, width}, rows));
  }
  return f;
}

// ============================================================================
// Reading
// ============================================================================
namespace {

constexpr const char* kOps[] = {"attn_norm", "q",        "k",      "v",       "attn_out", "attn_proj",
                                "ffn_norm",  "ffn_gate", "ffn_up", "ffn_act", "ffn_out",  "resid"};

// (layer, op rank) of a traced name; InputError for a name forward() never emits.
std::pair<int, int> op_key(const std::string& name) {
  if (name == "output_norm") return {1 << 30, 0};
  if (name == "logits") return {1 << 30, 1};
  const int layer = layer_of(name);
  if (layer >= 0) {
    const std::string op = name.substr(name.find('.', 4) + 1);
    for (int i = 0; i < 12; i++)
      if (op == kOps[i] && name == "blk." + std::to_string(layer) + "." + op) return {layer, i};
  }
  throw InputError("trace", name, "not an op name of the reference trace (blk.N.attn_norm ... logits)");
}

std::vector<int> narrow_ids(const std::vector<int64_t>& v, const std::string& path, const std::string& field) {
  std::vector<int> out;
  for (int64_t x : v) {
    require_input(x >= 0 && x < (int64_t(1) << 31), path, field, "token id " + std::to_string(x) + " out of range");
    out.push_back((int)x);
  }
  return out;
}

std::vector<int> ids_tensor(const SafetensorsFile& f, const char* name, const std::string& path) {
  const StTensorData* t = f.find(name);
  if (!t) return {};
  require_input(t->shape.size() == 1 || (t->shape.size() == 2 && t->shape[0] == 1), path, name,
                "expected a 1-D id tensor");
  return narrow_ids(st_as_ints(*t, path), path, name);
}

// An oracle dump (format oracle-logits / oracle-trace) must carry this oracle's numerics_version
// (none: written before the field, version 1); another program's safetensors is not checked.
void check_dump_version(const std::map<std::string, std::string>& meta, const std::string& path) {
  const auto format = meta.find("format");
  if (format == meta.end() || (format->second != "oracle-logits" && format->second != "oracle-trace")) return;
  json j = json::object();
  if (const auto v = meta.find(kNumericsVersionField); v != meta.end())
    j[kNumericsVersionField] = parse_json_text(v->second, path, kNumericsVersionField);
  check_numerics_version(j, path, "regenerate it with `oracle run ... --dump-logits F` (or --dump-trace F)");
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

std::vector<TraceEntry> canonical_trace_order(std::vector<TraceEntry> t) {
  std::stable_sort(t.begin(), t.end(), [](const TraceEntry& a, const TraceEntry& b) {
    const auto ka = op_key(a.name), kb = op_key(b.name);
    return ka != kb ? ka < kb : a.pos < b.pos;
  });
  return t;
}

LogitsInput read_logits_input(const std::string& path) {
  LogitsInput in;
  in.path = path;
  std::vector<int64_t> shape;
  if (ends_with(path, ".npy")) {
    NpyArray a = read_npy(path);
    shape = a.shape;
    in.logits.assign(a.values.begin(), a.values.end());
  } else {
    const SafetensorsFile f = read_safetensors(path);
    const StTensorData* t = f.find("logits");
    require_input(t != nullptr, path, "logits", "no tensor named logits");
    shape = t->shape;
    in.logits = st_as_f32(*t, path);
    in.token_ids = ids_tensor(f, "token_ids", path);
    in.prompt_ids = ids_tensor(f, "prompt_ids", path);
    in.metadata = f.metadata;
    check_dump_version(f.metadata, path);
  }
  if (shape.size() == 3 && shape[0] == 1) shape.erase(shape.begin());  // HF (batch 1, steps, vocab)
  require_input(shape.size() == 2 && shape[0] > 0 && shape[1] > 0, path, "logits shape",
                "expected (steps, vocab) or (1, steps, vocab)");
  in.steps = (int)shape[0];
  in.vocab = (int)shape[1];
  require_input(in.token_ids.empty() || (int)in.token_ids.size() == in.steps, path, "token_ids",
                std::to_string(in.token_ids.size()) + " ids for " + std::to_string(in.steps) + " logit rows");
  return in;
}

std::vector<int> read_ids_file(const std::string& path) {
  if (ends_with(path, ".npy")) {
    const NpyArray a = read_npy(path);
    std::vector<int64_t> v;
    for (double x : a.values) {
      require_input(x == (double)(int64_t)x, path, "ids", "not an integer array");
      v.push_back((int64_t)x);
    }
    return narrow_ids(v, path, "ids");
  }
  std::ifstream in(path, std::ios::binary);
  require_input(in.good(), path, "file", "cannot open");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.find('[') == std::string::npos) text = "[" + text + "]";
  try {
    const json j = json::parse(text);
    std::vector<int64_t> v;
    for (const json& x : j) {
      require_input(x.is_number_integer(), path, "ids", "expected integers");
      v.push_back(x.get<int64_t>());
    }
    return narrow_ids(v, path, "ids");
  } catch (const json::exception& e) {
    throw InputError(path, "ids", std::string("expected a JSON array or comma-separated ids: ") + e.what());
  }
}

std::vector<TraceEntry> read_trace_dump(const std::string& path, std::vector<int>* prompt_ids,
                                        std::vector<int>* token_ids) {
  const SafetensorsFile f = read_safetensors(path);
  check_dump_version(f.metadata, path);
  std::vector<TraceEntry> out;
  for (const StTensorData& t : f.tensors) {
    if (t.name == "prompt_ids" || t.name == "token_ids") continue;
    op_key(t.name);
    require_input(t.shape.size() == 2, path, t.name, "expected (positions, width)");
    const std::vector<float> v = st_as_f32(t, path);
    for (int64_t p = 0; p < t.shape[0]; p++)
      out.push_back({t.name, (int)p, std::vector<float>(v.begin() + p * t.shape[1], v.begin() + (p + 1) * t.shape[1])});
  }
  require_input(!out.empty(), path, "tensors", "no traced tensors");
  if (prompt_ids) *prompt_ids = ids_tensor(f, "prompt_ids", path);
  if (token_ids) *token_ids = ids_tensor(f, "token_ids", path);
  return canonical_trace_order(std::move(out));
}

}  // namespace oracle
