// The ggml numerics profile's kernels (kernels/matmul_ggml.cuh, rmsnorm_ggml in
// kernels/rmsnorm.cuh) on the host emulation vs reference/compute/qmatmul_ggml.h,
// tolerance 0: the activation quantizer's blocks (Q8_0, Q8_1, Q8_K; ties and an
// all-zero block planted), the integer-dot matmul on every weight type with a ggml
// CPU dot (3 shapes each, T = 1..3), and the float64-sum RMSNorm. The cases are the
// kernel case registry's (optimized/kernel_cases_matmul.cpp, kernel_cases_ops.cpp).
#include "kernel_test_support.h"
#include "kernels/matmul_ggml.cuh"

using namespace oracle;
using namespace oracle::kernels::test;
namespace k = oracle::kernels;

TEST_CASE("quantize_act_ggml equals the reference's quantize_act_q8_0 / q8_1 / q8_K", "[emu][matmul_ggml]") {
  check_registry_op("quantize_ggml");
}

TEST_CASE("matmul_ggml equals the reference's matmul_ggml for every weight type with a ggml dot",
          "[emu][matmul][matmul_ggml]") {
  check_registry_op("matmul_ggml");
  // Types without a ggml CPU dot are refused, not misread.
  for (DType t : {DType::Q8_1, DType::Q8_K, DType::I8_ROW}) CHECK_FALSE(k::matmul_ggml_reads(t));
  Dev<uint8_t> w(std::vector<uint8_t>(292)), act(std::vector<uint8_t>(4096));
  Dev<float> x(256), out(1);
  CHECK_THROWS_AS(k::matmul_ggml(out.get(), x.get(), {w.get(), DType::Q8_K}, 1, 256, 1, act.get()),
                  std::invalid_argument);
  CHECK_THROWS_AS(k::matmul_ggml(out.get(), x.get(), {w.get(), DType::Q4_K}, 1, 128, 1, act.get()),
                  std::invalid_argument);
}

TEST_CASE("rmsnorm_ggml equals the reference's rmsnorm_ggml (in place)", "[emu][rmsnorm][matmul_ggml]") {
  check_registry_op("rmsnorm_ggml");
}
