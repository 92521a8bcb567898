// Matmul over stored-type weights: see qmatmul.h and docs/numerics.md
// ("Stored-type weights: dequantization order"). The kernels are the dispatch
// table's (isa.h; the decoders in isa_simd.h, the scalar family in
// isa_scalar.cpp); this file checks shapes, splits rows over threads and
// handles I8_ROW (one float32 scale per row: dequantize the row, then the F32
// kernel).
#include "reference/compute/qmatmul.h"

#include <algorithm>
#include <vector>

#include "faults/fault.h"
#include "base/errors.h"
#include "numerics/numerics.h"
#include "reference/model/quant.h"

namespace oracle::ops {

using num::fma_rn;

namespace {

void check_shape(const WeightMatrix& w, int k) {
  require_input(w.data != nullptr, "matmul", "weights", "null weight matrix");
  if (dtype_row_bytes(w.type, k) > 0) return;  // per call and thread range: no message built
  throw InputError("matmul", "weights",
                   std::string(dtype_name(w.type)) + " rows of " + std::to_string(k) +
                       " elements are not a whole number of blocks");
}

// I8_ROW: dequantize each row, then the table's F32 kernel on that one row.
void rows_i8_row(const isa::Kernels& k, float* out, const float* x, const WeightMatrix& w, int T, int K, int N,
                 int r0, int r1) {
  const int64_t rb = dtype_row_bytes(w.type, K);
  std::vector<float> row(K);  // (K)
  for (int i = r0; i < r1; i++) {
    dequantize_row(w.type, w.data + i * rb, K, row.data());
    k.matmul_rows_f32(out + i, x, row.data(), T, K, N, 0, 1);
  }
}

}  // namespace

int prefill_chunk(int groups, int threads) {
  const int n_chunks = 2 * std::max(threads, 1);
  return std::max(1, (groups + n_chunks - 1) / n_chunks);
}

void matmul_rows(const isa::Kernels& k, float* out, const float* x, const WeightMatrix& w, int T, int K, int N,
                 int row_begin, int row_end) {
  check_shape(w, K);
  if (w.type == DType::I8_ROW) return rows_i8_row(k, out, x, w, T, K, N, row_begin, row_end);
  const int64_t rb = dtype_row_bytes(w.type, K);
  if (k.stored_rows(out, x, w.type, w.data, rb, T, K, N, row_begin, row_end)) return;
  isa::kernels_for(isa::Isa::Scalar).stored_rows(out, x, w.type, w.data, rb, T, K, N, row_begin, row_end);
}

// FAULT (BATCH_DEPENDENT_REDUCTION): multi-token calls sum each output
// sequentially instead of in lanes.
void faulty_sequential(const MatmulJob& j, const float* x, int T, int K) {
  std::vector<float> row(K);  // (K)
  const int64_t rb = dtype_row_bytes(j.w.type, K);
  for (int i = 0; i < j.n_out; i++) {
    dequantize_row(j.w.type, j.w.data + i * rb, K, row.data());
    for (int t = 0; t < T; t++) {
      float acc = 0.0f;
      for (int e = 0; e < K; e++) acc = fma_rn(row[e], x[(int64_t)t * K + e], acc);
      j.out[(int64_t)t * j.n_out + i] = acc;
    }
  }
}

void matmul_jobs(std::span<const MatmulJob> jobs, const float* x, int T, int K, ThreadPool* pool) {
  if (fault::active(fault::Fault::BATCH_DEPENDENT_REDUCTION) && T > 1) {
    for (const MatmulJob& j : jobs) faulty_sequential(j, x, T, K);
    return;
  }
  std::vector<int> first_group{0};  // (jobs + 1) prefix sums of 4-row groups
  for (const MatmulJob& j : jobs) {
    check_shape(j.w, K);
    first_group.push_back(first_group.back() + (j.n_out + 3) / 4);
  }
  const isa::Kernels& k = isa::kernels();  // on this thread: a bad ORACLE_ISA throws here
  auto run = [&](int g0, int g1) {
    for (size_t j = 0; j < jobs.size(); j++) {
      int a = std::max(g0, first_group[j]), b = std::min(g1, first_group[j + 1]);
      if (a >= b) continue;
      const MatmulJob& job = jobs[j];
      int r0 = (a - first_group[j]) * 4, r1 = std::min(job.n_out, (b - first_group[j]) * 4);
      matmul_rows(k, job.out, x, job.w, T, K, job.n_out, r0, r1);
    }
  };
  if (!pool) return run(0, first_group.back());
  // Prefill: two chunks per thread, claimed in turn (a late thread's second
  // chunk goes to the other). Each chunk packs x once per token group and K
  // segment (rows_stored), so smaller chunks repeat the packing: 32-row chunks
  // ran 5-12 % slower at 2 threads. Decode: one fixed range per thread.
  if (T > 1) pool->parallel_chunks(first_group.back(), prefill_chunk(first_group.back(), pool->size()), run);
  else pool->parallel_for(first_group.back(), run);
}

void matmul(float* out, const float* x, const WeightMatrix& w, int T, int K, int N,
            ThreadPool* pool) {
  const MatmulJob job{out, w, N};
  matmul_jobs(std::span<const MatmulJob>(&job, 1), x, T, K, pool);
}

}  // namespace oracle::ops
