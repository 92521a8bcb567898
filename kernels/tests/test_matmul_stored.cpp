// matmul_stored (kernels/matmul.cuh "Stored types") on the host emulation vs the
// reference's stored-type path: reference/model/quant.cpp dequantize_row, then
// dot_canonical (spec) and ops::matmul (reference), tolerance 0. Random blocks
// with finite scales; every type, several shapes, T = 1..3.
#include "kernel_test_support.h"
#include "kernels/matmul.cuh"
#include "reference/compute/ops.h"
#include "reference/model/quant.h"

using namespace oracle;
using namespace oracle::kernels::test;
namespace k = oracle::kernels;

namespace {

struct StoredFormat {
  k::StoredType kernel;
  DType reference;
  std::vector<int> half_offsets;  // byte offsets of fp16 fields in a block (finite values written)
  int f32_offset = -1;            // a float32 field (Q8_K's d)
};

const std::vector<StoredFormat>& formats() {
  static const std::vector<StoredFormat> f = {
      {k::StoredType::F16, DType::F16, {0}},          {k::StoredType::BF16, DType::BF16, {}},
      {k::StoredType::Q4_1, DType::Q4_1, {0, 2}},     {k::StoredType::Q5_0, DType::Q5_0, {0}},
      {k::StoredType::Q5_1, DType::Q5_1, {0, 2}},     {k::StoredType::Q8_1, DType::Q8_1, {0, 2}},
      {k::StoredType::Q2_K, DType::Q2_K, {80, 82}},   {k::StoredType::Q3_K, DType::Q3_K, {108}},
      {k::StoredType::Q4_K, DType::Q4_K, {0, 2}},     {k::StoredType::Q5_K, DType::Q5_K, {0, 2}},
      {k::StoredType::Q6_K, DType::Q6_K, {208}},      {k::StoredType::Q8_K, DType::Q8_K, {}, 0},
  };
  return f;
}

// Random bytes; fp16 fields finite and small, BF16 elements finite, Q8_K's d finite.
std::vector<uint8_t> random_rows(std::mt19937& rng, const StoredFormat& f, int N, int K) {
  const int be = k::stored_block_elems(f.kernel), bb = k::stored_block_bytes(f.kernel);
  std::vector<uint8_t> w((size_t)N * (K / be) * bb);
  for (uint8_t& b : w) b = (uint8_t)(rng() & 0xff);
  for (size_t b = 0; b < w.size(); b += (size_t)bb) {
    for (int off : f.half_offsets) {
      const uint16_t h = num::f32_to_fp16(uniform(rng, f.kernel == k::StoredType::F16 ? 2.0f : 0.05f));
      w[b + off] = (uint8_t)(h & 0xff), w[b + off + 1] = (uint8_t)(h >> 8);
    }
    if (f.kernel == k::StoredType::BF16) {
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

OpCase stored_case(const StoredFormat& f, int N, int K, int T, uint32_t seed) {
  return {shape_label(std::string("matmul_stored ") + dtype_name(f.reference), {{"N", N}, {"K", K}, {"T", T}}), seed,
          [=](uint32_t s) {
            std::mt19937 rng(s);
            const std::vector<uint8_t> W = random_rows(rng, f, N, K);
            const Floats x = random_floats(rng, (size_t)T * K, 2.0f);
            Floats deq((size_t)N * K);
            const size_t row_bytes = (size_t)dtype_row_bytes(f.reference, K);
            for (int i = 0; i < N; i++) dequantize_row(f.reference, &W[i * row_bytes], K, &deq[(size_t)i * K]);
            OpOutputs o;
            o.spec.resize((size_t)T * N);
            for (int t = 0; t < T; t++)
              for (int i = 0; i < N; i++)
                o.spec[(size_t)t * N + i] = num::dot_canonical(&deq[(size_t)i * K], &x[(size_t)t * K], K);
            o.reference.resize((size_t)T * N);
            ops::matmul(o.reference.data(), x.data(), deq.data(), T, K, N, nullptr);
            Dev<uint8_t> dW(W);
            Dev<float> dx(x), dout((size_t)T * N);
            k::matmul_stored(dout.get(), dx.get(), dW.get(), f.kernel, T, K, N);
            o.kernel = dout.host();
            return o;
          }};
}

}  // namespace

TEST_CASE("matmul_stored equals the reference's dequantize_row + canonical dot for every stored type",
          "[emu][matmul][matmul_stored]") {
  std::vector<OpCase> cases;
  uint32_t seed = 700;
  for (const StoredFormat& f : formats()) {
    const bool super = k::stored_block_elems(f.kernel) == 256;
    const int shapes[][3] = {{5, super ? 256 : 32, 1}, {7, super ? 512 : 96, 3}, {3, super ? 768 : 288, 2}};
    for (auto& sh : shapes) cases.push_back(stored_case(f, sh[0], sh[1], sh[2], seed++));
  }
  check_cases(cases);
  Dev<uint8_t> w(std::vector<uint8_t>(144));
  Dev<float> x(128), out(1);
  CHECK_THROWS_AS(k::matmul_stored(out.get(), x.get(), w.get(), k::StoredType::Q4_K, 1, 128, 1), std::invalid_argument);
}
