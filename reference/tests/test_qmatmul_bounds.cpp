// Out-of-bounds reads in the quantized matmuls (issue 29's mutation audit: the k-quant block
// loop `k <= nb` of qmatmul_ggml.cpp read one block past both rows and changed no tested
// result). Two nets, for every stored type on the canonical path (every ISA path this CPU has)
// and every type of the ggml profile:
//  1. Guard pages: the weight matrix, the activation rows and the output each end exactly at a
//     page boundary followed by a PROT_NONE page (a second pass: each starts right after one),
//     so a read or write past either end raises SIGSEGV — the test process dies and CTest
//     reports it failed; it cannot hang. The results are compared bit for bit with the same
//     call on ordinary heap copies.
//  2. This executable compiles qmatmul.cpp and qmatmul_ggml.cpp itself with _GLIBCXX_ASSERTIONS
//     (reference/tests/CMakeLists.txt; the library's objects of those two files are then not
//     linked): the kernels' own scratch — the decoded level rows and the activation blocks,
//     std::vectors — is bounds-checked, and an index past the end aborts.
#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

#include "base/errors.h"
#include "reference/compute/isa.h"
#include "reference/compute/qmatmul.h"
#include "reference/compute/qmatmul_ggml.h"
#include "reference/model/quant.h"

using namespace oracle;

namespace {

// `bytes` of read-write memory between two PROT_NONE pages, placed flush against the
// guard page after it (at_end) or before it.
class Guarded {
 public:
  Guarded(const void* src, size_t bytes, bool at_end) {
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t span = (bytes + page - 1) / page * page;
    total_ = span + 2 * page;
    void* p = mmap(nullptr, total_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(p != MAP_FAILED);
    base_ = static_cast<uint8_t*>(p);
    REQUIRE(mprotect(base_, page, PROT_NONE) == 0);
    REQUIRE(mprotect(base_ + page + span, page, PROT_NONE) == 0);
    data_ = at_end ? base_ + page + span - bytes : base_ + page;
    if (src) std::memcpy(data_, src, bytes);
  }
  ~Guarded() { munmap(base_, total_); }
  Guarded(const Guarded&) = delete;
  Guarded& operator=(const Guarded&) = delete;
  uint8_t* data() const { return data_; }
  float* f32() const { return reinterpret_cast<float*>(data_); }

 private:
  uint8_t* base_ = nullptr;
  uint8_t* data_ = nullptr;
  size_t total_ = 0;
};

// Any bytes are a valid block; bytes below 0x3C keep every f32 / f16 / bf16 field finite.
std::vector<uint8_t> weight_bytes(DType t, int n_out, int K) {
  std::vector<uint8_t> w((size_t)(n_out * dtype_row_bytes(t, K)));
  for (size_t i = 0; i < w.size(); i++) w[i] = (uint8_t)((i * 37 + 11) % 60);
  return w;
}

std::vector<float> act_values(int n) {
  std::vector<float> x(n);
  for (int i = 0; i < n; i++) x[i] = (float)((i * 29 + 5) % 41 - 20) / 8.0f;
  return x;
}

using Matmul = std::function<void(float* out, const float* x, const WeightMatrix& w, int T, int K, int N)>;

// The call on guarded operands (flush against the end, then against the start) equals the call
// on heap copies, bit for bit.
void check_guarded(DType t, int K, int N, int T, const Matmul& mm) {
  const std::vector<uint8_t> w = weight_bytes(t, N, K);
  const std::vector<float> x = act_values(T * K);
  std::vector<float> want((size_t)T * N);
  mm(want.data(), x.data(), WeightMatrix(t, w.data()), T, K, N);
  for (bool at_end : {true, false}) {
    INFO(dtype_name(t) << " K=" << K << " N=" << N << " T=" << T << (at_end ? " flush at the end" : " at the start"));
    Guarded gw(w.data(), w.size(), at_end), gx(x.data(), x.size() * 4, at_end), go(nullptr, want.size() * 4, at_end);
    mm(go.f32(), gx.f32(), WeightMatrix(t, gw.data()), T, K, N);
    CHECK(std::memcmp(go.f32(), want.data(), want.size() * 4) == 0);
  }
}

std::vector<int> lengths(DType t) {
  const int be = (int)dtype_block_elems(t);
  if (be == 1) return {1, 37, 512};  // plain types and I8_ROW: odd tails too
  return {be, 2 * be, 512};
}

}  // namespace

TEST_CASE("canonical matmul: no read or write past any operand (guard pages), every type and ISA path",
          "[qmatmul][bounds]") {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                  DType::Q8_0, DType::Q8_1, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K,
                  DType::Q8_K, DType::I8_ROW})
    for (int K : lengths(t))
      for (int N : {1, 4})
        for (int T : {1, 3}) {
          for (isa::Isa path : isa::available_isas()) {
            INFO("ISA path " << isa::isa_name(path));
            check_guarded(t, K, N, T, [path](float* o, const float* x, const WeightMatrix& w, int T, int K, int N) {
              ops::matmul_rows(isa::kernels_for(path), o, x, w, T, K, N, 0, N);
            });
          }
          check_guarded(t, K, N, T, [](float* o, const float* x, const WeightMatrix& w, int T, int K, int N) {
            ops::matmul(o, x, w, T, K, N, nullptr);
          });
        }
}

TEST_CASE("ggml-profile matmul: no read or write past any operand (guard pages), every type", "[qmatmul][bounds]") {
  for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q2_K, DType::Q3_K,
                  DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::F16, DType::BF16, DType::F32})
    for (int K : lengths(t))
      for (int N : {1, 4})
        for (int T : {1, 3})
          check_guarded(t, K, N, T, [](float* o, const float* x, const WeightMatrix& w, int T, int K, int N) {
            ops::matmul_ggml(o, x, w, T, K, N, nullptr);
          });
}
