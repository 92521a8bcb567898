// Kernel cases (optimized/kernel_cases.h): the matmul family — kernels::matmul on
// an F32 view (op matmul_f32), a Q8_0 / Q4_0 view (matmul_q8_0 / matmul_q4_0) and
// every other stored type's view (matmul_stored), fast mode's FastGemm, and the
// ggml numerics profile's activation quantizer (quantize_ggml) and integer-dot
// matmul (matmul_ggml), both against reference/compute/qmatmul_ggml.h.
// Shapes: W (N, K), x (T, K), out (T, N).
//   bytes = W's bytes (N * K * 4, or N * K / block_elems * block_bytes stored)
//           + x (T * K * 4) + out (T * N * 4);   flops = 2 * T * N * K
//   (one multiply and one add per weight and token; dequantisation not counted).
#include <algorithm>
#include <cstring>
#include <memory>

#include "kernels/gemm_fast.cuh"
#include "kernels/matmul.cuh"
#include "kernels/matmul_ggml.cuh"
#include "optimized/kernel_cases.h"
#include "reference/compute/ops.h"
#include "reference/compute/qmatmul_ggml.h"
#include "reference/model/quant.h"

namespace oracle::optimized::cases {
namespace k = oracle::kernels;
namespace {

struct Shape {
  int N, K, T;
};

double matmul_bytes(const Shape& s, double weight_bytes) { return weight_bytes + 4.0 * ((double)s.T * s.K + (double)s.T * s.N); }
double matmul_flops(const Shape& s) { return 2.0 * s.T * s.N * s.K; }
std::string shape_text(const std::string& op, const Shape& s) {
  return op + " N=" + std::to_string(s.N) + " K=" + std::to_string(s.K) + " T=" + std::to_string(s.T);
}

// spec: dot_canonical per output (docs/numerics.md §4 "MatMul / GEMV"); reference: ops::matmul.
std::vector<Expected> matmul_expected(const Floats& x, const Floats& W, const Shape& s) {
  Expected spec{"spec", Floats((size_t)s.T * s.N)}, ref{"reference", Floats((size_t)s.T * s.N)};
  for (int t = 0; t < s.T; t++)
    for (int i = 0; i < s.N; i++)
      spec.values[(size_t)t * s.N + i] = num::dot_canonical(&W[(size_t)i * s.K], &x[(size_t)t * s.K], s.K);
  ops::matmul(ref.values.data(), x.data(), W.data(), s.T, s.K, s.N, nullptr);
  return {spec, ref};
}

// ---- matmul_f32 -----------------------------------------------------------------------
struct F32State {
  Shape s;
  Floats x, W;
  Dev<float> dW, dx, dout;
  F32State(Shape sh, Floats xs, Floats Ws)
      : s(sh), x(std::move(xs)), W(std::move(Ws)), dW(W), dx(x), dout((size_t)s.T * s.N) {}
};

KernelCase f32_case(Shape s, uint32_t seed) {
  return {"matmul_f32", shape_text("matmul_f32", s), seed, Tolerance::Exact, matmul_bytes(s, 4.0 * s.N * s.K),
          matmul_flops(s), [s](uint32_t sd) {
            std::mt19937 rng(sd);
            Floats W = random_floats(rng, (size_t)s.N * s.K, 1.0f), x = random_floats(rng, (size_t)s.T * s.K, 2.0f);
            auto st = std::make_shared<F32State>(s, std::move(x), std::move(W));
            return CaseRun{[st] { k::matmul(st->dout.get(), st->dx.get(), {st->dW.get(), DType::F32}, st->s.T, st->s.K, st->s.N); },
                           [st] { return CaseResult{matmul_expected(st->x, st->W, st->s), st->dout.host(), {}}; }};
          }};
}

// ---- stored weights: Q8_0 / Q4_0 and the other stored types --------------------------------------
// One stored format: its type, where its blocks hold fp16 / f32 scales.
struct Format {
  DType type;
  std::vector<int> half_offsets;  // byte offsets of fp16 fields in a block (finite values written)
  int f32_offset = -1;            // a float32 field (Q8_K's d)
  int block_elems() const { return (int)dtype_block_elems(type); }
  int block_bytes() const { return (int)dtype_block_bytes(type); }
  std::string op() const {
    return type == DType::Q8_0 ? "matmul_q8_0" : type == DType::Q4_0 ? "matmul_q4_0" : "matmul_stored";
  }
  std::string name() const { return op() == "matmul_stored" ? op() + " " + dtype_name(type) : op(); }
};

const std::vector<Format>& stored_formats() {
  static const std::vector<Format> f = {
      {DType::F16, {0}},      {DType::BF16, {}},      {DType::Q4_1, {0, 2}}, {DType::Q5_0, {0}},
      {DType::Q5_1, {0, 2}},  {DType::Q8_1, {0, 2}},  {DType::Q2_K, {80, 82}}, {DType::Q3_K, {108}},
      {DType::Q4_K, {0, 2}},  {DType::Q5_K, {0, 2}},  {DType::Q6_K, {208}},  {DType::Q8_K, {}, 0},
  };
  return f;
}
const Format kQ8_0{DType::Q8_0, {0}};
const Format kQ4_0{DType::Q4_0, {0}};

// Random bytes; fp16 fields finite and small, BF16 elements finite, Q8_K's d finite.
std::vector<uint8_t> random_rows(std::mt19937& rng, const Format& f, int N, int K) {
  const int bb = f.block_bytes();
  std::vector<uint8_t> w((size_t)N * (K / f.block_elems()) * bb);
  for (uint8_t& b : w) b = (uint8_t)(rng() & 0xff);
  const bool f16 = f.type == DType::F16;
  for (size_t b = 0; b < w.size(); b += (size_t)bb) {
    for (int off : f.half_offsets) {
      const uint16_t h = num::f32_to_fp16(uniform(rng, f16 ? 2.0f : 0.05f));
      w[b + off] = (uint8_t)(h & 0xff), w[b + off + 1] = (uint8_t)(h >> 8);
    }
    if (f.type == DType::BF16) {
      const uint16_t h = num::f32_to_bf16(uniform(rng, 2.0f));
      w[b] = (uint8_t)(h & 0xff), w[b + 1] = (uint8_t)(h >> 8);
    }
    if (f.f32_offset >= 0) {
      const uint32_t u = num::f32_bits(uniform(rng, 0.01f));
      for (int i = 0; i < 4; i++) w[b + f.f32_offset + i] = (uint8_t)(u >> (8 * i));
    }
  }
  return w;
}

struct StoredState {
  Format f;
  Shape s;
  std::vector<uint8_t> W;
  Floats x;
  Dev<uint8_t> dW;
  Dev<float> dx, dout;
  StoredState(Format fm, Shape sh, std::vector<uint8_t> Ws, Floats xs)
      : f(std::move(fm)), s(sh), W(std::move(Ws)), x(std::move(xs)), dW(W), dx(x), dout((size_t)s.T * s.N) {}
  void launch() { k::matmul(dout.get(), dx.get(), {dW.get(), f.type}, s.T, s.K, s.N); }
  // The reference's stored-type path: dequantize_row (reference/model/quant.cpp), then the dot.
  CaseResult result() {
    Floats deq((size_t)s.N * s.K);
    const size_t row_bytes = (size_t)dtype_row_bytes(f.type, s.K);
    for (int i = 0; i < s.N; i++) dequantize_row(f.type, &W[i * row_bytes], s.K, &deq[(size_t)i * s.K]);
    return {matmul_expected(x, deq, s), dout.host(), {}};
  }
};

KernelCase stored_case(const Format& f, Shape s, uint32_t seed) {
  const double wbytes = (double)s.N * (s.K / f.block_elems()) * f.block_bytes();
  return {f.op(), shape_text(f.name(), s), seed, Tolerance::Exact, matmul_bytes(s, wbytes), matmul_flops(s),
          [f, s](uint32_t sd) {
            std::mt19937 rng(sd);
            std::vector<uint8_t> W = random_rows(rng, f, s.N, s.K);
            Floats x = random_floats(rng, (size_t)s.T * s.K, 2.0f);
            auto st = std::make_shared<StoredState>(f, s, std::move(W), std::move(x));
            return CaseRun{[st] { st->launch(); }, [st] { return st->result(); }};
          }};
}

// ---- FastGemm (fast mode): held to fast_gemm_rel_bound (optimized/fast_audit.h) ----------------------
const char* precision_name(k::FastPrecision p) {
  return p == k::FastPrecision::F32 ? "f32" : p == k::FastPrecision::TF32 ? "tf32" : "bf16";
}

struct FastState : F32State {
  k::FastPrecision precision;
  k::FastGemm gemm;
  FastState(Shape sh, Floats xs, Floats Ws, k::FastPrecision p) : F32State(sh, std::move(xs), std::move(Ws)), precision(p) {}
  CaseResult result() {
    FastAudit audit(precision);
    audit.check("gemm_fast", dx.get(), dW.get(), dout.get(), s.T, s.K, s.N);
    return {{}, {}, audit.ops().at("gemm_fast")};
  }
};

KernelCase fast_case(Shape s, k::FastPrecision p, uint32_t seed) {
  return {"gemm_fast", shape_text(std::string("gemm_fast ") + precision_name(p), s), seed, Tolerance::FastGemmBound,
          matmul_bytes(s, 4.0 * s.N * s.K), matmul_flops(s), [s, p](uint32_t sd) {
            std::mt19937 rng(sd);
            Floats W = random_floats(rng, (size_t)s.N * s.K, 1.0f), x = random_floats(rng, (size_t)s.T * s.K, 2.0f);
            auto st = std::make_shared<FastState>(s, std::move(x), std::move(W), p);
            return CaseRun{[st] { st->gemm.run(st->dout.get(), st->dx.get(), st->dW.get(), st->s.T, st->s.K, st->s.N, st->precision); },
                           [st] { return st->result(); }};
          }};
}

// ---- the ggml profile: activation quantizer and integer-dot matmul ----------------------------------
// x with the quantizer's edge cases planted: block 0 of row 0 has amax 127 (id = 1, Q8_K's
// iscale = -1) and halves x = j - 16 + 0.5, so every level is a tie (even vs away from zero);
// the last block of the last row is all zero (d = 0).
Floats ggml_input(std::mt19937& rng, int T, int K, int block) {
  Floats x = random_floats(rng, (size_t)T * K, 2.0f);
  x[0] = 127.0f;
  for (int j = 1; j < 32; j++) x[j] = (float)(j - 16) + 0.5f;
  if ((size_t)T * K >= 2 * (size_t)block)
    for (int j = 0; j < block; j++) x[(size_t)T * K - 1 - j] = 0.0f;
  return x;
}

// The act bytes of kernels::quantize_act_ggml as exact floats, per block: d (Q8_1: d, s), the
// levels, Q8_K's bsums — the same for the device bytes and the reference's blocks.
Floats act_floats(DType partner, const std::vector<uint8_t>& bytes, int T, int K) {
  Floats f;
  const size_t row = k::ggml_act_row_bytes(partner, K);
  for (int t = 0; t < T; t++) {
    const uint8_t* r = bytes.data() + t * row;
    if (partner == DType::Q8_K) {
      for (int b = 0; b < K / QK_K; b++) {
        BlockQ8_K q;
        std::memcpy(&q, r + b * sizeof q, sizeof q);
        f.push_back(q.d);
        for (int8_t v : q.qs) f.push_back((float)v);
        for (int16_t v : q.bsums) f.push_back((float)v);
      }
      continue;
    }
    const bool q81 = partner == DType::Q8_1;
    const size_t bb = q81 ? sizeof(BlockQ8_1) : sizeof(BlockQ8_0);
    for (int b = 0; b < K / QK4_0; b++) {
      const uint8_t* p = r + b * bb;
      f.push_back(num::fp16_to_f32((uint16_t)(p[0] | p[1] << 8)));
      if (q81) f.push_back(num::fp16_to_f32((uint16_t)(p[2] | p[3] << 8)));
      for (int j = 0; j < QK4_0; j++) f.push_back((float)(int8_t)p[(q81 ? 4 : 2) + j]);
    }
  }
  return f;
}

struct QuantizeGgmlState {
  DType partner;
  int T, K;
  Floats x;
  Dev<float> dx;
  Dev<uint8_t> dact;
  QuantizeGgmlState(DType p, int T_, int K_, Floats xs)
      : partner(p), T(T_), K(K_), x(std::move(xs)), dx(x), dact((size_t)T_ * k::ggml_act_row_bytes(p, K_)) {}
  CaseResult result() {  // reference: quantize_act_q8_0 / q8_1 / q8_K row by row
    std::vector<uint8_t> want(dact.size());
    const size_t row = k::ggml_act_row_bytes(partner, K);
    for (int t = 0; t < T; t++) {
      const float* xt = &x[(size_t)t * K];
      void* out = want.data() + t * row;
      if (partner == DType::Q8_0) ops::quantize_act_q8_0(xt, K, static_cast<BlockQ8_0*>(out));
      else if (partner == DType::Q8_1) ops::quantize_act_q8_1(xt, K, static_cast<BlockQ8_1*>(out));
      else ops::quantize_act_q8_K(xt, K, static_cast<BlockQ8_K*>(out));
    }
    return {{{"reference", act_floats(partner, want, T, K)}}, act_floats(partner, dact.host(), T, K), {}};
  }
};

KernelCase quantize_ggml_case(DType partner, int T, int K, uint32_t seed) {
  const double bytes = 4.0 * T * K + (double)T * k::ggml_act_row_bytes(partner, K);
  return {"quantize_ggml", std::string("quantize_ggml ") + dtype_name(partner) + " K=" + std::to_string(K) + " T=" +
              std::to_string(T), seed, Tolerance::Exact, bytes, 3.0 * T * K, [=](uint32_t sd) {
            std::mt19937 rng(sd);
            auto st = std::make_shared<QuantizeGgmlState>(partner, T, K,
                                                          ggml_input(rng, T, K, partner == DType::Q8_K ? QK_K : QK4_0));
            return CaseRun{[st] { k::quantize_act_ggml(st->dact.get(), st->dx.get(), st->partner, st->T, st->K); },
                           [st] { return st->result(); }};
          }};
}

// The weight types with a ggml CPU dot (F32 rows are random floats, the rest random blocks).
std::vector<Format> ggml_formats() {
  std::vector<Format> f = {kQ4_0, kQ8_0, {DType::F32, {}}};
  for (const Format& s : stored_formats())
    if (k::matmul_ggml_reads(s.type)) f.push_back(s);
  return f;
}

struct MatmulGgmlState : StoredState {
  Dev<uint8_t> act;
  MatmulGgmlState(Format fm, Shape sh, std::vector<uint8_t> Ws, Floats xs)
      : StoredState(std::move(fm), sh, std::move(Ws), std::move(xs)),
        act(std::max<size_t>(1, (size_t)sh.T * k::ggml_act_row_bytes(k::ggml_act_partner(f.type), sh.K))) {}
  void launch() { k::matmul_ggml(dout.get(), dx.get(), {dW.get(), f.type}, s.T, s.K, s.N, act.get()); }
  CaseResult result() {  // reference: ops::matmul_ggml on the same bytes
    Expected ref{"reference", Floats((size_t)s.T * s.N)};
    ops::matmul_ggml(ref.values.data(), x.data(), WeightMatrix(f.type, W.data()), s.T, s.K, s.N, nullptr);
    return {{ref}, dout.host(), {}};
  }
};

KernelCase matmul_ggml_case(const Format& f, Shape s, uint32_t seed) {
  const double wbytes = (double)s.N * (s.K / f.block_elems()) * (f.type == DType::F32 ? 4 : f.block_bytes());
  return {"matmul_ggml", shape_text(std::string("matmul_ggml ") + dtype_name(f.type), s), seed, Tolerance::Exact,
          matmul_bytes(s, wbytes), matmul_flops(s), [f, s](uint32_t sd) {
            std::mt19937 rng(sd);
            std::vector<uint8_t> W;
            if (f.type == DType::F32) {
              const Floats w = random_floats(rng, (size_t)s.N * s.K, 1.0f);
              W.resize(w.size() * sizeof(float));
              std::memcpy(W.data(), w.data(), W.size());
            } else {
              W = random_rows(rng, f, s.N, s.K);
            }
            Floats x = ggml_input(rng, s.T, s.K, f.block_elems() == QK_K ? QK_K : QK4_0);
            auto st = std::make_shared<MatmulGgmlState>(f, s, std::move(W), std::move(x));
            return CaseRun{[st] { st->launch(); }, [st] { return st->result(); }};
          }};
}

void add_ggml_check(std::vector<KernelCase>& out) {
  uint32_t seed = 1200;
  for (DType p : {DType::Q8_0, DType::Q8_1})
    for (auto [T, K] : {std::pair{1, 32}, {3, 96}, {2, 288}}) out.push_back(quantize_ggml_case(p, T, K, seed++));
  for (auto [T, K] : {std::pair{1, 256}, {3, 512}}) out.push_back(quantize_ggml_case(DType::Q8_K, T, K, seed++));
  seed = 1300;
  for (const Format& f : ggml_formats()) {
    const bool super = f.block_elems() == QK_K;
    for (const Shape& s : {Shape{5, super ? 256 : 32, 1}, {7, super ? 512 : 96, 3}, {3, super ? 768 : 288, 2}})
      out.push_back(matmul_ggml_case(f, s, seed++));
  }
}

const k::FastPrecision kPrecisions[] = {k::FastPrecision::F32, k::FastPrecision::TF32, k::FastPrecision::BF16};

void add_check(std::vector<KernelCase>& out) {
  const Shape f32[] = {{1, 1, 1}, {7, 5, 3}, {33, 17, 2}, {64, 64, 1}, {17, 100, 4},
                       {512, 64, 1}, {5, 300, 7}, {3, 16, 1}, {16, 15, 2}, {70, 288, 3}};
  uint32_t seed = 100;
  for (const Shape& s : f32) out.push_back(f32_case(s, seed++));
  seed = 200;
  for (const Shape& s : {Shape{9, 32, 1}, {13, 64, 3}, {40, 96, 2}, {3, 256, 5}, {1, 288, 1}}) {
    out.push_back(stored_case(kQ8_0, s, seed++));
    out.push_back(stored_case(kQ4_0, s, seed++));
  }
  seed = 700;
  for (const Format& f : stored_formats()) {
    const bool super = f.block_elems() == 256;
    for (const Shape& s : {Shape{5, super ? 256 : 32, 1}, {7, super ? 512 : 96, 3}, {3, super ? 768 : 288, 2}})
      out.push_back(stored_case(f, s, seed++));
  }
  seed = 1100;
  for (k::FastPrecision p : kPrecisions)
    for (const Shape& s : {Shape{7, 5, 3}, {64, 64, 1}, {70, 288, 3}}) out.push_back(fast_case(s, p, seed++));
  add_ggml_check(out);
}

// One case per entry point, stored type and precision: tiny (CI) or llama-3-8B's
// dim x dim projection, one decode token (and 16 prefill tokens for the GEMMs).
void add_bench(std::vector<KernelCase>& out, bool model) {
  const Shape gemv = model ? Shape{4096, 4096, 1} : Shape{64, 256, 1};
  const Shape gemm = model ? Shape{4096, 4096, 16} : Shape{64, 256, 4};
  out.push_back(f32_case(gemv, 1));
  out.push_back(f32_case(gemm, 2));
  out.push_back(stored_case(kQ8_0, gemv, 3));
  out.push_back(stored_case(kQ4_0, gemv, 4));
  uint32_t seed = 10;
  for (const Format& f : stored_formats()) out.push_back(stored_case(f, gemv, seed++));
  for (k::FastPrecision p : kPrecisions) out.push_back(fast_case(gemm, p, seed++));
  out.push_back(quantize_ggml_case(DType::Q8_0, gemv.T, gemv.K, seed++));
  for (DType t : {DType::Q8_0, DType::Q4_0, DType::Q4_K}) {
    const Format f = t == DType::Q8_0 ? kQ8_0 : t == DType::Q4_0 ? kQ4_0 : Format{DType::Q4_K, {0, 2}};
    out.push_back(matmul_ggml_case(f, gemv, seed++));
  }
}

}  // namespace

void add_matmul_cases(std::vector<KernelCase>& out, CaseSet set) {
  if (set == CaseSet::Check) add_check(out);
  else add_bench(out, set == CaseSet::BenchModel);
}

}  // namespace oracle::optimized::cases
