// llm_oracle.ops: the single ops on float32 arrays (include/llm_oracle/ops.h).
// Shapes are checked here and the C++ op runs on the arrays' own memory with
// the GIL released; `out=` (optional) is written in place and returned.
#include <chrono>
#include <cstring>
#include <optional>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "arrays.h"
#include "bindings.h"
#include "llm_oracle/ops.h"

namespace llm_oracle::py {

namespace {

void need(bool ok, const char* op, const char* field, const std::string& message) {
  if (!ok) throw InputError(std::string("ops.") + op, field, message);
}
size_t product(const std::vector<size_t>& s, size_t begin, size_t end) {
  size_t p = 1;
  for (size_t i = begin; i < end; i++) p *= s[i];
  return p;
}
int as_int(size_t v, const char* op, const char* field) {
  need(v > 0 && v <= (size_t)INT32_MAX, op, field, "size " + std::to_string(v) + " is outside 1..2^31-1");
  return (int)v;
}

ops::RopeParams rope_params(int head_dim, float theta, const std::string& layout, const std::string& scaling,
                            float factor, int original_context, float attn_factor,
                            const std::optional<std::vector<float>>& freq_factors) {
  ops::RopeParams p;
  p.head_dim = head_dim, p.theta = theta, p.factor = factor, p.original_context = original_context;
  p.attn_factor = attn_factor;
  if (freq_factors) p.freq_factors = *freq_factors;
  need(layout == "interleaved" || layout == "neox", "rope", "layout", "'" + layout + "': one of interleaved, neox");
  p.layout = layout == "neox" ? ops::RopeLayout::Neox : ops::RopeLayout::Interleaved;
  need(scaling == "none" || scaling == "linear" || scaling == "yarn", "rope", "scaling",
       "'" + scaling + "': one of none, linear, yarn");
  p.scaling = scaling == "linear" ? ops::RopeScaling::Linear
              : scaling == "yarn" ? ops::RopeScaling::Yarn
                                  : ops::RopeScaling::None;
  return p;
}

nb::object rmsnorm(InArray x, InArray w, float eps, nb::object out) {
  const auto xs = check_array(x, "ops.rmsnorm", Kind::F32, 1, 2);
  const auto ws = check_array(w, "ops.rmsnorm", Kind::F32, 1, 1);
  const int n = as_int(xs.back(), "rmsnorm", "n"), rows = as_int(product(xs, 0, xs.size() - 1), "rmsnorm", "rows");
  need(ws[0] == (size_t)n, "rmsnorm", "weight", "expected shape (" + std::to_string(n) + ",), got " + shape_text(ws));
  OutBuffer o = out_f32(out, xs, "ops.rmsnorm");
  {
    nb::gil_scoped_release release;
    ops::rmsnorm(o.data, f32_data(x), f32_data(w), rows, n, eps);
  }
  return o.array;
}

nb::object softmax(InArray x, nb::object out) {
  const auto xs = check_array(x, "ops.softmax", Kind::F32, 1, 2);
  const int n = as_int(xs.back(), "softmax", "n"), rows = as_int(product(xs, 0, xs.size() - 1), "softmax", "rows");
  OutBuffer o = out_f32(out, xs, "ops.softmax");
  {
    nb::gil_scoped_release release;
    ops::softmax(o.data, f32_data(x), rows, n);
  }
  return o.array;
}

nb::object swiglu(InArray gate, InArray up, nb::object out) {
  const auto gs = check_array(gate, "ops.swiglu", Kind::F32, 1, 8);
  const auto us = check_array(up, "ops.swiglu", Kind::F32, 1, 8);
  need(gs == us, "swiglu", "up", "shape " + shape_text(us) + " differs from gate's " + shape_text(gs));
  OutBuffer o = out_f32(out, gs, "ops.swiglu");
  {
    nb::gil_scoped_release release;
    ops::swiglu(o.data, f32_data(gate), f32_data(up), (int64_t)product(gs, 0, gs.size()));
  }
  return o.array;
}

nb::object rope(InArray x, nb::handle positions, int head_dim, float theta, const std::string& layout,
                const std::string& scaling, float factor, int original_context, float attn_factor,
                std::optional<std::vector<float>> freq_factors, nb::object out) {
  const auto xs = check_array(x, "ops.rope", Kind::F32, 2, 3);
  const ops::RopeParams p = rope_params(head_dim, theta, layout, scaling, factor, original_context, attn_factor,
                                        freq_factors);
  const std::vector<int> pos = to_ids(positions, "ops.rope");
  const int rows = as_int(xs[0], "rope", "rows");
  const size_t width = product(xs, 1, xs.size());
  need(head_dim > 0 && width % (size_t)head_dim == 0, "rope", "head_dim",
       "row width " + std::to_string(width) + " is not a multiple of head_dim " + std::to_string(head_dim));
  need(xs.size() == 2 || xs[2] == (size_t)head_dim, "rope", "head_dim", "x's last dimension must be head_dim");
  need(pos.size() == (size_t)rows, "rope", "positions",
       "needs one position per row (" + std::to_string(rows) + "), got " + std::to_string(pos.size()));
  OutBuffer o = out_f32(out, xs, "ops.rope");
  {
    nb::gil_scoped_release release;
    if (o.data != f32_data(x)) std::memcpy(o.data, f32_data(x), product(xs, 0, xs.size()) * sizeof(float));
    ops::rope(o.data, pos.data(), rows, (int)(width / (size_t)head_dim), p);
  }
  return o.array;
}

std::pair<NpF32, NpF32> rope_table(int pos, int head_dim, float theta, const std::string& scaling, float factor,
                                   int original_context, float attn_factor,
                                   std::optional<std::vector<float>> freq_factors) {
  const ops::RopeParams p =
      rope_params(head_dim, theta, "interleaved", scaling, factor, original_context, attn_factor, freq_factors);
  std::vector<float> c(head_dim > 0 ? head_dim / 2 : 0), s(c.size());
  ops::rope_table(c.data(), s.data(), pos, p);
  const size_t half = c.size();
  return {to_numpy(std::move(c), {half}), to_numpy(std::move(s), {half})};
}

nb::object attention(InArray q, InArray k, InArray v, nb::object out) {
  const auto qs = check_array(q, "ops.attention", Kind::F32, 2, 2);
  const auto ks = check_array(k, "ops.attention", Kind::F32, 3, 3);
  const auto vs = check_array(v, "ops.attention", Kind::F32, 3, 3);
  need(ks == vs, "attention", "v", "shape " + shape_text(vs) + " differs from k's " + shape_text(ks));
  need(ks[2] == qs[1], "attention", "k", "head_dim " + std::to_string(ks[2]) + " differs from q's " + std::to_string(qs[1]));
  const int n_heads = as_int(qs[0], "attention", "n_heads"), head_dim = as_int(qs[1], "attention", "head_dim");
  const int n_pos = as_int(ks[0], "attention", "n_pos"), n_kv = as_int(ks[1], "attention", "n_kv_heads");
  OutBuffer o = out_f32(out, qs, "ops.attention");
  {
    nb::gil_scoped_release release;
    ops::attention(o.data, f32_data(q), f32_data(k), f32_data(v), n_pos, n_heads, n_kv, head_dim);
  }
  return o.array;
}

nb::object matmul(InArray x, InArray w, const std::string& dtype, int threads, nb::object out) {
  const DType t = parse_dtype(dtype);
  const auto xs = check_array(x, "ops.matmul", Kind::F32, 1, 2);
  const auto ws = check_array(w, "ops.matmul", t == DType::F32 ? Kind::F32 : Kind::Any, 2, 2);
  const int K = as_int(xs.back(), "matmul", "K"), T = xs.size() == 2 ? as_int(xs[0], "matmul", "T") : 1;
  const int N = as_int(ws[0], "matmul", "N");
  const size_t want = (size_t)N * (size_t)row_bytes(t, K);
  need(w.nbytes() == want, "matmul", "weight",
       dtype_name(t) + " weight of " + std::to_string(N) + " rows of K = " + std::to_string(K) + " needs " +
           std::to_string(want) + " bytes, got " + std::to_string(w.nbytes()) + " (shape " + shape_text(ws) + ")");
  std::vector<size_t> os = xs;
  os.back() = (size_t)N;
  OutBuffer o = out_f32(out, os, "ops.matmul");
  {
    nb::gil_scoped_release release;
    ops::matmul(o.data, f32_data(x), raw_data(w), t, T, K, N, threads);
  }
  return o.array;
}

NpF32 dequantize(InArray data, const std::string& dtype, int64_t n) {
  const DType t = parse_dtype(dtype);
  check_array(data, "ops.dequantize", Kind::Any, 1, 2);
  const int64_t rb = row_bytes(t, n);
  need(n > 0 && data.nbytes() % (size_t)rb == 0 && data.nbytes() > 0, "dequantize", "data",
       std::to_string(data.nbytes()) + " bytes are not a whole number of " + dtype_name(t) + " rows of " +
           std::to_string(n) + " values (" + std::to_string(rb) + " bytes each)");
  const int64_t rows = (int64_t)data.nbytes() / rb;
  std::vector<float> v((size_t)(rows * n));
  {
    nb::gil_scoped_release release;
    ops::dequantize_rows(v.data(), raw_data(data), t, rows, n);
  }
  return to_numpy(std::move(v), {(size_t)rows, (size_t)n});
}

NpU8 quantize(InArray x, const std::string& dtype) {
  const DType t = parse_dtype(dtype);
  const auto xs = check_array(x, "ops.quantize", Kind::F32, 1, 2);
  const int64_t n = (int64_t)xs.back(), rows = (int64_t)product(xs, 0, xs.size() - 1);
  const int64_t rb = row_bytes(t, n);
  std::vector<uint8_t> v((size_t)(rows * rb));
  {
    nb::gil_scoped_release release;
    ops::quantize_rows(v.data(), f32_data(x), t, rows, n);
  }
  return to_numpy(std::move(v), {(size_t)rows, (size_t)rb});
}

// Seconds per C++ call of ops::rmsnorm on x's rows, over `iters` calls (no Python
// in the loop): the baseline of the binding-overhead measurement (docs/python.md).
double time_cpp_rmsnorm(InArray x, InArray w, float eps, int iters) {
  const auto xs = check_array(x, "ops.rmsnorm", Kind::F32, 1, 2);
  const int n = as_int(xs.back(), "rmsnorm", "n"), rows = as_int(product(xs, 0, xs.size() - 1), "rmsnorm", "rows");
  std::vector<float> out(product(xs, 0, xs.size()));
  nb::gil_scoped_release release;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; i++) ops::rmsnorm(out.data(), f32_data(x), f32_data(w), rows, n, eps);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
}

}  // namespace

void bind_ops(nb::module_& m) {
  using namespace nb::literals;
  m.def("rmsnorm", &rmsnorm, "x"_a.noconvert(), "weight"_a.noconvert(), "eps"_a = 1e-5f, "out"_a = nb::none(),
        "RMSNorm of each row of x (n,) or (rows, n) with weight (n,).");
  m.def("softmax", &softmax, "x"_a.noconvert(), "out"_a = nb::none(), "Stable softmax of each row of x (n,) or (rows, n).");
  m.def("swiglu", &swiglu, "gate"_a.noconvert(), "up"_a.noconvert(), "out"_a = nb::none(), "silu(gate) * up.");
  m.def("rope", &rope, "x"_a.noconvert(), "positions"_a, "head_dim"_a, "theta"_a = 10000.0f,
        "layout"_a = "interleaved", "scaling"_a = "none", "factor"_a = 1.0f, "original_context"_a = 0,
        "attn_factor"_a = 1.0f, "freq_factors"_a = nb::none(), "out"_a = nb::none(),
        "RoPE of x (rows, n_heads * head_dim) or (rows, n_heads, head_dim); row r at positions[r].");
  m.def("rope_table", &rope_table, "pos"_a, "head_dim"_a, "theta"_a = 10000.0f, "scaling"_a = "none",
        "factor"_a = 1.0f, "original_context"_a = 0, "attn_factor"_a = 1.0f, "freq_factors"_a = nb::none(),
        "(cos, sin) rows (head_dim / 2) of the RoPE table at pos.");
  m.def("attention", &attention, "q"_a.noconvert(), "k"_a.noconvert(), "v"_a.noconvert(), "out"_a = nb::none(),
        "One query q (n_heads, head_dim) over k, v (n_pos, n_kv_heads, head_dim).");
  m.def("matmul", &matmul, "x"_a.noconvert(), "w"_a.noconvert(), "dtype"_a = "F32", "threads"_a = 1,
        "out"_a = nb::none(), "x (T, K) @ w.T, w (N, K) stored as dtype (raw bytes unless F32).");
  m.def("dequantize", &dequantize, "data"_a.noconvert(), "dtype"_a, "n"_a, "Rows of n values from stored bytes.");
  m.def("quantize", &quantize, "x"_a.noconvert(), "dtype"_a, "Rows (rows, n) -> stored bytes (rows, row_bytes).");
  m.def("row_bytes", [](const std::string& dtype, int64_t n) { return row_bytes(parse_dtype(dtype), n); }, "dtype"_a,
        "n"_a, "Bytes of one stored row of n values.");
  m.def("_time_cpp_rmsnorm", &time_cpp_rmsnorm, "x"_a.noconvert(), "weight"_a.noconvert(), "eps"_a, "iters"_a);
  m.def("dtypes", [] {
    std::vector<std::string> names;
    for (DType t : llm_oracle::dtypes()) names.push_back(dtype_name(t));
    return names;
  }, "The stored types the ops read.");
}

}  // namespace llm_oracle::py
