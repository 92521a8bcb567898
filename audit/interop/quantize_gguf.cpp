// GGUF -> GGUF as llama-quantize writes it (see audit/interop/quantize_gguf.h).
// Plan first (llama.cpp's tensor order, per-tensor types from
// quantize_policy), then stream: one tensor in memory at a time, its rows
// converted in parallel (each row independently: the thread count changes no
// byte), the file written atomically.
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "base/errors.h"
#include "reference/model/gguf.h"
#include "reference/model/gguf_writer.h"
#include "numerics/numerics.h"
#include "reference/model/quant.h"
#include "audit/interop/quantize_gguf.h"
#include "reference/model/quantize_rows.h"
#include "audit/interop/quantize_policy.h"
#include "base/thread_pool.h"

namespace oracle {
namespace {

// ---- model facts for the mix rules (llama_model::load_hparams) ---------------------------
int first_int(const GgufFile& g, const std::string& key, int fallback) {
  const GgufValue* v = g.find(key);
  if (!v) return fallback;
  if (v->type == GgufType::ARRAY) {
    require_input(!v->ints.empty(), g.path(), key, "empty array");
    return (int)v->ints[0];
  }
  return (int)g.get_int(key);
}

QuantModelFacts model_facts(const GgufFile& g) {
  QuantModelFacts f;
  f.arch = g.get_string("general.architecture");
  f.n_layer = (int)g.get_int(f.arch + ".block_count");
  require_input(f.n_layer > 0, g.path(), f.arch + ".block_count", "must be positive");
  f.n_head = first_int(g, f.arch + ".attention.head_count", 0);
  f.n_head_kv = first_int(g, f.arch + ".attention.head_count_kv", f.n_head);
  f.n_expert = (int)g.get_int(f.arch + ".expert_count", 0);
  // LLM_TYPE_70B as the model loaders assign it (llama-model.cpp / models/*.cpp).
  if (f.arch == "llama") f.is_70b = f.n_layer == 80 && f.n_head != f.n_head_kv;
  if (f.arch == "qwen2" || f.arch == "deci" || f.arch == "olmo") f.is_70b = f.n_layer == 80;
  if (f.arch == "jais2") f.is_70b = f.n_layer == 68;
  return f;
}

// ggml_n_dims: trailing 1s do not count (at least one dimension stays).
std::vector<int64_t> trimmed(std::vector<int64_t> d) {
  while (d.size() > 1 && d.back() == 1) d.pop_back();
  return d;
}

bool is_float_type(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

// ---- one tensor's data ------------------------------------------------------------------------
void require_finite(const GgufFile& g, const GgufTensorInfo& t, const float* x, int64_t n) {
  for (int64_t k = 0; k < n; k++)
    require_input(std::isfinite(x[k]), g.path(), t.name,
                  "element " + std::to_string(k) + " is " + (std::isnan(x[k]) ? "NaN" : "infinite") +
                      "; llama-quantize refuses non-finite data too");
}

// Rows of the source as float32 (exact: dequantize_row is ggml's to_float).
std::vector<float> source_f32(const GgufFile& g, const GgufTensorInfo& t, int64_t row, int64_t rows) {
  DType src = static_cast<DType>(t.ggml_type);
  int64_t src_row = dtype_row_bytes(src, row);
  std::vector<float> x((size_t)(row * rows));
  for (int64_t r = 0; r < rows; r++) dequantize_row(src, t.data + r * src_row, row, x.data() + r * row);
  require_finite(g, t, x.data(), row * rows);
  return x;
}

std::vector<uint8_t> convert_tensor(const GgufFile& g, const GgufTensorInfo& t, DType to, int threads) {
  const int64_t row = t.dims[0], rows = t.n_elements() / row;
  const int64_t out_row = dtype_row_bytes(to, row);
  std::vector<float> x = source_f32(g, t, row, rows);
  std::vector<uint8_t> out((size_t)(out_row * rows));
  ThreadPool pool(threads);
  pool.parallel_for((int)rows, [&](int begin, int end) {
    for (int r = begin; r < end; r++) quantize_row(to, x.data() + (int64_t)r * row, row, out.data() + r * out_row);
  });
  return out;
}

std::vector<uint8_t> copy_tensor(const GgufFile& g, const GgufTensorInfo& t) {
  DType type = static_cast<DType>(t.ggml_type);
  if (is_float_type(type)) source_f32(g, t, t.dims[0], t.n_elements() / t.dims[0]);  // finiteness only
  return std::vector<uint8_t>(t.data, t.data + t.n_bytes);
}

// ---- planning ----------------------------------------------------------------------------------
void check_convertible(const GgufFile& g, const GgufTensorInfo& t, DType to, const QuantizeOptions& opt) {
  DType from = static_cast<DType>(t.ggml_type);
  require_input(dtype_supported((int)t.ggml_type) && from != DType::I8_ROW, g.path(), t.name,
                "stored type " + std::to_string(t.ggml_type) + " cannot be read for conversion");
  require_input(is_float_type(from) || opt.allow_requantize, g.path(), t.name,
                std::string("stored as ") + dtype_name(from) + "; converting it to " + dtype_name(to) +
                    " requantizes (pass --allow-requantize, as llama-quantize needs)");
  require_input(dtype_row_bytes(to, t.dims[0]) >= 0, g.path(), t.name,
                "row length " + std::to_string(t.dims[0]) + " is not a multiple of the " + dtype_name(to) +
                    " block");
}

struct Plan {
  std::vector<const GgufTensorInfo*> src;  // in llama.cpp's order
  std::vector<QuantTensorIn> in;
  std::vector<QuantChoice> choice;
};

Plan make_plan(const GgufFile& g, const QuantMix& mix, const QuantizeOptions& opt) {
  Plan p;
  for (const GgufTensorInfo& t : g.tensors())
    p.in.push_back(QuantTensorIn{t.name, trimmed(t.dims), static_cast<DType>(t.ggml_type)});
  sort_llama_order(p.in);
  for (const QuantTensorIn& t : p.in) p.src.push_back(g.find_tensor(t.name));
  p.choice = choose_quant_types(model_facts(g), mix, opt.pure || mix.default_type == DType::I8_ROW, p.in);
  for (size_t i = 0; i < p.in.size(); i++)
    if (p.choice[i].type != p.in[i].type) check_convertible(g, *p.src[i], p.choice[i].type, opt);
  return p;
}

// ggml's gguf_set_kv copies every key; the output is aligned to 32 whatever an
// input general.alignment says, so that key is kept only when it says 32 (a
// different value would describe the output wrongly; llama-quantize keeps it).
void write_metadata(const GgufFile& g, const QuantMix& mix, GgufWriter& w) {
  for (const auto& [key, value] : g.metadata())
    if (key != "general.alignment" || (value.is_integer() && value.i == 32)) w.add(key, value);
  int64_t ftype = mix.ftype >= 0 ? mix.ftype : g.get_int("general.file_type", -1);
  w.remove("general.quantization_version");
  w.add_u32("general.quantization_version", 2);  // GGML_QNT_VERSION
  w.remove("general.file_type");
  if (ftype >= 0) w.add_u32("general.file_type", (uint32_t)ftype);
  for (const char* k : {"split.no", "split.count", "split.tensors.count"}) w.remove(k);
}

}  // namespace

QuantizeReport quantize_gguf(const std::string& in_path, const std::string& out_path, const QuantizeOptions& opt) {
  const QuantMix mix = parse_quant_mix(opt.type);
  auto g = std::make_shared<GgufFile>(in_path);
  Plan plan = make_plan(*g, mix, opt);
  GgufWriter w;
  write_metadata(*g, mix, w);
  QuantizeReport rep;
  rep.type = mix.name;
  rep.ftype = mix.ftype;
  const int threads = opt.threads < 1 ? 1 : opt.threads;
  for (size_t i = 0; i < plan.in.size(); i++) {
    const GgufTensorInfo* t = plan.src[i];
    const QuantChoice& c = plan.choice[i];
    QuantizedTensor q{t->name, plan.in[i].dims, plan.in[i].type, c.type, t->n_bytes, 0, c.type != plan.in[i].type,
                      c.fallback};
    q.bytes_out = q.converted ? (uint64_t)(dtype_row_bytes(c.type, q.dims[0]) * (t->n_elements() / q.dims[0]))
                              : t->n_bytes;
    if (q.converted) w.add_tensor_deferred(q.name, q.to, q.dims, [g, t, c, threads] { return convert_tensor(*g, *t, c.type, threads); });
    else w.add_tensor_deferred(q.name, q.to, q.dims, [g, t] { return copy_tensor(*g, *t); });
    (q.converted ? rep.quantized : rep.kept)++;
    rep.fallbacks += q.fallback ? 1 : 0;
    rep.bytes_in += q.bytes_in;
    rep.bytes_out += q.bytes_out;
    rep.n_elements += t->n_elements();
    rep.tensors.push_back(q);
  }
  w.write(out_path);
  rep.file_bytes = (uint64_t)std::filesystem::file_size(out_path);
  return rep;
}

QuantizeReport quantize_gguf(const std::string& in_path, const std::string& out_path, DType type) {
  QuantizeOptions opt;
  opt.type = dtype_name(type);
  opt.pure = true;
  return quantize_gguf(in_path, out_path, opt);
}

}  // namespace oracle
