// kernels::matmul on every stored type's view (kernels/matmul.cuh "Stored types") on the host emulation vs the
// reference's stored-type path: reference/model/quant.cpp dequantize_row, then
// dot_canonical (spec) and ops::matmul (reference), tolerance 0. Random blocks
// with finite scales; every type, several shapes, T = 1..3. The cases are the
// kernel case registry's (optimized/kernel_cases_matmul.cpp).
#include "kernel_test_support.h"
#include "kernels/matmul.cuh"

using namespace oracle;
using namespace oracle::kernels::test;
namespace k = oracle::kernels;

TEST_CASE("matmul_stored equals the reference's dequantize_row + canonical dot for every stored type",
          "[emu][matmul][matmul_stored]") {
  check_registry_op("matmul_stored");
  Dev<uint8_t> w(std::vector<uint8_t>(144));
  Dev<float> x(128), out(1);
  CHECK_THROWS_AS(k::matmul(out.get(), x.get(), {w.get(), DType::Q4_K}, 1, 128, 1), std::invalid_argument);
  // I8_ROW has no device reader (the device model dequantizes it at load): refused, not misread.
  CHECK_FALSE(k::matmul_reads(DType::I8_ROW));
  CHECK_THROWS_AS(k::matmul(out.get(), x.get(), {w.get(), DType::I8_ROW}, 1, 128, 1), std::invalid_argument);
}
